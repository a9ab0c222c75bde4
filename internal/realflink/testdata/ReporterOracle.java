import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.List;
import java.util.function.Function;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.core.plugin.PluginManager;
import org.apache.flink.core.plugin.PluginUtils;

/**
 * The reporters real Flink sets up from a conf directory (args[0]) with the
 * plugins FLINK_PLUGINS_DIR holds, as a JobManager's metric registry does:
 * 1.x's ReporterSetup.fromConfiguration, 2.x's ReporterSetupBuilder for
 * metrics, traces and events (found by reflection: the two lines' APIs
 * differ). Prints "== REPORTER kind name" for every reporter set up, and
 * "== PORT kind name port" for a Prometheus reporter's port.
 */
public class ReporterOracle {
    public static void main(String[] a) throws Exception {
        Configuration conf = GlobalConfiguration.loadConfiguration(a[0]);
        PluginManager pm = PluginUtils.createPluginManagerFromRootFolder(conf);
        Class<?> builder;
        try {
            builder = Class.forName("org.apache.flink.runtime.metrics.ReporterSetupBuilder");
        } catch (ClassNotFoundException e) {
            Method m = Class.forName("org.apache.flink.runtime.metrics.ReporterSetup")
                    .getMethod("fromConfiguration", Configuration.class, PluginManager.class);
            print("metrics", (List<?>) m.invoke(null, conf, pm));
            System.exit(0); // reporters keep threads (an HTTP server) running
            return;
        }
        Class<?> filters = Class.forName("org.apache.flink.runtime.metrics.filter.DefaultReporterFilters");
        for (String kind : new String[] {"metrics", "traces", "events"}) {
            Field f = builder.getField(kind.equals("metrics") ? "METRIC_SETUP_BUILDER" : kind.equals("traces") ? "TRACE_SETUP_BUILDER" : "EVENT_SETUP_BUILDER");
            Method filter = filters.getMethod(kind + "FromConfiguration", Configuration.class);
            Function<Configuration, Object> fn = c -> {
                try {
                    return filter.invoke(null, c);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            };
            Method from = builder.getMethod("fromConfiguration", Configuration.class, Function.class, PluginManager.class);
            print(kind, (List<?>) from.invoke(f.get(null), conf, fn, pm));
        }
        System.exit(0); // reporters keep threads (an HTTP server) running
    }

    static void print(String kind, List<?> setups) throws Exception {
        for (Object s : setups) {
            Object name = s.getClass().getMethod("getName").invoke(s);
            System.out.println("== REPORTER " + kind + " " + name);
            // The port a Prometheus reporter serves on (its package-private
            // getPort): what it made of its port option.
            Object r = s.getClass().getMethod("getReporter").invoke(s);
            if (r.getClass().getName().equals("org.apache.flink.metrics.prometheus.PrometheusReporter")) {
                Method port = r.getClass().getDeclaredMethod("getPort");
                port.setAccessible(true);
                System.out.println("== PORT " + kind + " " + name + " " + port.invoke(r));
            }
        }
    }
}
