// Command linkage measures the deep check (`streamfusion check`, shadowing
// and linkage included) on a real Flink lib plus real connectors and a job
// JAR of about 100 MB it writes by shading real JARs, and prints the median
// wall time and the peak RSS of the process against the budget (3 s,
// 256 MB). With -linkage-checker, Google's Linkage Checker runs on the same
// JARs in the same run for the ratio. See docs/performance.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding the built streamfusion")
	flinkLib := flag.String("flink-lib", "", "a real Flink distribution's lib (scripts/fetch-flink-dist)")
	jarsDir := flag.String("jars", "", "the real JAR cache (scripts/fetch-flink-jars)")
	out := os.Stdout
	work := flag.String("work", filepath.Join(os.TempDir(), "streamfusion-linkage-bench"), "where the Flink home and the job JAR are written (kept)")
	runs := flag.Int("runs", 7, "runs of each contender")
	checker := flag.String("linkage-checker", "", "a classpath (java -cp) of Linkage Checker 1.5.15; empty: not run")
	layoutOnly := flag.Bool("layout-only", false, "write the Flink home and the job JAR, print the home's path, measure nothing")
	bundles := flag.String("bundles", "", "comma-separated RELEASE:JAR (a name in -jars without .jar), each bundle checked alone on the real RELEASE's lib under -flink-dist: the largest real bundles against the same budget")
	flinkDist := flag.String("flink-dist", "", "the real distributions' cache (scripts/fetch-flink-dist), for -bundles")
	flag.Parse()
	if *layoutOnly {
		out = os.Stderr // stdout is the home's path
	}
	if *flinkLib == "" || *jarsDir == "" {
		fail(fmt.Errorf("-flink-lib and -jars are required"))
	}
	connectors := []string{"flink-connector-kafka-3.2.0-1.18", "flink-connector-kafka-4.0.0-2.0", "flink-sql-connector-kafka-5.0.0-2.2",
		"flink-json-1.18.1", "flink-connector-jdbc-3.2.0-1.18", "flink-avro-1.18.1", "paimon-flink-1.18-0.8.2", "iceberg-flink-runtime-1.18-1.5.2",
		"kafka-clients-3.4.0"}
	shaded := []string{"paimon-flink-2.0-1.1.1", "iceberg-flink-runtime-2.0-1.10.0", "flink-connector-kafka-5.0.0-2.2", "kafka-clients-4.2.0", "zstd-jni-1.5.6-10"}
	home := filepath.Join(*work, "flink")
	lib, usrlib := filepath.Join(home, "lib"), filepath.Join(home, "usrlib")
	must(os.RemoveAll(home))
	must(os.MkdirAll(lib, 0o755))
	must(os.MkdirAll(usrlib, 0o755))
	var all []string
	libJARs, err := filepath.Glob(filepath.Join(*flinkLib, "*.jar"))
	must(err)
	for _, j := range libJARs {
		must(os.Symlink(j, filepath.Join(lib, filepath.Base(j))))
		all = append(all, j)
	}
	for _, c := range connectors {
		p := filepath.Join(*jarsDir, c+".jar")
		must(os.Symlink(p, filepath.Join(lib, c+".jar")))
		all = append(all, p)
	}
	job := filepath.Join(*work, "job.jar")
	if _, err := os.Stat(job); err != nil {
		var srcs []string
		for _, s := range shaded {
			srcs = append(srcs, filepath.Join(*jarsDir, s+".jar"))
		}
		must(testkit.Shade(job, "org.apache.paimon.flink.action.FlinkActions", srcs))
	}
	info, err := os.Stat(job)
	must(err)
	must(os.Symlink(job, filepath.Join(usrlib, "job.jar")))
	all = append(all, job)
	fmt.Fprintf(out, "lib: %d JARs (%s plus %d connectors); usrlib/job.jar %.1f MB (shaded from %s)\n",
		len(libJARs)+len(connectors), *flinkLib, len(connectors), float64(info.Size())/1e6, strings.Join(shaded, ", "))

	if *layoutOnly {
		fmt.Println(home)
		return
	}
	ours := []string{filepath.Join(*bin, "streamfusion"), "check", "--json", "--flink-home", home}
	var times []time.Duration
	var rss []int64
	findings := 0
	for range *runs {
		d, r, out := run(ours)
		times, rss = append(times, d), append(rss, r)
		findings = strings.Count(out, `"symbol"`)
	}
	med := median(times)
	fmt.Printf("streamfusion check: median %v over %d runs (min %v), peak RSS %d MB (max over runs); %d findings with a symbol\n",
		med.Round(time.Millisecond), *runs, slices.Min(times).Round(time.Millisecond), slices.Max(rss)>>10, findings)
	ourCPU := median(cpu[ours[0]])
	fmt.Printf("CPU time (user+system): median %v; on a shared machine wall time is CPU time plus the wait for a CPU\n", ourCPU.Round(time.Millisecond))
	fmt.Printf("budget: 3 s and 256 MB: wall %.2fx of the budget, CPU %.2fx, memory %.2fx\n", med.Seconds()/3, ourCPU.Seconds()/3, float64(slices.Max(rss)>>10)/256)
	for _, b := range strings.Split(*bundles, ",") {
		if b != "" {
			must(bundle(*bin, *flinkDist, *jarsDir, *work, b, *runs))
		}
	}
	if *checker != "" {
		argv := []string{"java", "-cp", *checker, "com.google.cloud.tools.opensource.classpath.LinkageCheckerMain", "-j", strings.Join(all, ",")}
		var ct []time.Duration
		var cr []int64
		for range max(1, *runs/3) {
			d, r, _ := run(argv)
			ct, cr = append(ct, d), append(cr, r)
		}
		lcCPU := median(cpu["java"])
		fmt.Printf("Linkage Checker: median %v wall, %v CPU over %d runs, peak RSS %d MB; ratio %.1fx wall, %.1fx CPU\n",
			median(ct).Round(time.Millisecond), lcCPU.Round(time.Millisecond), len(ct), slices.Max(cr)>>10, median(ct).Seconds()/med.Seconds(), lcCPU.Seconds()/ourCPU.Seconds())
	}
}

// bundle measures `streamfusion check` on one large real bundle placed
// alone in the lib of the release it is built for (release:jar), against
// the same budget as the layout.
func bundle(bin, dist, jars, work, spec string, runs int) error {
	release, name, ok := strings.Cut(spec, ":")
	if !ok || dist == "" {
		return fmt.Errorf("-bundles %q: want RELEASE:JAR and -flink-dist", spec)
	}
	home := filepath.Join(work, "bundle-"+release)
	lib := filepath.Join(home, "lib")
	if err := os.RemoveAll(home); err != nil {
		return err
	}
	if err := os.MkdirAll(lib, 0o755); err != nil {
		return err
	}
	libJARs, err := filepath.Glob(filepath.Join(dist, release, "lib", "*.jar"))
	if err != nil || len(libJARs) == 0 {
		return fmt.Errorf("no lib of Flink %s under %s", release, dist)
	}
	for _, j := range append(libJARs, filepath.Join(jars, name+".jar")) {
		if _, err := os.Stat(j); err != nil {
			return err
		}
		if err := os.Symlink(j, filepath.Join(lib, filepath.Base(j))); err != nil {
			return err
		}
	}
	argv := []string{filepath.Join(bin, "streamfusion"), "check", "--json", "--flink-home", home}
	var times []time.Duration
	var rss []int64
	findings := 0
	delete(cpu, argv[0])
	for range runs {
		d, r, out := run(argv)
		times, rss = append(times, d), append(rss, r)
		findings = strings.Count(out, `"rule"`)
	}
	med, c := median(times), median(cpu[argv[0]])
	fmt.Printf("bundle %s on %s alone: median %v wall, %v CPU over %d runs, peak RSS %d MB, %d findings; budget 3 s and 256 MB: wall %.2fx, CPU %.2fx, memory %.2fx\n",
		name, release, med.Round(time.Millisecond), c.Round(time.Millisecond), runs, slices.Max(rss)>>10, findings,
		med.Seconds()/3, c.Seconds()/3, float64(slices.Max(rss)>>10)/256)
	return nil
}

// cpu is the CPU time (user and system) of every run, by contender.
var cpu = map[string][]time.Duration{}

// run runs argv and returns its wall time, its peak RSS (KiB) and stdout;
// its CPU time goes to cpu.
func run(argv []string) (time.Duration, int64, string) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = io.Discard
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 78) {
		fail(fmt.Errorf("%s: %w", strings.Join(argv[:2], " "), err))
	}
	cpu[argv[0]] = append(cpu[argv[0]], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	return d, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss, out.String()
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func must(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "linkage bench:", err)
	os.Exit(1)
}
