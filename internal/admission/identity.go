package admission

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Manifest attributes of the payload contract.
const (
	AttrPayload      = "StreamFusion-Payload"
	AttrModule       = "StreamFusion-Module"
	AttrArtifact     = "StreamFusion-Artifact"
	AttrVersion      = "StreamFusion-Version"
	AttrLine         = "StreamFusion-Flink-Line"
	AttrJavaRelease  = "StreamFusion-Java-Release"
	AttrJavaRuntime  = "StreamFusion-Java-Runtime"
	AttrBuildID      = "StreamFusion-Build-Id"
	AttrPlatforms    = "StreamFusion-Native-Platforms"
	AttrEmbeddedCore = payload.EmbeddedCoreAttr
	AttrRequires     = "StreamFusion-Requires"
	AttrStock        = "StreamFusion-Stock-Requires"

	Group        = "tech.streamfusion"
	LoaderModule = "streamfusion-loader"
	CoreModule   = "streamfusion-core"
)

// Payload kinds.
const (
	KindLoader    = "loader"
	KindCore      = "core"
	KindExtension = "extension"
)

// The syntax of attribute values, read by hand rather than by patterns:
// a start meets them on every StreamFusion JAR, and compiling the patterns
// cost more than reading the values. Each says which pattern it is.

// isModule is ^streamfusion-[a-z0-9]+(-[a-z0-9]+)*$.
func isModule(s string) bool {
	rest, ok := strings.CutPrefix(s, "streamfusion-")
	if !ok {
		return false
	}
	for _, w := range strings.Split(rest, "-") {
		if w == "" || !all(w, lowerDigit) {
			return false
		}
	}
	return true
}

// isSemverShape is ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$.
func isSemverShape(s string) bool {
	core, build, hasBuild := strings.Cut(s, "+")
	if hasBuild && (build == "" || !all(build, semverChar)) {
		return false
	}
	core, pre, hasPre := strings.Cut(core, "-")
	if hasPre && (pre == "" || !all(pre, semverChar)) {
		return false
	}
	return digitRuns(core, 3)
}

// isLine is ^[0-9]+\.[0-9]+$.
func isLineAttr(s string) bool { return digitRuns(s, 2) }

// isBuildID is ^[0-9A-Za-z._-]+$.
func isBuildID(s string) bool { return s != "" && all(s, coordChar) }

// isPlatform is ^[a-z]+-[a-z0-9_]+$.
func isPlatform(s string) bool {
	os, arch, ok := strings.Cut(s, "-")
	return ok && os != "" && arch != "" && all(os, func(c byte) bool { return c >= 'a' && c <= 'z' }) &&
		all(arch, func(c byte) bool { return lowerDigit(c) || c == '_' })
}

// digitRuns reports whether s is n dot-separated runs of digits.
func digitRuns(s string, n int) bool {
	parts := strings.Split(s, ".")
	if len(parts) != n {
		return false
	}
	for _, p := range parts {
		if p == "" || !all(p, func(c byte) bool { return c >= '0' && c <= '9' }) {
			return false
		}
	}
	return true
}

func all(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func lowerDigit(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func alnum(c byte) bool { return lowerDigit(c) || c >= 'A' && c <= 'Z' }

func semverChar(c byte) bool { return alnum(c) || c == '.' || c == '-' }

// coordChar is [A-Za-z0-9_.-].
func coordChar(c byte) bool { return alnum(c) || c == '.' || c == '-' || c == '_' }

// Identity is what a StreamFusion JAR says it is. Fields keep the raw
// attribute values; Problems lists what is malformed, Incoherent what does
// not fit together.
type Identity struct {
	Path   string `json:"path"`
	Marked bool   `json:"marked"`
	// Evidence is the entry or attribute that makes the JAR StreamFusion
	// content.
	Evidence string `json:"evidence"`

	Kind         string   `json:"kind,omitempty"`
	Module       string   `json:"module,omitempty"`
	Artifact     string   `json:"artifact,omitempty"`
	Version      string   `json:"version,omitempty"`
	Line         string   `json:"line,omitempty"`
	JavaRelease  int      `json:"javaRelease,omitempty"`
	JavaRuntime  int      `json:"javaRuntime,omitempty"`
	BuildID      string   `json:"buildId,omitempty"`
	Platforms    []string `json:"nativePlatforms,omitempty"`
	NativeCount  int      `json:"nativeLibraries,omitempty"`
	EmbeddedCore string   `json:"embeddedCore,omitempty"`
	Requires     []string `json:"requires,omitempty"`
	Stock        []string `json:"stockRequires,omitempty"`

	Problems   []string `json:"problems,omitempty"`
	Incoherent []string `json:"incoherent,omitempty"`
}

// Valid reports whether the identity is marked, well formed and coherent.
func (id *Identity) Valid() bool {
	return id.Marked && len(id.Problems) == 0 && len(id.Incoherent) == 0
}

// Native reports whether the payload carries or declares native libraries.
func (id *Identity) Native() bool { return len(id.Platforms) > 0 || id.NativeCount > 0 }

// JavaNeeded is the lowest Java major the payload runs on.
func (id *Identity) JavaNeeded() int { return max(id.JavaRelease, id.JavaRuntime) }

// String names the payload for messages: "streamfusion-kafka 0.1.0 (line 2.2)".
func (id *Identity) String() string {
	if !id.Marked {
		return "unversioned StreamFusion content"
	}
	return fmt.Sprintf("%s %s (line %s)", cmp.Or(id.Module, "?"), cmp.Or(id.Version, "?"), cmp.Or(id.Line, "?"))
}

// Identify returns the identity of j, or nil when j is not StreamFusion
// content: no marker, no entry under tech/streamfusion/ or
// META-INF/streamfusion/, no libstreamfusion* native library. It judges by
// content only, never by file name.
func Identify(j *payload.JAR) *Identity {
	if j == nil || j.Err != nil {
		return nil
	}
	var m payload.Manifest
	if j.Manifest != nil {
		m = *j.Manifest
	}
	marker, marked := m.Get(AttrPayload)
	id := &Identity{Path: j.Path, Marked: marked, NativeCount: j.NativeCount}
	switch {
	case marked:
		id.Evidence = AttrPayload + ": " + marker
	case j.ClassMark != "":
		id.Evidence = j.ClassMark
	case j.MetaMark != "":
		id.Evidence = j.MetaMark
	case j.NativeMark != "":
		id.Evidence = j.NativeMark
	default:
		return nil
	}
	if !marked {
		return id
	}
	p := &parser{m: m, id: id}
	for _, name := range m.Repeated {
		if strings.HasPrefix(strings.ToLower(name), "streamfusion-") {
			p.problem("%s appears more than once", name)
		}
	}
	// Read every attribute, then check the syntax of what was read: the
	// problems list the missing and unreadable values first.
	for _, a := range attributes {
		p.read(a)
	}
	for _, a := range attributes {
		p.check(a)
	}
	if len(id.Problems) == 0 {
		id.Incoherent = coherence(id)
	}
	return id
}

// attribute is one manifest attribute of the payload contract: the
// identity field it fills, whether it is required, and the syntax of its
// value (of each item, for a list), as go-version keeps its operators in a
// table.
type attribute struct {
	name     string
	required bool
	// field is where the value goes: a *string, a *[]string (a
	// space-separated list) or an *int (a Java release number).
	field    func(*Identity) any
	valid    func(string) bool // nil: any value
	expected string            // what valid accepts, for the problem
}

// attributes is the contract's attribute table, in reading order.
var attributes = []attribute{
	{AttrPayload, true, func(id *Identity) any { return &id.Kind }, oneOf(KindLoader, KindCore, KindExtension), "loader, core or extension"},
	{AttrModule, true, func(id *Identity) any { return &id.Module }, isModule, "streamfusion-<name> in lower case"},
	{AttrArtifact, true, func(id *Identity) any { return &id.Artifact }, isCoordinate, "groupId:artifactId"},
	{AttrVersion, true, func(id *Identity) any { return &id.Version }, isSemver, "a SemVer release such as 0.1.0 or 0.1.0-rc4"},
	{AttrLine, true, func(id *Identity) any { return &id.Line }, isLineAttr, "a Flink line such as 2.2 or 1.18"},
	{AttrJavaRelease, true, func(id *Identity) any { return &id.JavaRelease }, nil, ""},
	{AttrJavaRuntime, false, func(id *Identity) any { return &id.JavaRuntime }, nil, ""},
	{AttrBuildID, false, func(id *Identity) any { return &id.BuildID }, isBuildID, "letters, digits, '.', '_' or '-'"},
	{AttrPlatforms, false, func(id *Identity) any { return &id.Platforms }, isPlatform, "os-arch such as linux-x86_64"},
	{AttrEmbeddedCore, false, func(id *Identity) any { return &id.EmbeddedCore }, nil, ""},
	{AttrRequires, false, func(id *Identity) any { return &id.Requires }, isModule, "streamfusion-<name>"},
	{AttrStock, false, func(id *Identity) any { return &id.Stock }, nil, ""},
}

func oneOf(values ...string) func(string) bool {
	return func(s string) bool { return slices.Contains(values, s) }
}

func isSemver(s string) bool {
	// The pattern's shape, then what go-version's NewSemver asks more of
	// it (held to NewSemver by FuzzAttributeSyntax): each number fits 64
	// bits, and the pre-release and build are dot-separated identifiers,
	// none empty.
	if !isSemverShape(s) {
		return false
	}
	rest, build, _ := strings.Cut(s, "+")
	core, pre, _ := strings.Cut(rest, "-")
	for _, n := range strings.Split(core, ".") {
		if _, err := strconv.ParseInt(n, 10, 64); err != nil {
			return false
		}
	}
	for _, ids := range []string{pre, build} {
		if ids != "" && slices.Contains(strings.Split(ids, "."), "") {
			return false
		}
	}
	return true
}

func isCoordinate(s string) bool {
	g, a, ok := strings.Cut(s, ":")
	return ok && g != "" && a != "" && all(g, coordChar) && all(a, coordChar)
}

// coherence lists how module, artifact, kind and line disagree.
func coherence(id *Identity) []string {
	var out []string
	g, a, _ := strings.Cut(id.Artifact, ":")
	if g != Group {
		out = append(out, fmt.Sprintf("group is %s, StreamFusion publishes under %s", g, Group))
	}
	if want := ArtifactID(id.Module, id.Line); a != want {
		out = append(out, fmt.Sprintf("artifactId is %s, module %s on line %s is published as %s", a, id.Module, id.Line, want))
	}
	switch {
	case id.Kind == KindLoader && id.Module != LoaderModule:
		out = append(out, fmt.Sprintf("a loader payload must be module %s, not %s", LoaderModule, id.Module))
	case id.Kind == KindCore && id.Module != CoreModule:
		out = append(out, fmt.Sprintf("a core payload must be module %s, not %s", CoreModule, id.Module))
	case id.Kind == KindExtension && (id.Module == LoaderModule || id.Module == CoreModule):
		out = append(out, fmt.Sprintf("module %s cannot be an extension", id.Module))
	}
	return out
}

// ArtifactID is the artifactId a module is published as on a Flink line:
// the module itself on line 2.2, module-flink<line> on other lines.
func ArtifactID(module, line string) string {
	if line == "2.2" {
		return module
	}
	return module + "-flink" + line
}

type parser struct {
	m  payload.Manifest
	id *Identity
}

func (p *parser) problem(format string, args ...any) {
	p.id.Problems = append(p.id.Problems, fmt.Sprintf(format, args...))
}

// read fills a's field from the manifest.
func (p *parser) read(a attribute) {
	v, _ := p.m.Get(a.name)
	if !utf8.ValidString(v) {
		p.problem("%s is not valid UTF-8", a.name)
		v = strings.ToValidUTF8(v, "?")
	}
	if a.required && v == "" {
		p.problem("%s is missing", a.name)
	}
	switch f := a.field(p.id).(type) {
	case *string:
		*f = v
	case *[]string:
		*f = strings.Fields(v)
	case *int:
		*f = p.javaMajor(a.name, v)
	}
}

// check reports a value (or list item) that a's syntax does not accept.
func (p *parser) check(a attribute) {
	if a.valid == nil {
		return
	}
	switch f := a.field(p.id).(type) {
	case *string:
		if *f != "" && !a.valid(*f) {
			p.problem("%s is %q; expected %s", a.name, *f, a.expected)
		}
	case *[]string:
		for _, item := range *f {
			if !a.valid(item) {
				p.problem("%s lists %q; expected %s", a.name, item, a.expected)
			}
		}
	}
}

// javaMajor parses a Java release number; "" is 0.
func (p *parser) javaMajor(name, v string) int {
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 8 || n > 99 {
		p.problem("%s is %q; expected a Java release number such as 11 or 17", name, v)
		return 0
	}
	return n
}
