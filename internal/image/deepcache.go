package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/image/flatten"
	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// The deep result cache. A deep check of an image ends in a decision
// whose findings are those of the fast check (every rule but the deep
// ones, judged on the layers' facts) and those the deep facts added
// (classpath-shadowed, linkage-*, bytecode-version, layout-planner-bundled:
// whatever differs from the decision without them). That second part is
// stored in the layer cache's directory (VerifyOptions.Cache: the same
// atomic writes, the same bound and eviction), under a key that is a
// digest of everything the deep check depends on (deepKey). A verify whose
// key is there reads no layer's bytes for the deep check: the facts of
// the layers (cached too, or read) give the fast decision, and the stored
// findings are put where Decide puts them. Any other key is a miss, and an
// entry that does not decode (damaged, truncated, another format, another
// key, a checksum that does not match) is never applied: the check runs in
// full, says so on the progress stream, and its result replaces the entry.

// deepResultVersion is the format of a cached deep result; an entry of
// another version is never applied (it is in the key and in the record).
const deepResultVersion = 1

// Bounds on one cached deep result. The noisiest real connector on record
// (the Hive SQL bundle on 1.20.3) has 3,626 findings of about 600 bytes
// each in JSON; an entry beyond the bounds is not stored, and one read
// back beyond them is refused unread.
const (
	maxDeepResult   = 16 << 20 // bytes of one entry
	maxDeepFindings = 1 << 16  // findings in one entry
)

// errDeepResult marks a cached deep result that cannot be applied.
var errDeepResult = errors.New("cached deep result")

// deepRecord is a cached deep result as stored: JSON, as the layer facts
// are. Findings are the bytes the checksum covers, exactly as written.
type deepRecord struct {
	Version  int             `json:"version"`
	Key      string          `json:"key"`    // the key it was stored under
	Sum      string          `json:"sha256"` // of Findings, hex
	Findings json.RawMessage `json:"findings"`
}

// deepKeyMaterial is what a deep result depends on; its digest is the key.
type deepKeyMaterial struct {
	Format int    `json:"format"` // deepResultVersion
	Facts  int    `json:"facts"`  // factsVersion: the layers' facts the fast part is judged on
	Tool   string `json:"tool"`   // this program's build (toolID)
	Rules  string `json:"rules"`  // the rule catalogue (admission.RulesStamp)
	// The image: its platform, its environment (every setting the
	// entrypoint reads, STREAMFUSION_STRICT and FLINK_HOME among them,
	// comes from it), and its layers in order, by diff ID. Whatever the
	// deep rules read of the host (Flink's release, the JDK, the config
	// file, the JARs) is a file of those layers.
	OS      string   `json:"os"`
	Arch    string   `json:"arch"`
	Variant string   `json:"variant,omitempty"`
	Env     []string `json:"env"`
	Layers  []string `json:"layers"`
}

// deepKey is the cache key of the deep result of the image cfg describes,
// judged by the build tool.
func deepKey(cfg *v1.ConfigFile, tool string) string {
	m := deepKeyMaterial{Format: deepResultVersion, Facts: flatten.Version, Tool: tool, Rules: admission.RulesStamp(),
		OS: cfg.OS, Arch: cfg.Architecture, Variant: cfg.Variant, Env: cfg.Config.Env, Layers: []string{}}
	if m.Env == nil {
		m.Env = []string{}
	}
	for _, id := range cfg.RootFS.DiffIDs {
		m.Layers = append(m.Layers, id.String())
	}
	data, err := json.Marshal(m)
	if err != nil {
		panic(err) // strings only
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("deepresult/v%d/%s", deepResultVersion, hex.EncodeToString(sum[:]))
}

// encodeDeepResult encodes the deep findings stored under key; an error
// when they pass the bounds (they are then not stored).
func encodeDeepResult(key string, findings []admission.Finding) ([]byte, error) {
	if len(findings) > maxDeepFindings {
		return nil, fmt.Errorf("%w: %d findings, more than %d", errDeepResult, len(findings), maxDeepFindings)
	}
	if findings == nil {
		findings = []admission.Finding{}
	}
	body, err := json.Marshal(findings)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	data, err := json.Marshal(deepRecord{Version: deepResultVersion, Key: key, Sum: hex.EncodeToString(sum[:]), Findings: body})
	if err != nil {
		return nil, err
	}
	if len(data) > maxDeepResult {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", errDeepResult, len(data), maxDeepResult)
	}
	return data, nil
}

// decodeDeepResult decodes an entry read under key, and checks it: its
// size, format version, key and checksum, that it is one JSON document
// with no field this version does not write, and that every finding is of
// a rule of this build's catalogue, of a severity that rule can have,
// in the order Decide reports them.
func decodeDeepResult(data []byte, key string) ([]admission.Finding, error) {
	if len(data) > maxDeepResult {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", errDeepResult, len(data), maxDeepResult)
	}
	var r deepRecord
	if err := strictJSON(data, &r); err != nil {
		return nil, fmt.Errorf("%w: %w", errDeepResult, err)
	}
	if r.Version != deepResultVersion {
		return nil, fmt.Errorf("%w: format version %d, this build reads %d", errDeepResult, r.Version, deepResultVersion)
	}
	if r.Key != key {
		return nil, fmt.Errorf("%w: stored for another key", errDeepResult)
	}
	sum := sha256.Sum256(r.Findings)
	if r.Sum != hex.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("%w: the findings do not match their checksum", errDeepResult)
	}
	var findings []admission.Finding
	if err := strictJSON(r.Findings, &findings); err != nil {
		return nil, fmt.Errorf("%w: findings: %w", errDeepResult, err)
	}
	if findings == nil {
		return nil, fmt.Errorf("%w: no findings list", errDeepResult)
	}
	if len(findings) > maxDeepFindings {
		return nil, fmt.Errorf("%w: %d findings, more than %d", errDeepResult, len(findings), maxDeepFindings)
	}
	for i, f := range findings {
		if _, ok := ruleRank[f.Rule]; !ok {
			return nil, fmt.Errorf("%w: finding %d: rule %q is not in this build's catalogue", errDeepResult, i, f.Rule)
		}
		if f.Severity != admission.Error && f.Severity != admission.Warning || f.Strict && f.Severity != admission.Error {
			return nil, fmt.Errorf("%w: finding %d: severity %q (strict %v)", errDeepResult, i, f.Severity, f.Strict)
		}
		if i > 0 && findingLess(f, findings[i-1]) {
			return nil, fmt.Errorf("%w: finding %d is out of order", errDeepResult, i)
		}
	}
	return findings, nil
}

// strictJSON decodes one JSON document into v, refusing fields v has
// not and anything after the document.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the record")
	}
	return nil
}

// ruleRank is each rule's place in admission.Rules, the order Decide
// reports findings in (errors first, then warnings).
var ruleRank = func() map[string]int {
	m := make(map[string]int, len(admission.Rules))
	for i, r := range admission.Rules {
		m[r.ID] = i
	}
	return m
}()

// findingLess says whether Decide reports a before b: errors before
// warnings, each in rule order (a rule outside the table, host-lib, first).
func findingLess(a, b admission.Finding) bool {
	ra, rb := rank(a), rank(b)
	return ra[0] < rb[0] || ra[0] == rb[0] && ra[1] < rb[1]
}

func rank(f admission.Finding) [2]int {
	sev := 0
	if f.Severity != admission.Error {
		sev = 1
	}
	r, ok := ruleRank[f.Rule]
	if !ok {
		r = -1
	}
	return [2]int{sev, r}
}

// withDeep returns the findings of a decision made without the deep
// facts, whose first own are the caller's rules' (admit.Check puts them
// first), with the deep findings put where Decide puts them.
func withDeep(fast []admission.Finding, own int, deep []admission.Finding) []admission.Finding {
	out := make([]admission.Finding, 0, len(fast)+len(deep))
	out = append(out, fast[:own]...)
	rest := fast[own:]
	for len(rest) > 0 || len(deep) > 0 {
		if len(deep) == 0 || len(rest) > 0 && !findingLess(deep[0], rest[0]) {
			out, rest = append(out, rest[0]), rest[1:]
		} else {
			out, deep = append(out, deep[0]), deep[1:]
		}
	}
	return out
}

// deepPart returns what the deep facts added to a decision: the findings
// of deep (the decision with them) that fast (the same without them) does
// not have. ok is false unless fast's are all in deep, in the same order,
// and withDeep gives deep's findings back exactly: only then is the part
// worth storing.
func deepPart(deep, fast *Result) (part []admission.Finding, ok bool) {
	d, f := deep.Decision.Findings, fast.Decision.Findings
	if deep.own != fast.own || deep.own > len(d) || fast.own > len(f) || !slices.EqualFunc(d[:deep.own], f[:fast.own], sameFinding) {
		return nil, false
	}
	rest := f[fast.own:]
	part = []admission.Finding{}
	for _, x := range d[deep.own:] {
		if len(rest) > 0 && sameFinding(x, rest[0]) {
			rest = rest[1:]
			continue
		}
		part = append(part, x)
	}
	if len(rest) > 0 {
		return nil, false
	}
	for i := 1; i < len(part); i++ {
		if findingLess(part[i], part[i-1]) {
			return nil, false // Decide's order, which the decoder holds entries to
		}
	}
	return part, slices.EqualFunc(withDeep(f, fast.own, part), d, sameFinding)
}

// sameFinding says whether a and b report the same, as the report
// renders them (their JSON).
func sameFinding(a, b admission.Finding) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// deepCache is one image's deep result in the cache.
type deepCache struct {
	cache    *layercache.Cache
	key      string
	progress func(Update)
}

// deepCacheFor returns the deep result cache of the image cfg describes,
// nil when there is none: no cache, the deep result cache turned off, job
// JARs placed (the result is about them too), or a build that cannot
// tell what it is (toolID).
func (o VerifyOptions) deepCacheFor(cfg *v1.ConfigFile) *deepCache {
	if o.Cache == nil || o.NoDeepCache || len(o.JobJARs) > 0 {
		return nil
	}
	tool := toolID()
	if tool == "" {
		return nil
	}
	return &deepCache{cache: o.Cache, key: deepKey(cfg, tool), progress: o.Progress}
}

// note reports what came of the cached deep result on the progress
// stream (stderr in the CLI), never on the report.
func (dc *deepCache) note(cached bool, text string) {
	if dc.progress != nil {
		dc.progress(Update{Op: "deep", Cached: cached, Finished: true, Digest: dc.key, Note: text})
	}
}

// get returns the cached deep findings, ok false for none or one that
// cannot be applied (said on the progress stream).
func (dc *deepCache) get() (findings []admission.Finding, ok bool) {
	if dc == nil {
		return nil, false
	}
	data, ok := dc.cache.Get(dc.key)
	if !ok {
		return nil, false
	}
	findings, err := decodeDeepResult(data, dc.key)
	if err != nil {
		dc.note(false, fmt.Sprintf("the cached result cannot be used (%v): checking in full", err))
		return nil, false
	}
	dc.note(true, fmt.Sprintf("the cached result of these layers applies (%d findings): no layer read for it", len(findings)))
	return findings, true
}

// put stores the deep part of res, the deep decision on view v of the
// image cfg describes, after deciding on v without the deep facts to tell
// that part. Nothing is stored when the part does not give res back
// (deepPart) or passes the bounds; a cache that cannot be written only
// costs time, as for the layer facts.
func (dc *deepCache) put(ctx context.Context, cfg *v1.ConfigFile, c settings.Config, v *flatten.View, res *Result, more ...admit.Rule) {
	if dc == nil {
		return
	}
	fast, err := decide(ctx, cfg, c, v, nil, more...)
	if err != nil {
		return
	}
	part, ok := deepPart(res, fast)
	if !ok {
		return
	}
	if data, err := encodeDeepResult(dc.key, part); err == nil {
		_ = dc.cache.Put(dc.key, data)
	}
}

// decideCached decides on view v of the image cfg describes as a deep
// check would, the deep findings from the cache.
func decideCached(ctx context.Context, cfg *v1.ConfigFile, c settings.Config, v *flatten.View, findings []admission.Finding) (*Result, error) {
	res, err := decide(ctx, cfg, c, v, nil)
	if err != nil {
		return nil, err
	}
	res.Decision.Findings = withDeep(res.Decision.Findings, res.own, findings)
	return res, nil
}

// toolID identifies this program's build for the deep result cache: the
// Go build ID of the running executable, a hash of what was compiled into
// it (any change of code, rules or version stamp changes it), read once.
// "" when it cannot be read: then no deep result is cached or applied.
var toolID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return buildID(exe)
})

// buildID reads the Go build ID of the executable at p: the ELF note the
// linker writes, or (Mach-O, PE) the marker at the start of the text,
// within the file's first 32 KiB, as the go command finds it.
func buildID(p string) string {
	if f, err := elf.Open(p); err == nil {
		defer func() { _ = f.Close() }() // read only
		if s := f.Section(".note.go.buildid"); s != nil && s.Size <= 4096 {
			if data, err := s.Data(); err == nil && len(data) > 16 {
				return "go-note:" + hex.EncodeToString(data)
			}
		}
		return ""
	}
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 32<<10)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	const marker = "\xff Go build ID: \""
	i := bytes.Index(head, []byte(marker))
	if i < 0 {
		return ""
	}
	rest := head[i+len(marker):]
	j := bytes.IndexByte(rest, '"')
	if j <= 0 {
		return ""
	}
	return "go:" + string(rest[:j])
}
