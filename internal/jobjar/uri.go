package jobjar

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// HeaderOption is the operator's option naming the headers of a JAR's
// HTTP request, "Name1:value1,Name2:value2", set in a FlinkSessionJob's
// spec.flinkConfiguration.
const HeaderOption = "kubernetes.operator.user.artifacts.http.header"

// Parse reads a jarURI: it must be absolute (have a scheme); an http or
// https URI must name a host.
func Parse(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("jarURI %q: %w", clip(raw), errors.Unwrap(err))
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("jarURI %q: no scheme (https://, http://, local://, s3://...)", clip(raw))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" {
		return nil, fmt.Errorf("jarURI %q: an %s URI needs a host", clip(raw), u.Scheme)
	}
	return u, nil
}

// plainJAR is a file name the deep check can place in usrlib.
var plainJAR = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,200}\.jar$`)

// Name is the JAR's file name as the operator names it (the last segment
// of the jarURI's path, not of a redirect's), or "job.jar" when that is
// not a plain *.jar name.
func Name(u *url.URL) string {
	if n := path.Base(u.Path); plainJAR.MatchString(n) {
		return n
	}
	return "job.jar"
}

// Redact renders u for messages and logs without its password and with
// its query elided: a presigned URL's query is a credential.
func Redact(u *url.URL) string { return redact(u) }

func redact(u *url.URL) string {
	c := *u
	if c.RawQuery != "" {
		c.RawQuery = "..."
	}
	c.Fragment, c.RawFragment = "", ""
	return c.Redacted()
}

// scrub drops the URL net/http repeats in its errors (it would carry the
// query) and keeps what went wrong.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// ParseHeaders reads HeaderOption's value: comma-separated Name:value
// pairs, as Flink writes a map option. Quoting is not supported; an entry
// that is not a valid header is an error naming its position only (the
// value may be a credential).
func ParseHeaders(s string) (http.Header, error) {
	h := http.Header{}
	if strings.TrimSpace(s) == "" {
		return h, nil
	}
	for i, entry := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(entry, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: entry %d: no ':' between a header name and its value", HeaderOption, i+1)
		case !httpguts.ValidHeaderFieldName(k):
			return nil, fmt.Errorf("%s: entry %d: not a header name", HeaderOption, i+1)
		case !httpguts.ValidHeaderFieldValue(v):
			return nil, fmt.Errorf("%s: entry %d: the value of %s holds a character a header cannot", HeaderOption, i+1, k)
		}
		h.Add(k, v)
	}
	return h, nil
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
