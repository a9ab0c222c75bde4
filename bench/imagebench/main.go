// Command imagebench measures streamfusion (verify, bake) on an image of realistic
// size, built here from parts (no image can be pulled): an OS-like layer of
// many small files, a JDK-like layer, the realistic Flink lib of
// testkit.Realistic with opt/ and plugins/, and a layer of extras; about
// 700 MB uncompressed. It writes the image as a `podman save` tarball
// (uncompressed layers), an OCI layout (gzipped layers) and pushes it to a
// loopback registry (go-containerregistry's pkg/registry), then runs, each
// under GNU time for wall time and peak RSS:
//
//   - floor: read every layer once (decompress, sha256, walk the tar
//     headers), two layers at a time as verify does;
//   - verify and bake without the cache;
//   - verify of a re-baked image (same base, other payloads) through the
//     cache, after one verify of the baked image filled it.
//
// Each timed run is repeated (-runs, default 3); the median counts.
//
// `imagebench floor REF` is the floor reader itself.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"

	"github.com/streamfusion/image-entrypoint/internal/image/source"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "floor" {
		if err := floor(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		return
	}
	bin := flag.String("bin", "bin", "directory of streamfusion, entrypoint and bench-image")
	work := flag.String("work", filepath.Join(os.TempDir(), "streamfusion-imagebench"), "where the image is written (kept across runs)")
	sources := flag.String("sources", "tarball,layout,registry", "sources to measure")
	flag.IntVar(&runs, "runs", runs, "runs of each measurement (the median counts)")
	flag.Parse()
	if err := run(*bin, *work, strings.Split(*sources, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "imagebench:", err)
		os.Exit(1)
	}
}

// floor reads every layer of ref once: decompress, sha256, tar headers.
func floor(ref string) error {
	src, err := source.Open(context.Background(), ref)
	if err != nil {
		return err
	}
	layers, err := src.Image.Layers()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(layers))
	next := make(chan int)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = func() error {
					// The blob as stored, decompressed with the same (fastest
					// available) gzip as verify: the floor is not handicapped.
					blob, err := layers[i].Compressed()
					if err != nil {
						return err
					}
					defer blob.Close()
					var rc io.Reader = bufio.NewReaderSize(blob, 64<<10)
					if magic, _ := rc.(*bufio.Reader).Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
						zr, err := gzip.NewReader(rc)
						if err != nil {
							return err
						}
						defer zr.Close()
						rc = zr
					}
					h := sha256.New()
					tr := tar.NewReader(io.TeeReader(rc, h))
					for {
						if _, err := tr.Next(); errors.Is(err, io.EOF) {
							break
						} else if err != nil {
							return err
						}
					}
					_, err = io.Copy(io.Discard, io.TeeReader(rc, h))
					return err
				}()
			}
		}()
	}
	for i := range layers {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

type result struct {
	wall float64 // seconds
	cpu  float64 // user + system seconds
	rss  int64   // KB
}

// runs is how many times each measurement is repeated; the median counts.
var runs = 3

// timed runs argv under GNU time with env added, runs times, and returns
// the run of median wall time.
func timed(env []string, before func(), argv ...string) (result, error) {
	var rs []result
	for range runs {
		if before != nil {
			before()
		}
		r, err := timedOnce(env, argv...)
		if err != nil {
			return r, err
		}
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].wall < rs[j].wall })
	return rs[len(rs)/2], nil
}

func timedOnce(env []string, argv ...string) (result, error) {
	out, err := os.CreateTemp("", "imagebench-time-")
	if err != nil {
		return result{}, err
	}
	out.Close()
	defer os.Remove(out.Name())
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", "%e %U %S %M", "-o", out.Name()}, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		// A verify's refusal (78, of the unbaked base) is a verdict: the
		// work was done (/usr/bin/time passes the status on). A bake that
		// refuses did not bake: an error.
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 78 || !slices.Contains(argv, "verify") {
			return result{}, fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, stderr.String())
		}
	}
	b, err := os.ReadFile(out.Name())
	if err != nil {
		return result{}, err
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return result{}, fmt.Errorf("GNU time wrote %q", b)
	}
	f = f[len(f)-4:]
	wall, _ := strconv.ParseFloat(f[0], 64)
	user, _ := strconv.ParseFloat(f[1], 64)
	sys, _ := strconv.ParseFloat(f[2], 64)
	rss, _ := strconv.ParseInt(f[3], 10, 64)
	return result{wall, user + sys, rss}, nil
}

func run(bin, work string, sources []string) error {
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	bin = abs(bin)
	cli := filepath.Join(bin, "streamfusion")
	if err := generate(work); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	regBase := l.Addr().String() + "/flink:base"

	fmt.Printf("image: %s\n", describe(work))
	fmt.Println("Wall seconds (CPU seconds, user + system); peak RSS.")
	fmt.Println("| source | floor | verify | verify/floor wall (CPU) | verify RSS | bake | bake/verify | bake RSS | verify re-baked (cache) | re-baked/verify |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range sources {
		var ref string
		switch s {
		case "tarball":
			ref = filepath.Join(work, "base.tar")
		case "layout":
			ref = filepath.Join(work, "base-layout")
		case "registry":
			src, err := source.Open(context.Background(), filepath.Join(work, "base-layout"))
			if err != nil {
				return err
			}
			r, err := name.ParseReference(regBase)
			if err != nil {
				return err
			}
			if err := remote.Write(r, src.Image); err != nil {
				return err
			}
			ref = regBase
		default:
			return fmt.Errorf("unknown source %q", s)
		}
		if err := measure(s, ref, cli, bin, work, l.Addr().String()); err != nil {
			return err
		}
	}
	fmt.Println()
	for _, line := range deepLines {
		if err := line(); err != nil {
			return err
		}
	}
	return nil
}

func measure(source, ref, cli, bin, work, reg string) error {
	cache, err := os.MkdirTemp(work, "cache-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cache)
	warm := []string{"XDG_CACHE_HOME=" + cache}
	cold := []string{"STREAMFUSION_NO_CACHE=1"}
	self, _ := os.Executable()
	fl, err := timed(nil, nil, self, "floor", ref)
	if err != nil {
		return err
	}
	// The fast path (--deep=false): what the floor and the targets below
	// are about; the deep check on a real image is BenchmarkVerifyRealImage.
	ver, err := timed(cold, nil, cli, "verify", "--deep=false", ref)
	if err != nil {
		return err
	}
	out := func(n string) (string, []string, func()) {
		switch source {
		case "registry":
			r := reg + "/flink:" + n
			return r, []string{"--tag", r}, nil
		case "layout":
			p := filepath.Join(work, source+"-"+n)
			return p, []string{"--layout", p}, func() { os.RemoveAll(p) }
		}
		p := filepath.Join(work, source+"-"+n+".tar")
		return p, []string{"--output", p}, func() { os.Remove(p) }
	}
	bakeWith := func(deep string, base string, outArgs []string, release string) []string {
		args := append([]string{cli, "bake", "--deep=" + deep, "--base", base, "--entrypoint", filepath.Join(bin, "entrypoint")}, outArgs...)
		dir := filepath.Join(work, "payloads-"+release)
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			args = append(args, "--payload", filepath.Join(dir, e.Name()))
		}
		return args
	}
	bake := func(base string, outArgs []string, release string) []string {
		return bakeWith("false", base, outArgs, release)
	}
	bakedRef, outArgs, clean := out("baked")
	bk, err := timed(cold, clean, bake(ref, outArgs, "0.1.0")...)
	if err != nil {
		return err
	}
	// The cache learns the base and the baked layer; a re-bake with other
	// payloads is then verified through it.
	if _, err := timedOnce(warm, cli, "verify", "--deep=false", bakedRef); err != nil {
		return err
	}
	rebakedRef, outArgs, clean := out("rebaked")
	if clean != nil {
		clean()
	}
	if _, err := timedOnce(warm, bake(bakedRef, outArgs, "0.2.0")...); err != nil {
		return err
	}
	vr, err := timed(warm, nil, cli, "verify", "--deep=false", rebakedRef)
	if err != nil {
		return err
	}
	fmt.Printf("| %s | %.2f s (%.2f) | %.2f s (%.2f) | %.2f (%.2f) | %.1f MB | %.2f s (%.2f) | %.2f | %.1f MB | %.2f s | %.0f%% |\n",
		source, fl.wall, fl.cpu, ver.wall, ver.cpu, ver.wall/fl.wall, ver.cpu/fl.cpu, float64(ver.rss)/1024,
		bk.wall, bk.cpu, bk.wall/ver.wall, float64(bk.rss)/1024, vr.wall, 100*vr.wall/ver.wall)
	deepLines = append(deepLines, func() error { return deepBudget(source, ref, cli, cold, out, bakeWith) })
	return nil
}

// deepLines are the budget lines of the deep check, printed after the
// table.
var deepLines []func() error

// deepBudget measures bake and verify with the deep check (the default),
// both without the cache, and prints the budget line: bake at most 2x
// verify and 160 MB of peak RSS (issue 39).
func deepBudget(source, ref, cli string, cold []string, out func(string) (string, []string, func()), bakeWith func(string, string, []string, string) []string) error {
	ver, err := timed(cold, nil, cli, "verify", ref)
	if err != nil {
		return err
	}
	_, outArgs, clean := out("deep")
	bk, err := timed(cold, clean, bakeWith("true", ref, outArgs, "0.1.0")...)
	if err != nil {
		return err
	}
	verdict := "PASS"
	if bk.wall > 2*ver.wall || bk.cpu > 2*ver.cpu || bk.rss > 160<<10 {
		verdict = "FAIL"
	}
	fmt.Printf("budget %s: %s, with the deep check: bake %.2f s (%.2f CPU), %.1f MB; verify %.2f s (%.2f CPU), %.1f MB; bake / verify %.2fx wall, %.2fx CPU; at most 2x and 160 MB\n",
		verdict, source, bk.wall, bk.cpu, float64(bk.rss)/1024, ver.wall, ver.cpu, float64(ver.rss)/1024, bk.wall/ver.wall, bk.cpu/ver.cpu)
	return nil
}

func describe(work string) string {
	var total int64
	ents, _ := os.ReadDir(filepath.Join(work, "layers"))
	for _, e := range ents {
		if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".tar") {
			total += info.Size()
		}
	}
	return fmt.Sprintf("%d layers, %.0f MB uncompressed", len(ents)/2, float64(total)/1e6)
}

// generate writes the image once into work.
func generate(work string) error {
	done := filepath.Join(work, "done")
	if _, err := os.Stat(done); err == nil {
		return nil
	}
	os.RemoveAll(work)
	if err := os.MkdirAll(filepath.Join(work, "layers"), 0o755); err != nil {
		return err
	}
	for _, v := range []string{"0.1.0", "0.2.0"} {
		dir := filepath.Join(work, "payloads-"+v)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, p := range testkit.StreamFusion("2.2", v) {
			if err := os.WriteFile(filepath.Join(dir, p.Name), p.Payload.Bytes(), 0o644); err != nil {
				return err
			}
		}
	}
	libDir, err := os.MkdirTemp(work, "lib-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(libDir)
	if err := testkit.Realistic(libDir, 1); err != nil {
		return err
	}
	var layers []v1.Layer
	var diffs []string
	for i, write := range []func(*tarWriter) error{osLayer, jdkLayer, flinkLayer(libDir), extrasLayer} {
		p := filepath.Join(work, "layers", fmt.Sprintf("%d.tar", i))
		if err := writeTar(p, write); err != nil {
			return err
		}
		if err := gzipFile(p, p+".gz"); err != nil {
			return err
		}
		l, err := tarball.LayerFromFile(p+".gz", tarball.WithMediaType(types.DockerLayer))
		if err != nil {
			return err
		}
		layers = append(layers, l)
		diffs = append(diffs, p)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.DockerManifestSchema2), layers...)
	if err != nil {
		return err
	}
	img, err = imagekit.Configure(img, "amd64", "9999", []string{"PATH=/opt/flink/bin:/opt/java/openjdk/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"JAVA_HOME=/opt/java/openjdk", "LANG=en_US.UTF-8", "LC_ALL=en_US.UTF-8", "FLINK_HOME=/opt/flink"})
	if err != nil {
		return err
	}
	p, err := layout.Write(filepath.Join(work, "base-layout"), empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img); err != nil {
		return err
	}
	if err := save(filepath.Join(work, "base.tar"), img, diffs); err != nil {
		return err
	}
	return os.WriteFile(done, nil, 0o644)
}

// save writes a `podman save` style tarball: uncompressed layers.
func save(file string, img v1.Image, layerFiles []string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	cfg, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	put := func(n string, r io.Reader, size int64) error {
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	if err := put("config.json", bytes.NewReader(cfg), int64(len(cfg))); err != nil {
		return err
	}
	var names []string
	for i, lf := range layerFiles {
		lfh, err := os.Open(lf)
		if err != nil {
			return err
		}
		info, _ := lfh.Stat()
		n := fmt.Sprintf("layer%d.tar", i)
		err = put(n, lfh, info.Size())
		lfh.Close()
		if err != nil {
			return err
		}
		names = append(names, n)
	}
	m, err := json.Marshal(tarball.Manifest{{Config: "config.json", RepoTags: []string{"localhost/flink:base"}, Layers: names}})
	if err != nil {
		return err
	}
	if err := put("manifest.json", bytes.NewReader(m), int64(len(m))); err != nil {
		return err
	}
	return tw.Close()
}

func gzipFile(in, out string) error {
	r, err := os.Open(in)
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.Create(out)
	if err != nil {
		return err
	}
	defer w.Close()
	zw := gzip.NewWriter(w)
	if _, err := io.Copy(zw, r); err != nil {
		return err
	}
	return zw.Close()
}

type tarWriter struct {
	*tar.Writer
	seen map[string]bool
}

func (t *tarWriter) dir(name string, uid int, mode int64) error {
	if t.seen[name] {
		return nil
	}
	t.seen[name] = true
	return t.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: time.Unix(1700000000, 0)})
}

func (t *tarWriter) file(name string, data []byte, mode int64, uid int) error {
	if err := t.parents(name, uid); err != nil {
		return err
	}
	if err := t.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), Uid: uid, Gid: uid, ModTime: time.Unix(1700000000, 0)}); err != nil {
		return err
	}
	_, err := t.Write(data)
	return err
}

func (t *tarWriter) parents(name string, uid int) error {
	var dirs []string
	for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
		dirs = append(dirs, d)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		owner := 0
		if strings.HasPrefix(dirs[i], "opt/flink") {
			owner = uid
		}
		if err := t.dir(dirs[i], owner, 0o755); err != nil {
			return err
		}
	}
	return nil
}

func (t *tarWriter) link(name, target string) error {
	if err := t.parents(name, 0); err != nil {
		return err
	}
	return t.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: time.Unix(1700000000, 0)})
}

func writeTar(p string, fill func(*tarWriter) error) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := &tarWriter{Writer: tar.NewWriter(f), seen: map[string]bool{}}
	if err := fill(tw); err != nil {
		return err
	}
	return tw.Close()
}

// rng is a small reproducible generator of incompressible bytes.
type rng uint64

func (r *rng) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		*r ^= *r << 13
		*r ^= *r >> 7
		*r ^= *r << 17
		b[i] = byte(*r)
	}
	return b
}

// text is compressible, like the scripts, docs and configs of an OS layer.
func text(n int, seed int) []byte {
	words := []string{"alpha", "package", "config", "library", "system", "default", "value", "function", "return", "include"}
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		b.WriteString(words[(i*7+seed)%len(words)])
		b.WriteByte(" \n"[i%9/8])
	}
	return b.Bytes()[:n]
}

// osLayer: about 12,000 files in 600 directories, half text, half binary:
// 180 MB.
func osLayer(t *tarWriter) error {
	r := rng(0x9e3779b97f4a7c15)
	if err := t.file("lib64/ld-linux-x86-64.so.2", r.bytes(200<<10), 0o755, 0); err != nil {
		return err
	}
	if err := t.file("usr/lib/locale/locale-archive", text(3<<20, 1), 0o644, 0); err != nil {
		return err
	}
	for i := range 12_000 {
		dir := fmt.Sprintf("usr/share/pkg%03d/sub%d", i/20, i%3)
		size := 1_000 + (i*7919)%28_000
		data := text(size, i)
		if i%2 == 1 {
			data = r.bytes(size)
		}
		if err := t.file(fmt.Sprintf("%s/file%05d", dir, i), data, 0o644, 0); err != nil {
			return err
		}
		if i%50 == 0 {
			if err := t.link(fmt.Sprintf("usr/bin/tool%05d", i), "/"+dir+fmt.Sprintf("/file%05d", i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// jdkLayer: a JDK's shape: release, bin/java, lib/modules and native
// libraries: 190 MB.
func jdkLayer(t *tarWriter) error {
	r := rng(0x2545f4914f6cdd1d)
	home := "opt/java/openjdk"
	if err := t.file(home+"/release", []byte("IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_VERSION=\"17.0.15\"\n"), 0o644, 0); err != nil {
		return err
	}
	if err := t.file(home+"/bin/java", r.bytes(16<<10), 0o755, 0); err != nil {
		return err
	}
	if err := t.file(home+"/lib/modules", r.bytes(140<<20), 0o644, 0); err != nil {
		return err
	}
	for i := range 50 {
		if err := t.file(fmt.Sprintf("%s/lib/libjvm%02d.so", home, i), r.bytes(1<<20), 0o755, 0); err != nil {
			return err
		}
	}
	return nil
}

// flinkLayer: the realistic lib, opt/ with 20 connector-sized JARs, two
// plugins, the bin scripts and Flink's entrypoint script: about 290 MB.
func flinkLayer(lib string) func(*tarWriter) error {
	return func(t *tarWriter) error {
		const flink = 9999
		ents, err := os.ReadDir(lib)
		if err != nil {
			return err
		}
		for _, e := range ents {
			data, err := os.ReadFile(filepath.Join(lib, e.Name()))
			if err != nil {
				return err
			}
			if err := t.file("opt/flink/lib/"+e.Name(), data, 0o644, flink); err != nil {
				return err
			}
		}
		for i := range 20 {
			jar := testkit.BigJAR(2_000, 2_500, testkit.Manifest("Implementation-Title", fmt.Sprint("connector-", i)))
			if err := t.file(fmt.Sprintf("opt/flink/opt/flink-connector-%02d-2.2.1.jar", i), jar, 0o644, flink); err != nil {
				return err
			}
		}
		for _, p := range []string{"s3-fs-hadoop", "metrics-prometheus"} {
			jar := testkit.BigJAR(4_000, 2_000, testkit.Manifest("Implementation-Title", p))
			if err := t.file("opt/flink/plugins/"+p+"/flink-"+p+"-2.2.1.jar", jar, 0o644, flink); err != nil {
				return err
			}
		}
		for _, s := range []string{"flink", "config.sh", "jobmanager.sh", "taskmanager.sh"} {
			if err := t.file("opt/flink/bin/"+s, text(8<<10, len(s)), 0o755, flink); err != nil {
				return err
			}
		}
		return t.file("docker-entrypoint.sh", []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755, 0)
	}
}

// extrasLayer: what images add on top (tools, certificates): 80 MB.
func extrasLayer(t *tarWriter) error {
	r := rng(0x1234567)
	for i := range 40 {
		if err := t.file(fmt.Sprintf("usr/local/extra/blob%02d", i), r.bytes(2<<20), 0o644, 0); err != nil {
			return err
		}
	}
	return nil
}
