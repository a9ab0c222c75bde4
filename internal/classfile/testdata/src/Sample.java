import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

// Sample is compiled into testdata/classes (see README.md): it uses every
// kind of constant an instruction can name.
public class Sample extends ArrayList<String> implements Runnable, Comparable<Sample> {
    static final String CONSTANT = "a/b/NotAClass";
    static final List<String> PATTERNS = List.of("java.", "scala.");
    int count;
    static long total;

    // Inner is named by the InnerClasses attribute only: no instruction uses it.
    static class Inner {}

    public Sample() { super(4); }

    public void run() {
        Supplier<String> s = () -> "x" + count;
        Object o = s.get();
        if (o instanceof CharSequence) {
            total += ((CharSequence) o).length();
        }
        int[][] grid = new int[2][3];
        String[] names = new String[grid.length];
        Class<?> k = Thread.class;
        switch (names.length) {
            case 1: count = 1; break;
            case 2: count = 2; break;
            case 3: count = 3; break;
            default: count = 0;
        }
        switch (k.getName().length()) {
            case 10: count++; break;
            case 1000: count--; break;
            default:
        }
        Runnable r = this::toString;
        r.run();
        add(new StringBuilder().append(names.length).toString());
    }

    public int compareTo(Sample other) { return Integer.compare(count, other.count); }
}
