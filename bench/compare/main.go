// Command compare measures the entrypoint's whole-process time from start
// to hand-off on the realistic lib, side by side in one run with the
// JVM-side check, the minimal reader and a bare exec, alternating the runs.
// It prints medians and minimums of wall and CPU time (user plus system,
// from the child's rusage), ratios, peak RSS, bytes read and the I/O floor,
// and for each entrypoint build one line against the start path's budget:
// at most 1.25x the minimal reader (issue 19), by the median wall and CPU
// time of the same alternated run; with -parts, the bare execs of
// bench/startparts priced over the bare exec.
package main

import (
	"archive/zip"
	"encoding/binary"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

type contender struct {
	name string
	argv []string
	env  []string
	io   []string // argv that ends in ioreport instead of /bin/true; nil: not measured
	runs []time.Duration
	cpu  []time.Duration // user plus system time of each run
	rss  []int64
}

// befores are earlier entrypoint binaries to measure alongside.
var befores []string

// parts are bare execs with one part of a start added (bench/startparts),
// priced against the bare exec rather than judged against the budget.
var parts []string

// withBaked measures the baked-verdict starts on the real lib (-baked).
var withBaked bool

// withJVM adds the JVM-side check to the layouts that have it.
var withJVMCheck = true

// budget is the start path's bound: the entrypoint's time over the minimal
// reader's, wall and CPU (issue 19).
const budget = 1.25

func main() {
	bin := flag.String("bin", "bin", "directory of the built binaries (entrypoint, bench-minimal, bench-bare, bench-ioreport) and bench-jvm classes")
	work := flag.String("work", filepath.Join(os.TempDir(), "streamfusion-bench"), "where the realistic libs are written (kept across runs)")
	runs := flag.Int("runs", 21, "runs of each contender")
	scales := flag.String("scales", "1,4,16", "entry-count scales to measure")
	flinkLib := flag.String("flink-lib", "", "a real Flink distribution's lib (scripts/fetch-flink-dist): measured first, its JARs plus the realistic StreamFusion payloads")
	before := flag.String("before", "", "earlier entrypoint builds, comma-separated, measured alongside in the same alternation (before and after in one run)")
	part := flag.String("parts", "", "bare execs with one part of a start added (bench/startparts), comma-separated, priced over the bare exec in the same alternation")
	flag.BoolVar(&withJVMCheck, "jvm", true, "measure the JVM-side check too")
	bakedRun := flag.Bool("baked", false, "on the real lib, measure the start with a baked deep verdict (written by streamfusion check --write-verdict) against the start without deep checking, and with -job-jars, a new usrlib job JAR shaded from them (issue 30's budgets)")
	job := flag.String("job-jars", "", "JARs shaded into the new usrlib job JAR of -baked, comma-separated")
	flag.Parse()
	withBaked = *bakedRun
	if *job != "" {
		jobJARs = strings.Split(*job, ",")
	}
	if *before != "" {
		befores = strings.Split(*before, ",")
	}
	if *part != "" {
		parts = strings.Split(*part, ",")
	}
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	b := abs(*bin)
	if *flinkLib != "" {
		src := abs(*flinkLib)
		label := "real " + filepath.Base(filepath.Dir(src)) + " lib"
		if err := measure(b, filepath.Join(*work, "real-"+filepath.Base(filepath.Dir(src))), label, realLayout(src), *runs, true, withBaked); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
	}
	for _, s := range strings.Split(*scales, ",") {
		if s == "" {
			continue
		}
		scale, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad -scales:", err)
			os.Exit(64)
		}
		layout := func(lib string) error { return testkit.Realistic(lib, scale) }
		if err := measure(b, filepath.Join(*work, "scale"+s), fmt.Sprintf("synthetic, scale %dx", scale), layout, *runs, scale == 1, false); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
	}
}

// realLayout lays out a real distribution's lib (hard links where the file
// system allows, else copies) plus the realistic StreamFusion payloads.
func realLayout(src string) func(lib string) error {
	return func(lib string) error {
		if err := os.MkdirAll(lib, 0o755); err != nil {
			return err
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".jar") {
				continue
			}
			from, to := filepath.Join(src, e.Name()), filepath.Join(lib, e.Name())
			if os.Link(from, to) == nil {
				continue
			}
			data, err := os.ReadFile(from)
			if err != nil {
				return err
			}
			if err := os.WriteFile(to, data, 0o644); err != nil {
				return err
			}
		}
		// The distribution's conf/ too: the entrypoint reads the config file
		// Flink's scripts take env.java.home from.
		conf := filepath.Join(filepath.Dir(lib), "conf")
		if err := os.MkdirAll(conf, 0o755); err != nil {
			return err
		}
		confs, _ := os.ReadDir(filepath.Join(filepath.Dir(src), "conf"))
		for _, e := range confs {
			data, err := os.ReadFile(filepath.Join(filepath.Dir(src), "conf", e.Name()))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(conf, e.Name()), data, 0o644); err != nil {
				return err
			}
		}
		return testkit.RealisticPayloads(lib)
	}
}

func measure(bin, root, label string, layout func(lib string) error, runs int, withJVM, baked bool) error {
	lib := filepath.Join(root, "opt/flink/lib")
	done := filepath.Join(root, ".laid-out")
	if _, err := os.Stat(done); err != nil {
		_ = os.RemoveAll(root)
		if err := layout(lib); err != nil {
			return err
		}
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			return err
		}
	}
	jdk := filepath.Join(root, "jdk")
	if err := os.MkdirAll(jdk, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(jdk, "release"), []byte("JAVA_VERSION=\"17.0.15\"\n"), 0o644); err != nil {
		return err
	}
	size, njars := libSize(lib)
	floor, cd := ioFloor(lib)
	ioreport := filepath.Join(bin, "bench-ioreport")
	env := []string{"PATH=/usr/bin:/bin", "FLINK_HOME=" + filepath.Join(root, "opt/flink"), "JAVA_HOME=" + jdk}
	cs := []*contender{
		{name: "entrypoint", argv: []string{filepath.Join(bin, "entrypoint"), "jobmanager"}, env: append(env, "STREAMFUSION_ORIGINAL_ENTRYPOINT=/bin/true", "STREAMFUSION_LOG_LEVEL=warn"),
			io: []string{filepath.Join(bin, "entrypoint"), "jobmanager"}},
		{name: "minimal reader", argv: []string{filepath.Join(bin, "bench-minimal"), lib, "/bin/true"}, env: env,
			io: []string{filepath.Join(bin, "bench-minimal"), lib, ioreport}},
		{name: "bare exec", argv: []string{filepath.Join(bin, "bench-bare"), "/bin/true"}, env: env},
	}
	for i, before := range befores {
		b, _ := filepath.Abs(before)
		name := "entrypoint before"
		if len(befores) > 1 {
			name = fmt.Sprintf("entrypoint before %d (%s)", i+1, filepath.Base(b))
		}
		cs = append(cs, &contender{name: name, argv: []string{b, "jobmanager"}, env: cs[0].env})
	}
	verdictFile := filepath.Join(lib, ".streamfusion-deep-verdict")
	_ = os.Remove(verdictFile)
	if baked {
		if err := bakeVerdict(bin, root, env); err != nil {
			return err
		}
		ep := filepath.Join(bin, "entrypoint")
		cs[0].name = nameBaked
		cs = append(cs, &contender{name: nameNoDeep, argv: []string{ep, "jobmanager"}, env: append(slices.Clone(cs[0].env), "STREAMFUSION_LINKAGE=false")})
		if len(jobJARs) > 0 {
			home, err := withJobJAR(root)
			if err != nil {
				return err
			}
			jenv := []string{"PATH=/usr/bin:/bin", "FLINK_HOME=" + filepath.Join(home, "opt/flink"), "JAVA_HOME=" + jdk, "STREAMFUSION_ORIGINAL_ENTRYPOINT=/bin/true", "STREAMFUSION_LOG_LEVEL=warn"}
			cs = append(cs, &contender{name: nameJob, argv: []string{ep, "jobmanager"}, env: jenv})
			if err := measureJobFloor(jenv, runs); err != nil {
				return fmt.Errorf("the job JAR's floor: %w", err)
			}
			bhome, err := withJobJARBaked(home, bin, jenv)
			if err != nil {
				return err
			}
			benv := append(slices.Clone(jenv), "FLINK_HOME="+filepath.Join(bhome, "opt/flink"))
			cs = append(cs, &contender{name: nameJobBaked, argv: []string{ep, "jobmanager"}, env: benv})
		}
	}
	for _, p := range parts {
		b, _ := filepath.Abs(p)
		cs = append(cs, &contender{name: "part " + filepath.Base(b), argv: []string{b}, env: cs[0].env})
	}
	if withJVM && withJVMCheck {
		cs = append(cs, &contender{name: "JVM check", argv: []string{"java", "-Xshare:auto", "-cp", filepath.Join(bin, "bench-jvm"), "JarCheck", lib}, env: append(env, "JAVA_HOME="+os.Getenv("JAVA_HOME"))})
	}
	for _, c := range cs {
		if _, _, err := runOnce(c); err != nil { // warm the page cache, check it works
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	// Each round runs the contenders in a new order (seeded: the same
	// orders every run). A run right after a heavy one (the JVM check, the
	// new job JAR's 117 MB start) is slower; rotating a fixed order would
	// put the same contender after it nearly every time (the baked start
	// measured 1.45x the start without deep checking that way, 1.03x
	// shuffled), while shuffled each follows it as often as the others.
	order := rand.New(rand.NewPCG(1, 2))
	for range runs {
		for _, k := range order.Perm(len(cs)) {
			c := cs[k]
			d, cpu, err := runOnce(c)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			c.runs = append(c.runs, d)
			c.cpu = append(c.cpu, cpu)
		}
	}
	fmt.Printf("\n## %s: %d JARs, %.0f MB, %d central-directory bytes; I/O floor %d bytes\n\n", label, njars, float64(size)/1e6, cd, floor)
	fmt.Println("| contender | median | min | CPU median | CPU min | ratio to entrypoint | peak RSS | bytes read | read / floor |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	ep := median(cs[0].runs)
	for _, c := range cs {
		for range 5 {
			kb, err := peakRSS(c)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			c.rss = append(c.rss, kb)
		}
		m := median(c.runs)
		read, ratio := "", ""
		if c.io != nil {
			n, err := bytesRead(c)
			if err != nil {
				return err
			}
			read, ratio = strconv.FormatInt(n, 10), fmt.Sprintf("%.2f", float64(n)/float64(floor))
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %.2f | %.1f MB | %s | %s |\n", c.name, ms(m), ms(slices.Min(c.runs)), ms(median(c.cpu)), ms(slices.Min(c.cpu)),
			float64(m)/float64(ep), float64(slices.Max(c.rss))/1024, read, ratio)
	}
	fmt.Println()
	reader, bare := cs[1], cs[2]
	for _, c := range cs {
		switch {
		case strings.HasPrefix(c.name, "entrypoint"):
			fmt.Println(verdict(c, reader))
		case strings.HasPrefix(c.name, "part "):
			over := func(a, b []time.Duration) string { return ms(median(a) - median(b)) }
			fmt.Printf("%s: over the bare exec, wall median %s, CPU median %s\n", c.name, over(c.runs, bare.runs), over(c.cpu, bare.cpu))
		}
	}
	if baked {
		bakedVerdicts(cs)
		_ = os.Remove(verdictFile) // the next run without -baked measures the start without a verdict
	}
	return nil
}

// verdict is one line of c against the budget over floor, the minimal
// reader: the ratios of the medians (wall, CPU) decide; the minimums'
// ratio is shown beside them, as the steadiest figure on a loaded machine.
func verdict(c, floor *contender) string {
	ratio := func(a, b []time.Duration) float64 { return float64(median(a)) / float64(median(b)) }
	wall, cpu := ratio(c.runs, floor.runs), ratio(c.cpu, floor.cpu)
	low := float64(slices.Min(c.runs)) / float64(slices.Min(floor.runs))
	result := "PASS"
	if wall > budget || cpu > budget {
		result = "FAIL"
	}
	return fmt.Sprintf("budget %s: %s / minimal reader: wall median %.2fx, CPU median %.2fx (wall min %.2fx); at most %.2fx", result, c.name, wall, cpu, low, budget)
}

// runOnce runs c and returns its wall time and CPU time (user plus
// system, the child's own rusage: the whole start and what it execs).
func runOnce(c *contender) (time.Duration, time.Duration, error) {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Env = c.env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %s", err, out)
	}
	return d, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// peakRSS runs the contender under GNU time, a small process to fork from:
// a child of this (large) harness would start with its high-water mark.
// The kernel keeps the mark across exec, so it covers the whole start.
func peakRSS(c *contender) (int64, error) {
	out, err := os.CreateTemp("", "rss")
	if err != nil {
		return 0, err
	}
	defer os.Remove(out.Name())
	out.Close()
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", out.Name()}, c.argv...)...)
	cmd.Env = c.env
	if b, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("GNU time: %w: %s", err, b)
	}
	b, err := os.ReadFile(out.Name())
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// bytesRead runs the contender with ioreport as what it execs: rchar
// survives exec, so ioreport prints what the contender read.
func bytesRead(c *contender) (int64, error) {
	cmd := exec.Command(c.io[0], c.io[1:]...)
	cmd.Env = c.env
	if strings.HasPrefix(c.name, "entrypoint") {
		cmd.Env = append(append([]string(nil), c.env...), "STREAMFUSION_ORIGINAL_ENTRYPOINT="+filepath.Join(filepath.Dir(c.io[0]), "bench-ioreport"))
	}
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("%s with ioreport: %w", c.name, err)
	}
	return strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func libSize(lib string) (int64, int) {
	var total int64
	n := 0
	_ = filepath.WalkDir(lib, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			info, _ := d.Info()
			total += info.Size()
			n++
		}
		return nil
	})
	return total, n
}

// ioFloor is the bytes no reader can skip: every JAR's end record, central
// directory and manifest (local header and data), flink-dist's version
// resource, and the embedded core's local header and manifest.
func ioFloor(lib string) (floor, cd int64) {
	entries, _ := os.ReadDir(lib)
	for _, e := range entries {
		p := filepath.Join(lib, e.Name())
		r, err := zip.OpenReader(p)
		if err != nil {
			continue
		}
		f, _ := os.Open(p)
		st, _ := f.Stat()
		tail := make([]byte, 22)
		_, _ = f.ReadAt(tail, st.Size()-22)
		f.Close()
		dir := int64(binary.LittleEndian.Uint32(tail[12:]))
		floor += 22 + dir
		cd += dir
		for _, zf := range r.File {
			switch {
			case zf.Name == "META-INF/MANIFEST.MF", zf.Name == ".flink-runtime.version.properties":
				floor += 30 + int64(len(zf.Name)) + int64(zf.CompressedSize64)
			case strings.HasSuffix(zf.Name, "streamfusion-core.jar"):
				floor += 30 + int64(len(zf.Name)) + 30 + 20 + 1024 // nested: its first local header and manifest
			}
		}
		r.Close()
	}
	return floor, cd
}
