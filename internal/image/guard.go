package image

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/image/flatten"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// The guard: payloads in lib are checked only when something checks them.
// An image is guarded when /docker-entrypoint.sh is a StreamFusion
// entrypoint for the image's platform, Flink's own script is kept under
// /opt/streamfusion/ for it to hand off to, and the image's ENTRYPOINT and
// CMD reach it. Verify reports each failure as a finding of these rules.
const (
	RuleGuardEntrypoint = "image-entrypoint"
	RuleGuardOriginal   = "image-original-script"
	RuleGuardReach      = "image-entrypoint-unreached"
)

// GuardRules are the image rules verify adds to the entrypoint's catalogue.
var GuardRules = []admission.Rule{
	{ID: RuleGuardEntrypoint, Severity: admission.Error, Tier: admission.TierImage, Doc: "/docker-entrypoint.sh is not a StreamFusion entrypoint for the image's platform (ELF machine, version stamp)."},
	{ID: RuleGuardOriginal, Severity: admission.Error, Tier: admission.TierImage, Doc: "Flink's own docker-entrypoint.sh is not kept under /opt/streamfusion/, where the entrypoint hands off to it."},
	{ID: RuleGuardReach, Severity: admission.Error, Tier: admission.TierImage, Doc: "The image's ENTRYPOINT and CMD do not start /docker-entrypoint.sh (directly, through a link or PATH, or through tini, dumb-init or a shell's -c exec), so nothing checks the payloads."},
}

// ErrNotEntrypoint is a binary that is not a StreamFusion entrypoint.
var ErrNotEntrypoint = errors.New("not a StreamFusion entrypoint")

// CheckEntrypoint refuses a file that is not a StreamFusion entrypoint
// binary: not ELF, or without the entrypoint's stamp.
func CheckEntrypoint(bin []byte) error {
	if _, err := elfMachine(bin); err != nil {
		return fmt.Errorf("%w: not an ELF binary (%w)", ErrNotEntrypoint, err)
	}
	if !bytes.Contains(bin, flatten.Stamp()) {
		return fmt.Errorf("%w: the binary carries no StreamFusion entrypoint stamp; build it with make build or make dist (cmd/entrypoint)", ErrNotEntrypoint)
	}
	return nil
}

const bakeFix = "bake the image: streamfusion bake --base IMAGE --payload ... (it installs the entrypoint at /docker-entrypoint.sh and keeps Flink's script at " + OriginalPath + ")"

// Guard returns the findings of the guard rules on a flattened image.
func Guard(fsys fs.FS, cf *v1.ConfigFile, c settings.Config) []admission.Finding {
	var out []admission.Finding
	ep := strings.TrimPrefix(EntrypointPath, "/")
	finding := func(rule, found, required string) {
		out = append(out, admission.Finding{Rule: rule, Severity: admission.Error, Path: EntrypointPath,
			Message: "the image is not guarded by the StreamFusion entrypoint", Found: found, Required: required, Fix: bakeFix})
	}
	switch target, info, err := rootfs.Resolve(fsys, ep); {
	case err != nil:
		finding(RuleGuardEntrypoint, "no "+EntrypointPath, "the StreamFusion entrypoint binary at "+EntrypointPath)
	case !info.Mode().IsRegular():
		finding(RuleGuardEntrypoint, EntrypointPath+" is not a regular file", "the StreamFusion entrypoint binary at "+EntrypointPath)
	default:
		data, err := fs.ReadFile(fsys, target)
		if err == nil {
			err = CheckEntrypoint(data)
		}
		if err == nil {
			err = checkMachine(data, cf.Architecture)
		}
		if err != nil {
			finding(RuleGuardEntrypoint, err.Error(), "the StreamFusion entrypoint built for linux/"+cf.Architecture)
		}
	}
	orig := path.Clean(c.Original)
	if !strings.HasPrefix(orig, "/opt/streamfusion/") {
		out = append(out, admission.Finding{Rule: RuleGuardOriginal, Severity: admission.Error, Path: orig,
			Message: "Flink's script is expected under /opt/streamfusion/", Found: "STREAMFUSION_ORIGINAL_ENTRYPOINT=" + orig,
			Required: "a path under /opt/streamfusion/ (default " + OriginalPath + ")", Fix: bakeFix})
	} else if _, info, err := rootfs.Resolve(fsys, strings.TrimPrefix(orig, "/")); err != nil || !info.Mode().IsRegular() {
		out = append(out, admission.Finding{Rule: RuleGuardOriginal, Severity: admission.Error, Path: orig,
			Message: "the entrypoint would have no Flink script to hand off to", Found: "no file at " + orig,
			Required: "Flink's docker-entrypoint.sh kept at " + orig, Fix: bakeFix})
	}
	argv := append(append([]string(nil), cf.Config.Entrypoint...), cf.Config.Cmd...)
	if !reaches(fsys, cf.Config.Env, cf.Config.WorkingDir, argv) {
		out = append(out, admission.Finding{Rule: RuleGuardReach, Severity: admission.Error, Path: EntrypointPath,
			Message: "containers of this image do not start the StreamFusion entrypoint", Found: fmt.Sprintf("ENTRYPOINT %q CMD %q", cf.Config.Entrypoint, cf.Config.Cmd),
			Required: `ENTRYPOINT ["/docker-entrypoint.sh"]` + ` (CMD ["help"] as Flink's images have it), or tini, dumb-init or a shell's -c exec running it`, Fix: "restore ENTRYPOINT [\"/docker-entrypoint.sh\"] in the image, or " + bakeFix})
	}
	return out
}

// maxWrappers bounds how many inits and shells reaches looks through.
const maxWrappers = 4

// reaches reports whether a container started with argv runs the
// StreamFusion entrypoint: as its program (named by path, through links,
// or found on the image's PATH), or through what execs its arguments: an
// init (tini, dumb-init) or a shell's -c command whose first word (after
// an exec) names it. Anything else, such as a script that might call it,
// is not judged to reach it.
func reaches(fsys fs.FS, env []string, workDir string, argv []string) bool {
	want, info, err := rootfs.Resolve(fsys, strings.TrimPrefix(EntrypointPath, "/"))
	if err != nil || !info.Mode().IsRegular() {
		return len(argv) > 0 && path.Clean(argv[0]) == EntrypointPath // judged by the entrypoint rule
	}
	pathVar, _ := settings.Lookup(env, "PATH")
	for range maxWrappers {
		if len(argv) == 0 {
			return false
		}
		prog, ok := lookPath(fsys, pathVar, workDir, argv[0])
		if !ok {
			return false
		}
		if prog == want {
			return true
		}
		switch base := path.Base(prog); {
		case base == "tini" || base == "tini-static" || strings.HasPrefix(base, "tini-static-"):
			argv = afterOptions(argv[1:], "pe") // -p SIGNAL, -e CODE take values
		case base == "dumb-init":
			argv = afterOptions(argv[1:], "r") // -r s:r takes a value
		case (base == "sh" || base == "bash" || base == "dash" || base == "busybox" && len(argv) > 1 && argv[1] == "sh") && shellCommand(argv) != nil:
			argv = shellCommand(argv)
		default:
			return false
		}
	}
	return false
}

// lookPath resolves a program name as the container runtime does: a name
// with a slash as it is (a relative one from the working directory), a
// bare name in each PATH directory; links followed. It returns the file's
// resolved name in fsys.
func lookPath(fsys fs.FS, pathVar, workDir, name string) (string, bool) {
	candidates := []string{name}
	if !strings.HasPrefix(name, "/") {
		candidates[0] = path.Join("/", workDir, name)
	}
	if !strings.Contains(name, "/") {
		candidates = nil
		for _, dir := range strings.Split(pathVar, ":") {
			if strings.HasPrefix(dir, "/") {
				candidates = append(candidates, path.Join(dir, name))
			}
		}
	}
	for _, c := range candidates {
		target, info, err := rootfs.Resolve(fsys, strings.TrimPrefix(path.Clean("/"+c), "/"))
		if err == nil && info.Mode().IsRegular() {
			return target, true
		}
	}
	return "", false
}

// afterOptions returns the program an init runs: argv past its options
// (short flags, those in valued taking the next word) and an ending "--".
func afterOptions(argv []string, valued string) []string {
	for len(argv) > 0 {
		a := argv[0]
		switch {
		case a == "--":
			return argv[1:]
		case !strings.HasPrefix(a, "-") || a == "-":
			return argv
		case len(a) == 2 && strings.ContainsRune(valued, rune(a[1])) || a == "--rewrite":
			argv = argv[min(2, len(argv)):]
		default:
			argv = argv[1:]
		}
	}
	return nil
}

// shellCommand returns the words of a shell's -c command when it runs one
// program: `sh -c "[exec] PROGRAM ARGS..."` with no shell syntax beyond
// words; nil otherwise.
func shellCommand(argv []string) []string {
	i := 1
	if path.Base(argv[0]) == "busybox" {
		i = 2
	}
	if len(argv) <= i+1 || argv[i] != "-c" {
		return nil
	}
	// "$@" passes the shell's arguments on: words, not syntax.
	cmd := strings.NewReplacer(`"$@"`, "", "$@", "").Replace(argv[i+1])
	if strings.ContainsAny(cmd, ";&|<>()`$\\'\"\n{}") {
		return nil
	}
	words := strings.Fields(cmd)
	if len(words) > 0 && words[0] == "exec" {
		words = words[1:]
	}
	return words
}

// sources maps the image paths bake writes to what the user named them by
// (File.Source, such as "--payload ./streamfusion-kafka.jar").
func sources(libDir string, opt BakeOptions) map[string]string {
	lib := path.Clean("/" + libDir)
	m := map[string]string{}
	for _, p := range opt.Payloads {
		if p.Source != "" {
			m[lib+"/"+p.Name] = p.Source
		}
	}
	for _, p := range opt.Usrlib {
		if p.Source != "" {
			m[path.Join(path.Dir(lib), "usrlib", p.Name)] = p.Source
		}
	}
	return m
}
