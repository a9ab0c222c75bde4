//go:build jvmoracle

package classfile

import (
	"archive/zip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The JDK's javap is the oracle: for real class files (every class of a
// real connector, a sample of flink-dist's), the version, this and super
// class, interfaces, members, and the references the instructions use
// must be what `javap -c -p -v` prints. javap names no bootstrap-method
// reference as an instruction's: ours may hold more references, but only
// those the constant pool's method handles name (the bootstrap methods and
// their arguments).
func TestJavapAgrees(t *testing.T) {
	javap, err := exec.LookPath("javap")
	if err != nil {
		t.Fatal("javap (a JDK) is needed: ", err)
	}
	dist := os.Getenv("STREAMFUSION_FLINK_DIST")
	jars := os.Getenv("STREAMFUSION_FLINK_JARS")
	if dist == "" || jars == "" {
		t.Fatal("STREAMFUSION_FLINK_DIST and STREAMFUSION_FLINK_JARS must name the real JAR caches (make test-classfile-jvm)")
	}
	for _, c := range []struct {
		jar   string
		every int
	}{
		{filepath.Join(jars, "flink-connector-kafka-3.2.0-1.18.jar"), 1},
		{filepath.Join(dist, "2.2.0/lib/flink-dist-2.2.0.jar"), 150},
		{filepath.Join(dist, "2.2.0/lib/flink-table-runtime-2.2.0.jar"), 40},
	} {
		t.Run(filepath.Base(c.jar), func(t *testing.T) {
			classes := readClasses(t, c.jar, c.every)
			var names []string
			for n := range classes {
				names = append(names, n)
			}
			slices.Sort(names)
			compared = 0
			defer func() {
				t.Logf("%d classes, %d references javap shows compared", len(classes), compared)
				if compared == 0 {
					t.Error("no reference compared: the test cannot fail")
				}
			}()
			for len(names) > 0 {
				batch := names[:min(100, len(names))]
				names = names[len(batch):]
				args := append([]string{"-c", "-p", "-v", "-cp", c.jar}, batch...)
				out, err := exec.Command(javap, args...).Output()
				if err != nil {
					t.Fatalf("javap: %v", err)
				}
				for _, dump := range strings.Split(string(out), "Classfile jar:")[1:] {
					compare(t, dump, classes)
				}
			}
		})
	}
}

func readClasses(t *testing.T, jar string, every int) map[string][]byte {
	t.Helper()
	r, err := zip.OpenReader(jar)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string][]byte{}
	i := 0
	for _, f := range r.File {
		if !strings.HasSuffix(f.Name, ".class") || strings.HasPrefix(f.Name, "META-INF/") || f.Name == "module-info.class" {
			continue
		}
		if i++; i%every != 0 {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[strings.ReplaceAll(strings.TrimSuffix(f.Name, ".class"), "/", ".")] = data
	}
	return out
}

var (
	reThis   = regexp.MustCompile(`(?m)^  this_class: #\d+ +// (\S+)`)
	reSuper  = regexp.MustCompile(`(?m)^  super_class: #\d+ +// (\S+)`)
	reMajor  = regexp.MustCompile(`(?m)^  major version: (\d+)`)
	reInsn   = regexp.MustCompile(`(?m)^ +\d+: (\w+) +#\d+(?:, +\d+)? +// (Method|InterfaceMethod|Field|class) (.+)$`)
	reHandle = regexp.MustCompile(`(?m)= MethodHandle +\d+:#\d+ +// REF_\w+ (.+)$`)
)

var compared int // references javap shows, in the current JAR's classes

// ref parses javap's "owner.name:desc" (the owner left out for the class's
// own members, names of special methods quoted).
func ref(kind, s, this string) Ref {
	s = strings.ReplaceAll(s, `"`, "")
	colon := strings.Index(s, ":(")
	if colon < 0 {
		colon = strings.LastIndex(s, ":")
	}
	head, desc := s[:colon], s[colon+1:]
	owner, name := this, head
	if dot := strings.LastIndex(head, "."); dot >= 0 {
		owner, name = head[:dot], head[dot+1:]
	}
	k := map[string]RefKind{"Method": Method, "InterfaceMethod": InterfaceMethod, "Field": Field}[kind]
	return Ref{Kind: k, Owner: owner, Name: name, Descriptor: desc}
}

func compare(t *testing.T, dump string, classes map[string][]byte) {
	t.Helper()
	m := reThis.FindStringSubmatch(dump)
	if m == nil {
		t.Fatalf("no this_class in javap's output:\n%.500s", dump)
	}
	this := strings.Trim(m[1], `"`)
	data, ok := classes[strings.ReplaceAll(this, "/", ".")]
	if !ok {
		t.Fatalf("javap printed %s, which was not asked for", this)
	}
	c, err := Parse(data, Options{})
	if err != nil {
		t.Errorf("%s: javap reads it, we do not: %v", this, err)
		return
	}
	major, _ := strconv.Atoi(reMajor.FindStringSubmatch(dump)[1])
	super := ""
	if s := reSuper.FindStringSubmatch(dump); s != nil {
		super = strings.Trim(s[1], `"`)
	}
	if c.Name != this || int(c.Major) != major || c.Super != super {
		t.Errorf("%s: ours name %s major %d super %s; javap major %d super %s", this, c.Name, c.Major, c.Super, major, super)
	}
	for _, mm := range c.Methods {
		if !strings.Contains(dump, "descriptor: "+mm.Descriptor) {
			t.Errorf("%s: method %s%s not in javap's output", this, mm.Name, mm.Descriptor)
		}
	}
	handles := map[Ref]bool{}
	for _, h := range reHandle.FindAllStringSubmatch(dump, -1) {
		for _, k := range []RefKind{Method, InterfaceMethod, Field} {
			r := ref("Method", h[1], this)
			r.Kind = k
			handles[r] = true
		}
	}
	theirs := map[Ref]bool{}
	theirClasses := map[string]bool{}
	for _, in := range reInsn.FindAllStringSubmatch(dump, -1) {
		if in[2] == "class" {
			theirClasses[strings.Trim(in[3], `"`)] = true
			continue
		}
		theirs[ref(in[2], in[3], this)] = true
	}
	compared += len(theirs) + len(theirClasses)
	ours := map[Ref]bool{}
	for _, r := range c.Refs {
		ours[r] = true
		if !theirs[r] && !handles[r] {
			t.Errorf("%s: we report %+v, which no instruction or method handle uses", this, r)
		}
	}
	for r := range theirs {
		if !ours[r] {
			t.Errorf("%s: javap shows an instruction using %+v, we do not", this, r)
		}
	}
	for k := range theirClasses {
		if !slices.Contains(c.Classes, k) {
			t.Errorf("%s: javap shows an instruction naming class %s, we do not", this, k)
		}
	}
}
