import java.io.File;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarInputStream;
import java.util.jar.Manifest;

/**
 * The JVM-side check the entrypoint is compared with: the reads a loader's
 * init-time check does. For every JAR below lib: its manifest and every
 * entry of its central directory; for a loader, the manifest of its
 * embedded core.
 */
public final class JarCheck {
    public static void main(String[] args) throws Exception {
        List<File> jars = new ArrayList<>();
        collect(new File(args[0]), jars);
        Collections.sort(jars);
        long entries = 0;
        int payloads = 0;
        for (File f : jars) {
            try (JarFile jar = new JarFile(f)) {
                Manifest m = jar.getManifest();
                for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); e.nextElement()) {
                    entries++;
                }
                if (m == null) {
                    continue;
                }
                if (m.getMainAttributes().getValue("StreamFusion-Payload") != null) {
                    payloads++;
                }
                String core = m.getMainAttributes().getValue("StreamFusion-Embedded-Core");
                if (core != null) {
                    try (InputStream in = jar.getInputStream(jar.getEntry(core));
                         JarInputStream nested = new JarInputStream(in)) {
                        Manifest cm = nested.getManifest();
                        if (cm == null || cm.getMainAttributes().getValue("StreamFusion-Version") == null) {
                            System.exit(78);
                        }
                    }
                }
            }
        }
        if (payloads == 0) {
            System.exit(78);
        }
        System.err.println("jvm check: " + jars.size() + " jars, " + entries + " entries, " + payloads + " payloads");
    }

    private static void collect(File dir, List<File> out) {
        File[] files = dir.listFiles();
        if (files == null) {
            return;
        }
        for (File f : files) {
            if (f.isDirectory()) {
                collect(f, out);
            } else if (f.getName().endsWith(".jar")) {
                out.add(f);
            }
        }
    }
}
