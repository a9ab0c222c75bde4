package host

import (
	"context"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// countingFS counts the opens of each *.jar.
type countingFS struct {
	fstest.MapFS
	mu    sync.Mutex
	opens map[string]int
}

func (c *countingFS) Open(name string) (fs.File, error) {
	if strings.HasSuffix(name, ".jar") {
		c.mu.Lock()
		c.opens[name]++
		c.mu.Unlock()
	}
	return c.MapFS.Open(name)
}

// A start whose configuration needs the service providers of lib and the
// plugins (an s3 checkpoint directory) reads each JAR once, with them;
// one that does not need them reads no providers.
func TestStartReadsEachJAROnce(t *testing.T) {
	t.Parallel()
	plugin := testkit.ClassJAR("", []testkit.Class{{Name: "x/S3Factory", Returns: map[string]string{"getScheme": "s3"}}},
		map[string][]string{"org.apache.flink.core.fs.FileSystemFactory": {"x.S3Factory"}})
	for _, c := range []struct {
		conf      string
		providers bool
	}{{"execution.checkpointing.dir: s3://b/cp\n", true}, {"execution.checkpointing.dir: file:///cp\n", false}} {
		m := testkit.Good("2.2.1").MapFS()
		m[testkit.FlinkHome+"/plugins/s3/p.jar"] = &fstest.MapFile{Data: plugin, Mode: 0o644}
		m[testkit.FlinkHome+"/conf/config.yaml"] = &fstest.MapFile{Data: []byte(c.conf), Mode: 0o644}
		fsys := &countingFS{MapFS: m, opens: map[string]int{}}
		f, err := Gather(context.Background(), fsys, Settings{LibDir: "/" + testkit.LibDir, PluginsDir: "/" + testkit.FlinkHome + "/plugins",
			ConfDir: "/" + testkit.FlinkHome + "/conf", JavaHome: "/" + testkit.JavaHome, Role: "jobmanager", OS: "linux", Arch: "x86_64"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, n := range fsys.opens {
			if n != 1 {
				t.Errorf("%q: %s opened %d times", c.conf, name, n)
			}
		}
		if got := f.FileSystems.FactoriesRead; got != c.providers {
			t.Errorf("%q: providers read %v, want %v", c.conf, got, c.providers)
		}
		if c.providers && (len(f.Plugins) != 1 || len(f.Plugins[0].Providers) != 1) {
			t.Errorf("the plugin's provider, read with its facts: %+v", f.Plugins)
		}
		if !c.providers && len(f.Plugins) == 1 && f.Plugins[0].Providers != nil {
			t.Errorf("providers read though nothing needs them")
		}
	}
}

// The early read takes the release from flink-dist's file name; when the
// JAR's own release differs, the configuration is read again with it: a
// 1.18.1 flink-dist renamed flink-dist-2.2.1.jar has its flink-conf.yaml
// read, as Flink 1.18's scripts read it.
func TestEarlyConfigOfAnotherRelease(t *testing.T) {
	t.Parallel()
	m := testkit.Good("1.18.1").MapFS()
	m[testkit.LibDir+"/flink-dist-2.2.1.jar"] = m[testkit.LibDir+"/flink-dist-1.18.1.jar"]
	delete(m, testkit.LibDir+"/flink-dist-1.18.1.jar")
	m[testkit.FlinkHome+"/conf/flink-conf.yaml"] = &fstest.MapFile{Data: []byte("state.checkpoints.dir: s3://b/cp\n"), Mode: 0o644}
	m[testkit.FlinkHome+"/conf/config.yaml"] = &fstest.MapFile{Data: []byte("execution.checkpointing.dir: file:///cp\n"), Mode: 0o644}
	f, err := Gather(context.Background(), m, Settings{LibDir: "/" + testkit.LibDir, ConfDir: "/" + testkit.FlinkHome + "/conf",
		JavaHome: "/" + testkit.JavaHome, Role: "jobmanager", OS: "linux", Arch: "x86_64"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Config.File; !strings.HasSuffix(got, "/flink-conf.yaml") {
		t.Fatalf("the config read for 1.18.1: %s", got)
	}
	if !f.FileSystems.FactoriesRead {
		t.Fatalf("the s3 location of flink-conf.yaml needs the providers")
	}
}
