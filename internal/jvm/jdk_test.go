package jvm

import (
	"strings"
	"testing"
)

// jdk answers as the plain prefix list does, on names at and around
// every prefix.
func TestJDKAsItsPrefixes(t *testing.T) {
	names := []string{"", "j", "o", "org", "org/", "org/apache/flink/Api", "javax", "java/lang/Object", "javax/annotation/Nullable",
		"jdk/internal/Misc", "jdkx/Y", "sun/misc/Unsafe", "sunny/X", "com/sun/net/X", "com/sunny/X", "com/google/X",
		"org/w3c/dom/Node", "org/xml/sax/X", "org/ietf/jgss/X", "org/omg/CORBA/X", "org/w3cx/X", "org/xmlpull/X", "Ljava/lang/X;", "[Ljava/lang/X;"}
	for _, p := range jdkPrefixes {
		names = append(names, p, p+"X", strings.TrimSuffix(p, "/"), p[:len(p)-2])
	}
	for _, n := range names {
		want := false
		for _, p := range jdkPrefixes {
			want = want || strings.HasPrefix(n, p)
		}
		if got := jdk(n); got != want {
			t.Errorf("jdk(%q) = %v, want %v", n, got, want)
		}
	}
}

func FuzzJDKAsItsPrefixes(f *testing.F) {
	for _, p := range jdkPrefixes {
		f.Add(p + "X")
	}
	f.Fuzz(func(t *testing.T, n string) {
		want := false
		for _, p := range jdkPrefixes {
			want = want || strings.HasPrefix(n, p)
		}
		if jdk(n) != want {
			t.Fatalf("jdk(%q) = %v, want %v", n, !want, want)
		}
	})
}

func BenchmarkJDK(b *testing.B) {
	names := []string{"org/apache/flink/api/common/Foo", "java/lang/String", "com/google/common/base/Preconditions", "org/apache/kafka/clients/X", "javax/annotation/Nullable"}
	for b.Loop() {
		for _, n := range names {
			jdk(n)
		}
	}
}
