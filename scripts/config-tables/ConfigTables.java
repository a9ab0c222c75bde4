import java.io.File;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * Prints the table of a Flink distribution's configuration options: every
 * public static ConfigOption field of every Flink class in lib (the planner
 * the loader embeds included), one line per key, sorted:
 *
 * <pre>KEY [m] [d:DEPRECATED_KEY]... [f:FALLBACK_KEY]...</pre>
 *
 * "m" marks a Map-typed option, which Flink also reads from KEY.SUBKEY entries.
 * Usage: java ConfigTables.java FLINK_HOME
 */
public class ConfigTables {
    public static void main(String[] args) throws Exception {
        Path lib = Path.of(args[0], "lib");
        List<URL> urls = new ArrayList<>();
        List<Path> jars = new ArrayList<>();
        Path tmp = Files.createTempDirectory("config-tables");
        try (var s = Files.list(lib)) {
            for (Path p : (Iterable<Path>) s.sorted()::iterator) {
                String n = p.getFileName().toString();
                if (!n.endsWith(".jar")) continue;
                jars.add(p);
                urls.add(p.toUri().toURL());
                if (n.startsWith("flink-table-planner-loader")) {
                    try (JarFile jf = new JarFile(p.toFile())) {
                        JarEntry e = jf.getJarEntry("flink-table-planner.jar");
                        if (e != null) {
                            Path nested = tmp.resolve("flink-table-planner.jar");
                            try (InputStream in = jf.getInputStream(e)) {
                                Files.copy(in, nested, StandardCopyOption.REPLACE_EXISTING);
                            }
                            jars.add(nested);
                            urls.add(nested.toUri().toURL());
                        }
                    }
                }
            }
        }
        URLClassLoader loader = new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
        Class<?> optionClass = Class.forName("org.apache.flink.configuration.ConfigOption", false, loader);
        Method key = optionClass.getMethod("key");
        Method fallbackKeys = optionClass.getMethod("fallbackKeys");
        Method clazz = optionClass.getDeclaredMethod("getClazz");
        clazz.setAccessible(true);
        Class<?> fallbackClass = Class.forName("org.apache.flink.configuration.FallbackKey", false, loader);
        Method fbKey = fallbackClass.getMethod("getKey");
        Method fbDeprecated = fallbackClass.getMethod("isDeprecated");

        Map<String, Set<String>> table = new TreeMap<>();
        Set<String> seen = new TreeSet<>();
        for (Path jar : jars) {
            try (JarFile jf = new JarFile(jar.toFile())) {
                for (Enumeration<JarEntry> en = jf.entries(); en.hasMoreElements(); ) {
                    String n = en.nextElement().getName();
                    if (!n.startsWith("org/apache/flink/") || !n.endsWith(".class") || n.contains("/shaded/")
                            || n.endsWith("module-info.class") || n.endsWith("package-info.class")) continue;
                    String cn = n.substring(0, n.length() - 6).replace('/', '.');
                    if (!seen.add(cn)) continue;
                    Field[] fields;
                    try {
                        Class<?> c = Class.forName(cn, false, loader);
                        if (!Modifier.isPublic(c.getModifiers())) continue;
                        fields = c.getDeclaredFields();
                    } catch (Throwable t) {
                        continue;
                    }
                    for (Field f : fields) {
                        int m = f.getModifiers();
                        if (!Modifier.isPublic(m) || !Modifier.isStatic(m) || !optionClass.isAssignableFrom(f.getType())) continue;
                        Object o;
                        try {
                            o = f.get(null);
                        } catch (Throwable t) {
                            System.err.println("skipped " + cn + "." + f.getName() + ": " + t);
                            continue;
                        }
                        if (o == null) continue;
                        String k = (String) key.invoke(o);
                        Set<String> attrs = table.computeIfAbsent(k, x -> new TreeSet<>());
                        if (Map.class.equals(clazz.invoke(o))) attrs.add("m");
                        for (Object fb : (Iterable<?>) fallbackKeys.invoke(o)) {
                            attrs.add(((Boolean) fbDeprecated.invoke(fb) ? "d:" : "f:") + fbKey.invoke(fb));
                        }
                    }
                }
            }
        }
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, Set<String>> e : table.entrySet()) {
            out.append(e.getKey());
            for (String a : e.getValue()) out.append(' ').append(a);
            out.append('\n');
        }
        System.out.print(out);
        for (File f : tmp.toFile().listFiles()) f.delete();
        tmp.toFile().delete();
    }
}
