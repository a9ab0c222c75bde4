// The JVM oracle of the linkage tests (issue 19): it arranges Flink's class
// loaders over real JARs and asks this JVM which references link.
//
// Two sides are given, the host and the release the non-host JARs were built
// for ("own"); each is a lib (in bin/config.sh's order, flink-dist last: one
// URLClassLoader over the platform loader, so a nested planner inside the
// planner loader JAR stays invisible as in Flink), a usrlib (a child-first
// loader over lib, except the parent-first patterns that side's real
// flink-dist declares: CoreOptions.getParentFirstLoaderPatterns read by
// reflection) and the targets (the JARs that are not the distribution's own).
//
// (a) check=... lines: symbols the project reported; each is answered on the
//     host: a class by Class.forName(name, false, loader) (which loads and
//     links its superclasses and interfaces, or fails as the JVM does), a
//     member by matching name and descriptor in the class files of the
//     resolved class and its supertypes (ClassLoader.getResource, then ASM),
//     in JVMS 5.4.3's order. Not reflection: getDeclaredMethods demands the
//     parameter types of every method, resolution does not.
// (b) independently, from the targets' entry points (META-INF/services
//     implementations, Main-Class, Program-Class) it walks the classes the
//     loaders find in target JARs, through the references their instructions
//     use (and their supertypes), resolves each reference the same way on both
//     sides, and prints the ones that fail on the host but not on the own side.
//
// A class that does not link is reported at the edge that names a class with
// no class file: from = the class whose instruction (or superclass or
// interface entry) names it, owner = the missing class. A class file newer
// than this JVM is reported as kind version, from = owner = that class.
// Shadowing: a class in two JARs of a side with different contents (CRC and
// size), reported with from = owner = the class and jar = the JAR the loader
// picks; a shadow is host-only wherever it is (the own side does not excuse
// it, as it excuses a reference that fails on the JARs' own release too).
//
// usage: java -cp asm.jar:DIR LinkageOracle SPEC
// SPEC lines: host.lib=JAR host.usrlib=JAR host.target=JAR (and own.*),
// check=KIND<TAB>FROM<TAB>OWNER<TAB>NAME<TAB>DESC<TAB>JAR.
// Output lines (tab-separated): CHECK resolved|unresolved KEY DETAIL;
// FAIL host|own KEY DETAIL; HOSTONLY KEY DETAIL; STAT side k=v...
// KEY is KIND FROM OWNER NAME DESC JAR-file-name.

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.*;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ConstantDynamic;
import org.objectweb.asm.FieldVisitor;
import org.objectweb.asm.Handle;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;

public class LinkageOracle {

    // ---- the class loaders of one side

    /** Flink's ChildFirstClassLoader, as far as resolution can tell. */
    static final class ChildFirst extends URLClassLoader {
        final String[] parentFirst;

        ChildFirst(URL[] urls, ClassLoader parent, String[] parentFirst) {
            super("usrlib", urls, parent);
            this.parentFirst = parentFirst;
        }

        boolean isParentFirst(String name) {
            for (String p : parentFirst) {
                if (name.startsWith(p)) {
                    return true;
                }
            }
            return false;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    if (!isParentFirst(name)) {
                        try {
                            c = findClass(name);
                        } catch (ClassNotFoundException e) {
                            // not ours: the parent's
                        }
                    }
                    if (c == null) {
                        c = super.loadClass(name, false);
                    }
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }

        @Override
        public URL getResource(String name) {
            if (name.endsWith(".class") && !isParentFirst(name.substring(0, name.length() - 6).replace('/', '.'))) {
                URL u = findResource(name);
                if (u != null) {
                    return u;
                }
            }
            return super.getResource(name);
        }
    }

    static final class Side {
        final String name;
        final List<Path> lib = new ArrayList<>();
        final List<Path> usrlib = new ArrayList<>();
        final List<Path> targets = new ArrayList<>();
        URLClassLoader libLoader;
        ChildFirst userLoader;
        String[] parentFirst = new String[0];

        Side(String name) {
            this.name = name;
        }

        void open() throws Exception {
            libLoader = new URLClassLoader("lib", urls(lib), ClassLoader.getPlatformClassLoader());
            Class<?> core = Class.forName("org.apache.flink.configuration.CoreOptions", true, libLoader);
            Class<?> conf = Class.forName("org.apache.flink.configuration.Configuration", true, libLoader);
            // (Configuration) in 1.18, (ReadableConfig) in 2.x
            java.lang.reflect.Method get = Arrays.stream(core.getMethods())
                    .filter(m -> m.getName().equals("getParentFirstLoaderPatterns") && m.getParameterCount() == 1)
                    .findFirst().orElseThrow(() -> new NoSuchMethodException("CoreOptions.getParentFirstLoaderPatterns in " + lib));
            Object patterns = get.invoke(null, conf.getConstructor().newInstance());
            if (patterns instanceof String[] a) {
                parentFirst = a;
            } else {
                parentFirst = ((Collection<?>) patterns).stream().map(String::valueOf).toArray(String[]::new);
            }
            userLoader = new ChildFirst(urls(usrlib), libLoader, parentFirst);
        }

        /** The loader of a JAR named by the project: usrlib's when a usrlib JAR has its file name. */
        ClassLoader loaderFor(Path jar) {
            for (Path u : usrlib) {
                if (u.getFileName().equals(jar.getFileName())) {
                    return userLoader;
                }
            }
            return libLoader;
        }

        boolean isTarget(URL where) {
            Path p = jarOf(where);
            return p != null && targets.contains(p);
        }
    }

    static URL[] urls(List<Path> jars) throws IOException {
        URL[] u = new URL[jars.size()];
        for (int i = 0; i < u.length; i++) {
            u[i] = jars.get(i).toUri().toURL();
        }
        return u;
    }

    /** The JAR a jar: URL points into, or null (the JDK's jrt:). */
    static Path jarOf(URL u) {
        if (u == null || !"jar".equals(u.getProtocol())) {
            return null;
        }
        String s = u.getPath(); // file:/x/y.jar!/a/B.class
        int bang = s.indexOf("!/");
        try {
            return Path.of(new URL(s.substring(0, bang)).toURI()).toAbsolutePath().normalize();
        } catch (Exception e) {
            throw new IllegalStateException("jar URL " + u, e);
        }
    }

    // ---- class files, read through the loaders

    record Member(String name, String desc, int access) {}

    static final class ClassInfo {
        String name;
        String superName;
        String[] interfaces = new String[0];
        int access;
        int major;
        final List<Member> methods = new ArrayList<>();
        final List<Member> fields = new ArrayList<>();
        final Set<Ref> refs = new LinkedHashSet<>(); // what its instructions use, its supertypes
    }

    record Ref(String kind, String owner, String name, String desc, boolean itf) {}

    static byte[] bytes(URL u) throws IOException {
        var c = u.openConnection();
        c.setUseCaches(false);
        try (InputStream in = c.getInputStream()) {
            return in.readAllBytes();
        }
    }

    static ClassInfo parse(byte[] b, boolean withRefs) {
        ClassInfo ci = new ClassInfo();
        ci.major = ((b[6] & 0xff) << 8) | (b[7] & 0xff);
        new ClassReader(b).accept(new ClassVisitor(Opcodes.ASM9) {
            @Override
            public void visit(int version, int access, String name, String sig, String superName, String[] itfs) {
                ci.name = name;
                ci.access = access;
                ci.superName = superName;
                ci.interfaces = itfs == null ? new String[0] : itfs;
                if (withRefs) {
                    if (superName != null) {
                        ci.refs.add(new Ref("class", superName, "", "", false));
                    }
                    for (String i : ci.interfaces) {
                        ci.refs.add(new Ref("class", i, "", "", false));
                    }
                }
            }

            @Override
            public FieldVisitor visitField(int access, String name, String desc, String sig, Object value) {
                ci.fields.add(new Member(name, desc, access));
                return null;
            }

            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String sig, String[] ex) {
                ci.methods.add(new Member(name, desc, access));
                return withRefs ? new Instructions(ci.refs) : null;
            }
        }, withRefs ? ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES : ClassReader.SKIP_CODE);
        return ci;
    }

    /** The references a method's instructions use: what the JVM resolves. */
    static final class Instructions extends MethodVisitor {
        final Set<Ref> refs;

        Instructions(Set<Ref> refs) {
            super(Opcodes.ASM9);
            this.refs = refs;
        }

        void type(String internal) {
            Type t = internal.startsWith("[") ? Type.getType(internal) : Type.getObjectType(internal);
            if (t.getSort() == Type.ARRAY) {
                t = t.getElementType();
            }
            if (t.getSort() == Type.OBJECT) {
                refs.add(new Ref("class", t.getInternalName(), "", "", false));
            }
        }

        void handle(Handle h) {
            type(h.getOwner());
            boolean field = h.getTag() <= Opcodes.H_PUTSTATIC;
            refs.add(new Ref(field ? "field" : "method", h.getOwner(), h.getName(), h.getDesc(), h.isInterface()));
        }

        void constant(Object c) {
            if (c instanceof Type t) {
                if (t.getSort() == Type.OBJECT || t.getSort() == Type.ARRAY) {
                    type(t.getSort() == Type.ARRAY ? t.getDescriptor() : t.getInternalName());
                }
            } else if (c instanceof Handle h) {
                handle(h);
            } else if (c instanceof ConstantDynamic d) {
                handle(d.getBootstrapMethod());
                for (int i = 0; i < d.getBootstrapMethodArgumentCount(); i++) {
                    constant(d.getBootstrapMethodArgument(i));
                }
            }
        }

        @Override
        public void visitTypeInsn(int op, String type) {
            type(type);
        }

        @Override
        public void visitFieldInsn(int op, String owner, String name, String desc) {
            type(owner);
            refs.add(new Ref("field", owner, name, desc, false));
        }

        @Override
        public void visitMethodInsn(int op, String owner, String name, String desc, boolean itf) {
            type(owner);
            if (owner.startsWith("[")) {
                return; // array methods: clone and Object's
            }
            refs.add(new Ref("method", owner, name, desc, itf));
        }

        @Override
        public void visitInvokeDynamicInsn(String name, String desc, Handle bsm, Object... args) {
            handle(bsm);
            for (Object a : args) {
                constant(a);
            }
        }

        @Override
        public void visitLdcInsn(Object c) {
            constant(c);
        }

        @Override
        public void visitMultiANewArrayInsn(String desc, int dims) {
            type(desc);
        }
    }

    // ---- resolution, as the JVM does it

    record Failure(String kind, String from, String owner, String name, String desc, String jar, String detail) {
        String key() {
            return String.join("\t", kind, from, owner, name, desc, jar);
        }
    }

    static final class Resolver {
        final Side side;
        final Map<Class<?>, ClassInfo> members = new HashMap<>();

        Resolver(Side side) {
            this.side = side;
        }

        /** The class file of a loaded class, as its defining loader finds it. */
        ClassInfo info(Class<?> c) throws IOException {
            ClassInfo ci = members.get(c);
            if (ci != null) {
                return ci;
            }
            String res = c.getName().replace('.', '/') + ".class";
            byte[] b;
            if (c.getModule().isNamed()) {
                try (InputStream in = c.getModule().getResourceAsStream(res)) {
                    if (in == null) {
                        throw new IOException("no class file for " + c.getName() + " in " + c.getModule());
                    }
                    b = in.readAllBytes();
                }
            } else {
                ClassLoader l = c.getClassLoader();
                URL u = l == null ? ClassLoader.getSystemResource(res) : l.getResource(res);
                if (u == null) {
                    throw new IOException("no class file for " + c.getName() + " through " + l);
                }
                b = bytes(u);
            }
            ci = parse(b, false);
            members.put(c, ci);
            return ci;
        }

        /** Class.forName without initialisation: the JVM's loading and linking of supers. */
        Object load(String internal, ClassLoader l) {
            try {
                return Class.forName(internal.replace('/', '.'), false, l);
            } catch (ClassNotFoundException | LinkageError e) {
                return e;
            }
        }

        /**
         * Why internal cannot load through l: the first edge in its hierarchy
         * whose class has no class file (from, missing), or null when the
         * failure is not a missing class.
         */
        String[] missingEdge(String from, String internal, ClassLoader l, Set<String> seen) throws IOException {
            if (!seen.add(internal)) {
                return null;
            }
            URL u = l.getResource(internal + ".class");
            if (u == null) {
                return new String[] {from, internal};
            }
            ClassInfo ci = parse(bytes(u), false);
            List<String> supers = new ArrayList<>();
            if (ci.superName != null) {
                supers.add(ci.superName);
            }
            supers.addAll(Arrays.asList(ci.interfaces));
            for (String s : supers) {
                String[] e = missingEdge(internal, s, l, seen);
                if (e != null) {
                    return e;
                }
            }
            return null;
        }

        /** Resolves a reference made from a class loaded by l; null when it links. */
        String resolve(Ref r, ClassLoader l) throws IOException {
            Object o = load(r.owner, l);
            if (o instanceof Throwable t) {
                return t.getClass().getSimpleName() + ": " + t.getMessage();
            }
            Class<?> c = (Class<?>) o;
            switch (r.kind) {
                case "class":
                    return null;
                case "field":
                    return findField(c, r.name, r.desc, new HashSet<>()) ? null : "NoSuchFieldError: " + r.owner + "." + r.name + ":" + r.desc;
                default:
                    return findMethod(c, r) ? null : "NoSuchMethodError: " + r.owner + "." + r.name + r.desc;
            }
        }

        // JVMS 5.4.3.2: the class, its superinterfaces (recursively), then its superclass.
        boolean findField(Class<?> c, String name, String desc, Set<Class<?>> seen) throws IOException {
            if (c == null || !seen.add(c)) {
                return false;
            }
            for (Member m : info(c).fields) {
                if (m.name.equals(name) && m.desc.equals(desc)) {
                    return true;
                }
            }
            for (Class<?> i : c.getInterfaces()) {
                if (findField(i, name, desc, seen)) {
                    return true;
                }
            }
            return findField(c.getSuperclass(), name, desc, seen);
        }

        static boolean signaturePolymorphic(Class<?> c, Member m) {
            return (c == java.lang.invoke.MethodHandle.class || c == java.lang.invoke.VarHandle.class)
                    && (m.access & (Opcodes.ACC_VARARGS | Opcodes.ACC_NATIVE)) == (Opcodes.ACC_VARARGS | Opcodes.ACC_NATIVE);
        }

        boolean declares(Class<?> c, String name, String desc, boolean polymorphic, boolean onlyInheritable) throws IOException {
            for (Member m : info(c).methods) {
                if (!m.name.equals(name)) {
                    continue;
                }
                if (onlyInheritable && (m.access & (Opcodes.ACC_PRIVATE | Opcodes.ACC_STATIC)) != 0) {
                    continue;
                }
                if (m.desc.equals(desc) || (polymorphic && signaturePolymorphic(c, m))) {
                    return true;
                }
            }
            return false;
        }

        // JVMS 5.4.3.3 and 5.4.3.4; constructors in the class only (HotSpot
        // refuses a superclass's <init> for invokespecial).
        boolean findMethod(Class<?> c, Ref r) throws IOException {
            if (r.name.equals("<init>")) {
                return declares(c, r.name, r.desc, false, false);
            }
            if (!r.itf) {
                for (Class<?> k = c; k != null; k = k.getSuperclass()) {
                    if (declares(k, r.name, r.desc, true, false)) {
                        return true;
                    }
                }
            } else {
                if (declares(c, r.name, r.desc, false, false)) {
                    return true;
                }
                for (Member m : info(Object.class).methods) {
                    if (m.name.equals(r.name) && m.desc.equals(r.desc) && (m.access & Opcodes.ACC_PUBLIC) != 0 && (m.access & Opcodes.ACC_STATIC) == 0) {
                        return true;
                    }
                }
            }
            Deque<Class<?>> todo = new ArrayDeque<>();
            Set<Class<?>> seen = new HashSet<>();
            for (Class<?> k = c; k != null; k = k.getSuperclass()) {
                todo.addAll(Arrays.asList(k.getInterfaces()));
            }
            while (!todo.isEmpty()) {
                Class<?> i = todo.poll();
                if (!seen.add(i)) {
                    continue;
                }
                if (declares(i, r.name, r.desc, false, true)) {
                    return true;
                }
                todo.addAll(Arrays.asList(i.getInterfaces()));
            }
            return false;
        }

        /** Answers one reported symbol on this side. null when it links. */
        String check(String kind, String from, String owner, String name, String desc, Path jar) throws IOException {
            ClassLoader l = side.loaderFor(jar);
            switch (kind) {
                case "class":
                    Object o = load(owner, l);
                    return o instanceof Throwable t ? t.toString() : null;
                case "version":
                    Object v = load(from, l);
                    return v instanceof UnsupportedClassVersionError e ? e.toString() : null;
                case "method":
                case "field": {
                    // the interface flag the instruction used: from the referencing class file
                    boolean itf = false;
                    URL u = l.getResource(from + ".class");
                    if (u != null) {
                        ClassInfo ci = parse(bytes(u), true);
                        for (Ref r : ci.refs) {
                            if (r.kind.equals(kind) && r.owner.equals(owner) && r.name.equals(name) && r.desc.equals(desc)) {
                                itf = r.itf;
                            }
                        }
                    }
                    return resolve(new Ref(kind, owner, name, desc, itf), l);
                }
                case "shadow":
                    return shadows(side).containsKey(owner) ? "in " + shadows(side).get(owner) : null;
                default:
                    return "unknown kind " + kind;
            }
        }
    }

    // ---- enumeration from entry points

    static List<String> entryPoints(Path jar) throws IOException {
        List<String> out = new ArrayList<>();
        try (JarFile j = new JarFile(jar.toFile(), false)) {
            var mf = j.getManifest();
            if (mf != null) {
                for (String a : new String[] {"Main-Class", "Program-Class"}) {
                    String v = mf.getMainAttributes().getValue(new Attributes.Name(a));
                    if (v != null && !v.isBlank()) {
                        out.add(v.trim().replace('.', '/'));
                    }
                }
            }
            for (JarEntry e : Collections.list(j.entries())) {
                String n = e.getName();
                if (!n.startsWith("META-INF/services/") || e.isDirectory() || n.length() == "META-INF/services/".length()) {
                    continue;
                }
                try (InputStream in = j.getInputStream(e)) {
                    for (String line : new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).split("\n")) {
                        int hash = line.indexOf('#');
                        String c = (hash >= 0 ? line.substring(0, hash) : line).trim();
                        if (!c.isEmpty()) {
                            out.add(c.replace('.', '/'));
                        }
                    }
                }
            }
        }
        return out;
    }

    record Located(String name, Path jar, ClassLoader loader) {}

    /** Walks every target's reachable classes on a side and resolves what they use. */
    static Map<String, Failure> enumerate(Side s, boolean versions) throws IOException {
        Resolver res = new Resolver(s);
        Map<String, Failure> fails = new TreeMap<>();
        Deque<Located> todo = new ArrayDeque<>();
        Set<String> seen = new HashSet<>(); // loader-qualified names
        int classes = 0;
        int refs = 0;
        for (Path t : s.targets) {
            ClassLoader l = s.loaderFor(t);
            for (String ep : entryPoints(t)) {
                todo.add(new Located(ep, t, l));
            }
        }
        while (!todo.isEmpty()) {
            Located at = todo.poll();
            if (!seen.add(System.identityHashCode(at.loader) + ":" + at.name)) {
                continue;
            }
            URL u = at.loader.getResource(at.name + ".class");
            if (u == null) {
                continue; // reported at the edge that names it (an entry point naming nothing is no reference)
            }
            if (!s.isTarget(u)) {
                continue; // the host's own class: its closure is the host's business
            }
            Path jar = jarOf(u);
            String jarName = jar.getFileName().toString();
            // the loader that defines it: a usrlib class may come from lib (parent-first, or not in usrlib)
            ClassLoader l = s.usrlib.contains(jar) ? s.userLoader : s.libLoader;
            ClassInfo ci = parse(bytes(u), true);
            classes++;
            if (versions && ci.major > Runtime.version().feature() + 44) {
                Object o = res.load(at.name, l);
                if (o instanceof UnsupportedClassVersionError e) {
                    Failure f = new Failure("version", at.name, at.name, "", "", jarName, e.getMessage());
                    fails.put(f.key(), f);
                    continue;
                }
            }
            for (Ref r : ci.refs) {
                refs++;
                if (r.kind.equals("class")) {
                    todo.add(new Located(r.owner, jar, l));
                    Object o = res.load(r.owner, l);
                    if (o instanceof Throwable t) {
                        String[] edge = res.missingEdge(at.name, r.owner, l, new HashSet<>());
                        if (edge != null) {
                            // the edge's "from" may be a class of another JAR: name its JAR
                            String fj = jarName;
                            if (!edge[0].equals(at.name)) {
                                URL fu = l.getResource(edge[0] + ".class");
                                Path fp = jarOf(fu);
                                fj = fp == null ? "jdk" : fp.getFileName().toString();
                            }
                            Failure f = new Failure("class", edge[0], edge[1], "", "", fj, t.toString());
                            fails.put(f.key(), f);
                        } else if (!(t instanceof UnsupportedClassVersionError)) {
                            Failure f = new Failure("class", at.name, r.owner, "", "", jarName, t.toString());
                            fails.put(f.key(), f);
                        }
                    }
                    continue;
                }
                if (res.load(r.owner, l) instanceof Throwable) {
                    continue; // the class failure is the one the JVM reports
                }
                String why = res.resolve(r, l);
                if (why != null) {
                    Failure f = new Failure(r.kind, at.name, r.owner, r.name, r.desc, jarName, why);
                    fails.put(f.key(), f);
                }
            }
        }
        System.out.println("STAT\t" + s.name + "\tclasses=" + classes + "\trefs=" + refs + "\tfailures=" + fails.size());
        return fails;
    }

    // ---- shadowing

    static final Map<Side, Map<String, String>> shadowCache = new HashMap<>();

    /**
     * The classes of a side found in two of its JARs with different contents
     * (CRC and size), with the JAR its loaders pick. Only classes with a JAR
     * among the targets count: the distribution's own JARs are the host.
     */
    static Map<String, String> shadows(Side s) throws IOException {
        Map<String, String> cached = shadowCache.get(s);
        if (cached != null) {
            return cached;
        }
        Map<String, Map<String, List<Path>>> byClass = new HashMap<>(); // class -> crc:size -> jars
        List<Path> all = new ArrayList<>(s.lib);
        all.addAll(s.usrlib);
        for (Path p : all) {
            try (JarFile j = new JarFile(p.toFile(), false)) {
                for (ZipEntry e : Collections.list(j.entries())) {
                    String n = e.getName();
                    if (!n.endsWith(".class") || n.equals("module-info.class") || n.startsWith("META-INF/")) {
                        continue;
                    }
                    byClass.computeIfAbsent(n.substring(0, n.length() - 6), k -> new HashMap<>())
                            .computeIfAbsent(Long.toHexString(e.getCrc()) + ":" + e.getSize(), k -> new ArrayList<>())
                            .add(p);
                }
            }
        }
        Map<String, String> out = new TreeMap<>();
        for (var e : byClass.entrySet()) {
            if (e.getValue().size() < 2) {
                continue;
            }
            boolean target = e.getValue().values().stream().flatMap(List::stream).anyMatch(s.targets::contains);
            if (!target) {
                continue;
            }
            // which copy wins: the usrlib loader's view when a usrlib JAR carries it
            boolean inUsrlib = e.getValue().values().stream().flatMap(List::stream).anyMatch(s.usrlib::contains);
            ClassLoader l = inUsrlib ? s.userLoader : s.libLoader;
            Path win = jarOf(l.getResource(e.getKey() + ".class"));
            out.put(e.getKey(), win == null ? "jdk" : win.getFileName().toString());
        }
        shadowCache.put(s, out);
        return out;
    }

    // ---- main

    public static void main(String[] args) throws Exception {
        Side host = new Side("host");
        Side own = new Side("own");
        List<String[]> checks = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(args[0]))) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int eq = line.indexOf('=');
            String k = line.substring(0, eq);
            String v = line.substring(eq + 1);
            if (k.equals("check")) {
                checks.add(v.split("\t", -1));
                continue;
            }
            Side s = k.startsWith("host.") ? host : k.startsWith("own.") ? own : null;
            if (s == null) {
                throw new IllegalArgumentException("spec line " + line);
            }
            Path p = Path.of(v).toAbsolutePath().normalize();
            switch (k.substring(k.indexOf('.') + 1)) {
                case "lib" -> s.lib.add(p);
                case "usrlib" -> s.usrlib.add(p);
                case "target" -> s.targets.add(p);
                default -> throw new IllegalArgumentException("spec line " + line);
            }
        }
        host.open();
        System.out.println("STAT\thost\tparent-first=" + String.join(";", host.parentFirst));
        Resolver hr = new Resolver(host);
        for (String[] c : checks) {
            if (c.length != 6) {
                throw new IllegalArgumentException("check line with " + c.length + " fields: " + String.join("|", c));
            }
            String why = hr.check(c[0], c[1], c[2], c[3], c[4], Path.of(c[5]).toAbsolutePath().normalize());
            String key = String.join("\t", c[0], c[1], c[2], c[3], c[4], Path.of(c[5]).getFileName().toString());
            System.out.println("CHECK\t" + (why == null ? "resolved" : "unresolved") + "\t" + key + "\t" + (why == null ? "" : why));
        }
        Map<String, Failure> hf = enumerate(host, true);
        for (var e : shadows(host).entrySet()) {
            Failure f = new Failure("shadow", e.getKey(), e.getKey(), "", "", e.getValue(), "differing copies; the loader picks " + e.getValue());
            hf.put(f.key(), f);
        }
        Map<String, Failure> of = Map.of();
        if (!own.lib.isEmpty()) {
            own.open();
            of = enumerate(own, false);
            Map<String, Failure> os = new TreeMap<>(of);
            for (var e : shadows(own).entrySet()) {
                Failure f = new Failure("shadow", e.getKey(), e.getKey(), "", "", e.getValue(), "");
                os.put(f.key(), f);
            }
            of = os;
        }
        for (Failure f : hf.values()) {
            System.out.println("FAIL\thost\t" + f.key() + "\t" + f.detail);
        }
        for (Failure f : of.values()) {
            System.out.println("FAIL\town\t" + f.key() + "\t" + f.detail);
        }
        int n = 0;
        for (Failure f : hf.values()) {
            // a shadowed class is reported wherever it is: only what fails to
            // link is excused by failing on the JARs' own release too
            if (f.kind.equals("shadow") || !of.containsKey(f.key())) {
                System.out.println("HOSTONLY\t" + f.key() + "\t" + f.detail);
                n++;
            }
        }
        System.out.println("STAT\thostonly\tcount=" + n);
    }
}
