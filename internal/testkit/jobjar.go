package testkit

// The job JARs of the deep-check cases of a session job, written as javac
// lays classes out (ClassJAR): one whose Main-Class uses only its own
// classes and the JDK, and a Flink 1.x style job whose source implements
// SourceFunction, which Flink 2 removed.

// GoodJobJAR is a job JAR that links against any Flink lib.
func GoodJobJAR() []byte {
	return ClassJAR(Manifest("Main-Class", "com.acme.Job"), []Class{
		{Name: "com/acme/Job", News: []string{"com/acme/Step"}, Calls: []Call{{Owner: "com/acme/Step", Name: "<init>", Descriptor: "()V"}}},
		{Name: "com/acme/Step", Methods: []Member{{Name: "<init>", Descriptor: "()V"}}},
	}, nil)
}

// MismatchedJobJAR is a job JAR whose source implements Flink 1.x's
// SourceFunction: it does not link against a Flink 2 lib.
func MismatchedJobJAR() []byte {
	return ClassJAR(Manifest("Main-Class", "com.acme.LegacyJob"), []Class{
		{Name: "com/acme/LegacyJob", News: []string{"com/acme/LegacySource"}, Calls: []Call{{Owner: "com/acme/LegacySource", Name: "<init>", Descriptor: "()V"}}},
		{Name: "com/acme/LegacySource", Interfaces: []string{"org/apache/flink/streaming/api/functions/source/SourceFunction"}, Methods: []Member{{Name: "<init>", Descriptor: "()V"}}},
	}, nil)
}

// MismatchedJobJARFinding is the start of the deep check's sentence on
// MismatchedJobJAR, after its path.
const MismatchedJobJARFinding = "LegacySource does not load: its supertype org.apache.flink.streaming.api.functions.source.SourceFunction has no class file on the classpath (reached from LegacyJob)"
