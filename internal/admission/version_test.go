package admission

import (
	"slices"
	"testing"
)

func TestFlinkVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		ok   bool
		line string
	}{
		{"2.2.1", true, "2.2"}, {"1.18.1", true, "1.18"}, {"2.2", true, "2.2"}, {"2.3.0-SNAPSHOT", true, "2.3"},
		{"2", false, ""}, {"", false, ""}, {"2.x.1", false, ""}, {"2.2-SNAPSHOT", false, ""}, {"v2.2.1", false, ""},
	} {
		v, ok := ParseFlinkVersion(c.in)
		if ok != c.ok || ok && v.Line() != c.line || LineOf(c.in) != c.line {
			t.Errorf("ParseFlinkVersion(%q) = %+v, %v (line %q); want ok %v, line %q", c.in, v, ok, LineOf(c.in), c.ok, c.line)
		}
	}
	in := []string{"2.2.10", "1.18.1", "2.2.1", "2.10.0", "2.2.0", "2.2.1-SNAPSHOT"}
	slices.SortFunc(in, func(a, b string) int {
		va, _ := ParseFlinkVersion(a)
		vb, _ := ParseFlinkVersion(b)
		switch {
		case va.Less(vb):
			return -1
		case vb.Less(va):
			return 1
		}
		return 0
	})
	want := []string{"1.18.1", "2.2.0", "2.2.1", "2.2.1-SNAPSHOT", "2.2.10", "2.10.0"}
	if !slices.Equal(in, want) {
		t.Errorf("sorted %q, want %q", in, want)
	}
}
