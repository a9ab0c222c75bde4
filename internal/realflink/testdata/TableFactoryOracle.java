import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;

/**
 * What real Flink's FactoryUtil finds for each identifier in args, asked
 * for a DynamicTableSourceFactory on the class path it runs with (lib, in
 * Flink's order): "== FACTORY id OK class", or "== FACTORY id FAILS" and
 * the exception, as a statement naming the identifier would fail.
 */
public class TableFactoryOracle {
    public static void main(String[] a) {
        ClassLoader cl = TableFactoryOracle.class.getClassLoader();
        for (String id : a) {
            try {
                DynamicTableSourceFactory f = FactoryUtil.discoverFactory(cl, DynamicTableSourceFactory.class, id);
                System.out.println("== FACTORY " + id + " OK " + f.getClass().getName());
            } catch (Throwable t) {
                System.out.println("== FACTORY " + id + " FAILS " + String.valueOf(t).replace('\n', ' '));
            }
        }
    }
}
