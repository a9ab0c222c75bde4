import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarInputStream;
import java.util.jar.Manifest;

/**
 * The JVM's view of JAR files, for the differential corpus test.
 *
 * Reads one line per file from standard input: "lib PATH" or "loader PATH".
 * Prints one JSON object per line on standard output saying what
 * java.util.jar.JarFile and java.util.jar.JarInputStream read from the file;
 * for a loader (a JAR whose manifest names StreamFusion-Embedded-Core), also
 * what both read from that nested entry, as a loader would: the entry
 * extracted to a file and opened as a JarFile, and the entry's stream read
 * with a JarInputStream.
 */
public final class JarOracle {
    private static final String EMBEDDED = "StreamFusion-Embedded-Core";

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isEmpty()) {
                continue;
            }
            int sp = line.indexOf(' ');
            String kind = line.substring(0, sp);
            String path = line.substring(sp + 1);
            out.setLength(0);
            out.append("{\"kind\":").append(str(kind)).append(",\"path\":").append(str(path));
            File file = new File(path);
            out.append(",\"jarfile\":");
            String core = jarFile(file, out);
            out.append(",\"jis\":");
            try (InputStream s = Files.newInputStream(file.toPath())) {
                jarInputStream(s, out);
            }
            if (kind.equals("loader")) {
                out.append(",\"core\":").append(str(core));
                if (core != null) {
                    nested(file, core, out);
                }
            }
            out.append('}');
            System.out.println(out);
        }
    }

    /** Writes the JarFile reading of file; returns the embedded core entry named by its manifest. */
    private static String jarFile(File file, StringBuilder out) {
        String core = null;
        out.append('{');
        try (JarFile jf = new JarFile(file)) {
            Manifest m = jf.getManifest();
            out.append("\"ok\":true,\"entries\":").append(jf.size());
            out.append(",\"manifest\":");
            manifest(m, out);
            if (m != null) {
                core = m.getMainAttributes().getValue(EMBEDDED);
            }
            // Reading every entry tells whether damage lies beyond the
            // manifest; informational only.
            out.append(",\"walk\":").append(str(walk(jf)));
        } catch (Exception | Error e) {
            out.append("\"ok\":false,\"err\":").append(str(e.toString()));
        }
        out.append('}');
        return core;
    }

    private static String walk(JarFile jf) {
        byte[] buf = new byte[8192];
        try {
            for (var en = jf.entries(); en.hasMoreElements(); ) {
                JarEntry e = en.nextElement();
                try (InputStream s = jf.getInputStream(e)) {
                    while (s.read(buf) >= 0) {
                        // drain
                    }
                }
            }
            return null;
        } catch (Exception | Error e) {
            return e.toString();
        }
    }

    /** Writes the JarInputStream reading: the constructor and getManifest(). */
    private static void jarInputStream(InputStream s, StringBuilder out) {
        out.append('{');
        try (JarInputStream jis = new JarInputStream(s)) {
            Manifest m = jis.getManifest();
            out.append("\"ok\":true,\"manifest\":");
            manifest(m, out);
            String walk = null;
            int n = 0;
            try {
                while (jis.getNextJarEntry() != null) {
                    n++;
                }
            } catch (Exception | Error e) {
                walk = e.toString();
            }
            out.append(",\"entries\":").append(n).append(",\"walk\":").append(str(walk));
        } catch (Exception | Error e) {
            out.append("\"ok\":false,\"err\":").append(str(e.toString()));
        }
        out.append('}');
    }

    private static void nested(File loader, String core, StringBuilder out) throws IOException {
        Path tmp = Files.createTempFile("jaroracle", ".jar");
        try (JarFile outer = new JarFile(loader)) {
            JarEntry e = outer.getJarEntry(core);
            if (e == null) {
                out.append(",\"nested\":null");
                return;
            }
            byte[] data;
            try (InputStream s = outer.getInputStream(e)) {
                data = s.readAllBytes();
            } catch (Exception | Error x) {
                out.append(",\"nested\":{\"err\":").append(str(x.toString())).append('}');
                return;
            }
            Files.write(tmp, data);
            out.append(",\"nested\":{\"jarfile\":");
            jarFile(tmp.toFile(), out);
            out.append(",\"jis\":");
            try (InputStream s = outer.getInputStream(e)) {
                jarInputStream(s, out);
            }
            out.append(",\"bytes_jis\":");
            jarInputStream(new ByteArrayInputStream(data), out);
            out.append('}');
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private static void manifest(Manifest m, StringBuilder out) {
        if (m == null) {
            out.append("null");
            return;
        }
        Map<String, String> sorted = new TreeMap<>();
        for (Map.Entry<Object, Object> a : m.getMainAttributes().entrySet()) {
            sorted.put(((Attributes.Name) a.getKey()).toString(), (String) a.getValue());
        }
        out.append('{');
        boolean first = true;
        for (Map.Entry<String, String> a : sorted.entrySet()) {
            if (!first) {
                out.append(',');
            }
            first = false;
            out.append(str(a.getKey())).append(':').append(str(a.getValue()));
        }
        out.append('}');
    }

    private static String str(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                default:
                    if (c < 0x20 || c > 0x7e) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }
}
