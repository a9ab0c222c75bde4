package admission

import (
	"fmt"
	"hash/crc32"
	"path"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// IsDeepRule says whether findings of rule id belong to a deep verdict
// (the rule's Baked).
func IsDeepRule(id string) bool {
	for _, r := range Rules {
		if r.ID == id {
			return r.Baked
		}
	}
	return false
}

// RulesStamp identifies the rule catalogue (every rule's ID, severity and
// description): a deep verdict baked by a build whose catalogue differs
// is foreign to this one.
func RulesStamp() string {
	h := crc32.NewIEEE()
	for _, r := range Catalogue() {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", r.ID, r.Severity, r.Doc)
	}
	return fmt.Sprintf("rules-%d-%08x", len(Catalogue()), h.Sum32())
}

// Baked is a deep verdict baked into the image (internal/baked) that
// applies to this start: lib matched it JAR by JAR.
type Baked struct {
	// From is the verdict file.
	From string
	// Findings are the verdict's findings that still apply: lib's, and
	// usrlib's when Deep.Usrlib is empty (usrlib matched too).
	Findings []Finding
	// Classes answers for the classes of Deep.Lib, whose archives are
	// the verdict's class index (no bytes): the parsed class, or ok false
	// for a class the index does not hold.
	Classes func(a *payload.Archive, name string) (c *classfile.Class, err error, ok bool)
}

// bakedLinkage is the deep rules' findings with a baked verdict: the
// verdict's, then those of the usrlib JARs it does not cover and of the
// plugins (never baked), each judged against lib as the verdict's class
// index holds it. lib's JARs are only
// resolved against (the verdict judged them); shadowing is reported only
// where a usrlib JAR takes part. What a usrlib class reaches inside a lib
// connector is not judged again.
func (v *view) bakedLinkage() *linkage {
	l := &linkage{}
	for _, f := range v.Deep.Baked.Findings {
		switch f.Rule {
		case "classpath-shadowed":
			l.shadow = append(l.shadow, f)
		case "linkage-class":
			l.class = append(l.class, f)
		case "linkage-method":
			l.method = append(l.method, f)
		case "linkage-field":
			l.field = append(l.field, f)
		case "bytecode-version":
			l.version = append(l.version, f)
		}
	}
	if len(v.Deep.Usrlib) == 0 && len(v.Deep.Plugins) == 0 {
		return l
	}
	cp := newClasspath(v.Deep)
	var jars, judge []*deepJAR
	for i, a := range v.Deep.Lib {
		if a != nil && i < len(v.Classpath) {
			j := v.deepJAR(v.Classpath[i], a, cp.Lib, false)
			j.host = true
			cp.ResolveOnly(a)
			jars = append(jars, j)
		}
	}
	usr := map[string]bool{}
	for i, a := range v.Deep.Usrlib {
		if a != nil && i < len(v.Usrlib) {
			j := v.deepJAR(v.Usrlib[i], a, cp.Usrlib, true)
			jars = append(jars, j)
			judge = append(judge, j)
			usr[j.jar.Path] = true
		}
	}
	r := &resolver{cp: cp, packages: lazy(func() map[string]bool { return packages(jars) }), maxMajor: v.maxClassMajor(), line: v.line(),
		hostPackages: lazy(func() map[string]bool { return hostPackages(jars) }), parentFirst: v.Deep.ParentFirst}
	// Lib's shadowing within itself is the verdict's (its findings name
	// lib's JARs, which this start keeps from the verdict): only usrlib's
	// is looked for.
	for _, f := range v.shadowing(cp, jars, true) {
		if usr[f.Path] {
			l.shadow = append(l.shadow, f)
		}
	}
	r.dropped = v.droppedPackages(judge)
	var fresh linkage
	r.judge(judge, &fresh)
	l.class = append(l.class, fresh.class...)
	l.method = append(l.method, fresh.method...)
	l.field = append(l.field, fresh.field...)
	l.version = append(l.version, fresh.version...)
	v.judgePlugins(cp, jars, l)
	return l
}

// deepVerdictUnreadable: the image's baked deep verdict could not be
// used (damaged, truncated, of another format or rule catalogue); the
// deep rules then ran in full.
func deepVerdictUnreadable(v *view) []Finding {
	if v.Deep == nil || v.Deep.VerdictErr == nil {
		return nil
	}
	return []Finding{{Path: v.Deep.VerdictPath,
		Message:  "the image's baked deep verdict cannot be used, so shadowing and linkage were checked in full at this start",
		Found:    v.Deep.VerdictErr.Error(),
		Required: "a deep verdict written by `streamfusion bake` or `install` of this entrypoint's release, unchanged since",
		Fix:      "bake the image again (streamfusion bake), or delete " + path.Base(v.Deep.VerdictPath) + " from lib to start without linkage checks (STREAMFUSION_LINKAGE=true checks in full)"}}
}
