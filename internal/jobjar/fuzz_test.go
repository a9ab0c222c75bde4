package jobjar

import (
	"strings"
	"testing"
)

// FuzzParseHeaders: the operator's header option, written by a tenant,
// is an error or headers net/http sends as they are (no injected line).
func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"Authorization: Bearer abc, X-Tenant:blue", "", "a", "A:b,,", "A:\r\nB: c", ":", "A:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHeaders(s)
		if err != nil {
			return
		}
		for k, vs := range h {
			if k == "" || strings.ContainsAny(k, " :\r\n") {
				t.Fatalf("header name %q from %q", k, s)
			}
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n") {
					t.Fatalf("header value %q from %q", v, s)
				}
			}
		}
		var b strings.Builder
		if err := h.Write(&b); err != nil {
			t.Fatal(err)
		}
		values := 0
		for _, vs := range h {
			values += len(vs)
		}
		if got := strings.Count(b.String(), "\r\n"); got != values {
			t.Fatalf("%q: %d lines for %d header values", s, got, values)
		}
	})
}

// FuzzParseURI: a jarURI is an error or a URL whose file name the deep
// check can place in usrlib, and whose redacted form keeps no query.
func FuzzParseURI(f *testing.F) {
	for _, s := range []string{"https://h/a/TopSpeed.jar", "local:///opt/flink/usrlib/job.jar", "https://u:p@h/x.jar?sig=1#f", "http://[::1]:80/%2e%2e/.jar", "s3://b/k", "/x.jar", "https:///x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := Parse(s)
		if err != nil {
			return
		}
		n := Name(u)
		if n != "job.jar" && !plainJAR.MatchString(n) || strings.ContainsAny(n, "/\\\x00") || n == ".." {
			t.Fatalf("Name(%q) = %q", s, n)
		}
		r := Redact(u)
		if u.RawQuery != "" && !strings.HasSuffix(r, "?...") {
			t.Fatalf("Redact(%q) = %q keeps the query", s, r)
		}
	})
}
