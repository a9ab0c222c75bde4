package jvm

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

func archive(t *testing.T, path string, manifest string, classes []testkit.Class, services map[string][]string) (*payload.JAR, *payload.Archive) {
	t.Helper()
	data := testkit.ClassJAR(manifest, classes, services)
	r := bytes.NewReader(data)
	a, err := payload.ReadArchive(r, int64(len(data)), path)
	if err != nil {
		t.Fatal(err)
	}
	return payload.Read(r, int64(len(data)), path, payload.Options{}), a
}

func m(name, desc string) testkit.Member { return testkit.Member{Name: name, Descriptor: desc} }

// host is a flink-dist of a small hierarchy: Base extends Root and
// implements Api.
func host(t *testing.T, more ...testkit.Class) *payload.Archive {
	t.Helper()
	classes := append([]testkit.Class{
		{Name: "org/apache/flink/Root", Methods: []testkit.Member{m("inherited", "()V")}, Fields: []testkit.Member{m("ROOT", "I")}},
		{Name: "org/apache/flink/Api", Interface: true, Methods: []testkit.Member{m("fromInterface", "()V")}, Fields: []testkit.Member{m("API", "I")}},
		{Name: "org/apache/flink/Base", Super: "org/apache/flink/Root", Interfaces: []string{"org/apache/flink/Api"},
			Methods: []testkit.Member{m("<init>", "(I)V"), m("present", "()V")}, Fields: []testkit.Member{m("count", "J")}},
	}, more...)
	_, a := archive(t, "/opt/flink/lib/flink-dist.jar", "", classes, nil)
	return a
}

// Lookup searches as JVMS 5.4.3.2-5.4.3.4 do: the class, its superclasses,
// its superinterfaces; Object's methods through an interface; a JDK class
// it cannot see into takes any member to exist.
func TestLookup(t *testing.T) {
	cp := NewClasspath([]*payload.Archive{host(t)}, nil, nil, nil)
	for _, c := range []struct {
		ref    classfile.Ref
		found  bool
		looked string
	}{
		{classfile.Ref{Kind: classfile.Method, Owner: "org/apache/flink/Base", Name: "<init>", Descriptor: "(I)V"}, true, "org/apache/flink/Base"},
		{classfile.Ref{Kind: classfile.Method, Owner: "org/apache/flink/Base", Name: "<init>", Descriptor: "(J)V"}, false, "org/apache/flink/Base"},
		{classfile.Ref{Kind: classfile.Method, Owner: "org/apache/flink/Base", Name: "inherited", Descriptor: "()V"}, true, "org/apache/flink/Base org/apache/flink/Root"},
		{classfile.Ref{Kind: classfile.Method, Owner: "org/apache/flink/Base", Name: "fromInterface", Descriptor: "()V"}, true, "org/apache/flink/Base org/apache/flink/Root java/lang/Object org/apache/flink/Api"},
		{classfile.Ref{Kind: classfile.Method, Owner: "org/apache/flink/Base", Name: "hashCode", Descriptor: "()I"}, true, "org/apache/flink/Base org/apache/flink/Root java/lang/Object"},
		{classfile.Ref{Kind: classfile.Method, Owner: "org/apache/flink/Base", Name: "gone", Descriptor: "()V"}, false, "org/apache/flink/Base org/apache/flink/Root java/lang/Object org/apache/flink/Api"},
		{classfile.Ref{Kind: classfile.InterfaceMethod, Owner: "org/apache/flink/Api", Name: "fromInterface", Descriptor: "()V"}, true, "org/apache/flink/Api"},
		{classfile.Ref{Kind: classfile.InterfaceMethod, Owner: "org/apache/flink/Api", Name: "toString", Descriptor: "()Ljava/lang/String;"}, true, "org/apache/flink/Api"},
		{classfile.Ref{Kind: classfile.InterfaceMethod, Owner: "org/apache/flink/Api", Name: "gone", Descriptor: "()V"}, false, "org/apache/flink/Api"},
		{classfile.Ref{Kind: classfile.Field, Owner: "org/apache/flink/Base", Name: "count", Descriptor: "J"}, true, "org/apache/flink/Base"},
		{classfile.Ref{Kind: classfile.Field, Owner: "org/apache/flink/Base", Name: "ROOT", Descriptor: "I"}, true, "org/apache/flink/Base org/apache/flink/Root"},
		{classfile.Ref{Kind: classfile.Field, Owner: "org/apache/flink/Base", Name: "API", Descriptor: "I"}, true, "org/apache/flink/Base org/apache/flink/Root java/lang/Object org/apache/flink/Api"},
		{classfile.Ref{Kind: classfile.Field, Owner: "org/apache/flink/Base", Name: "count", Descriptor: "I"}, false, "org/apache/flink/Base org/apache/flink/Root java/lang/Object org/apache/flink/Api"},
		{classfile.Ref{Kind: classfile.Method, Owner: "java/util/ArrayList", Name: "anything", Descriptor: "()V"}, true, ""},
		{classfile.Ref{Kind: classfile.Method, Owner: "org/apache/flink/NotThere", Name: "f", Descriptor: "()V"}, true, ""},
	} {
		found, looked := cp.Lookup(cp.Lib, c.ref)
		if found != c.found || strings.Join(looked, " ") != c.looked {
			t.Errorf("%s.%s%s: found %v looked %q, want %v %q", c.ref.Owner, c.ref.Name, c.ref.Descriptor, found, strings.Join(looked, " "), c.found, c.looked)
		}
	}
}

// Load names the first edge of a hierarchy to a class with no class file,
// superclass first, as NoClassDefFoundError does.
func TestLoad(t *testing.T) {
	cp := NewClasspath([]*payload.Archive{host(t,
		testkit.Class{Name: "org/apache/flink/Sink", Super: "org/apache/flink/TwoPhase", Interfaces: []string{"org/apache/flink/Stateful"}},
		testkit.Class{Name: "org/apache/flink/Deeper", Super: "org/apache/flink/Sink"},
	)}, nil, nil, nil)
	for name, want := range map[string]Edge{
		"org/apache/flink/Base":   {},
		"java/lang/Whatever":      {},
		"org/apache/flink/Gone":   {Missing: "org/apache/flink/Gone"},
		"org/apache/flink/Sink":   {From: "org/apache/flink/Sink", Missing: "org/apache/flink/TwoPhase"},
		"org/apache/flink/Deeper": {From: "org/apache/flink/Sink", Missing: "org/apache/flink/TwoPhase"},
	} {
		if got := cp.Load(cp.Lib, name); got != want {
			t.Errorf("Load(%s) = %+v, want %+v", name, got, want)
		}
	}
}

// Resolve reports, in order, the supertypes, the classes instructions
// name and the members that do not resolve; a member of an array type and
// one member(owner) declines are not looked up.
func TestResolve(t *testing.T) {
	user := testkit.Class{Name: "com/acme/User", Super: "org/apache/flink/Base", Interfaces: []string{"org/apache/flink/GoneApi"},
		News: []string{"org/apache/flink/Missing"},
		Calls: []testkit.Call{
			{Owner: "org/apache/flink/Base", Name: "present", Descriptor: "()V"},
			{Owner: "org/apache/flink/Base", Name: "gone", Descriptor: "()V"},
			{Owner: "com/acme/Declined", Name: "gone", Descriptor: "()V"},
			{Owner: "org/apache/flink/AlsoMissing", Name: "f", Descriptor: "()V"},
		}}
	declined := testkit.Class{Name: "com/acme/Declined"}
	_, job := archive(t, "/opt/flink/usrlib/job.jar", "", []testkit.Class{user, declined}, nil)
	dist := host(t)
	cp := NewClasspath([]*payload.Archive{dist}, []*payload.Archive{job}, []string{"org.apache.flink."}, nil)
	c, err := cp.Class(job, "com/acme/User")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	cp.Resolve(cp.Usrlib, c, func(owner string) bool { return owner != "com/acme/Declined" }, func(u Unresolved) {
		if u.Ref != nil {
			got = append(got, "member "+u.Ref.Owner+"."+u.Ref.Name+" in "+u.In.Path+" looked "+strings.Join(u.Looked, " "))
			return
		}
		got = append(got, "class "+u.Class.From+" -> "+u.Class.Missing+map[bool]string{true: " (super)"}[u.Super])
	})
	want := []string{
		"class  -> org/apache/flink/GoneApi (super)",
		"class  -> org/apache/flink/Missing",
		"class  -> org/apache/flink/AlsoMissing",
		"member org/apache/flink/Base.gone in /opt/flink/lib/flink-dist.jar looked org/apache/flink/Base org/apache/flink/Root java/lang/Object org/apache/flink/Api",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// usrlib is child-first over lib except where a parent-first pattern
// leaves the class to lib; a class only the child has is the child's
// either way.
func TestLoaderDelegation(t *testing.T) {
	_, lib := archive(t, "/opt/flink/lib/a.jar", "", []testkit.Class{{Name: "org/apache/flink/X"}, {Name: "com/acme/Y"}}, nil)
	_, usr := archive(t, "/opt/flink/usrlib/job.jar", "", []testkit.Class{{Name: "org/apache/flink/X"}, {Name: "com/acme/Y"}, {Name: "org/apache/flink/Only"}}, nil)
	cp := NewClasspath([]*payload.Archive{lib}, []*payload.Archive{usr}, []string{"java.", "org.apache.flink."}, nil)
	for name, want := range map[string]*payload.Archive{
		"org/apache/flink/X": lib, "com/acme/Y": usr, "org/apache/flink/Only": usr, "com/acme/None": nil,
	} {
		if got := cp.Usrlib.Find(name); got != want {
			t.Errorf("usrlib Find(%s) = %v, want %v", name, got, want)
		}
	}
	if cp.Lib.Find("org/apache/flink/Only") != nil {
		t.Error("lib sees usrlib's class")
	}
}

// Shadowed: the first JAR of a loader hides later different copies;
// usrlib hides lib child-first, lib hides usrlib parent-first; identical
// copies hide nothing.
func TestShadowed(t *testing.T) {
	same := testkit.Class{Name: "com/acme/Same"}
	one := testkit.Class{Name: "com/acme/X"}
	two := testkit.Class{Name: "com/acme/X", Methods: []testkit.Member{m("other", "()V")}}
	flinkOne := testkit.Class{Name: "org/apache/flink/F"}
	flinkTwo := testkit.Class{Name: "org/apache/flink/F", Methods: []testkit.Member{m("other", "()V")}}
	_, a := archive(t, "/opt/flink/lib/a.jar", "", []testkit.Class{same, one, flinkOne}, nil)
	_, b := archive(t, "/opt/flink/lib/b.jar", "", []testkit.Class{same, two}, nil)
	_, job := archive(t, "/opt/flink/usrlib/job.jar", "", []testkit.Class{two, flinkTwo}, nil)
	cp := NewClasspath([]*payload.Archive{a, b}, []*payload.Archive{job}, []string{"org.apache.flink."}, nil)
	within, between := cp.Shadowed()
	if len(within) != 1 || within[0].Winner != a || within[0].Loser != b || !slices.Equal(within[0].Classes, []string{"com/acme/X"}) {
		t.Errorf("within: %+v", within)
	}
	if len(between) != 2 || between[0].Winner != job || between[0].Loser != a || !slices.Equal(between[0].Classes, []string{"com/acme/X"}) ||
		between[1].Winner != a || between[1].Loser != job || !slices.Equal(between[1].Classes, []string{"org/apache/flink/F"}) {
		t.Errorf("between: %+v", between)
	}
}

// UsrlibShadowed finds what Shadowed does but lib's shadowing within
// itself.
func TestUsrlibShadowed(t *testing.T) {
	one := testkit.Class{Name: "com/acme/X"}
	two := testkit.Class{Name: "com/acme/X", Methods: []testkit.Member{m("other", "()V")}}
	_, a := archive(t, "/opt/flink/lib/a.jar", "", []testkit.Class{one}, nil)
	_, b := archive(t, "/opt/flink/lib/b.jar", "", []testkit.Class{two}, nil)
	_, job := archive(t, "/opt/flink/usrlib/job.jar", "", []testkit.Class{two}, nil)
	_, job2 := archive(t, "/opt/flink/usrlib/job2.jar", "", []testkit.Class{one}, nil)
	cp := NewClasspath([]*payload.Archive{a, b}, []*payload.Archive{job, job2}, nil, nil)
	allWithin, allBetween := cp.Shadowed()
	within, between := cp.UsrlibShadowed()
	if len(allWithin) != 2 || allWithin[0].Winner != a || allWithin[1].Winner != job {
		t.Fatalf("Shadowed within: %+v", allWithin)
	}
	if len(within) != 1 || within[0].Winner != job || within[0].Loser != job2 || !slices.Equal(within[0].Classes, []string{"com/acme/X"}) {
		t.Errorf("within: %+v", within)
	}
	if len(between) != 1 || len(allBetween) != 1 || between[0].Winner != job || between[0].Loser != a || allBetween[0].Loser != a {
		t.Errorf("between: %+v, Shadowed's %+v", between, allBetween)
	}
}

// Reachable visits the classes of the scopes reachable from their roots,
// once each, and never enters other JARs.
func TestReachable(t *testing.T) {
	entry := testkit.Class{Name: "com/acme/Main", News: []string{"com/acme/Used", "org/apache/flink/Base", "com/acme/client/C"}}
	used := testkit.Class{Name: "com/acme/Used", Super: "com/acme/Parent"}
	parent := testkit.Class{Name: "com/acme/Parent", News: []string{"com/acme/Main"}}
	unused := testkit.Class{Name: "com/acme/Unused"}
	j, job := archive(t, "/opt/flink/lib/job.jar", testkit.Manifest("Main-Class", "com.acme.Main"), []testkit.Class{entry, used, parent, unused}, nil)
	_, client := archive(t, "/opt/flink/lib/client.jar", "", []testkit.Class{{Name: "com/acme/client/C"}, {Name: "com/acme/client/D"}}, nil)
	cp := NewClasspath([]*payload.Archive{job, client, host(t)}, nil, nil, nil)
	roots := EntryPoints(j, job)
	if !slices.Equal(roots, []string{"com/acme/Main"}) {
		t.Fatalf("entry points %v", roots)
	}
	var got []string
	cp.Reachable([]Scope{{JAR: job, Loader: cp.Lib, Roots: roots}, {JAR: client, Loader: cp.Lib}}, func(scope int, c *classfile.Class) {
		got = append(got, strconv.Itoa(scope)+" "+c.Name)
	})
	want := []string{"0 com/acme/Main", "0 com/acme/Used", "1 com/acme/client/C", "0 com/acme/Parent"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// Reachable parses each class once, whether the walk or the runahead
// asks first (Class waits for a class being parsed), and visits the same
// classes in the same order, however the parsing interleaves. Not
// parallel: payload.OnInflate is the process's.
func TestReachableParsesEachClassOnce(t *testing.T) {
	const n = 400
	name := func(i int) string { return "com/acme/C" + strconv.Itoa(i) }
	classes := []testkit.Class{{Name: "com/acme/Main", News: []string{name(0), name(1), name(2)}}}
	for i := range n {
		c := testkit.Class{Name: name(i), Super: "org/apache/flink/Base"}
		for _, k := range []int{2*i + 1, 2*i + 2, (i * 7) % n} {
			if k < n {
				c.News = append(c.News, name(k))
			}
		}
		classes = append(classes, c)
	}
	j, job := archive(t, "/opt/flink/usrlib/job.jar", testkit.Manifest("Main-Class", "com.acme.Main"), classes, nil)
	var want []string
	for run := range 20 {
		var mu sync.Mutex
		inflated := map[string]int{}
		payload.OnInflate(func(jar, entry string) {
			mu.Lock()
			inflated[jar+"!"+entry]++
			mu.Unlock()
		})
		cp := NewClasspath([]*payload.Archive{host(t)}, []*payload.Archive{job}, nil, nil)
		var got []string
		cp.Reachable([]Scope{{JAR: job, Loader: cp.Usrlib, Roots: EntryPoints(j, job)}}, func(_ int, c *classfile.Class) {
			got = append(got, c.Name)
		})
		payload.OnInflate(nil)
		if len(got) != n+1 {
			t.Fatalf("run %d: visited %d classes, want %d", run, len(got), n+1)
		}
		if run == 0 {
			want = got
		} else if !slices.Equal(got, want) {
			t.Fatalf("run %d: the visit's order changed", run)
		}
		for k, times := range inflated {
			if times != 1 {
				t.Fatalf("run %d: %s inflated %d times", run, k, times)
			}
		}
		if len(inflated) < n+1 { // the job's classes at least (lib's Base when the runahead reached it)
			t.Fatalf("run %d: %d classes inflated", run, len(inflated))
		}
	}
}
