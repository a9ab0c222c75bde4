// Package jvm models what the JVM does with the classes on Flink's class
// path: which loader takes a class from which JAR, whether a class loads,
// whether a symbolic reference resolves, and which classes of a JAR are
// reachable at all. It hands facts up ("this reference of C does not
// resolve through this loader: the class X has no class file, named by
// the superclass of Y"; "no such member, looked in these classes, the
// class taken from JAR K"; "JAR W's copies hide JAR L's"); package
// admission judges them: which failures are errors, and the sentences,
// fixes and rule names of its findings.
//
// What it models:
//
//   - The class loaders (Loader, Classpath): lib's, searching lib in
//     classpath order with flink-dist last, the first JAR of a class
//     winning; usrlib's, its child, child-first except for the parent-first
//     patterns (classloader.parent-first-patterns.*; DefaultParentFirst reads
//     the default from flink-dist's CoreOptions). This is JVMS 5.3's
//     delegation between a defining and an initiating loader as Flink's
//     FlinkUserCodeClassLoaders arrange it. Each plugin's (Classpath.Plugin,
//     Loader.Isolated), as Flink's ComponentClassLoader: its folder's JARs,
//     lib only for the plugin parent-first patterns
//     (plugin.classloader.parent-first-patterns.*), nothing else of lib.
//     The planner loader's nested planner is not in lib's JARs, so lib's
//     loader cannot see it.
//   - Which copy of a class the loaders take where two JARs hold different
//     ones (Shadowed).
//   - The class index: each class of a JAR parsed once (package classfile),
//     on a few goroutines ahead of its use, or answered by a baked class
//     index (Indexed).
//   - Loading (Load): a class, then its superclass and interfaces,
//     recursively (JVMS 5.3.5 steps 3 and 4, 5.4.3.1), the first edge to a class
//     with no class file named as NoClassDefFoundError names it.
//   - Member resolution (Lookup) as JVMS 5.4.3.2 (fields), 5.4.3.3
//     (methods: the class, its superclasses, then the superinterfaces of
//     the class and of every superclass) and 5.4.3.4
//     (interface methods, java.lang.Object's public methods included) do,
//     matching name and descriptor; and the references of one class in the
//     order linking and running it resolves them (Resolve).
//   - Reachability (Reachable, EntryPoints): the classes reachable from a
//     JAR's entry points (its META-INF/services implementations as
//     java.util.ServiceLoader reads them, Main-Class, Flink's
//     Program-Class) through superclasses, interfaces, the classes
//     instructions name and the owners of the members they use.
//
// What it deliberately does not model: the JDK's own modules (a java.*,
// javax.*, jdk.*, sun.* class is taken to load and to hold any member,
// but for the few types most hierarchies end in, whose members it knows);
// access control (JVMS 5.4.4) and loader constraints (5.3.4); method
// selection at invocation (5.4.6) and the maximally-specific rule's
// ambiguity; verification (4.10), static initialisation (5.5) and
// ClassCircularityError; reflection, invokedynamic's bootstrap results
// and Class.forName by computed names; the plugins' loaders (plugins/
// each get their own, which nothing here judges). It does no I/O beyond
// reading the JARs it is handed, and decides nothing: no severities, no
// messages.
package jvm
