package install

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/baked"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// File names of installed payloads, as the installation guide documents
// them: the loader sorts first, Paimon's module before paimon-flink-*.
const (
	LoaderName = "00-streamfusion-loader.jar"
	CoreName   = "streamfusion-core.jar"
	PaimonName = "01-streamfusion-paimon.jar"
)

// NameFor returns the file name a payload of module (and kind) is installed
// under: streamfusion-<name>.jar for extensions.
func NameFor(kind, module string) string {
	switch {
	case kind == admission.KindLoader || module == admission.LoaderModule:
		return LoaderName
	case kind == admission.KindCore || module == admission.CoreModule:
		return CoreName
	case module == "streamfusion-paimon":
		return PaimonName
	}
	return module + ".jar"
}

// Payload is one payload to install.
type Payload struct {
	Source string // what the user named it by (a path or coordinates)
	Data   []byte
}

// Change is one file of lib that the install adds, replaces or removes.
type Change struct {
	Op       string              `json:"op"`             // add, replace (same name) or remove
	Name     string              `json:"name"`           // below lib
	Source   string              `json:"from,omitempty"` // add, replace: the payload argument
	Identity *admission.Identity `json:"identity,omitempty"`
	Old      *admission.Identity `json:"old,omitempty"` // replace, remove: what was there
}

// Ops.
const (
	OpAdd     = "add"
	OpReplace = "replace"
	OpRemove  = "remove"
)

// Plan is an install decided on, not yet applied.
type Plan struct {
	LibDir   string // absolute
	Changes  []Change
	Facts    *admission.Facts    // of lib as it would be
	Decision *admission.Decision // on lib as it would be
	// Verdict is the deep verdict of lib as it would be (internal/baked),
	// for the entrypoint to apply at start; nil when it could not be made
	// (VerdictErr says why).
	Verdict    []byte
	VerdictErr error

	data map[string][]byte // new files by name below lib
}

// Refused is a plan that is not applied because the result would not be
// admitted (or the request cannot be met): its decision says why.
// errors.Is(err, admit.ErrRefused) holds for it.
type Refused struct{ Plan *Plan }

func (r *Refused) Error() string {
	n := len(r.Plan.Decision.Errors())
	return fmt.Sprintf("install refused: lib %s would be refused at start (%d error(s)); nothing was written", r.Plan.LibDir, n)
}

func (r *Refused) Unwrap() error { return admit.ErrRefused }

// Install-only rules, reported with the entrypoint's findings.
const (
	RuleLine       = "install-flink-line"
	RuleNotPayload = "install-not-payload"
	RuleSameModule = "install-same-module"
)

// Rules are the rules of install beyond the entrypoint's.
var Rules = []admission.Rule{
	{ID: RuleLine, Severity: admission.Error, Tier: admission.TierInstall, Doc: "The distribution's Flink line is not the --flink-line asked for."},
	{ID: RuleNotPayload, Severity: admission.Error, Tier: admission.TierInstall, Doc: "A PAYLOAD is not a StreamFusion payload (stock JARs are copied, not installed)."},
	{ID: RuleSameModule, Severity: admission.Error, Tier: admission.TierInstall, Doc: "Two PAYLOADs are of the same StreamFusion module."},
}

// Decide plans installing payloads into the lib of s, on fsys rooted at
// "/". line, when set, is the Flink line the distribution must be. The
// plan is returned with a *Refused error when the result would not start.
//
// It is long because it is the plan's steps in order (read lib, read each
// payload, pair them with what they replace, judge the result), each a few
// lines.
func Decide(ctx context.Context, fsys fs.FS, s host.Settings, line string, payloads []Payload) (*Plan, error) {
	lib := strings.TrimPrefix(path.Clean("/"+s.LibDir), "/")
	p := &Plan{LibDir: "/" + lib, data: map[string][]byte{}}
	var extra []admission.Finding
	modules := map[string]string{} // module -> source
	for _, pl := range payloads {
		j := payload.Read(bytes.NewReader(pl.Data), int64(len(pl.Data)), pl.Source, payload.Options{})
		id := admission.Identify(j)
		if id == nil {
			why := "no StreamFusion content"
			if j.Err != nil {
				why = j.Err.Error()
			}
			extra = append(extra, admission.Finding{Rule: RuleNotPayload, Severity: admission.Error, Path: pl.Source,
				Message: "not a StreamFusion payload", Found: why, Required: "a StreamFusion payload JAR (StreamFusion-Payload in its manifest)",
				Fix: "copy stock JARs into lib yourself; install only StreamFusion payloads"})
			continue
		}
		name := path.Base(pl.Source)
		if id.Marked && id.Module != "" {
			name = NameFor(id.Kind, id.Module)
			if prev, ok := modules[id.Module]; ok {
				extra = append(extra, admission.Finding{Rule: RuleSameModule, Severity: admission.Error, Path: pl.Source,
					Message: "two payloads of one module", Found: id.Module + " from " + prev + " and " + pl.Source,
					Required: "one payload per module", Fix: "give each module once"})
				continue
			}
			modules[id.Module] = pl.Source
		}
		if !strings.HasSuffix(name, ".jar") {
			name += ".jar"
		}
		p.data[name] = pl.Data
		id.Path = p.LibDir + "/" + name
		p.Changes = append(p.Changes, Change{Op: OpAdd, Name: name, Source: pl.Source, Identity: id})
	}

	// The earlier payloads of these modules go, whatever their names; a
	// file under a new payload's name is replaced.
	names, _, err := host.List(fsys, s.LibDir) // unlistable subdirectories: admission reports them
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p.LibDir, err)
	}
	hide := map[string]bool{}
	for _, n := range names {
		below := strings.TrimPrefix(n, lib+"/")
		j := payload.Open(fsys, n, payload.Options{})
		old := admission.Identify(j)
		if _, replaced := p.data[below]; replaced {
			hide[n] = true
			for i := range p.Changes {
				if p.Changes[i].Name == below {
					p.Changes[i].Op, p.Changes[i].Old = OpReplace, old
				}
			}
			continue
		}
		if old != nil && old.Marked && modules[old.Module] != "" {
			hide[n] = true
			p.Changes = append(p.Changes, Change{Op: OpRemove, Name: below, Old: old})
		}
	}
	slices.SortStableFunc(p.Changes, func(a, b Change) int { return strings.Compare(a.Name, b.Name) })

	ov := &overlay{base: fsys, lib: lib, add: map[string][]byte{}, hide: hide}
	for n, d := range p.data {
		ov.add[lib+"/"+n] = d
	}
	asked := func(_ *admission.Facts, d *admission.Decision) []admission.Finding {
		if line == "" || d.Line == line {
			return extra
		}
		return append([]admission.Finding{{Rule: RuleLine, Severity: admission.Error, Path: p.LibDir,
			Message: "the distribution is not of the Flink line asked for", Found: "line " + cmp.Or(d.Line, "unknown") + " (Flink " + cmp.Or(d.Flink, "unknown") + ")",
			Required: "line " + line, Fix: "install into a Flink " + line + " distribution, or ask for --flink-line " + cmp.Or(d.Line, "of the distribution")}}, extra...)
	}
	s.Deep = true // lib as it would be: shadowing and linkage too
	bake := func(f *admission.Facts, d *admission.Decision) []admission.Finding {
		p.Verdict, p.VerdictErr = baked.Build(f, d) // while the archives are open
		return nil
	}
	v, err := admit.Check(ctx, admit.Request{Root: ov, Settings: s, Rules: []admit.Rule{asked, bake}})
	if err != nil {
		return nil, err
	}
	p.Facts, p.Decision = v.Facts, v.Decision
	if !p.Decision.Admitted() {
		return p, &Refused{Plan: p}
	}
	return p, nil
}
