package tech.streamfusion;

/** A class so the corpus JARs carry StreamFusion content. */
public final class X {
    private X() {}

    public static String name() {
        return "streamfusion-core";
    }
}
