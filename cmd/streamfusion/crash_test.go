//go:build installcrash

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/install"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// The install tests of record for a process that dies: the CLI runs as a
// child process (the test binary re-run as the CLI, see TestMain), and its
// fault hook (faults_test.go) stops it with SIGKILL after a chosen file
// operation.

// realisticUpgrade is an install as a user's automation makes it: a Flink
// 2.2.1 distribution holding StreamFusion 0.1.0 under its Maven file
// names (loader, core and the kafka, json and csv extensions), upgraded to
// 0.2.0 (loader, core, three extensions), installed under the documented
// names: five files move aside, five new ones go into place.
func realisticUpgrade(t *testing.T) (testkit.Dist, []string) {
	t.Helper()
	d := testkit.Good("2.2.1").With(testkit.Placed{Name: "streamfusion-csv-0.1.0.jar", Payload: testkit.Extension("csv", "2.2", "0.1.0")})
	dir := t.TempDir()
	var jars []string
	for _, p := range []testkit.Payload{testkit.Loader("2.2", "0.2.0"), testkit.Core("2.2", "0.2.0"),
		testkit.Extension("kafka", "2.2", "0.2.0"), testkit.Extension("json", "2.2", "0.2.0"), testkit.Extension("csv", "2.2", "0.2.0")} {
		f := filepath.Join(dir, p.FileName())
		require.NoError(t, os.WriteFile(f, p.Bytes(), 0o644))
		jars = append(jars, f)
	}
	return d, jars
}

// leftovers are the install's own files left in lib.
func leftovers(t *testing.T, home string) []string {
	t.Helper()
	var out []string
	for _, n := range []string{install.JournalName, install.StageName} {
		if _, err := os.Lstat(filepath.Join(home, "lib", n)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

var stepLine = regexp.MustCompile(`(?m)^fault-step (\d+): (\S+) (.*)$`)

// A SIGKILL after every file operation of a realistic install, one run per
// operation: check and the entrypoint refuse lib with install-interrupted
// while the journal is there; install --recover leaves lib byte for byte
// as before (when not every new file was in place yet) or as after (when
// every one was), with no journal or stage left; lib is admitted then; and
// the install run again succeeds.
func TestInstallKilledAtEveryStep(t *testing.T) {
	d, jars := realisticUpgrade(t)
	cli := cliBin()

	// The uninterrupted install: the state after, and its steps.
	home, env := flinkHome(t, d)
	before := libState(t, home)
	r := runBin(t, cli, env, []string{"STREAMFUSION_FAULT_TRACE=1"}, append([]string{"install", "--flink-home", home}, jars...)...)
	require.Equal(t, 0, r.code, r.stderr)
	after := libState(t, home)
	require.NotEqual(t, before, after)
	require.FileExists(t, filepath.Join(home, "lib", host.VerdictFile), "the uninterrupted install writes the deep verdict")
	steps := stepLine.FindAllStringSubmatch(r.stderr, -1)
	lastPlace := 0 // the step that puts the last new file in place
	for _, s := range steps {
		if s[2] == "rename" && strings.Contains(s[3], install.StageName+"/") && strings.Contains(s[3], ".new -> ") {
			lastPlace, _ = strconv.Atoi(s[1])
		}
	}
	require.GreaterOrEqual(t, len(steps), 2+1+5+2+1+10*4+1+4, "journal, stage, 5 files, syncs, 10 renames with their syncs and marks, commit, cleanup:\n%s", r.stderr)
	require.Positive(t, lastPlace)

	for n := 1; n <= len(steps); n++ {
		t.Run(fmt.Sprintf("killed after step %d %s", n, steps[n-1][2]), func(t *testing.T) {
			home, env := flinkHome(t, d)
			r := runBin(t, cli, env, []string{"STREAMFUSION_FAULT_KILL_AFTER=" + strconv.Itoa(n)}, append([]string{"install", "--flink-home", home}, jars...)...)
			require.Equal(t, syscall.SIGKILL, r.signal, "stopped by the hook: %s", r.stderr)

			if _, err := os.Lstat(filepath.Join(home, "lib", install.JournalName)); err == nil {
				r = runBin(t, cli, env, nil, "check", "--flink-home", home)
				assert.Equal(t, 78, r.code, r.stdout)
				assert.Contains(t, r.stdout, "[install-interrupted]")
				assert.Contains(t, r.stdout, "streamfusion install --recover --flink-home "+home)
				r = runBin(t, entrypoints["amd64"], env, []string{"FLINK_HOME=" + home}, "streamfusion", "check")
				assert.Equal(t, 78, r.code, "the entrypoint refuses too: %s%s", r.stdout, r.stderr)
				assert.Contains(t, r.stdout+r.stderr, "install-interrupted")
			} else {
				require.GreaterOrEqual(t, n, len(steps)-1, "only the last steps (the journal removed, lib synced) leave no journal")
				assert.Equal(t, after, libState(t, home))
			}

			r = runBin(t, cli, env, nil, "install", "--recover", "--flink-home", home)
			require.Equal(t, 0, r.code, r.stderr)
			if n >= lastPlace {
				assert.Equal(t, after, libState(t, home), "every new file was in place: completed (%s)", r.stdout)
				if strings.Contains(r.stdout, install.Completed) {
					assert.Contains(t, startLinkage(t, home, env), "the baked deep verdict applies",
						"a completed recovery writes lib's deep verdict, as the uninterrupted install does")
				}
			} else {
				assert.Equal(t, before, libState(t, home), "rolled back (%s)", r.stdout)
			}
			assert.Empty(t, leftovers(t, home))
			r = runBin(t, cli, env, nil, "check", "--flink-home", home)
			assert.Equal(t, 0, r.code, r.stdout)

			r = runBin(t, cli, env, nil, append([]string{"install", "--flink-home", home}, jars...)...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, after, libState(t, home))
			assert.Empty(t, leftovers(t, home))
		})
	}
}

// A power cut keeps what was fsynced. Every operation of install that
// changes a directory is followed by an fsync of it before the next, so
// what a power cut can leave is lib as it was at an fsync point, plus at
// most the one operation after it (the states TestInstallKilledAtEveryStep
// recovers), with the journal's last line possibly cut short (the torn
// tails of internal/install's TestRecoverEveryCrashState). Here the test
// build copies lib at each fsync point of a real install, and each copy is
// recovered by the real binary.
func TestInstallPowerCutAtEveryFsync(t *testing.T) {
	d, jars := realisticUpgrade(t)
	cli := cliBin()
	home, env := flinkHome(t, d)
	before := libState(t, home)
	snaps := t.TempDir()
	r := runBin(t, cli, env, []string{"STREAMFUSION_FAULT_SNAPSHOTS=" + snaps, "STREAMFUSION_FAULT_LIB=" + filepath.Join(home, "lib")},
		append([]string{"install", "--flink-home", home}, jars...)...)
	require.Equal(t, 0, r.code, r.stderr)
	after := libState(t, home)
	ents, err := os.ReadDir(snaps)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(ents), 30, "an fsync after every step")
	names := []string{}
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	sawBefore, sawAfter := false, false
	for _, n := range names {
		// The copy becomes the lib of an otherwise empty FLINK_HOME:
		// recovery needs nothing else.
		h := t.TempDir()
		require.NoError(t, os.Rename(filepath.Join(snaps, n), filepath.Join(h, "lib")))
		r := runBin(t, cli, env, nil, "install", "--recover", "--flink-home", h)
		require.Equal(t, 0, r.code, "snapshot %s: %s", n, r.stderr)
		got := libState(t, h)
		switch {
		case equalState(got, before):
			sawBefore = true
		case equalState(got, after):
			sawAfter = true
		default:
			t.Errorf("snapshot %s recovered to neither before nor after: %v", n, keys(got))
		}
		assert.Empty(t, leftovers(t, h), "snapshot %s", n)
	}
	assert.True(t, sawBefore && sawAfter, "some fsync points roll back, some complete")
}

func equalState(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Two installs into one lib started together, 100 rounds, each round with
// its own release and payload sets: the loser waits for the lock and then
// succeeds, and lib ends exactly as the two installs one after the other
// make it (both orders give the same lib). Every fourth round both run
// with --lock-timeout 0: the loser, if they met, exits 1 naming the
// winner's pid, and lib is as the winner alone makes it.
func TestInstallsStartedTogether(t *testing.T) {
	cli := cliBin()
	extras := []string{"csv", "avro", "parquet", "raw", "orc", "protobuf"}
	met := 0
	for round := range 100 {
		version := fmt.Sprintf("0.%d.0", round+2)
		setA := []string{extras[round%len(extras)]}
		setB := []string{extras[(round+1)%len(extras)], extras[(round+3)%len(extras)]}
		home, env := flinkHome(t, testkit.Good("2.2.1"))
		before := libState(t, home)
		dir := t.TempDir()
		args := func(mods []string) ([]string, map[string]string) {
			files := map[string]string{} // lib name -> contents
			list := []string{"install", "--flink-home", home}
			if round%4 == 3 {
				list = append(list, "--lock-timeout", "0")
			}
			ps := []testkit.Payload{testkit.Loader("2.2", version), testkit.Core("2.2", version),
				testkit.Extension("kafka", "2.2", version), testkit.Extension("json", "2.2", version)}
			for _, m := range mods {
				ps = append(ps, testkit.Extension(m, "2.2", version))
			}
			for _, p := range ps {
				b := p.Bytes()
				f := filepath.Join(dir, p.FileName())
				require.NoError(t, os.WriteFile(f, b, 0o644))
				list = append(list, f)
				files["/lib/"+install.NameFor(p.Kind, p.Module)] = string(b)
			}
			return list, files
		}
		argsA, filesA := args(setA)
		argsB, filesB := args(setB)
		// lib after an install of files: the earlier release's files gone.
		state := func(sets ...map[string]string) map[string]string {
			out := map[string]string{}
			for k, v := range before {
				if !strings.Contains(k, "streamfusion") {
					out[k] = v
				}
			}
			for _, s := range sets {
				for k, v := range s {
					out[k] = v
				}
			}
			return out
		}

		a, b := startBin(t, cli, env, argsA...), startBin(t, cli, env, argsB...)
		ra, rb := a.wait(t), b.wait(t)
		got := libState(t, home)
		assert.Empty(t, leftovers(t, home), "round %d", round)
		switch {
		case ra.code == 0 && rb.code == 0:
			require.Equal(t, state(filesA, filesB), got, "round %d: both installed", round)
			if strings.Contains(ra.stderr+rb.stderr, "waiting up to") {
				met++
			}
		case round%4 == 3 && ra.code == 1 && rb.code == 0:
			require.Contains(t, ra.stderr, "is locked by another install: pid "+strconv.Itoa(b.pid), "round %d", round)
			require.Equal(t, state(filesB), got, "round %d: B alone", round)
			met++
		case round%4 == 3 && rb.code == 1 && ra.code == 0:
			require.Contains(t, rb.stderr, "is locked by another install: pid "+strconv.Itoa(a.pid), "round %d", round)
			require.Equal(t, state(filesA), got, "round %d: A alone", round)
			met++
		default:
			t.Fatalf("round %d: exit %d and %d:\n%s\n%s", round, ra.code, rb.code, ra.stderr, rb.stderr)
		}
	}
	t.Logf("the two installs met at the lock in %d of 100 rounds", met)
	assert.Positive(t, met, "the installs never overlapped: the test did not test the lock")
}
