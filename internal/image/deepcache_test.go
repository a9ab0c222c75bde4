package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// deepLog records what a verify read and what came of the cached deep
// result.
type deepLog struct {
	mu      sync.Mutex
	read    int      // layers read for their facts or their JARs
	applied int      // cached deep results applied
	notes   []string // the deep notes
}

func (l *deepLog) progress(u Update) {
	if !u.Finished {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case u.Op == "deep":
		l.notes = append(l.notes, u.Note)
		if u.Cached {
			l.applied++
		}
	case !u.Cached:
		l.read++
	}
}

// rendered is what `streamfusion verify` prints of a result: the text
// report and the JSON one.
func rendered(t *testing.T, res *Result) string {
	t.Helper()
	r := report.New(res.Facts, res.Decision)
	var text, js bytes.Buffer
	require.NoError(t, r.Text(&text))
	require.NoError(t, report.WriteJSON(&js, r))
	return text.String() + "\n" + js.String()
}

// coldDeep is the reference: the deep verify without any cache.
func coldDeep(t *testing.T, img v1.Image) string {
	t.Helper()
	res, err := VerifyOptions{Deep: true, TempDir: t.TempDir()}.Verify(context.Background(), img)
	require.NoError(t, err)
	return rendered(t, res)
}

// verifyLogged verifies img deep with the cache and returns what it
// printed and its log.
func verifyLogged(t *testing.T, img v1.Image, cache *layercache.Cache) (string, *deepLog) {
	t.Helper()
	l := &deepLog{}
	res, err := VerifyOptions{Deep: true, TempDir: t.TempDir(), Cache: cache, Workers: 1, Progress: l.progress}.Verify(context.Background(), img)
	require.NoError(t, err)
	return rendered(t, res), l
}

// withEnv is img with env added to its config's environment.
func withEnv(t *testing.T, img v1.Image, env ...string) v1.Image {
	t.Helper()
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	cf = cf.DeepCopy()
	cf.Config.Env = append(cf.Config.Env, env...)
	out, err := mutate.ConfigFile(img, cf)
	require.NoError(t, err)
	return out
}

// shadowJAR hides flink-dist's Base with a copy of another constructor:
// classpath-shadowed.
func shadowJAR() []byte {
	return testkit.ClassJAR(testkit.Manifest("Implementation-Title", "acme-utils"), []testkit.Class{
		{Name: deepBase, Methods: []testkit.Member{{Name: "<init>", Descriptor: "(J)V"}}},
	}, nil)
}

// quietShadowJAR hides flink-dist's Base with a copy that has every
// member of the host's: classpath-shadowed, a warning.
func quietShadowJAR() []byte {
	return testkit.ClassJAR(testkit.Manifest("Implementation-Title", "acme-utils"), []testkit.Class{
		{Name: deepBase, Methods: []testkit.Member{{Name: "<init>", Descriptor: "(I)V"}, {Name: "more", Descriptor: "()V"}}},
	}, nil)
}

// deepCacheImages are test kit images whose deep findings differ: none,
// a linkage error of a lib connector, a shadowing error with a linkage
// warning, a linkage error with a shadowing warning and a config warning,
// the same with every warning raised (STREAMFUSION_STRICT), and a baked
// one. The unbaked ones have the guard's own findings first, and the fast
// rules' (no loader, no core, the config's) around the deep ones.
func deepCacheImages(t *testing.T) map[string]v1.Image {
	broken := imagekit.Entry{Name: libConn, Data: deepConnector("(J)V")}
	fixed := imagekit.Entry{Name: libConn, Data: deepConnector("(I)V")}
	shadow := imagekit.Entry{Name: "/opt/flink/lib/acme-utils-1.0.jar", Data: shadowJAR()}
	quiet := imagekit.Entry{Name: "/opt/flink/lib/acme-utils-1.0.jar", Data: quietShadowJAR()}
	// A config warning (a near name of a key), after the deep rules' in
	// Decide's order.
	conf := imagekit.Entry{Name: "/opt/flink/conf/config.yaml", Data: []byte("jobmanager.rpc.address: localhost\ntaskmanager.numberOfTaskSlot: 2\n")}
	both := deepImage(t, []imagekit.Entry{broken, quiet, conf})
	return map[string]v1.Image{
		"consistent":   deepImage(t, []imagekit.Entry{fixed}),
		"linkage":      deepImage(t, []imagekit.Entry{broken}),
		"shadowed":     deepImage(t, []imagekit.Entry{fixed, shadow}),
		"both":         both,
		"both, strict": withEnv(t, both, "STREAMFUSION_STRICT=true"),
		"baked":        bakedDeepImage(t, deepImage(t, []imagekit.Entry{broken})),
	}
}

// bakedDeepImage is base baked with the test payloads and no deep check.
func bakedDeepImage(t *testing.T, base v1.Image) v1.Image {
	t.Helper()
	entrypoint, err := stampedTrue()
	require.NoError(t, err)
	img, _, err := Bake(context.Background(), base, BakeOptions{Entrypoint: entrypoint, Payloads: testPayloads("2.2")})
	require.NoError(t, err)
	return img
}

// A verify whose deep result is cached prints, as text and as JSON, what
// the cold deep verify prints, byte for byte, and reads no layer: the
// layers' facts and the deep result both come from the cache.
func TestDeepCacheHitIsTheColdVerify(t *testing.T) {
	t.Parallel()
	for name, img := range deepCacheImages(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := coldDeep(t, img)
			cache := &layercache.Cache{Dir: t.TempDir()}
			first, l := verifyLogged(t, img, cache)
			assert.Equal(t, want, first)
			assert.Zero(t, l.applied, "the first verify finds nothing cached")

			again, l := verifyLogged(t, img, cache)
			assert.Equal(t, 1, l.applied, "the cached deep result applies: %v", l.notes)
			assert.Zero(t, l.read, "no layer is read")
			assert.Equal(t, want, again, "the cached deep result changes nothing of the report")
		})
	}
}

// The deep findings are there at all: a test of the cache on images
// without any would prove nothing.
func TestDeepCacheImagesHaveDeepFindings(t *testing.T) {
	t.Parallel()
	for name, img := range deepCacheImages(t) {
		if name == "consistent" {
			continue
		}
		res, err := VerifyOptions{Deep: true}.Verify(context.Background(), img)
		require.NoError(t, err)
		assert.NotEmpty(t, symbolFindings(res.Decision), name)
	}
}

// Anything the deep result depends on that changes is a miss, checked in
// full with the right result: a lib layer, a base layer, a setting of the
// image's environment, the platform, the build of the tool.
func TestDeepCacheMisses(t *testing.T) {
	t.Parallel()
	broken := imagekit.Entry{Name: libConn, Data: deepConnector("(J)V")}
	fixed := imagekit.Entry{Name: libConn, Data: deepConnector("(I)V")}
	img := deepImage(t, []imagekit.Entry{broken, {Name: "/opt/flink/lib/acme-utils-1.0.jar", Data: quietShadowJAR()}})

	otherBase := func() v1.Image {
		d := testkit.Good("2.2.0")
		d.Payloads = nil
		d.Files = map[string][]byte{testkit.LibDir + "/flink-dist-2.2.0.jar": deepDist(),
			testkit.LibDir + "/aaa-utils-1.0.jar": shadowJAR()}
		base, err := imagekit.Base{Dist: d, User: "9999", Extra: flinkDirs}.Image()
		require.NoError(t, err)
		out, err := mutate.AppendLayers(base, imagekit.Layer(broken, imagekit.Entry{Name: "/opt/flink/lib/acme-utils-1.0.jar", Data: quietShadowJAR()}))
		require.NoError(t, err)
		return out
	}
	otherPlatform := func() v1.Image {
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		cf = cf.DeepCopy()
		cf.Architecture = "arm64"
		out, err := mutate.ConfigFile(img, cf)
		require.NoError(t, err)
		return out
	}
	for name, c := range map[string]struct {
		changed v1.Image
		differs bool // the changed image's deep findings differ from img's
	}{
		"a lib layer":              {deepImage(t, []imagekit.Entry{fixed}), true},
		"a base layer":             {otherBase(), true},
		"a setting":                {withEnv(t, img, "STREAMFUSION_STRICT=true"), true},
		"a setting without effect": {withEnv(t, img, "ACME=1"), false},
		"the platform":             {otherPlatform(), false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cache := &layercache.Cache{Dir: t.TempDir()}
			before, _ := verifyLogged(t, img, cache)
			if c.differs {
				require.NotEqual(t, before, coldDeep(t, c.changed), "the change must show in the verdict")
			}
			got, l := verifyLogged(t, c.changed, cache)
			assert.Zero(t, l.applied, "a miss: %v", l.notes)
			assert.Equal(t, coldDeep(t, c.changed), got)
			_, l = verifyLogged(t, c.changed, cache)
			assert.Equal(t, 1, l.applied, "stored for the changed image too")
			_, l = verifyLogged(t, img, cache)
			assert.Equal(t, 1, l.applied, "the first image's entry stays")
		})
	}
	t.Run("another build of the tool", func(t *testing.T) {
		cache := &layercache.Cache{Dir: t.TempDir()}
		verifyLogged(t, img, cache)
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		assert.NotEqual(t, deepKey(cf, toolID()), deepKey(cf, toolID()+"x"))
		_, ok := cache.Get(deepKey(cf, toolID()))
		assert.True(t, ok, "stored under this build's key")
	})
	t.Run("turned off", func(t *testing.T) {
		cache := &layercache.Cache{Dir: t.TempDir()}
		l := &deepLog{}
		o := VerifyOptions{Deep: true, Cache: cache, NoDeepCache: true, Progress: l.progress}
		for range 2 {
			_, err := o.Verify(context.Background(), img)
			require.NoError(t, err)
		}
		assert.Zero(t, l.applied)
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		_, ok := cache.Get(deepKey(cf, toolID()))
		assert.False(t, ok, "nothing stored")
	})
}

// entryFile is the file of key in the cache (as layercache names it).
func entryFile(c *layercache.Cache, key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(c.Dir, hex.EncodeToString(sum[:])+".entry")
}

// A damaged entry is never applied: the check runs in full, gives the
// cold verify's report, says why on the progress stream, and its result
// replaces the entry.
func TestDeepCacheDamagedEntry(t *testing.T) {
	t.Parallel()
	imgs := deepCacheImages(t)
	img := imgs["both"]
	want := coldDeep(t, img)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	key := deepKey(cf, toolID())
	for name, damage := range map[string]func([]byte) []byte{
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"empty":     func([]byte) []byte { return nil },
		"not JSON":  func([]byte) []byte { return []byte("\x00\x01garbage") },
		"a message": func(b []byte) []byte { return bytes.Replace(b, []byte("Base"), []byte("Bose"), 1) },
		"a severity": func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"severity":"warning"`), []byte(`"severity":"error"`), 1)
		},
		"no findings": func(b []byte) []byte { return resum(t, b, func(r *deepRecord) { r.Findings = []byte("[]") }, false) },
		"another version": func(b []byte) []byte {
			return resum(t, b, func(r *deepRecord) { r.Version = deepResultVersion + 1 }, true)
		},
		"another key": func(b []byte) []byte { return resum(t, b, func(r *deepRecord) { r.Key += "0" }, true) },
		"a foreign rule": func(b []byte) []byte {
			// The first finding's, so that the order alone does not
			// give it away.
			return resum(t, b, func(r *deepRecord) {
				var fs []admission.Finding
				require.NoError(t, json.Unmarshal(r.Findings, &fs))
				fs[0].Rule = "linkage-other"
				r.Findings, err = json.Marshal(fs)
				require.NoError(t, err)
			}, true)
		},
		"an unknown field": func(b []byte) []byte {
			return resum(t, b, func(r *deepRecord) {
				r.Findings = bytes.Replace(r.Findings, []byte(`{"rule"`), []byte(`{"x":1,"rule"`), 1)
			}, true)
		},
		"out of order": func(b []byte) []byte {
			return resum(t, b, func(r *deepRecord) {
				var fs []admission.Finding
				require.NoError(t, json.Unmarshal(r.Findings, &fs))
				require.Greater(t, len(fs), 1)
				fs[0], fs[len(fs)-1] = fs[len(fs)-1], fs[0]
				r.Findings, err = json.Marshal(fs)
				require.NoError(t, err)
			}, true)
		},
		"two records": func(b []byte) []byte { return append(append([]byte(nil), b...), b...) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cache := &layercache.Cache{Dir: t.TempDir()}
			verifyLogged(t, img, cache)
			file := entryFile(cache, key)
			data, err := os.ReadFile(file)
			require.NoError(t, err, "stored")
			damaged := damage(data)
			require.NotEqual(t, data, damaged)
			require.NoError(t, os.WriteFile(file, damaged, 0o600))

			got, l := verifyLogged(t, img, cache)
			assert.Zero(t, l.applied, "never applied")
			assert.Equal(t, want, got, "checked in full")
			require.Len(t, l.notes, 1)
			assert.Contains(t, l.notes[0], "cannot be used")
			again, l := verifyLogged(t, img, cache)
			assert.Equal(t, 1, l.applied, "the full check's result replaced the entry: %v", l.notes)
			assert.Equal(t, want, again)
		})
	}
}

// resum changes the record in data and, with sum, sets its checksum to
// match its findings again.
func resum(t *testing.T, data []byte, change func(*deepRecord), sum bool) []byte {
	t.Helper()
	var r deepRecord
	require.NoError(t, json.Unmarshal(data, &r))
	change(&r)
	if sum {
		s := sha256.Sum256(r.Findings)
		r.Sum = hex.EncodeToString(s[:])
	}
	out, err := json.Marshal(r)
	require.NoError(t, err)
	return out
}

// A bake with the deep check stores the deep result of the image it
// writes: verifying it applies that result and prints what the cold deep
// verify of the written image prints.
func TestDeepCacheFromBake(t *testing.T) {
	t.Parallel()
	entrypoint, err := stampedTrue()
	require.NoError(t, err)
	// A warning only (flink-dist's Base shadowed by a copy with every
	// member of the host's) so that the bake writes the image.
	base := deepImage(t, []imagekit.Entry{{Name: "/opt/flink/lib/acme-utils-1.0.jar", Data: quietShadowJAR()}})
	cache := &layercache.Cache{Dir: t.TempDir()}
	for _, verdict := range []bool{false, true} {
		img, res, err := Bake(context.Background(), base, BakeOptions{Entrypoint: entrypoint, Payloads: testPayloads("2.2"), DeepVerdict: verdict,
			Read: VerifyOptions{Deep: true, Cache: cache, TempDir: t.TempDir()}})
		require.NoError(t, err)
		require.NotEmpty(t, symbolFindings(res.Decision), "deep findings to cache")
		got, l := verifyLogged(t, img, cache)
		assert.Equal(t, 1, l.applied, "verdict file %v: %v", verdict, l.notes)
		assert.Equal(t, coldDeep(t, img), got, "verdict file %v", verdict)
	}
}

// withDeep puts deep findings where Decide does, after the caller's own:
// errors before warnings, each in rule order; deepPart takes them out
// again, and refuses a decision the fast one is not part of.
func TestWithDeepAndDeepPart(t *testing.T) {
	t.Parallel()
	f := func(rule string, sev admission.Severity, msg string) admission.Finding {
		return admission.Finding{Rule: rule, Severity: sev, Message: msg}
	}
	own := []admission.Finding{f("guard-entrypoint", admission.Error, "own"), f("guard-reach", admission.Warning, "own warning")}
	fast := append(append([]admission.Finding(nil), own...),
		f("loader-missing", admission.Error, "a"), f("stock-line", admission.Error, "b"), f("config-env", admission.Error, "strict"),
		f("stock-line", admission.Warning, "c"), f("plugins-payload", admission.Warning, "d"))
	deep := []admission.Finding{
		f("classpath-shadowed", admission.Error, "1"), f("linkage-method", admission.Error, "2"), f("linkage-method", admission.Error, "3"),
		f("layout-planner-bundled", admission.Error, "4"), f("classpath-shadowed", admission.Warning, "5"), f("bytecode-version", admission.Warning, "6"),
	}
	got := withDeep(fast, len(own), deep)
	var msgs []string
	for _, x := range got {
		msgs = append(msgs, x.Message)
	}
	assert.Equal(t, "own,own warning,a,b,1,2,3,4,strict,c,5,6,d", strings.Join(msgs, ","))

	part, ok := deepPart(&Result{Decision: &admission.Decision{Findings: got}, own: 2}, &Result{Decision: &admission.Decision{Findings: fast}, own: 2})
	require.True(t, ok)
	assert.Equal(t, deep, part)

	lost := append(append([]admission.Finding(nil), got[:2]...), got[3:]...) // "a" gone with the deep facts
	_, ok = deepPart(&Result{Decision: &admission.Decision{Findings: lost}, own: 2}, &Result{Decision: &admission.Decision{Findings: fast}, own: 2})
	assert.False(t, ok, "a fast finding the deep decision has not")
	_, ok = deepPart(&Result{Decision: &admission.Decision{Findings: got}, own: 1}, &Result{Decision: &admission.Decision{Findings: fast}, own: 2})
	assert.False(t, ok, "other own findings")
	moved := append([]admission.Finding(nil), got...)
	moved[3], moved[4] = moved[4], moved[3]
	_, ok = deepPart(&Result{Decision: &admission.Decision{Findings: moved}, own: 2}, &Result{Decision: &admission.Decision{Findings: fast}, own: 2})
	assert.False(t, ok, "an order withDeep does not give back")
}

// The encoding's bounds: more findings than it holds are not stored.
func TestDeepResultBounds(t *testing.T) {
	t.Parallel()
	_, err := encodeDeepResult("k", make([]admission.Finding, maxDeepFindings+1))
	assert.ErrorIs(t, err, errDeepResult)
	big := []admission.Finding{{Rule: "linkage-class", Severity: admission.Error, Message: strings.Repeat("x", maxDeepResult)}}
	_, err = encodeDeepResult("k", big)
	assert.ErrorIs(t, err, errDeepResult)
	_, err = decodeDeepResult(make([]byte, maxDeepResult+1), "k")
	assert.ErrorIs(t, err, errDeepResult)
}

// The build ID is this test binary's, and differs from another binary's.
func TestToolID(t *testing.T) {
	t.Parallel()
	id := toolID()
	require.NotEmpty(t, id)
	assert.Empty(t, buildID(filepath.Join(t.TempDir(), "missing")))
	notGo := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(notGo, []byte("#!/bin/sh\n"), 0o755))
	assert.Empty(t, buildID(notGo))
	macho := filepath.Join(t.TempDir(), "macho")
	require.NoError(t, os.WriteFile(macho, []byte("\xcf\xfa\xed\xfe....\xff Go build ID: \"abc/def\"\n \xff"), 0o755))
	assert.Equal(t, "go:abc/def", buildID(macho))
}

// FuzzDecodeDeepResult: whatever the cache holds, the decoder returns
// findings of this build's rules, in Decide's order, within the bounds,
// or an error; what it returns encodes to what it decodes again. With
// wrap, the input is the findings and the record around them is made
// with their checksum, so that the findings' checks are reached too.
func FuzzDecodeDeepResult(f *testing.F) {
	const key = "deepresult/v1/test"
	for _, fs := range [][]admission.Finding{
		{},
		{{Rule: "linkage-method", Severity: admission.Error, Path: "/opt/flink/lib/x.jar", Message: "m", Found: "f", Required: "r", Fix: "x",
			Symbol: &admission.Symbol{Kind: "method", From: "a/B", Owner: "c/D", Name: "<init>", Descriptor: "(J)V", JAR: "/opt/flink/lib/x.jar"}}},
		{{Rule: "classpath-shadowed", Severity: admission.Error, Strict: true}, {Rule: "bytecode-version", Severity: admission.Warning},
			{Rule: "layout-planner-bundled", Severity: admission.Warning}},
	} {
		data, err := encodeDeepResult(key, fs)
		require.NoError(f, err)
		f.Add(data, false)
		body, err := json.Marshal(fs)
		require.NoError(f, err)
		f.Add(body, true)
	}
	f.Add([]byte(`{"version":1,"key":"deepresult/v1/test","sha256":"","findings":null}`), false)
	f.Add([]byte(`[{"rule":"linkage-class","severity":"warning","strict":true}]`), true)
	f.Fuzz(func(t *testing.T, data []byte, wrap bool) {
		if wrap {
			sum := sha256.Sum256(data)
			rec, err := json.Marshal(deepRecord{Version: deepResultVersion, Key: key, Sum: hex.EncodeToString(sum[:]), Findings: data})
			if err != nil {
				return // not JSON: no record holds it
			}
			data = rec
		}
		fs, err := decodeDeepResult(data, key)
		if err != nil {
			require.ErrorIs(t, err, errDeepResult)
			return
		}
		require.NotNil(t, fs)
		require.LessOrEqual(t, len(fs), maxDeepFindings)
		for i, x := range fs {
			_, ok := ruleRank[x.Rule]
			require.True(t, ok, x.Rule)
			require.True(t, x.Severity == admission.Error || x.Severity == admission.Warning)
			require.False(t, i > 0 && findingLess(x, fs[i-1]))
		}
		again, err := encodeDeepResult(key, fs)
		require.NoError(t, err)
		back, err := decodeDeepResult(again, key)
		require.NoError(t, err)
		require.Equal(t, fs, back)
		_, err = decodeDeepResult(data, key+"x")
		require.ErrorIs(t, err, errDeepResult, "another key")
	})
}

// countingImage counts the listings of its layers.
type countingImage struct {
	v1.Image
	mu       sync.Mutex
	listings int
}

func (c *countingImage) Layers() ([]v1.Layer, error) {
	c.mu.Lock()
	c.listings++
	c.mu.Unlock()
	return c.Image.Layers()
}

// A verify the cache answers whole (every layer's facts, and the deep
// result for a deep one) does not list the layers: listing a saved
// tarball's hashes every blob for the manifest (0.2 s for the real 2.2.0
// image with the Kafka connector, the whole of a warm verify's time).
func TestCachedVerifyListsNoLayer(t *testing.T) {
	t.Parallel()
	img := deepImage(t, []imagekit.Entry{{Name: libConn, Data: deepConnector("(J)V")}})
	for _, deep := range []bool{false, true} {
		c := &countingImage{Image: img}
		o := VerifyOptions{Deep: deep, TempDir: t.TempDir(), Cache: &layercache.Cache{Dir: t.TempDir()}}
		cold, err := o.Verify(context.Background(), c)
		require.NoError(t, err)
		assert.Positive(t, c.listings, "the first verify reads the layers")
		c.listings = 0
		warm, err := o.Verify(context.Background(), c)
		require.NoError(t, err)
		assert.Zero(t, c.listings, "deep %v", deep)
		assert.Equal(t, rendered(t, cold), rendered(t, warm))
	}
}
