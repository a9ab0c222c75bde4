package jvm

import (
	"strings"
	"testing"
)

func TestBinaryPrefix(t *testing.T) {
	for _, c := range []struct {
		internal, p string
		want        bool
	}{
		{"org/apache/flink/Base", "org.apache.flink.", true},
		{"org/apache/flinkx/Base", "org.apache.flink.", false},
		{"org/slf4j/Logger", "org.slf4j", true},
		{"org/xml/sax/X", "org.xml", true},
		{"java/lang/Object", "java.", true},
		{"jav", "java.", false},
		{"com/acme/X", "org.", false},
	} {
		if got := binaryPrefix(c.internal, c.p); got != c.want || got != strings.HasPrefix(strings.ReplaceAll(c.internal, "/", "."), c.p) {
			t.Errorf("binaryPrefix(%q, %q) = %v, want %v", c.internal, c.p, got, c.want)
		}
	}
}
