import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ConfigurationUtils;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.runtime.entrypoint.ClusterConfiguration;
import org.apache.flink.runtime.entrypoint.ClusterConfigurationParserFactory;
import org.apache.flink.runtime.entrypoint.parser.CommandLineParser;

/**
 * The configuration real Flink runs with, case by case: each line of stdin
 * is a conf directory and the process's arguments, tab-separated. Flink's
 * own command-line parser (the one TaskManagerRunner uses) takes the
 * dynamic properties (-D) from the arguments, and
 * GlobalConfiguration.loadConfiguration(confDir, dynamicProperties) loads
 * the directory as the process would. Prints, per case, "key=value" lines
 * of Configuration.toMap(), sorted, newlines escaped, between "== BEGIN"
 * and "== END"; a case Flink refuses prints "== ERROR " and the message.
 * Run with the release's lib/ on the classpath.
 */
public class ConfigOracle {
    public static void main(String[] a) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            List<String> args = new ArrayList<>(List.of("--configDir", f[0]));
            args.addAll(Arrays.asList(f).subList(1, f.length));
            System.out.println("== BEGIN " + f[0]);
            try {
                ClusterConfiguration cc = new CommandLineParser<>(new ClusterConfigurationParserFactory())
                        .parse(args.toArray(new String[0]));
                Configuration dyn = ConfigurationUtils.createConfiguration(cc.getDynamicProperties());
                Configuration c = GlobalConfiguration.loadConfiguration(cc.getConfigDir(), dyn);
                Map<String, String> sorted = new TreeMap<>(c.toMap());
                StringBuilder out = new StringBuilder();
                for (Map.Entry<String, String> e : sorted.entrySet()) {
                    out.append(esc(e.getKey())).append('=').append(esc(e.getValue())).append('\n');
                }
                System.out.print(out);
            } catch (Throwable t) {
                StringBuilder msg = new StringBuilder(String.valueOf(t));
                for (Throwable c = t.getCause(); c != null; c = c.getCause()) msg.append("; caused by ").append(c);
                System.out.println("== ERROR " + esc(msg.toString()));
            }
            System.out.println("== END");
        }
    }

    static String esc(String s) {
        return s == null ? "<null>" : s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r");
    }
}
