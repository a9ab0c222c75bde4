package admission

import (
	"strings"
	"testing"
)

// FuzzStaticTLS: GLIBC_TUNABLES comes from the image's or the pod's
// environment, untrusted. staticTLS never panics, finds a reservation only
// where the list names the tunable, and follows glibc's "the last setting
// wins": a setting appended decides, one prepended changes nothing.
func FuzzStaticTLS(f *testing.F) {
	for _, s := range []string{"", "glibc.rtld.optional_static_tls=131072", "glibc.malloc.arena_max=2:glibc.rtld.optional_static_tls=0x8000",
		"glibc.rtld.optional_static_tls=512:glibc.rtld.optional_static_tls=lots", "glibc.rtld.optional_static_tls=", "::", "glibc.rtld.optional_static_tls=18446744073709551616"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tunables string) {
		size, ok := staticTLS(tunables)
		if ok && !strings.Contains(tunables, "glibc.rtld.optional_static_tls=") {
			t.Fatalf("staticTLS(%q) = %d without the tunable", tunables, size)
		}
		if got, ok := staticTLS(tunables + ":glibc.rtld.optional_static_tls=512"); !ok || got != 512 {
			t.Fatalf("an appended setting does not win over %q: %d %v", tunables, got, ok)
		}
		got, gotOK := staticTLS("glibc.rtld.optional_static_tls=999999:" + tunables)
		if ok && (got != size || !gotOK) {
			t.Fatalf("a prepended setting changed %q: %d %v, was %d", tunables, got, gotOK, size)
		}
	})
}
