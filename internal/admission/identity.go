package admission

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/go-version"

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

// The syntax of attribute values, compiled on first use: most starts meet
// few StreamFusion JARs, and none of these is needed before.
var (
	reModule   = lazy(`^streamfusion-[a-z0-9]+(-[a-z0-9]+)*$`)
	reSemver   = lazy(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	reLine     = lazy(`^[0-9]+\.[0-9]+$`)
	reBuildID  = lazy(`^[0-9A-Za-z._-]+$`)
	rePlatform = lazy(`^[a-z]+-[a-z0-9_]+$`)
	reCoord    = lazy(`^[A-Za-z0-9_.-]+$`)
)

func lazy(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

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
	return fmt.Sprintf("%s %s (line %s)", or(id.Module, "?"), or(id.Version, "?"), or(id.Line, "?"))
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
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
	id.Kind = p.required(AttrPayload)
	id.Module = p.required(AttrModule)
	id.Artifact = p.required(AttrArtifact)
	id.Version = p.required(AttrVersion)
	id.Line = p.required(AttrLine)
	id.JavaRelease = p.javaMajor(AttrJavaRelease, true)
	id.JavaRuntime = p.javaMajor(AttrJavaRuntime, false)
	id.BuildID = p.optional(AttrBuildID)
	id.Platforms = p.list(AttrPlatforms)
	id.EmbeddedCore = p.optional(AttrEmbeddedCore)
	id.Requires = p.list(AttrRequires)
	id.Stock = p.list(AttrStock)

	switch id.Kind {
	case "", KindLoader, KindCore, KindExtension:
	default:
		p.problem("%s is %q; expected loader, core or extension", AttrPayload, id.Kind)
	}
	if id.Module != "" && !reModule().MatchString(id.Module) {
		p.problem("%s is %q; expected streamfusion-<name> in lower case", AttrModule, id.Module)
	}
	if id.Version != "" {
		if _, err := version.NewSemver(id.Version); err != nil || !reSemver().MatchString(id.Version) {
			p.problem("%s is %q; expected a SemVer release such as 0.1.0 or 0.1.0-rc4", AttrVersion, id.Version)
		}
	}
	if id.Line != "" && !reLine().MatchString(id.Line) {
		p.problem("%s is %q; expected a Flink line such as 2.2 or 1.18", AttrLine, id.Line)
	}
	if id.BuildID != "" && !reBuildID().MatchString(id.BuildID) {
		p.problem("%s is %q; expected letters, digits, '.', '_' or '-'", AttrBuildID, id.BuildID)
	}
	for _, pl := range id.Platforms {
		if !rePlatform().MatchString(pl) {
			p.problem("%s lists %q; expected os-arch such as linux-x86_64", AttrPlatforms, pl)
		}
	}
	for _, r := range id.Requires {
		if !reModule().MatchString(r) {
			p.problem("%s lists %q; expected streamfusion-<name>", AttrRequires, r)
		}
	}
	if id.Artifact != "" {
		if g, a, ok := strings.Cut(id.Artifact, ":"); !ok || !reCoord().MatchString(g) || !reCoord().MatchString(a) {
			p.problem("%s is %q; expected groupId:artifactId", AttrArtifact, id.Artifact)
		}
	}
	if len(id.Problems) == 0 {
		id.Incoherent = coherence(id)
	}
	return id
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

func (p *parser) optional(name string) string {
	v, _ := p.m.Get(name)
	if !utf8.ValidString(v) {
		p.problem("%s is not valid UTF-8", name)
		return strings.ToValidUTF8(v, "?")
	}
	return v
}

func (p *parser) required(name string) string {
	v := p.optional(name)
	if v == "" {
		p.problem("%s is missing", name)
	}
	return v
}

func (p *parser) list(name string) []string { return strings.Fields(p.optional(name)) }

func (p *parser) javaMajor(name string, required bool) int {
	var v string
	if required {
		v = p.required(name)
	} else {
		v = p.optional(name)
	}
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
