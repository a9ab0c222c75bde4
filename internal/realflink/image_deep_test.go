//go:build realjars

package realflink

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// layerFile is one file of a test layer: the bytes of a file of this
// machine, a link, or a whiteout.
type layerFile struct {
	name     string // relative to /
	src      string // a file to copy
	data     []byte // or these bytes
	link     string
	whiteout bool
}

// writeLayer writes files as a gzipped tar layer below dir, streaming (the
// real flink-dist is 190 MB).
func writeLayer(tb testing.TB, dir string, files ...layerFile) v1.Layer {
	tb.Helper()
	f, err := os.CreateTemp(dir, "layer-*.tar.gz")
	require.NoError(tb, err)
	defer f.Close()
	zw, err := gzip.NewWriterLevel(f, gzip.BestSpeed)
	require.NoError(tb, err)
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	for _, e := range files {
		for d := filepath.Dir(e.name); d != "."; d = filepath.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				require.NoError(tb, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755}))
			}
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: int64(len(e.data))}
		switch {
		case e.whiteout:
			h.Name = filepath.Join(filepath.Dir(e.name), ".wh."+filepath.Base(e.name))
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		case e.src != "":
			info, err := os.Stat(e.src)
			require.NoError(tb, err)
			h.Size = info.Size()
		}
		require.NoError(tb, tw.WriteHeader(h))
		switch {
		case e.src != "":
			in, err := os.Open(e.src)
			require.NoError(tb, err)
			_, err = io.Copy(tw, in)
			in.Close()
			require.NoError(tb, err)
		case len(e.data) > 0 && h.Typeflag == tar.TypeReg:
			_, err := tw.Write(e.data)
			require.NoError(tb, err)
		}
	}
	require.NoError(tb, tw.Close())
	require.NoError(tb, zw.Close())
	l, err := tarball.LayerFromFile(f.Name(), tarball.WithMediaType(types.OCILayer))
	require.NoError(tb, err)
	return l
}

// flinkLayer is a real distribution at /opt/flink (its lib and config
// file), the JDK release file the host layouts carry, and Flink's script.
func flinkLayer(tb testing.TB, dir, flink string) v1.Layer {
	tb.Helper()
	var files []layerFile
	for name, p := range realLib(tb, flink) {
		files = append(files, layerFile{name: "opt/flink/lib/" + name, src: p})
	}
	slices.SortFunc(files, func(a, b layerFile) int { return strings.Compare(a.name, b.name) })
	return writeLayer(tb, dir, append(files,
		layerFile{name: "opt/flink/conf/config.yaml", src: filepath.Join(flinkHome(tb, flink), "conf/config.yaml")},
		layerFile{name: testkit.JavaHome + "/release", data: []byte("JAVA_VERSION=\"17.0.15\"\n")},
		layerFile{name: "docker-entrypoint.sh", data: []byte(imagekit.FlinkDouble)},
		layerFile{name: testkit.GlibcLD, data: []byte("\x7fELF stand-in for the glibc loader\n")},
	)...)
}

// realImage is a Flink image of the layers, configured as the official
// images are.
func realImage(tb testing.TB, layers ...v1.Layer) v1.Image {
	tb.Helper()
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(img, layers...)
	require.NoError(tb, err)
	img, err = imagekit.Configure(img, "amd64", "9999", []string{
		"PATH=/opt/flink/bin:/" + testkit.JavaHome + "/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"JAVA_HOME=/" + testkit.JavaHome, "FLINK_HOME=/opt/flink", "LANG=C.UTF-8",
	})
	require.NoError(tb, err)
	return img
}

// realJAR is a real JAR of the cache, by its artifact-version name.
func realJAR(t testing.TB, name string) string {
	i := 0
	for i < len(name)-1 && (name[i] != '-' || name[i+1] < '0' || name[i+1] > '9') {
		i++
	}
	return jarPath(t, name[:i], name[i+1:])
}

// libLayer is a layer of real JARs for lib, named as deepLayout names them.
func libLayer(t testing.TB, dir string, names ...string) v1.Layer {
	var files []layerFile
	for _, n := range names {
		files = append(files, layerFile{name: "opt/flink/lib/" + n + ".jar", src: realJAR(t, n)})
	}
	return writeLayer(t, dir, files...)
}

// imageFindings verifies img deep and returns its linkage and shadowing
// findings as text.
func imageFindings(t *testing.T, img v1.Image, o image.VerifyOptions) []string {
	t.Helper()
	o.Deep = true
	res, err := o.Verify(context.Background(), img)
	require.NoError(t, err)
	return symbolTexts(res.Decision.Findings, "")
}

// symbolTexts are the findings with a symbol, as their sentences with the
// layout's root taken off the paths, sorted.
func symbolTexts(fs []admission.Finding, root string) []string {
	out := []string{}
	for _, f := range fs {
		if f.Symbol != nil {
			s := f.Rule + " " + string(f.Severity) + " " + f.Text()
			if root != "" {
				s = strings.ReplaceAll(s, root, "")
			}
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// hostFindings are deepDecide's findings on a directory layout of the same
// files, as `streamfusion check` reads it.
func hostFindings(t *testing.T, flink string, extra []string, usrlib map[string][]byte) []string {
	root := deepLayout(t, flink, extra, usrlib)
	got, _ := deepDecide(t, root)
	return symbolTexts(got, root)
}

const fetcherName = "SingleThreadFetcherManager.<init>(FutureCompletingBlockingQueue, Supplier, Configuration, Consumer)"

// A real 2.2.0 image judged deep: the mismatched Kafka connector's
// breaks, the same findings as the host code on a directory of the same
// files; the consistent set quiet; layers that replace or delete the
// connector; a job JAR from outside the image.
func TestVerifyDeepRealImage(t *testing.T) {
	dir := t.TempDir()
	base := flinkLayer(t, dir, "2.2.0")
	broken := []string{"flink-connector-kafka-3.2.0-1.18", "kafka-clients-3.4.0"}
	// zstd-jni: kafka-clients' POM names it at run time, and its
	// compression classes implement zstd-jni's interfaces (the linkage
	// sets carry it too).
	consistent := []string{"flink-connector-kafka-5.0.0-2.2", "kafka-clients-4.2.0", "zstd-jni-1.5.6-10"}
	brokenLayer := libLayer(t, dir, broken...)

	t.Run("kafka 3.2.0-1.18 on 2.2.0", func(t *testing.T) {
		got := imageFindings(t, realImage(t, base, brokenLayer), image.VerifyOptions{TempDir: t.TempDir()})
		require.True(t, slices.ContainsFunc(got, func(s string) bool {
			return strings.HasPrefix(s, "linkage-method ") && strings.Contains(s, fetcherName) && strings.Contains(s, "/opt/flink/lib/flink-connector-kafka-3.2.0-1.18.jar")
		}), "no %s among\n%s", fetcherName, strings.Join(got, "\n"))
		assert.Equal(t, hostFindings(t, "2.2.0", broken, nil), got, "the image path and the host path differ")
		t.Logf("%d findings, the first: %s", len(got), got[0])

		res, err := image.VerifyOptions{Deep: true}.Verify(context.Background(), realImage(t, base, brokenLayer))
		require.NoError(t, err)
		assert.Equal(t, "org.apache.flink.configuration.CoreOptions in /opt/flink/lib/flink-dist-2.2.0.jar", res.Facts.Deep.ParentFirstFrom,
			"the patterns from the real flink-dist in the image, the config file adding none")

		res, err = image.VerifyOptions{}.Verify(context.Background(), realImage(t, base, brokenLayer))
		require.NoError(t, err)
		assert.Empty(t, symbolTexts(res.Decision.Findings, ""), "the fast path reads no classes")
	})
	t.Run("kafka 5.0.0-2.2 with its client on 2.2.0", func(t *testing.T) {
		got := imageFindings(t, realImage(t, base, libLayer(t, dir, consistent...)), image.VerifyOptions{})
		assert.Empty(t, got)
		assert.Equal(t, hostFindings(t, "2.2.0", consistent, nil), got)
	})
	t.Run("the broken connector replaced in an upper layer", func(t *testing.T) {
		fix := writeLayer(t, dir,
			layerFile{name: "opt/flink/lib/flink-connector-kafka-3.2.0-1.18.jar", src: realJAR(t, "flink-connector-kafka-5.0.0-2.2")},
			layerFile{name: "opt/flink/lib/kafka-clients-3.4.0.jar", src: realJAR(t, "kafka-clients-4.2.0")},
			layerFile{name: "opt/flink/lib/zstd-jni-1.5.6-10.jar", src: realJAR(t, "zstd-jni-1.5.6-10")})
		assert.Empty(t, imageFindings(t, realImage(t, base, brokenLayer, fix), image.VerifyOptions{}))
		// And the other way round: the last layer writing the path wins.
		got := imageFindings(t, realImage(t, base, fix, brokenLayer), image.VerifyOptions{})
		assert.Equal(t, hostFindings(t, "2.2.0", append(slices.Clone(broken), "zstd-jni-1.5.6-10"), nil), got)
	})
	t.Run("the broken connector whited out", func(t *testing.T) {
		gone := writeLayer(t, dir,
			layerFile{name: "opt/flink/lib/flink-connector-kafka-3.2.0-1.18.jar", whiteout: true})
		got := imageFindings(t, realImage(t, base, brokenLayer, gone), image.VerifyOptions{})
		assert.Empty(t, got)
		assert.Equal(t, hostFindings(t, "2.2.0", []string{"kafka-clients-3.4.0"}, nil), got)
	})
	t.Run("a job JAR from outside the image", func(t *testing.T) {
		const main = "org.apache.flink.connector.kafka.source.reader.fetcher.KafkaSourceFetcherManager"
		job := shadedJob(t, main, nil, realJAR(t, "flink-connector-kafka-3.2.0-1.18"), realJAR(t, "kafka-clients-3.4.0"))
		p := filepath.Join(t.TempDir(), "built.jar")
		require.NoError(t, os.WriteFile(p, job, 0o644))
		img := realImage(t, base)
		assert.Empty(t, imageFindings(t, img, image.VerifyOptions{}), "the image alone links")
		res, err := image.VerifyOptions{JobJARs: []image.JobJAR{{Name: "job.jar", Path: p}}}.Verify(context.Background(), img)
		require.NoError(t, err)
		got := symbolTexts(res.Decision.Findings, "")
		require.True(t, slices.ContainsFunc(got, func(s string) bool {
			return strings.HasPrefix(s, "linkage-method error /opt/flink/usrlib/job.jar: ") && strings.Contains(s, fetcherName)
		}), "no %s of the job JAR among\n%s", fetcherName, strings.Join(got, "\n"))
		assert.False(t, res.Decision.Admitted(), "a job JAR's break refuses")
		assert.Equal(t, hostFindings(t, "2.2.0", nil, map[string][]byte{"job.jar": job}), got)
	})
}

// peakRSS is the process's peak resident set (VmHWM), in MB: run one
// benchmark per process for a figure of its own.
func peakRSS(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// cpuTime is the process's CPU time so far (user and system, every
// thread): on a shared machine the figure that waiting for a CPU does not
// inflate.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkVerifyRealImage verifies the real 2.2.0 image with the
// mismatched Kafka connector and its client (two gzipped layers, 272 MB
// of JARs) with and without the deep check; without the layer cache, and
// with a warm one: the facts and the deep result cached (deep-cached: no
// layer read), or the facts only (deep-facts-cached: the deep check reads
// the layers holding the JARs again). Run one sub-benchmark per process
// for its peak RSS (docs/performance.md).
func BenchmarkVerifyRealImage(b *testing.B) {
	dir := b.TempDir()
	img := realImage(b, flinkLayer(b, dir, "2.2.0"), libLayer(b, dir, "flink-connector-kafka-3.2.0-1.18", "kafka-clients-3.4.0"))
	for _, c := range []struct {
		name                 string
		deep, cached, noDeep bool
	}{{"fast", false, false, false}, {"deep", true, false, false}, {"fast-cached", false, true, false}, {"deep-cached", true, true, false},
		{"deep-facts-cached", true, true, true}} {
		b.Run(c.name, func(b *testing.B) {
			o := image.VerifyOptions{Deep: c.deep, TempDir: dir, NoDeepCache: c.noDeep}
			if c.cached {
				o.Cache = &layercache.Cache{Dir: b.TempDir()}
				if _, err := o.Verify(context.Background(), img); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			b.ResetTimer()
			cpu := cpuTime(b)
			for b.Loop() {
				if _, err := o.Verify(context.Background(), img); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e6, "CPU-ms/op")
			b.ReportMetric(peakRSS(b), "peak-RSS-MB")
		})
	}
}

// entrypointBinary builds the entrypoint for linux/amd64 (bake installs it
// and the guard checks it is one).
func entrypointBinary(t *testing.T) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "entrypoint")
	cmd := exec.Command("go", "build", "-o", out, "../../cmd/entrypoint")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	return data
}

// Bake judges the image as baked: the real 2.2.0 base with the StreamFusion
// payloads is baked; with a job JAR in usrlib that shades the Kafka
// connector 3.2.0-1.18 it is refused (linkage errors of usrlib, which only
// the deep check sees), and written with the deep check off.
func TestBakeDeepRealImage(t *testing.T) {
	dir := t.TempDir()
	base := realImage(t, flinkLayer(t, dir, "2.2.0"))
	var payloads []image.File
	for _, p := range testkit.StreamFusion("2.2", "0.1.0") {
		payloads = append(payloads, image.File{Name: p.Name, Data: p.Payload.Bytes()})
	}
	opt := image.BakeOptions{Entrypoint: entrypointBinary(t), Payloads: payloads, Read: image.VerifyOptions{Deep: true, TempDir: dir}}
	_, res, err := image.Bake(context.Background(), base, opt)
	require.NoError(t, err)
	assert.Empty(t, symbolTexts(res.Decision.Findings, ""))
	require.NotNil(t, res.Facts.Deep, "judged deep")

	const main = "org.apache.flink.connector.kafka.source.reader.fetcher.KafkaSourceFetcherManager"
	opt.Usrlib = []image.File{{Name: "job.jar", Data: shadedJob(t, main, nil, realJAR(t, "flink-connector-kafka-3.2.0-1.18"), realJAR(t, "kafka-clients-3.4.0"))}}
	_, res, err = image.Bake(context.Background(), base, opt)
	var refused *image.Refused
	require.ErrorAs(t, err, &refused)
	assert.True(t, slices.ContainsFunc(res.Decision.Errors(), func(f admission.Finding) bool {
		return f.Rule == "linkage-method" && f.Path == "/opt/flink/usrlib/job.jar" && strings.Contains(f.Message, fetcherName)
	}), "%v", symbolTexts(res.Decision.Findings, ""))

	opt.Read.Deep = false
	_, _, err = image.Bake(context.Background(), base, opt)
	assert.NoError(t, err, "without the deep check the break is not seen")
}
