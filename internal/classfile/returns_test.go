package classfile_test

import (
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// TestParseReturns reads the constant a getScheme-like method returns, as
// javac compiles `return "s3";`, and nothing for any other body.
func TestParseReturns(t *testing.T) {
	c := testkit.Class{Name: "a/F", Returns: map[string]string{"getScheme": "s3", "wide": "ldc_w:s3a", "none": "", "other": "x"}}
	for _, tc := range []struct{ method, want string }{
		{"getScheme", "s3"}, {"wide", "s3a"}, {"none", ""}, {"missing", ""}, {"", ""},
	} {
		got, err := classfile.Parse(c.Bytes(), classfile.Options{Returns: tc.method})
		if err != nil {
			t.Fatal(err)
		}
		if got.Returns != tc.want {
			t.Errorf("Returns %q: got %q, want %q", tc.method, got.Returns, tc.want)
		}
	}
	// A method of that name with another descriptor says nothing.
	c = testkit.Class{Name: "a/G", Methods: []testkit.Member{{Name: "getScheme", Descriptor: "()V"}}}
	if got, err := classfile.Parse(c.Bytes(), classfile.Options{Returns: "getScheme"}); err != nil || got.Returns != "" {
		t.Errorf("getScheme()V: %q, %v", got.Returns, err)
	}
}
