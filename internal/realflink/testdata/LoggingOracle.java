import org.slf4j.LoggerFactory;

/**
 * The logger factory SLF4J binds to on the class path it runs with (lib in
 * the order Flink's bin/config.sh builds it, flink-dist last), as every
 * Flink process's first LoggerFactory.getLogger does: prints
 * "== FACTORY <class>" (org.slf4j.helpers.NOPLoggerFactory when no
 * binding was found and every log line is dropped), then takes a logger
 * as a Flink class's static LOG does and prints "== LOGGER ok", or
 * "== FAILED <exception>" when that throws (the process would die of it).
 */
public class LoggingOracle {
    public static void main(String[] a) {
        System.out.println("== FACTORY " + LoggerFactory.getILoggerFactory().getClass().getName());
        try {
            LoggerFactory.getLogger(LoggingOracle.class);
            System.out.println("== LOGGER ok");
        } catch (Throwable t) {
            System.out.println("== FAILED " + t);
        }
    }
}
