package host_test

import (
	"bytes"
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/baked"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

const (
	bLib     = testkit.FlinkHome + "/lib"
	bUsrlib  = testkit.FlinkHome + "/usrlib"
	bVerdict = bLib + "/" + host.VerdictFile
)

var bakedSettings = host.Settings{LibDir: "/" + bLib, JavaHome: "/" + testkit.JavaHome, OS: "linux", Arch: "x86_64"}

// utilJAR is a lib JAR whose class com/acme/lib/Util has a method
// present()V and a field count.
func utilJAR() []byte {
	return testkit.ClassJAR(testkit.Manifest(), []testkit.Class{{Name: "com/acme/lib/Util",
		Methods: []testkit.Member{{Name: "present", Descriptor: "()V"}}, Fields: []testkit.Member{{Name: "count", Descriptor: "I"}}}}, nil)
}

// jobJAR is a usrlib job whose Main calls what calls says.
func jobJAR(calls ...testkit.Call) []byte {
	return testkit.ClassJAR(testkit.Manifest("Main-Class", "com.acme.Main"), []testkit.Class{{Name: "com/acme/Main", Calls: calls}}, nil)
}

func bakedLib(t *testing.T) fstest.MapFS {
	t.Helper()
	fsys := testkit.Good("2.2.1").MapFS()
	fsys[bLib+"/util.jar"] = &fstest.MapFile{Data: utilJAR(), Mode: 0o644}
	bake(t, fsys)
	return fsys
}

// bake writes lib's deep verdict as bake does: a full deep check, then
// baked.Build while the archives are open.
func bake(t *testing.T, fsys fstest.MapFS) {
	t.Helper()
	s := bakedSettings
	s.Deep = true
	f, err := host.Gather(context.Background(), fsys, s, nil)
	require.NoError(t, err)
	defer f.Deep.Close()
	data, err := baked.Build(f, admission.Decide(f))
	require.NoError(t, err)
	fsys[bVerdict] = &fstest.MapFile{Data: data, Mode: 0o644}
}

// Deep facts with more JARs read for their classes than lib has are not
// baked: every start would refuse the index they make.
func TestBakeRefusesAnIndexOfAnotherLib(t *testing.T) {
	t.Parallel()
	s := bakedSettings
	s.Deep = true
	f, err := host.Gather(context.Background(), testkit.Good("2.2.1").MapFS(), s, nil)
	require.NoError(t, err)
	defer f.Deep.Close()
	require.NotEmpty(t, f.Deep.Lib)
	f.Deep.Lib = append(f.Deep.Lib, f.Deep.Lib[0])
	_, err = baked.Build(f, admission.Decide(f))
	require.ErrorContains(t, err, "JARs read for their classes")
}

func start(t *testing.T, fsys fstest.MapFS) (*admission.Facts, *admission.Decision) {
	t.Helper()
	s := bakedSettings
	s.Baked = true
	f, err := host.Gather(context.Background(), fsys, s, nil)
	require.NoError(t, err)
	t.Cleanup(f.Deep.Close)
	return f, admission.Decide(f)
}

func rulesOf(d *admission.Decision) []string {
	var out []string
	for _, f := range d.Findings {
		out = append(out, f.Rule)
	}
	return out
}

func TestBakedVerdictAppliesToAnUnchangedLib(t *testing.T) {
	t.Parallel()
	fsys := bakedLib(t)
	f, d := start(t, fsys)
	assert.Contains(t, f.Linkage, "the baked deep verdict applies: 17 JARs of lib and 0 of usrlib unchanged")
	require.NotNil(t, f.Deep)
	require.NotNil(t, f.Deep.Baked)
	assert.Empty(t, f.Deep.Lib, "nothing read for classes")
	assert.Empty(t, d.Findings)
	for _, j := range f.Classpath {
		assert.False(t, j.Fingerprint.IsZero(), "%s fingerprinted", j.Path)
	}
}

// The verdict's findings are the start's: a lib JAR that hides a class of
// flink-dist, baked, refuses every start without a class being read.
func TestBakedVerdictFindingsApply(t *testing.T) {
	t.Parallel()
	fsys := testkit.Good("2.2.1").MapFS()
	fsys[bLib+"/a-fat.jar"] = &fstest.MapFile{Data: testkit.JAR("", testkit.Entry{Name: "org/apache/flink/runtime/entrypoint/ClusterEntrypoint.class", Data: []byte("another build")}), Mode: 0o644}
	bake(t, fsys)
	f, d := start(t, fsys)
	require.NotNil(t, f.Deep.Baked)
	assert.Contains(t, rulesOf(d), "classpath-shadowed")
	assert.False(t, d.Admitted())
}

// A job JAR added to usrlib is judged against the class index: what it
// uses of lib's classes is found there (the members too), what it uses
// that lib does not have is a finding, and lib's JARs are not read.
func TestNewJobJARJudgedAgainstTheIndex(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		calls []testkit.Call
		rule  string
	}{
		{"links", []testkit.Call{{Owner: "com/acme/lib/Util", Name: "present", Descriptor: "()V"}, {Field: true, Owner: "com/acme/lib/Util", Name: "count", Descriptor: "I"}}, ""},
		{"a method lib lacks", []testkit.Call{{Owner: "com/acme/lib/Util", Name: "gone", Descriptor: "()V"}}, "linkage-method"},
		{"a field lib lacks", []testkit.Call{{Field: true, Owner: "com/acme/lib/Util", Name: "gone", Descriptor: "J"}}, "linkage-field"},
		{"a class lib lacks", []testkit.Call{{Owner: "com/acme/lib/Gone", Name: "run", Descriptor: "()V"}}, "linkage-class"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fsys := bakedLib(t)
			fsys[bUsrlib+"/job.jar"] = &fstest.MapFile{Data: jobJAR(c.calls...), Mode: 0o644}
			f, d := start(t, fsys)
			assert.Contains(t, f.Linkage, "usrlib's 1 JARs judged against its class index")
			require.NotNil(t, f.Deep.Baked)
			held := 0
			for _, a := range f.Deep.Lib {
				if _, ok := a.Classes["com/acme/lib/Util"]; ok {
					held++
					_, err := a.Class("com/acme/lib/Util", nil)
					assert.ErrorContains(t, err, "an index only", "lib is the index, not the JARs")
				}
			}
			assert.Equal(t, 1, held)
			if c.rule == "" {
				assert.Empty(t, d.Findings)
				return
			}
			require.Contains(t, rulesOf(d), c.rule)
			assert.False(t, d.Admitted(), "a job JAR's linkage error refuses")
			for _, fd := range d.Findings {
				assert.Equal(t, "/"+bUsrlib+"/job.jar", fd.Path)
			}
		})
	}
}

// The full check and the index agree on a new job JAR.
func TestIndexAgreesWithTheFullCheck(t *testing.T) {
	t.Parallel()
	fsys := bakedLib(t)
	fsys[bUsrlib+"/job.jar"] = &fstest.MapFile{Data: jobJAR(testkit.Call{Owner: "com/acme/lib/Util", Name: "gone", Descriptor: "()V"},
		testkit.Call{Owner: "com/acme/lib/Util", Name: "present", Descriptor: "()V"}, testkit.Call{Owner: "com/acme/lib/Gone", Name: "run", Descriptor: "()V"}), Mode: 0o644}
	_, fromIndex := start(t, fsys)
	s := bakedSettings
	s.Deep = true
	f, err := host.Gather(context.Background(), fsys, s, nil)
	require.NoError(t, err)
	defer f.Deep.Close()
	full := admission.Decide(f)
	assert.Equal(t, full.Findings, fromIndex.Findings)
	assert.NotEmpty(t, full.Findings)
}

// A JAR whose fingerprint differs is never covered: lib changed means a
// full check, said so.
func TestChangedLibIsCheckedInFull(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]func(fstest.MapFS){
		"a JAR replaced": func(m fstest.MapFS) {
			m[bLib+"/util.jar"] = &fstest.MapFile{Data: testkit.ClassJAR(testkit.Manifest(), []testkit.Class{{Name: "com/acme/lib/Util"}}, nil), Mode: 0o644}
		},
		"a JAR added":   func(m fstest.MapFS) { m[bLib+"/more.jar"] = &fstest.MapFile{Data: utilJAR(), Mode: 0o644} },
		"a JAR removed": func(m fstest.MapFS) { delete(m, bLib+"/util.jar") },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fsys := bakedLib(t)
			change(fsys)
			fsys[bUsrlib+"/job.jar"] = &fstest.MapFile{Data: jobJAR(testkit.Call{Owner: "com/acme/lib/Util", Name: "present", Descriptor: "()V"}), Mode: 0o644}
			f, d := start(t, fsys)
			assert.Contains(t, f.Linkage, "lib differs from its baked deep verdict")
			assert.Contains(t, f.Linkage, "checked in full")
			assert.Nil(t, f.Deep.Baked)
			assert.NotEmpty(t, f.Deep.Lib, "lib read for its classes")
			assert.NoError(t, f.Deep.VerdictErr)
			if name == "a JAR replaced" {
				assert.Contains(t, rulesOf(d), "linkage-method", "Util.present is gone: the full check sees it")
			}
		})
	}
}

// A damaged, truncated or foreign verdict is a finding and a full check.
func TestDamagedVerdictIsAFindingAndAFullCheck(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]func([]byte) []byte{
		"a byte of the header flipped": func(b []byte) []byte { b = bytes.Clone(b); b[20] ^= 1; return b },
		"truncated in the header":      func(b []byte) []byte { return b[:40] },
		"truncated in the index":       func(b []byte) []byte { return b[:len(b)-10] },
		"the index damaged":            func(b []byte) []byte { b = bytes.Clone(b); b[len(b)-30] ^= 1; return b },
		"another format version":       func(b []byte) []byte { b = bytes.Clone(b); b[len(baked.Magic)] = 9; return b },
		"not a verdict":                func([]byte) []byte { return []byte("#!/bin/sh\n") },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fsys := bakedLib(t)
			fsys[bVerdict].Data = damage(fsys[bVerdict].Data)
			// A job JAR in usrlib: the index is read too.
			fsys[bUsrlib+"/job.jar"] = &fstest.MapFile{Data: jobJAR(testkit.Call{Owner: "com/acme/lib/Util", Name: "gone", Descriptor: "()V"}), Mode: 0o644}
			f, d := start(t, fsys)
			assert.Contains(t, f.Linkage, "checked in full")
			require.Error(t, f.Deep.VerdictErr)
			assert.ErrorIs(t, f.Deep.VerdictErr, baked.ErrFormat)
			assert.Contains(t, rulesOf(d), "deep-verdict-unreadable")
			assert.Contains(t, rulesOf(d), "linkage-method", "the full check still judges the job")
		})
	}
}

func TestNoVerdictIsTodaysStart(t *testing.T) {
	t.Parallel()
	fsys := testkit.Good("2.2.1").MapFS()
	fsys[bUsrlib+"/job.jar"] = &fstest.MapFile{Data: jobJAR(testkit.Call{Owner: "com/acme/lib/Util", Name: "gone", Descriptor: "()V"}), Mode: 0o644}
	f, d := start(t, fsys)
	assert.Nil(t, f.Deep, "no deep facts, as before")
	assert.Contains(t, f.Linkage, "lib holds no baked deep verdict")
	assert.Empty(t, d.Findings)
	for _, j := range f.Classpath {
		assert.True(t, j.Fingerprint.IsZero(), "nothing to compare: %s not fingerprinted", j.Path)
	}
}

// Another JDK than the verdict's: the bytecode versions were judged for
// the other one.
func TestAnotherJDKIsCheckedInFull(t *testing.T) {
	t.Parallel()
	fsys := bakedLib(t)
	fsys[testkit.JavaHome+"/release"] = &fstest.MapFile{Data: []byte("JAVA_VERSION=\"11.0.21\"\n")}
	f, _ := start(t, fsys)
	assert.Contains(t, f.Linkage, "judged for Java 17")
	assert.Nil(t, f.Deep.Baked)
}

// Plugins are never judged from the verdict: a start with a plugin to
// judge judges it against the verdict's class index, in the plugin's own
// class loader, once, whether the verdict was baked with the plugin or
// without it.
func TestBakedVerdictJudgesPlugins(t *testing.T) {
	t.Parallel()
	plugin := testkit.ClassJAR("", []testkit.Class{{Name: "com/acme/fs/AcmeFactory", Returns: map[string]string{"getScheme": "acme"},
		Calls: []testkit.Call{{Owner: "com/acme/lib/Util", Name: "present", Descriptor: "()V"}}}},
		map[string][]string{"org.apache.flink.core.fs.FileSystemFactory": {"com.acme.fs.AcmeFactory"}})
	const pluginJAR = testkit.FlinkHome + "/plugins/acme/acme-fs-1.0.jar"
	s := bakedSettings
	s.PluginsDir = "/" + testkit.FlinkHome + "/plugins"
	for _, bakedWith := range []bool{false, true} {
		fsys := testkit.Good("2.2.1").MapFS()
		fsys[bLib+"/util.jar"] = &fstest.MapFile{Data: utilJAR(), Mode: 0o644}
		if bakedWith {
			fsys[pluginJAR] = &fstest.MapFile{Data: plugin, Mode: 0o644}
		}
		b := s
		b.Deep = true
		f, err := host.Gather(context.Background(), fsys, b, nil)
		require.NoError(t, err)
		data, err := baked.Build(f, admission.Decide(f))
		f.Deep.Close()
		require.NoError(t, err)
		fsys[bVerdict] = &fstest.MapFile{Data: data, Mode: 0o644}
		fsys[pluginJAR] = &fstest.MapFile{Data: plugin, Mode: 0o644}

		st := s
		st.Baked = true
		f, err = host.Gather(context.Background(), fsys, st, nil)
		require.NoError(t, err)
		d := admission.Decide(f)
		f.Deep.Close()
		assert.Contains(t, f.Linkage, "plugins judged against its class index: 1", "baked with the plugin: %v", bakedWith)
		var got []string
		for _, fd := range d.Findings {
			got = append(got, string(fd.Severity)+" "+fd.Rule+" "+fd.Path)
		}
		assert.Equal(t, []string{"warning linkage-class /" + pluginJAR}, got, "baked with the plugin: %v", bakedWith)
	}
}
