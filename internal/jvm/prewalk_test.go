package jvm

import (
	"slices"
	"strconv"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// A prewalk parses usrlib's classes reachable through usrlib alone (not
// the parent-first ones), and the walk of the classpath adopting it is
// the walk without it.
func TestPrewalk(t *testing.T) {
	main := testkit.Class{Name: "com/acme/Main", News: []string{"com/acme/Used", "org/apache/flink/Base", "org/apache/flink/Mine", "com/acme/lib/L"}}
	used := testkit.Class{Name: "com/acme/Used", Super: "com/acme/Parent"}
	parent := testkit.Class{Name: "com/acme/Parent", News: []string{"com/acme/Main"}}
	mine := testkit.Class{Name: "org/apache/flink/Mine", News: []string{"com/acme/Behind"}}
	behind := testkit.Class{Name: "com/acme/Behind"}
	unused := testkit.Class{Name: "com/acme/Unused"}
	j, job := archive(t, "/opt/flink/usrlib/job.jar", testkit.Manifest("Main-Class", "com.acme.Main"), []testkit.Class{main, used, parent, mine, behind, unused}, nil)
	_, other := archive(t, "/opt/flink/usrlib/other.jar", "", []testkit.Class{{Name: "com/acme/lib/L"}}, nil)
	pf := []string{"org.apache.flink."}
	usrlib := []*payload.Archive{job, other}
	walk := func(p *Prewalk) []string {
		cp := NewClasspath([]*payload.Archive{host(t)}, usrlib, pf, nil)
		cp.Adopt(p)
		var got []string
		cp.Reachable([]Scope{{JAR: job, Loader: cp.Usrlib, Roots: EntryPoints(j, job)}, {JAR: other, Loader: cp.Usrlib}}, func(scope int, c *classfile.Class) {
			got = append(got, strconv.Itoa(scope)+" "+c.Name+" "+strconv.Itoa(len(c.Classes)))
		})
		return got
	}
	want := walk(nil)
	p := StartPrewalk(usrlib, []PrewalkScope{{JAR: job, Roots: EntryPoints(j, job)}}, pf)
	<-p.done // the whole prewalk, for what it parsed
	var parsed []string
	for a, m := range p.classes {
		for n := range m {
			parsed = append(parsed, a.Path+" "+n)
		}
	}
	slices.Sort(parsed)
	// Mine is parent-first (lib's first), and what only it names is left
	// to the walk; Unused is not reached.
	if w := []string{"/opt/flink/usrlib/job.jar com/acme/Main", "/opt/flink/usrlib/job.jar com/acme/Parent", "/opt/flink/usrlib/job.jar com/acme/Used", "/opt/flink/usrlib/other.jar com/acme/lib/L"}; !slices.Equal(parsed, w) {
		t.Errorf("prewalk parsed %v, want %v", parsed, w)
	}
	if got := walk(p); !slices.Equal(got, want) {
		t.Errorf("walk adopting the prewalk: %v, want %v", got, want)
	}
	// A second classpath does not take classes the first's walk visited.
	if got := walk(p); !slices.Equal(got, want) {
		t.Errorf("walk adopting the prewalk again: %v, want %v", got, want)
	}
	p.Stop()
	p.Stop()
}
