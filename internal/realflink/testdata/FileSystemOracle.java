import java.net.URI;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.ServiceLoader;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.configuration.HighAvailabilityOptions;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystemFactory;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.fs.UnsupportedFileSystemSchemeException;
import org.apache.flink.core.plugin.PluginManager;
import org.apache.flink.core.plugin.PluginUtils;
import org.apache.flink.runtime.jobmanager.HighAvailabilityMode;

/**
 * What real Flink's FileSystem makes of a conf directory (args[0]) and the
 * plugins folder FLINK_PLUGINS_DIR names, as a JobManager sets it up:
 * GlobalConfiguration loads the directory, PluginUtils builds the plugin
 * manager from the plugins folder (a failure there fails the process at
 * start: "== START-FAILS"), FileSystem.initialize registers lib's and the
 * plugins' factories ("== SCHEME scheme class", from each factory's own
 * getScheme()), and FileSystem.get opens each configured location (HA
 * storage only with HA on, as Flink reads it): "== LOCATION key value OK"
 * or "FAILS" for UnsupportedFileSystemSchemeException, the failure the
 * product predicts, and for a LinkageError (the factory was found, and its
 * code does not link against this Flink: a plugin of another release);
 * any other outcome means a factory took the scheme.
 */
public class FileSystemOracle {
    public static void main(String[] a) throws Exception {
        Configuration conf = GlobalConfiguration.loadConfiguration(a[0]);
        PluginManager pm;
        try {
            pm = PluginUtils.createPluginManagerFromRootFolder(conf);
        } catch (Throwable t) {
            System.out.println("== START-FAILS " + oneLine(t));
            return;
        }
        FileSystem.initialize(conf, pm);
        schemes(ServiceLoader.load(FileSystemFactory.class).iterator());
        schemes(pm.load(FileSystemFactory.class));
        List<ConfigOption<String>> options = new ArrayList<>(List.of(
                CheckpointingOptions.CHECKPOINTS_DIRECTORY, CheckpointingOptions.SAVEPOINT_DIRECTORY, JobManagerOptions.ARCHIVE_DIR));
        if (HighAvailabilityMode.isHighAvailabilityModeActivated(conf)) {
            options.add(HighAvailabilityOptions.HA_STORAGE_PATH);
        }
        for (ConfigOption<String> o : options) {
            String v = conf.get(o);
            if (v == null) {
                continue;
            }
            String outcome = "OK";
            try {
                URI uri = new Path(v).toUri();
                FileSystem.get(uri);
            } catch (UnsupportedFileSystemSchemeException e) {
                outcome = "FAILS " + oneLine(e);
            } catch (LinkageError e) {
                // the factory was found, and its code does not link against
                // this Flink (a plugin of another release): no file system
                outcome = "FAILS " + oneLine(e);
            } catch (Throwable t) {
                outcome = "OK (the factory was found: " + oneLine(t) + ")";
            }
            System.out.println("== LOCATION " + o.key() + " " + v + " " + outcome);
        }
    }

    // schemes prints each factory's scheme; a factory that cannot be
    // instantiated (a plugin's that does not link against this Flink) is
    // skipped, as FileSystem.initialize skips it after logging it.
    static void schemes(Iterator<FileSystemFactory> it) {
        while (true) {
            FileSystemFactory f;
            try {
                if (!it.hasNext()) {
                    return;
                }
                f = it.next();
            } catch (Throwable t) {
                System.out.println("== FACTORY-FAILS " + oneLine(t));
                continue;
            }
            System.out.println("== SCHEME " + f.getScheme() + " " + f.getClass().getName());
        }
    }

    static String oneLine(Throwable t) {
        return String.valueOf(t).replace('\n', ' ');
    }
}
