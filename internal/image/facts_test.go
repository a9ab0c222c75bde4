package image

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/settings"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// gatherWhole is the reference: the image's whole files, flattened by
// go-containerregistry (imagekit.Files), read by the entrypoint's own
// code. It sees every file, so a file host.Gather reads that the scan
// does not keep shows as a difference.
// nativeLibs are the gcc-built fixtures (testkit.NativeFixtures), built
// once; gcc is what `go test -race` needs anyway.
var nativeLibs = sync.OnceValues(func() (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "sf-native-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return testkit.NativeFixtures(dir)
})

func nativeLib(t *testing.T, name string) []byte {
	t.Helper()
	libs, err := nativeLibs()
	require.NoError(t, err, "the native library fixtures need gcc")
	return libs[name]
}

func gatherWhole(t *testing.T, img v1.Image) *admission.Facts {
	t.Helper()
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	c, err := settings.FromEnv(cfg.Config.Env)
	require.NoError(t, err)
	fsys, err := imagekit.Files(img)
	require.NoError(t, err)
	s := c.HostSettings(cfg.OS, cfg.Architecture)
	s.Native = true       // as Verify: the native-* rules' facts too
	s.Baked = false       // as verify reads: no baked verdict applied (its facts hold no bytes to fingerprint)
	s.AllProviders = true // as verify reads: every file system and reporter factory
	f, err := host.Gather(context.Background(), fsys, s, nil)
	require.NoError(t, err)
	return f
}

// jarView shows what JSON leaves out of a payload.JAR: the error's
// message and the manifest's attributes.
type jarView struct {
	*payload.JAR
	Err      string
	Attrs    map[string]string
	Repeated []string
	Nested   *jarView
}

func viewOf(j *payload.JAR) *jarView {
	if j == nil {
		return nil
	}
	v := &jarView{JAR: j, Nested: viewOf(j.Nested)}
	if j.Err != nil {
		v.Err = j.Err.Error()
	}
	if j.Manifest != nil {
		v.Attrs, v.Repeated = j.Manifest.Attributes(), j.Manifest.Repeated
	}
	return v
}

func asJSON(t *testing.T, f *admission.Facts) string {
	t.Helper()
	views := func(js []*payload.JAR) (out []*jarView) {
		for _, j := range js {
			out = append(out, viewOf(j))
		}
		return out
	}
	b, err := json.MarshalIndent(map[string]any{"facts": f, "classpath": views(f.Classpath),
		"usrlib": views(f.Usrlib), "plugins": views(f.Plugins)}, "", " ")
	require.NoError(t, err)
	return string(b)
}

// TestVerifyFromFactsAgreesWithWholeFiles holds the facts read from layers
// (JARs spooled and dropped, manifests stored as text) to what reading the
// whole files gives, on images that exercise links, whiteouts, nested
// cores, broken JARs and flink-dist's properties.
func TestVerifyFromFactsAgreesWithWholeFiles(t *testing.T) {
	t.Parallel()
	broken := testkit.Core("2.2", "0.1.0").Bytes()
	broken = broken[:len(broken)/2]
	big := testkit.BigJAR(3, 2<<20, testkit.Manifest("Implementation-Title", "big"))
	cases := map[string]struct {
		dist  testkit.Dist
		env   []string
		extra []imagekit.Entry
		upper []imagekit.Entry
	}{
		"good 2.2":  {dist: testkit.Good("2.2.1")},
		"good 1.18": {dist: testkit.Good("1.18.1")},
		"links and a broken JAR": {dist: testkit.Good("2.2.1"), extra: []imagekit.Entry{
			{Name: "opt/flink/lib/linked.jar", Link: "../opt/connector.jar"},
			{Name: "opt/flink/opt/connector.jar", Data: broken},
			{Name: "opt/flink/lib/broken.jar", Data: broken},
			{Name: "opt/flink/lib/alias.jar", Link: "sub/real.jar"},
			{Name: "opt/flink/lib/sub/real.jar", Data: testkit.Extension("json", "2.2", "0.1.0").Bytes()},
			{Name: "opt/flink/lib/big.jar", Data: big},
			{Name: "opt/flink/usrlib/job.jar", Data: testkit.Extension("kafka", "2.2", "0.1.0").Bytes()},
		}},
		"long, repeated and non-UTF-8 attributes": {dist: testkit.Good("2.2.1"), extra: []imagekit.Entry{
			// Folded at 72 bytes in the JAR, longer than a manifest line may
			// be once unfolded (log4j's Import-Package is such a value).
			{Name: "opt/flink/lib/long.jar", Data: testkit.JAR(testkit.Manifest("Import-Package", strings.Repeat("org.example.pkg;version=1, ", 40)))},
			{Name: "opt/flink/lib/odd.jar", Data: testkit.JAR("Manifest-Version: 1.0\r\nA: caf\xe9\r\na: again\r\n\r\n")},
		}},
		// Flink's scripts take env.java.home from the config file: the
		// scan must keep it for verify to judge the JDK the start runs.
		"1.18 with env.java.home in flink-conf.yaml": {dist: testkit.Good("1.18.1"), extra: []imagekit.Entry{
			{Name: testkit.FlinkHome + "/conf/flink-conf.yaml", Data: []byte("env.java.home: /opt/java/jdk11\n")},
			{Name: "opt/java/jdk11/release", Data: []byte("JAVA_VERSION=\"11.0.25\"\n")},
			{Name: "opt/java/jdk11/bin/java", Data: []byte("#!/bin/sh\n")},
		}},
		"2.2 with env.java.home in config.yaml": {dist: testkit.Good("2.2.1"), extra: []imagekit.Entry{
			{Name: testkit.FlinkHome + "/conf/config.yaml", Data: []byte("env.java.home: /opt/java/jdk11\n")},
			{Name: "opt/java/jdk11/release", Data: []byte("JAVA_VERSION=\"11.0.25\"\n")},
			{Name: "opt/java/jdk11/bin/java", Data: []byte("#!/bin/sh\n")},
		}},
		// Links decide what a container reads: a FLINK_HOME reached
		// through a link, a JAR in lib linked to one in opt.
		"FLINK_HOME behind a link": {dist: testkit.Good("2.2.1"), env: []string{"FLINK_HOME=/opt/current"}, extra: []imagekit.Entry{
			{Name: "opt/current", Link: "flink"},
		}},
		"a lib JAR linked to opt": {dist: testkit.Good("2.2.1"), extra: []imagekit.Entry{
			{Name: "opt/flink/lib/streamfusion-avro.jar", Link: "../opt/streamfusion-avro.jar"},
			{Name: "opt/flink/opt/streamfusion-avro.jar", Data: testkit.Extension("avro", "1.18", "0.1.0").Bytes()},
		}},
		// The native-* rules' facts: the payloads' ELF, ld.so.conf, a
		// runtime library reached through links (merged /usr, a soname
		// link), as Debian lays them out.
		"native libraries and the runtime's": {dist: testkit.Good("2.2.1").With(
			testkit.Placed{Name: "streamfusion-ops-0.1.0.jar", Payload: testkit.NativePayload("ops", "2.2", "0.1.0", testkit.NativeNewGlibc, nativeLib(t, testkit.NativeNewGlibc))},
			testkit.Placed{Name: "streamfusion-tls-0.1.0.jar", Payload: testkit.NativePayload("tls", "2.2", "0.1.0", testkit.NativeMissing, nativeLib(t, testkit.NativeMissing))}),
			extra: []imagekit.Entry{
				{Name: "lib", Link: "usr/lib"},
				{Name: "usr/lib/x86_64-linux-gnu/libc.so.6", Link: "libc-2.36.so"},
				{Name: "usr/lib/x86_64-linux-gnu/libc-2.36.so", Data: nativeLib(t, testkit.StubLibc236)},
				{Name: "etc/ld.so.conf", Data: []byte("include /etc/ld.so.conf.d/*.conf\n")},
				{Name: "etc/ld.so.conf.d/x86_64-linux-gnu.conf", Data: []byte("/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n")},
			}},
		"whited out by an upper layer": {dist: testkit.Good("2.2.1"), upper: []imagekit.Entry{
			{Name: "opt/flink/lib/" + testkit.Core("2.2", "0.1.0").FileName(), Whiteout: true},
			{Name: "opt/flink/plugins", Opaque: true},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			img, err := imagekit.Base{Dist: tc.dist, User: "9999", Env: tc.env, Extra: tc.extra}.Image()
			require.NoError(t, err)
			if tc.upper != nil {
				img, err = mutate.AppendLayers(img, imagekit.Layer(tc.upper...))
				require.NoError(t, err)
			}
			res, err := VerifyOptions{TempDir: t.TempDir()}.Verify(context.Background(), img)
			require.NoError(t, err)
			assert.JSONEq(t, asJSON(t, gatherWhole(t, img)), asJSON(t, res.Facts))
		})
	}
}

// TestImageRunTimeFacts: an image's check reads every file system and
// reporter factory of its plugins from the layers' facts (no JAR bytes
// later), so that a deployment's own configuration can be judged against
// them (Decision.RunTime); its own config.yaml is judged as at a start.
func TestImageRunTimeFacts(t *testing.T) {
	fsPlugin := testkit.ClassJAR("", []testkit.Class{{Name: "x/S3", Returns: map[string]string{"getScheme": "s3"}}, {Name: "r/Prom"}},
		map[string][]string{"org.apache.flink.core.fs.FileSystemFactory": {"x.S3"}, "org.apache.flink.metrics.reporter.MetricReporterFactory": {"r.Prom"}})
	for _, tc := range []struct {
		conf string
		want []string // rules of the image's own check
	}{
		{conf: "execution.checkpointing.dir: s3://b/cp\n"},
		{conf: "execution.checkpointing.dir: gs://b/cp\n", want: []string{"fs-scheme-unserved"}},
		{conf: "metrics.reporter.p.factory.class: r.Other\n", want: []string{"reporter-unavailable"}},
	} {
		img, err := imagekit.Base{Dist: testkit.Good("2.2.1"), User: "9999", Extra: []imagekit.Entry{
			{Name: "opt/flink/plugins/s3/p.jar", Data: fsPlugin},
		}}.Image()
		require.NoError(t, err)
		img, err = mutate.AppendLayers(img, imagekit.Layer(imagekit.Entry{Name: "opt/flink/conf/config.yaml", Data: []byte(tc.conf)}))
		require.NoError(t, err)
		res, err := VerifyOptions{TempDir: t.TempDir()}.Verify(context.Background(), img)
		require.NoError(t, err)
		rt := res.Decision.RunTime
		require.NotNil(t, rt, "an image's decision carries its run-time facts")
		require.Len(t, rt.Factories, 1)
		assert.Equal(t, "s3", rt.Factories[0].Scheme)
		require.Len(t, rt.Reporters, 1)
		assert.Equal(t, "r.Prom", rt.Reporters[0].Class)
		var got []string
		for _, f := range res.Decision.Findings {
			if f.Rule == "fs-scheme-unserved" || f.Rule == "reporter-unavailable" {
				got = append(got, f.Rule)
			}
		}
		assert.Equal(t, tc.want, got, "%s: %v", tc.conf, res.Decision.Findings)
	}
}

// TestImageWithEnabledPlugins: an image whose Env sets
// ENABLE_BUILT_IN_PLUGINS is not refused for it (its facts keep no files of
// opt/, so what the names lead to is not known), and a location the
// enabled plugin may serve is a warning at most.
func TestImageWithEnabledPlugins(t *testing.T) {
	img, err := imagekit.Base{Dist: testkit.Good("2.2.1"), User: "9999", Env: []string{"ENABLE_BUILT_IN_PLUGINS=flink-s3-fs-hadoop-2.2.1.jar"}, Extra: []imagekit.Entry{
		{Name: "opt/flink/opt/flink-s3-fs-hadoop-2.2.1.jar", Data: testkit.JAR("")},
	}}.Image()
	require.NoError(t, err)
	img, err = mutate.AppendLayers(img, imagekit.Layer(imagekit.Entry{Name: "opt/flink/conf/config.yaml", Data: []byte("execution.checkpointing.dir: s3://b/cp\n")}))
	require.NoError(t, err)
	res, err := VerifyOptions{TempDir: t.TempDir()}.Verify(context.Background(), img)
	require.NoError(t, err)
	for _, f := range res.Decision.Findings {
		assert.NotEqual(t, "plugins-enable-missing", f.Rule, f.Text())
		if f.Rule == "fs-scheme-unserved" {
			assert.Equal(t, "warning", string(f.Severity), f.Text())
		}
	}
}
