package admission

import "testing"

// The newest version of the missing one's family, compared by number
// (GLIBCXX_3.4.30 is newer than GLIBCXX_3.4.9), other families aside.
func TestHighestVersionOfTheFamily(t *testing.T) {
	for _, c := range []struct {
		defined, missing []string
		want             string
	}{
		{[]string{"GLIBCXX_3.4", "GLIBCXX_3.4.9", "GLIBCXX_3.4.30", "CXXABI_1.3.13"}, []string{"GLIBCXX_3.4.32"}, "GLIBCXX_3.4.30"},
		{[]string{"GLIBCXX_3.4.30", "CXXABI_1.3", "CXXABI_1.3.13", "CXXABI_1.3.2"}, []string{"CXXABI_1.3.15"}, "CXXABI_1.3.13"},
		{[]string{"GLIBC_2.2.5", "GLIBC_2.36", "GLIBC_2.4"}, []string{"GLIBC_2.38"}, "GLIBC_2.36"},
		{[]string{"GCC_3.0"}, []string{"GLIBC_2.38"}, "no GLIBC version (defines GCC_3.0)"},
	} {
		if got := highest(c.defined, c.missing); got != c.want {
			t.Errorf("highest(%v, %v) = %q, want %q", c.defined, c.missing, got, c.want)
		}
	}
}
