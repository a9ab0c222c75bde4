package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/settings"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// The deep tests' classes: a flink-dist whose Base has the constructor
// (I)V only, and connectors whose service entry point calls (I)V (links)
// or (J)V (a linkage-method finding).
const (
	deepBase    = "org/apache/flink/Base"
	deepFactory = "org.apache.flink.table.factories.Factory"
	libConn     = "/opt/flink/lib/flink-connector-x-1.0-1.18.jar"
)

func deepDist() []byte {
	return testkit.ClassJAR(testkit.Manifest("Implementation-Title", "flink-dist", "Implementation-Version", "2.2.0"), []testkit.Class{
		{Name: deepBase, Methods: []testkit.Member{{Name: "<init>", Descriptor: "(I)V"}}},
		{Name: "org/apache/flink/runtime/entrypoint/ClusterEntrypoint"},
	}, nil, testkit.Entry{Name: ".flink-runtime.version.properties", Data: []byte("project.version=2.2.0\nscala.binary.version=2.12\n")})
}

// deepConnector is a connector whose factory calls Base.<init> with desc.
func deepConnector(desc string) []byte {
	return testkit.ClassJAR(testkit.Manifest("Implementation-Title", "Flink : Connectors : X", "Implementation-Version", "1.0-1.18"), []testkit.Class{
		{Name: "org/apache/flink/connector/x/XFactory", News: []string{deepBase}, Calls: []testkit.Call{{Owner: deepBase, Name: "<init>", Descriptor: desc}}},
	}, map[string][]string{deepFactory: {"org.apache.flink.connector.x.XFactory"}})
}

// deepJob is a job JAR whose Main-Class calls Base.<init> with desc.
func deepJob(desc string) []byte {
	return testkit.ClassJAR(testkit.Manifest("Main-Class", "com.acme.Job"), []testkit.Class{
		{Name: "com/acme/Job", News: []string{deepBase}, Calls: []testkit.Call{{Owner: deepBase, Name: "<init>", Descriptor: desc}}},
	}, nil)
}

// deepImage is a Flink 2.2 image with the deep tests' flink-dist, and the
// upper layers given.
func deepImage(t *testing.T, upper ...[]imagekit.Entry) v1.Image {
	t.Helper()
	d := testkit.Good("2.2.0")
	d.Payloads = nil
	d.Files = map[string][]byte{testkit.LibDir + "/flink-dist-2.2.0.jar": deepDist()}
	img, err := imagekit.Base{Dist: d, User: "9999", Extra: flinkDirs}.Image()
	require.NoError(t, err)
	for _, entries := range upper {
		img, err = mutate.AppendLayers(img, imagekit.Layer(entries...))
		require.NoError(t, err)
	}
	return img
}

// symbolFindings are the findings of the deep rules, as text.
func symbolFindings(d *admission.Decision) []string {
	var out []string
	for _, f := range d.Findings {
		if f.Symbol != nil || f.Rule == "classpath-shadowed" {
			out = append(out, f.Rule+" "+string(f.Severity)+" "+f.Text())
		}
	}
	slices.Sort(out)
	return out
}

// wholeDeep is the reference: the image's whole files, flattened by
// go-containerregistry (imagekit.Files, not this package's merge), read
// by the host code deep, as `streamfusion check` reads a directory.
func wholeDeep(t *testing.T, img v1.Image) []string {
	t.Helper()
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	c, err := settings.FromEnv(cfg.Config.Env)
	require.NoError(t, err)
	fsys, err := imagekit.Files(img)
	require.NoError(t, err)
	s := c.HostSettings(cfg.OS, cfg.Architecture)
	s.Deep = true
	f, err := host.Gather(context.Background(), fsys, s, nil)
	require.NoError(t, err)
	defer f.Deep.Close()
	return symbolFindings(admission.Decide(f))
}

func verifyDeep(t *testing.T, img v1.Image, o VerifyOptions) []string {
	t.Helper()
	res, err := o.Verify(context.Background(), img)
	require.NoError(t, err)
	return symbolFindings(res.Decision)
}

// The image path and the host path judge the same files alike: the merged
// image (the last layer writing a path wins, whiteouts delete) read deep
// gives the findings the host code gives on the flattened files.
func TestVerifyDeepAsTheHost(t *testing.T) {
	t.Parallel()
	broken := imagekit.Entry{Name: libConn, Data: deepConnector("(J)V")}
	fixed := imagekit.Entry{Name: libConn, Data: deepConnector("(I)V")}
	for name, c := range map[string]struct {
		upper  [][]imagekit.Entry
		broken bool
	}{
		"broken connector":              {[][]imagekit.Entry{{broken}}, true},
		"consistent connector":          {[][]imagekit.Entry{{fixed}}, false},
		"fixed in an upper layer":       {[][]imagekit.Entry{{broken}, {fixed}}, false},
		"broken in an upper layer":      {[][]imagekit.Entry{{fixed}, {broken}}, true},
		"whited out in an upper layer":  {[][]imagekit.Entry{{broken}, {{Name: libConn, Whiteout: true}}}, false},
		"lib opaque in an upper layer":  {[][]imagekit.Entry{{broken}, {{Name: testkit.LibDir, Opaque: true}, {Name: "/" + testkit.LibDir + "/flink-dist-2.2.0.jar", Data: deepDist()}}}, false},
		"linked from outside lib":       {[][]imagekit.Entry{{{Name: "/opt/connectors/x.jar", Data: deepConnector("(J)V")}, {Name: libConn, Link: "/opt/connectors/x.jar"}}}, true},
		"re-created after the whiteout": {[][]imagekit.Entry{{fixed}, {{Name: libConn, Whiteout: true}}, {broken}}, true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			img := deepImage(t, c.upper...)
			cache := &layercache.Cache{Dir: t.TempDir()}
			got := verifyDeep(t, img, VerifyOptions{Deep: true, TempDir: t.TempDir(), Cache: cache})
			assert.Equal(t, wholeDeep(t, img), got, "the image path differs from the host path")
			// Again, the facts and the deep result from the cache.
			again := verifyDeep(t, img, VerifyOptions{Deep: true, TempDir: t.TempDir(), Cache: cache})
			assert.Equal(t, got, again, "the cached path differs")
			// And the facts only: the JARs are read from the layers again.
			again = verifyDeep(t, img, VerifyOptions{Deep: true, TempDir: t.TempDir(), Cache: cache, NoDeepCache: true})
			assert.Equal(t, got, again, "the path of cached facts differs")
			hit := slices.ContainsFunc(got, func(s string) bool {
				return strings.HasPrefix(s, "linkage-method ") && strings.Contains(s, "Base.<init>(long)")
			})
			assert.Equal(t, c.broken, hit, "%v", got)
			assert.Empty(t, verifyDeep(t, img, VerifyOptions{}), "without Deep, no deep finding")
		})
	}
}

// A job JAR given from outside the image is judged in usrlib, shown at
// its usrlib path; the image alone links.
func TestVerifyJobJARs(t *testing.T) {
	t.Parallel()
	img := deepImage(t, []imagekit.Entry{{Name: libConn, Data: deepConnector("(I)V")}})
	dir := t.TempDir()
	job := filepath.Join(dir, "built-job.jar")
	require.NoError(t, os.WriteFile(job, deepJob("(J)V"), 0o644))
	assert.Empty(t, verifyDeep(t, img, VerifyOptions{Deep: true}))
	got := verifyDeep(t, img, VerifyOptions{JobJARs: []JobJAR{{Name: "job.jar", Path: job}}})
	require.Len(t, got, 1, "JobJARs imply Deep")
	assert.Contains(t, got[0], "/opt/flink/usrlib/job.jar: ")
	assert.Contains(t, got[0], "linkage-method ")

	// The same, with the JAR in the image's usrlib, read by the host code.
	inImage := deepImage(t, []imagekit.Entry{{Name: libConn, Data: deepConnector("(I)V")}, {Name: "/opt/flink/usrlib/job.jar", Data: deepJob("(J)V")}})
	assert.Equal(t, wholeDeep(t, inImage), got)

	_, err := VerifyOptions{JobJARs: []JobJAR{{Name: "../job.jar", Path: job}}}.Verify(context.Background(), img)
	assert.ErrorContains(t, err, "want a plain *.jar name")
	_, err = VerifyOptions{JobJARs: []JobJAR{{Name: "job.jar", Path: filepath.Join(dir, "missing.jar")}}}.Verify(context.Background(), img)
	assert.ErrorContains(t, err, "missing.jar")
}

// The copies live in a private directory that is gone when Verify
// returns, whether it decided or was cancelled.
func TestVerifyDeepLeavesNothing(t *testing.T) {
	t.Parallel()
	img := deepImage(t, []imagekit.Entry{{Name: libConn, Data: deepConnector("(J)V")}})
	dir := t.TempDir()
	got := verifyDeep(t, img, VerifyOptions{Deep: true, TempDir: dir})
	require.NotEmpty(t, got)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = VerifyOptions{Deep: true, TempDir: dir}.Verify(ctx, img)
	assert.ErrorIs(t, err, context.Canceled)
	left, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left)
}

// A first reading keeps the JARs' bytes as it reads the layers for their
// facts; when the cache answers the facts but not the deep result (here
// kept out of it), the deep check reads the layers holding the JARs again
// (and only those).
func TestVerifyDeepWithCachedFacts(t *testing.T) {
	t.Parallel()
	img := deepImage(t, []imagekit.Entry{{Name: libConn, Data: deepConnector("(J)V")}}, []imagekit.Entry{{Name: "/etc/motd", Data: []byte("no JAR here")}})
	var cached, again []int
	o := VerifyOptions{Deep: true, Cache: &layercache.Cache{Dir: t.TempDir()}, NoDeepCache: true, Workers: 1, Progress: func(u Update) {
		switch {
		case u.Cached:
			cached = append(cached, u.Layer)
		case u.Op == "classes" && u.Finished:
			again = append(again, u.Layer)
		}
	}}
	first := verifyDeep(t, img, o)
	assert.NotEmpty(t, first)
	assert.Empty(t, cached)
	assert.Empty(t, again, "the first reading kept the JARs")

	second := verifyDeep(t, img, o)
	assert.Equal(t, []int{1, 2, 3}, cached)
	assert.Equal(t, []int{1, 2}, again, "the layers with lib's JARs, not the last one")
	assert.Equal(t, first, second)
}

// An image the deep rules refuse is not baked: a stock JAR whose class
// differs from flink-dist's own hides it (classpath-shadowed, an error).
func TestBakeRefusesWhatTheDeepCheckRefuses(t *testing.T) {
	t.Parallel()
	entrypoint, err := stampedTrue()
	require.NoError(t, err)
	base := deepImage(t)
	shadow := testkit.ClassJAR(testkit.Manifest("Implementation-Title", "acme-utils"), []testkit.Class{
		{Name: deepBase, Methods: []testkit.Member{{Name: "<init>", Descriptor: "(J)V"}}},
	}, nil)
	opt := BakeOptions{Entrypoint: entrypoint, Payloads: append(testPayloads("2.2"), File{Name: "acme-utils-1.0.jar", Data: shadow, Stock: true})}
	_, _, err = Bake(context.Background(), base, opt)
	require.NoError(t, err, "without the deep check the shadowing is not seen")

	opt.Read = VerifyOptions{Deep: true, TempDir: t.TempDir()}
	_, res, err := Bake(context.Background(), base, opt)
	var refused *Refused
	require.ErrorAs(t, err, &refused)
	require.NotNil(t, res)
	assert.True(t, slices.ContainsFunc(res.Decision.Errors(), func(f admission.Finding) bool {
		return f.Rule == "classpath-shadowed" && f.Path == "/opt/flink/lib/acme-utils-1.0.jar"
	}), "%v", symbolFindings(res.Decision))
}

// The user class loader's patterns come as host reads them: the defaults
// (the test flink-dist has no CoreOptions: Flink's own list), plus the
// image's config file's additional patterns.
func TestVerifyDeepParentFirstFromTheImage(t *testing.T) {
	t.Parallel()
	img := deepImage(t, []imagekit.Entry{{Name: "/opt/flink/conf/config.yaml", Data: []byte("classloader.parent-first-patterns.additional: com.acme.;org.example.\n")}})
	res, err := VerifyOptions{Deep: true}.Verify(context.Background(), img)
	require.NoError(t, err)
	require.NotNil(t, res.Facts.Deep)
	assert.Equal(t, []string{"com.acme.", "org.example."}, res.Facts.Deep.ParentFirst[len(res.Facts.Deep.ParentFirst)-2:])
	assert.Contains(t, res.Facts.Deep.ParentFirstFrom, "classloader.parent-first-patterns.additional from /opt/flink/conf/config.yaml")

	res, err = VerifyOptions{}.Verify(context.Background(), img)
	require.NoError(t, err)
	assert.Nil(t, res.Facts.Deep, "the fast path gathers no class index")
}

// A SQL file in the image's usrlib is read with the layers' facts and
// judged by the deep check: the connector the image has admits, one it
// lacks is a warning (nothing the image is given names the file).
func TestVerifyDeepReadsUsrlibSQL(t *testing.T) {
	t.Parallel()
	conn := testkit.ClassJAR("", []testkit.Class{{Name: "com/acme/XFactory", Returns: map[string]string{"factoryIdentifier": "x"}}},
		map[string][]string{deepFactory: {"com.acme.XFactory"}})
	missing := func(id string) []admission.Finding {
		img := deepImage(t, []imagekit.Entry{{Name: "/opt/flink/lib/acme-x.jar", Data: conn}, {Name: "/opt/flink/usrlib/sql/job.sql",
			Data: []byte("CREATE TABLE t (a INT) WITH ('connector' = '" + id + "');")}})
		res, err := VerifyOptions{Deep: true}.Verify(context.Background(), img)
		require.NoError(t, err)
		var out []admission.Finding
		for _, f := range res.Decision.Findings {
			if f.Rule == "table-factory-missing" {
				out = append(out, f)
			}
		}
		return out
	}
	assert.Empty(t, missing("x"), "the image's connector answers 'x'")
	got := missing("kafka")
	require.Len(t, got, 1)
	assert.Equal(t, "/opt/flink/usrlib/sql/job.sql", got[0].Path)
	assert.Equal(t, admission.Warning, got[0].Severity)
}

// A check judges at most 64 SQL files of usrlib (a layer keeps no more,
// and host reads no more), and none outside usrlib.
func TestUsrlibSQLBounded(t *testing.T) {
	t.Parallel()
	var entries []imagekit.Entry
	for i := range 70 {
		entries = append(entries, imagekit.Entry{Name: fmt.Sprintf("/opt/flink/usrlib/q%02d.sql", i), Data: []byte("CREATE TABLE t (a INT) WITH ('connector' = 'kafka');")})
	}
	entries = append(entries, imagekit.Entry{Name: "/opt/flink/lib/x.sql", Data: []byte("CREATE TABLE t (a INT) WITH ('connector' = 'kafka');")})
	res, err := VerifyOptions{Deep: true}.Verify(context.Background(), deepImage(t, entries))
	require.NoError(t, err)
	files := map[string]bool{}
	for _, f := range res.Decision.Findings {
		if f.Rule == "table-factory-missing" {
			files[f.Path] = true
		}
	}
	assert.Len(t, files, 64)
	assert.False(t, files["/opt/flink/lib/x.sql"], "lib's SQL is not a job's")
}

// A plugin folder with a JAR not the host's own is read for the deep
// check and judged in the plugin's class loader: its factory calls a class
// only lib has. A folder of the host's own plugin is neither read nor
// judged, whatever its code calls.
func TestVerifyDeepJudgesPlugins(t *testing.T) {
	t.Parallel()
	plugin := func(manifest string) []byte {
		return testkit.ClassJAR(manifest, []testkit.Class{{Name: "com/acme/fs/AcmeFactory", Returns: map[string]string{"getScheme": "acme"},
			Calls: []testkit.Call{{Owner: "com/acme/util/Helper", Name: "make", Descriptor: "()V"}}}},
			map[string][]string{"org.apache.flink.core.fs.FileSystemFactory": {"com.acme.fs.AcmeFactory"}})
	}
	util := testkit.ClassJAR("", []testkit.Class{{Name: "com/acme/util/Helper", Methods: []testkit.Member{{Name: "make", Descriptor: "()V"}}}}, nil)
	own := testkit.Manifest("Implementation-Vendor-Id", "org.apache.flink", "Implementation-Version", "2.2.0")
	img := deepImage(t, []imagekit.Entry{{Name: "/opt/flink/lib/acme-util-1.0.jar", Data: util},
		{Name: "/opt/flink/plugins/acme/acme-fs-1.0.jar", Data: plugin("")},
		{Name: "/opt/flink/plugins/own/flink-own-fs-2.2.0.jar", Data: plugin(own)}})
	var got []string
	for _, f := range verifyDeep(t, img, VerifyOptions{Deep: true}) {
		if strings.Contains(f, "/plugins/") {
			got = append(got, f)
		}
	}
	require.Len(t, got, 1, "%v", got)
	assert.True(t, strings.HasPrefix(got[0], "linkage-class warning "), got[0])
	assert.Contains(t, got[0], "/opt/flink/plugins/acme/acme-fs-1.0.jar")
	assert.Contains(t, got[0], "lib has it (/opt/flink/lib/acme-util-1.0.jar)")
}
