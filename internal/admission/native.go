package admission

import (
	"debug/elf"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Libs is what the root filesystem offers the dynamic loader, gathered for
// the libraries the payloads' native libraries need (host package): where
// each needed name is found in the loader's search path, and the symbol
// versions each needed file defines (.gnu.version_d). Nil when the ELF
// facts were not read.
type Libs struct {
	// Dirs are the directories searched, in the loader's order: those of
	// /etc/ld.so.conf (the cache is built from them), then the system
	// search path; the JDK's library directories last (the JVM has loaded
	// libjvm.so and its neighbours before any JNI library).
	Dirs []string
	// Found is where each needed name was found, "" where it was not.
	Found map[string]string
	// Defs are the versions each needed file found defines, by the
	// needed name.
	Defs map[string]LibDefs
}

// LibDefs are the symbol versions a library of the root defines.
type LibDefs struct {
	Path     string   // where it was read
	Versions []string // GLIBC_2.2.5 ... GLIBC_2.36
	Err      string   // why they could not be read
}

// elfMachines are the machines of the platforms' loaders.
var elfMachines = map[string]elf.Machine{"x86_64": elf.EM_X86_64, "aarch64": elf.EM_AARCH64}

// hostNatives are the read native libraries of the payloads for the host's
// platform, with their payloads: the libraries of a payload without the
// host's platform are host-platform's to report.
func (v *view) hostNatives() []nativeOf {
	var out []nativeOf
	host := v.Platform.Name()
	for _, id := range v.ids {
		if !slices.Contains(id.Platforms, host) {
			continue
		}
		j := v.jar(id.Path)
		for i := range j.ELF {
			out = append(out, nativeOf{id: id, jar: j, lib: &j.ELF[i]})
		}
	}
	return out
}

type nativeOf struct {
	id  *Identity
	jar *payload.JAR
	lib *payload.Native
}

func (n nativeOf) where() string { return n.id.Path + "!/" + n.lib.Entry }

func nativeUnreadable(v *view) []Finding {
	var out []Finding
	for _, n := range v.hostNatives() {
		switch {
		case n.lib.Err != "":
			out = append(out, Finding{Path: n.where(), Message: name(n.id) + "'s native library is not an ELF object the loader can map",
				Found: n.lib.Err, Required: "an ELF shared object for " + v.Platform.Name(),
				Fix: "rebuild or reinstall the payload; a damaged library fails System.load with UnsatisfiedLinkError (invalid ELF header)"})
		case n.lib.Skipped != "":
			out = append(out, Finding{Severity: Warning, Path: n.where(), Message: name(n.id) + "'s native library was not read, so its ELF is not checked",
				Found: n.lib.Skipped, Required: fmt.Sprintf("at most %d bytes a library, %d a JAR", payload.MaxNativeBytes, payload.NativeBudget),
				Fix: "check the library with readelf -d -V on the build; nothing is wrong with it that this check knows of"})
		}
	}
	return out
}

func describeMachine(n *payload.Native) string {
	return fmt.Sprintf("%v (%v, %v)", n.Machine, n.Class, n.Data)
}

func nativeMachine(v *view) []Finding {
	want, ok := elfMachines[v.Platform.Arch]
	if !ok {
		return nil // host-platform: no native libraries exist for it
	}
	var out []Finding
	for _, n := range v.hostNatives() {
		l := n.lib
		if !l.Read() || (l.Machine == want && l.Class == elf.ELFCLASS64 && l.Data == elf.ELFDATA2LSB) {
			continue
		}
		out = append(out, Finding{Path: n.where(), Message: name(n.id) + "'s native library is built for another machine than the host's",
			Found:    describeMachine(l),
			Required: fmt.Sprintf("%v (ELFCLASS64, ELFDATA2LSB) for %s", want, v.Platform.Name()),
			Fix:      "install the payload's build for " + v.Platform.Name() + "; System.load fails with UnsatisfiedLinkError \"cannot open shared object file: No such file or directory\" (glibc reports a library for another machine as missing)"})
	}
	return out
}

func nativeStaticTLS(v *view) []Finding {
	var out []Finding
	for _, n := range v.hostNatives() {
		l := n.lib
		if !l.Read() || !l.StaticTLS() {
			continue
		}
		var found []string
		if l.StaticTLSFlag {
			found = append(found, "DF_STATIC_TLS in DT_FLAGS")
		}
		if l.TLSSize > 0 {
			found = append(found, fmt.Sprintf("a PT_TLS segment of %d bytes", l.TLSSize))
		}
		if l.TLSReloc != "" {
			found = append(found, "initial-exec relocations ("+l.TLSReloc+")")
		}
		out = append(out, Finding{Path: n.where(), Message: name(n.id) + "'s native library needs a static TLS block (initial-exec TLS model)",
			Found: strings.Join(found, ", "),
			Required: "thread-local storage of the global- or local-dynamic model, as StreamFusion's Linux release validation demands: " +
				"the JVM loads JNI libraries late, when only glibc's surplus static TLS is left (about 1.6 KiB under glibc 2.36's default tunables, " +
				"shared by every such library: measured, a 4 KiB block fails at once and 256-byte ones at the seventh), and a dlopen that " +
				"finds it used up fails with \"cannot allocate memory in static TLS block\"",
			Fix: "rebuild the library with -ftls-model=global-dynamic (no -ftls-model=initial-exec, no -fno-pic TLS), or install a StreamFusion release, whose libraries pass this validation"})
	}
	return out
}

func nativeNeeded(v *view) []Finding {
	if v.Libs == nil {
		return nil
	}
	var out []Finding
	for _, n := range v.hostNatives() {
		for _, need := range n.lib.Needed {
			if strings.Contains(need, "/") || v.Libs.Found[need] != "" || sibling(n.jar, need) {
				continue
			}
			out = append(out, Finding{Path: n.where(), Message: name(n.id) + "'s native library needs a library the root filesystem does not have",
				Found:    "DT_NEEDED " + need + ", not in " + strings.Join(v.Libs.Dirs, ", ") + " nor in the payload",
				Required: need + " in the loader's search path",
				Fix:      "install the package that provides " + need + " in the image (apt-get install ...), or use a payload build linked without it; dlopen fails with \"" + need + ": cannot open shared object file\""})
		}
	}
	return out
}

// sibling says whether another native library of the same JAR is called
// name: a payload's loader loads it first, and the dynamic loader then
// finds it by its name.
func sibling(j *payload.JAR, name string) bool {
	for _, l := range j.ELF {
		if path.Base(l.Entry) == name {
			return true
		}
	}
	return false
}

func nativeSymbolVersion(v *view) []Finding {
	if v.Libs == nil {
		return nil
	}
	var out []Finding
	for _, n := range v.hostNatives() {
		missing := map[string][]string{} // by file
		var files []string
		for _, need := range n.lib.Versions {
			defs, ok := v.Libs.Defs[need.File]
			if !ok || defs.Err != "" || slices.Contains(defs.Versions, need.Version) {
				continue // not found (native-needed says so) or unreadable
			}
			if _, seen := missing[need.File]; !seen {
				files = append(files, need.File)
			}
			missing[need.File] = append(missing[need.File], need.Version)
		}
		for _, file := range files {
			defs := v.Libs.Defs[file]
			out = append(out, Finding{Path: n.where(), Message: name(n.id) + "'s native library needs symbol versions " + file + " of the root filesystem does not define",
				Found:    "needs " + strings.Join(missing[file], ", ") + " from " + file,
				Required: file + " at " + defs.Path + " defines up to " + highest(defs.Versions, missing[file]),
				Fix:      versionFix(missing[file]) + "; dlopen fails with \"version `" + missing[file][0] + "' not found\""})
		}
	}
	return out
}

// highest names the newest version of the family of the first missing one
// that a file defines ("GLIBC_2.36"), or all it defines when none is of
// that family.
func highest(defined, missing []string) string {
	family := versionFamily(missing[0])
	best, bestParts := "", []int(nil)
	for _, d := range defined {
		if versionFamily(d) != family {
			continue
		}
		parts := versionParts(d)
		if best == "" || slices.Compare(parts, bestParts) > 0 {
			best, bestParts = d, parts
		}
	}
	if best == "" {
		return "no " + family + " version (defines " + strings.Join(defined, " ") + ")"
	}
	return best
}

func versionFamily(v string) string {
	if i := strings.IndexByte(v, '_'); i > 0 {
		return v[:i]
	}
	return v
}

func versionParts(v string) []int {
	_, num, _ := strings.Cut(v, "_")
	var out []int
	for _, p := range strings.Split(num, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			return out
		}
		out = append(out, n)
	}
	return out
}

func versionFix(missing []string) string {
	switch versionFamily(missing[0]) {
	case "GLIBC":
		return "use an image whose glibc provides " + missing[0] + " (a newer base than the host's), or a payload build linked against the image's glibc or older (StreamFusion's Linux builds target the oldest supported glibc)"
	case "GLIBCXX", "CXXABI":
		return "use an image whose libstdc++ provides " + missing[0] + " (a newer GCC runtime), or a payload build linked against the image's libstdc++ or older, or with -static-libstdc++"
	}
	return "use an image whose library provides " + missing[0] + ", or a payload build linked against the image's"
}
