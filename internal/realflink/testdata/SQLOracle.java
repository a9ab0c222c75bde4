import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.catalog.CatalogBaseTable;
import org.apache.flink.table.catalog.ObjectPath;

/**
 * What real Flink's planner makes of a SQL file (args[0]), statement by
 * statement (the file's statements end with ";" at a line's end): each
 * CREATE is executed ("== CREATE name OK", or "FAILS message"); each table
 * created prints the options Flink parsed that name a factory
 * ("== OPTIONS name key=value ...", sorted) and is then planned as a
 * source (EXPLAIN SELECT * FROM it), which makes FactoryUtil discover
 * its connector and formats: "== TABLE name OK" or "FAILS message".
 */
public class SQLOracle {
    public static void main(String[] a) throws Exception {
        TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        String sql = Files.readString(Path.of(a[0]));
        for (String stmt : sql.split(";\\s*\\n")) {
            stmt = stmt.replaceAll("(?m)^\\s*--.*$", "").strip(); // comment lines
            if (stmt.isEmpty()) {
                continue;
            }
            String[] words = stmt.split("\\s+");
            boolean table = words[1].equalsIgnoreCase("TABLE");
            String name = words[2];
            try {
                env.executeSql(stmt);
                System.out.println("== CREATE " + name + " OK");
            } catch (Throwable t) {
                System.out.println("== CREATE " + name + " FAILS " + oneLine(t));
                continue;
            }
            if (!table) {
                continue;
            }
            CatalogBaseTable t = env.getCatalog(env.getCurrentCatalog()).get()
                    .getTable(new ObjectPath(env.getCurrentDatabase(), name));
            StringBuilder b = new StringBuilder("== OPTIONS " + name);
            for (Map.Entry<String, String> e : new TreeMap<>(t.getOptions()).entrySet()) {
                if (e.getKey().equals("connector") || e.getKey().endsWith("format")) {
                    b.append(' ').append(e.getKey()).append('=').append(e.getValue());
                }
            }
            System.out.println(b);
            try {
                env.explainSql("SELECT * FROM " + name);
                System.out.println("== TABLE " + name + " OK");
            } catch (Throwable x) {
                System.out.println("== TABLE " + name + " FAILS " + oneLine(x));
            }
        }
        System.exit(0);
    }

    static String oneLine(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            String m = String.valueOf(c);
            b.append(m, 0, Math.min(m.length(), 400)).append(" / ");
        }
        return b.toString().replace('\n', ' ');
    }
}
