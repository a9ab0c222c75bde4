package admission

import (
	"bytes"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

func FuzzParseJava(f *testing.F) {
	for _, s := range []string{"17.0.15", "11.0.21+9", "21.0.1+12-LTS", "1.8.0_392", "17", "17-ea", `"17.0.2"`, "", "banana", "1.", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseJava(s)
		if err == nil && (v.Major < 1 || v.Version == nil) {
			t.Fatalf("ParseJava(%q) = %+v without error", s, v)
		}
	})
}

func FuzzIdentify(f *testing.F) {
	f.Add([]byte("Manifest-Version: 1.0\nStreamFusion-Payload: loader\nStreamFusion-Module: streamfusion-loader\nStreamFusion-Artifact: tech.streamfusion:streamfusion-loader\nStreamFusion-Version: 0.1.0\nStreamFusion-Flink-Line: 2.2\nStreamFusion-Java-Release: 11\n"))
	f.Fuzz(func(t *testing.T, mf []byte) {
		m, err := payload.ParseManifest(bytes.NewReader(mf))
		if err != nil {
			return
		}
		id := Identify(&payload.JAR{Path: "/x.jar", Manifest: &m})
		if id != nil && id.Valid() && (id.Module == "" || id.Version == "" || id.Line == "") {
			t.Fatalf("valid identity with empty fields: %+v", id)
		}
	})
}
