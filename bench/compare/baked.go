package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/streamfusion/image-entrypoint/bench/floor"
	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
	"github.com/streamfusion/image-entrypoint/internal/settings"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// The budgets of a start with a baked deep verdict (issue 30), in the
// same alternated run: an unchanged lib within 1.1x of the start without
// deep checking; one new job JAR in usrlib at most 150 ms more; peak RSS
// within 1.5x the minimal reader's and 16 MB.
const (
	bakedBudget    = 1.1
	jobJARBudget   = 150 * time.Millisecond
	bakedRSSRatio  = 1.5
	bakedRSSBudget = 16 << 10 // KB
	// The new job JAR's added time over its floor (issue 39).
	floorBudget = 1.5
)

// jobJARs are the JARs shaded into the new usrlib job JAR (-job-jars).
var jobJARs []string

// jobFloor is the floor of the new job JAR's check (bench/floor): what
// the start read, and the floor's times, runs of them.
var jobFloor struct {
	read  floor.Result
	times []time.Duration
}

// measureJobFloor records the classes the start on the job's home
// inflates (the entrypoint's own check, admit.Check with the settings env
// gives, run in this process) and times their floor, runs times.
func measureJobFloor(env []string, runs int) error {
	cfg, err := settings.FromEnv(env)
	if err != nil {
		return err
	}
	s := cfg.HostSettings("linux", host.NormalizeArch(runtime.GOARCH))
	s.Role = "jobmanager"
	classes, err := floor.Record(func() error {
		v, err := admit.Check(context.Background(), admit.Request{Root: rootfs.Host(), Settings: s, Progress: &host.Progress{}})
		if err == nil && !v.Decision.Admitted() {
			err = fmt.Errorf("the job's home is refused: %w", v.Err())
		}
		return err
	})
	if err != nil {
		return err
	}
	if len(classes) == 0 {
		return fmt.Errorf("the start with a new job JAR inflated no class")
	}
	file := func(jar string) string { return jar } // the host's own paths
	jobFloor.times = nil
	for range runs {
		start := time.Now()
		r, err := floor.Run(classes, file)
		if err != nil {
			return err
		}
		jobFloor.times = append(jobFloor.times, time.Since(start))
		jobFloor.read = r
	}
	return nil
}

// bakeVerdict writes lib's deep verdict with the CLI, as bake does, and
// says how long it took.
func bakeVerdict(bin, root string, env []string) error {
	cmd := exec.Command(filepath.Join(bin, "streamfusion"), "check", "--json", "--write-verdict", "--flink-home", filepath.Join(root, "opt/flink"))
	cmd.Env = env
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("streamfusion check --write-verdict: %w: %.2000s", err, out)
	}
	info, err := os.Stat(filepath.Join(root, "opt/flink/lib/.streamfusion-deep-verdict"))
	if err != nil {
		return err
	}
	fmt.Printf("\nbaked verdict: `streamfusion check --write-verdict` %.2f s wall, %.2f s CPU; %d bytes\n",
		time.Since(start).Seconds(), (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(), info.Size())
	return nil
}

// withJobJAR lays out a second Flink home beside root: lib's files hard
// linked (the verdict too), and usrlib/job.jar shaded from jobJARs.
func withJobJAR(root string) (string, error) {
	home := root + "-job"
	lib := filepath.Join(home, "opt/flink/lib")
	_ = os.RemoveAll(home)
	if err := os.MkdirAll(lib, 0o755); err != nil {
		return "", err
	}
	for _, dir := range []string{"lib", "conf"} {
		entries, _ := os.ReadDir(filepath.Join(root, "opt/flink", dir))
		_ = os.MkdirAll(filepath.Join(home, "opt/flink", dir), 0o755)
		for _, e := range entries {
			if err := os.Link(filepath.Join(root, "opt/flink", dir, e.Name()), filepath.Join(home, "opt/flink", dir, e.Name())); err != nil {
				return "", err
			}
		}
	}
	if err := os.Symlink(filepath.Join(root, "jdk"), filepath.Join(home, "jdk")); err != nil {
		return "", err
	}
	usrlib := filepath.Join(home, "opt/flink/usrlib")
	if err := os.MkdirAll(usrlib, 0o755); err != nil {
		return "", err
	}
	if err := testkit.Shade(filepath.Join(usrlib, "job.jar"), "org.apache.flink.connector.kafka.source.KafkaSource", jobJARs); err != nil {
		return "", err
	}
	return home, nil
}

// withJobJARBaked lays out a third Flink home, a copy of the job's (hard
// links) whose lib verdict the entrypoint's own `streamfusion check
// --write-verdict` rewrote with usrlib's job JAR in it, as a derived
// image's RUN step after its COPY does; it says how long the step took.
func withJobJARBaked(jobHome, bin string, env []string) (string, error) {
	home := jobHome + "-baked"
	_ = os.RemoveAll(home)
	for _, dir := range []string{"lib", "conf", "usrlib"} {
		entries, _ := os.ReadDir(filepath.Join(jobHome, "opt/flink", dir))
		if err := os.MkdirAll(filepath.Join(home, "opt/flink", dir), 0o755); err != nil {
			return "", err
		}
		for _, e := range entries {
			if err := os.Link(filepath.Join(jobHome, "opt/flink", dir, e.Name()), filepath.Join(home, "opt/flink", dir, e.Name())); err != nil {
				return "", err
			}
		}
	}
	jdk, err := os.Readlink(filepath.Join(jobHome, "jdk"))
	if err != nil {
		return "", err
	}
	if err := os.Symlink(jdk, filepath.Join(home, "jdk")); err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(bin, "entrypoint"), "streamfusion", "check", "--json", "--write-verdict")
	cmd.Env = append(slices.Clone(env), "FLINK_HOME="+filepath.Join(home, "opt/flink"))
	start := time.Now()
	if out, err := cmd.Output(); err != nil {
		return "", fmt.Errorf("entrypoint streamfusion check --write-verdict: %w: %.2000s", err, out)
	}
	fmt.Printf("job JAR baked in: the entrypoint's `streamfusion check --write-verdict` %.2f s wall, %.2f s CPU\n",
		time.Since(start).Seconds(), (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds())
	return home, nil
}

// bakedVerdicts prints the lines of the baked-verdict budgets.
func bakedVerdicts(cs []*contender) {
	find := func(name string) *contender {
		for _, c := range cs {
			if c.name == name {
				return c
			}
		}
		return nil
	}
	baked, nodeep, job, jobBaked, reader := find(nameBaked), find(nameNoDeep), find(nameJob), find(nameJobBaked), find("minimal reader")
	if baked == nil || nodeep == nil {
		return
	}
	pass := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	ratio := func(a, b []time.Duration) float64 { return float64(median(a)) / float64(median(b)) }
	wall, cpu := ratio(baked.runs, nodeep.runs), ratio(baked.cpu, nodeep.cpu)
	fmt.Printf("budget %s: %s / %s: wall median %.2fx, CPU median %.2fx; at most %.2fx\n", pass(wall <= bakedBudget && cpu <= bakedBudget), baked.name, nodeep.name, wall, cpu, bakedBudget)
	rss := slices.Max(baked.rss)
	rr := float64(rss) / float64(slices.Max(reader.rss))
	fmt.Printf("budget %s: %s peak RSS %.1f MB, %.2fx the minimal reader's; at most %.1fx and %d MB\n", pass(rr <= bakedRSSRatio && rss <= bakedRSSBudget), baked.name, float64(rss)/1024, rr, bakedRSSRatio, bakedRSSBudget>>10)
	if job != nil {
		added, addedCPU := median(job.runs)-median(baked.runs), median(job.cpu)-median(baked.cpu)
		fmt.Printf("budget %s: %s over %s: wall median +%s, CPU median +%s, peak RSS %.1f MB; at most +%s\n", pass(added <= jobJARBudget), job.name, baked.name, ms(added), ms(addedCPU), float64(slices.Max(job.rss))/1024, ms(jobJARBudget))
		if len(jobFloor.times) > 0 {
			f := median(jobFloor.times)
			r := float64(added) / float64(f)
			fmt.Printf("budget %s: %s over %s, +%s, over its floor (%d JAR's central directory read, %d classes the start read, %.1f MB, inflated on %d cores) %s: %.2fx; at most %.1fx\n",
				pass(r <= floorBudget), job.name, baked.name, ms(added), jobFloor.read.JARs, jobFloor.read.Classes, float64(jobFloor.read.Inflated)/1e6, runtime.GOMAXPROCS(0), ms(f), r, floorBudget)
		}
	}
	if jobBaked != nil {
		added, addedCPU := median(jobBaked.runs)-median(baked.runs), median(jobBaked.cpu)-median(baked.cpu)
		fmt.Printf("budget %s: %s over %s: wall median %+.2f ms, CPU median %+.2f ms, peak RSS %.1f MB; at most +%s\n", pass(added <= jobJARBudget), jobBaked.name, baked.name,
			float64(added)/1e6, float64(addedCPU)/1e6, float64(slices.Max(jobBaked.rss))/1024, ms(jobJARBudget))
	}
}

// Contender names of the baked-verdict layouts.
const (
	nameBaked  = "entrypoint, baked verdict"
	nameNoDeep = "entrypoint, STREAMFUSION_LINKAGE=false"
	nameJob    = "entrypoint, baked verdict, new usrlib job JAR"
	// The same job JAR judged by the image build's RUN step (the
	// entrypoint's check --write-verdict after the COPY).
	nameJobBaked = "entrypoint, job JAR baked in by check --write-verdict"
)
