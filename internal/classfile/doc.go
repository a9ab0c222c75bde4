// Package classfile parses JVM class files (JVMS chapter 4) as far as
// linkage needs: the version, the constant pool (every tag up to Java 25:
// Dynamic, InvokeDynamic, Module and Package included), the access flags,
// this class, its superclass and interfaces, the fields and methods (name,
// descriptor, flags), and the symbolic references the bytecode of each
// method uses: the constants named by new, checkcast, instanceof,
// anewarray, multianewarray, ldc, the field instructions and the invoke
// instructions, with an invokedynamic's or a dynamic constant's bootstrap
// method and its method-handle and class arguments. A constant no
// instruction uses is not a reference (a shaded JAR may carry unrelocated
// names in its constant pools that nothing resolves).
//
// Parsing is bounded by the input: every count is checked against the
// bytes that remain before anything is allocated for it, so a hostile
// class file is an error, never a panic or an allocation larger than a
// small multiple of its size. The caller bounds the size (MaxSize).
//
// It is hand-written: the maintained class-file libraries are Java (ASM,
// java.lang.classfile); the Go ones found are unmaintained or parse far
// more (attributes, stack maps) than linkage needs. It does not verify
// bytecode, follow stack maps, read annotations or decide anything about
// linkage (package admission does).
package classfile
