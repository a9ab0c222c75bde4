package baked

import (
	"fmt"
	"path"
	"slices"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Build makes the verdict file of a deep check: facts gathered with
// host.Settings.Deep (their archives still open) and the decision on
// them. It parses every class of lib for the index (members only).
func Build(f *admission.Facts, d *admission.Decision) ([]byte, error) {
	if f.Deep == nil || f.Deep.Err != nil {
		return nil, fmt.Errorf("no deep facts to bake a verdict from")
	}
	if f.Deep.Baked != nil {
		return nil, fmt.Errorf("deep facts from a baked verdict: bake from a full check")
	}
	jv, err := admission.ParseJava(f.JDK.Version)
	if err != nil {
		return nil, fmt.Errorf("bake a deep verdict: the JDK is not known: %w", err)
	}
	v := &Verdict{Rules: admission.RulesStamp(), JDKMajor: jv.Major, Flink: d.Flink, Home: path.Dir(path.Clean(f.LibDir)), ParentFirstFrom: f.Deep.ParentFirstFrom}
	v.ParentFirst = slices.Clone(f.Deep.ParentFirst[:min(f.Deep.ParentFirstDefault, len(f.Deep.ParentFirst))])
	jars := func(js []*payload.JAR, as []*payload.Archive) ([]JAR, error) {
		out := make([]JAR, 0, len(js))
		for i, j := range js {
			if i >= len(as) || as[i] == nil {
				return nil, fmt.Errorf("bake a deep verdict: %s was not read for its classes", j.Path)
			}
			fp, err := as[i].Fingerprint()
			if err != nil {
				return nil, fmt.Errorf("bake a deep verdict: fingerprint of %s: %w", j.Path, err)
			}
			out = append(out, JAR{Path: j.Path, Fingerprint: fp})
		}
		return out, nil
	}
	if v.Lib, err = jars(f.Classpath, f.Deep.Lib); err != nil {
		return nil, err
	}
	if v.Usrlib, err = jars(f.Usrlib, f.Deep.Usrlib); err != nil {
		return nil, err
	}
	for _, fd := range d.Findings {
		if !admission.IsDeepRule(fd.Rule) {
			continue
		}
		if fd.Strict { // as the rule raised it: STREAMFUSION_STRICT is the start's
			fd.Severity, fd.Strict = admission.Warning, false
		}
		v.Findings = append(v.Findings, fd)
	}
	index := make([][]Class, len(f.Deep.Lib))
	var buf []byte
	for i, a := range f.Deep.Lib {
		names := make([]string, 0, len(a.Classes))
		for n := range a.Classes {
			names = append(names, n)
		}
		slices.Sort(names)
		cs := make([]Class, 0, len(names))
		for _, n := range names {
			e := a.Classes[n]
			c := Class{Name: n, CRC: e.CRC, Size: e.Size}
			data, err := a.Class(n, buf)
			var pc *classfile.Class
			if err == nil {
				if cap(data) > cap(buf) {
					buf = data[:0]
				}
				pc, err = classfile.Parse(data, classfile.Options{MembersOnly: true})
			}
			if err != nil {
				c.Unreadable = true
			} else {
				c.Major, c.Access, c.Super, c.Interfaces, c.Fields, c.Methods = pc.Major, pc.Access, pc.Super, pc.Interfaces, pc.Fields, pc.Methods
			}
			cs = append(cs, c)
		}
		index[i] = cs
	}
	return Encode(v, index)
}
