package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// allFindings is every finding of a verdict, as text, and whether it admits.
func allFindings(res *Result) []string {
	out := []string{fmt.Sprint("admitted ", res.Decision.Admitted())}
	for _, f := range res.Decision.Findings {
		out = append(out, f.Rule+" "+string(f.Severity)+" "+f.Text())
	}
	slices.Sort(out[1:])
	return out
}

// viewsJobs are job JARs that judge differently on viewsImage: one links,
// one does not, one replaces the image's own usrlib JAR, one shadows
// flink-dist.
func viewsJobs(t *testing.T) map[string]string {
	dir := t.TempDir()
	jars := map[string][]byte{
		"links.jar":    deepJob("(I)V"),
		"linkless.jar": deepJob("(J)V"),
		"old.jar":      deepJob("(I)V"), // the image's usrlib/old.jar, replaced
		"shadow.jar": testkit.JAR(testkit.Manifest("Implementation-Title", "acme"),
			testkit.Entry{Name: "org/apache/flink/runtime/entrypoint/ClusterEntrypoint.class", Data: []byte("\xca\xfe\xba\xbe not flink-dist's")}),
	}
	out := map[string]string{}
	for name, b := range jars {
		out[name] = filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(out[name], b, 0o644))
	}
	return out
}

// viewsImage has lib findings of its own (a connector that does not link)
// and a usrlib JAR that does not link either.
func viewsImage(t *testing.T) v1.Image {
	return deepImage(t, []imagekit.Entry{{Name: libConn, Data: deepConnector("(J)V")}},
		[]imagekit.Entry{{Name: "/opt/flink/usrlib/old.jar", Data: deepJob("(J)V")}})
}

// A job JAR checked on a kept image gets the findings of a check that
// reads the image anew, for JARs that link, do not, replace the image's
// usrlib JAR or shadow lib; the image's layers are read once.
func TestViewsSameFindingsAsWithoutReuse(t *testing.T) {
	t.Parallel()
	img := viewsImage(t)
	jobs := viewsJobs(t)
	tmp := t.TempDir()
	vs := NewViews(0, 0)
	defer vs.Close()
	var reads atomic.Int64
	o := VerifyOptions{TempDir: tmp, Progress: func(Update) { reads.Add(1) }}
	for _, name := range []string{"links.jar", "linkless.jar", "old.jar", "shadow.jar", "links.jar"} {
		o.JobJARs = []JobJAR{{Name: name, Path: jobs[name]}}
		cold, err := o.Verify(context.Background(), img)
		require.NoError(t, err)
		reused, err := vs.Verify(context.Background(), o, img)
		require.NoError(t, err)
		assert.Equal(t, allFindings(cold), allFindings(reused), name)
		n, bytes := vs.Len()
		assert.Equal(t, 1, n)
		assert.Positive(t, bytes)
	}
	// The findings differ by JAR (the test can tell them apart).
	find := func(name string) []string {
		o.JobJARs = []JobJAR{{Name: name, Path: jobs[name]}}
		res, err := vs.Verify(context.Background(), o, img)
		require.NoError(t, err)
		return allFindings(res)
	}
	assert.NotEqual(t, find("links.jar"), find("linkless.jar"))
	assert.NotEqual(t, find("links.jar"), find("shadow.jar"))
	assert.Contains(t, fmt.Sprint(find("linkless.jar")), "/opt/flink/usrlib/linkless.jar")
	assert.NotContains(t, fmt.Sprint(find("old.jar")), "/opt/flink/usrlib/old.jar", "the job's old.jar links; the image's did not")

	// A kept image is not read again.
	before := reads.Load()
	find("linkless.jar")
	assert.Equal(t, before, reads.Load(), "a kept image's layers were read again")
}

// dirs lists what is in dir.
func dirs(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// An image out of the bounds (count or bytes) has its directory removed,
// Close removes all, and a directory a check still reads goes when that
// check ends.
func TestViewsRemoveTheirDirectories(t *testing.T) {
	t.Parallel()
	a, b := viewsImage(t), deepImage(t, []imagekit.Entry{{Name: libConn, Data: deepConnector("(I)V")}})
	job := viewsJobs(t)["links.jar"]
	tmp := t.TempDir()
	o := VerifyOptions{TempDir: tmp, JobJARs: []JobJAR{{Name: "links.jar", Path: job}}}
	verify := func(vs *Views, img v1.Image) {
		t.Helper()
		_, err := vs.Verify(context.Background(), o, img)
		require.NoError(t, err)
	}

	vs := NewViews(1, 0)
	verify(vs, a)
	first := dirs(t, tmp)
	require.Len(t, first, 1)
	verify(vs, b) // a is out
	second := dirs(t, tmp)
	require.Len(t, second, 1)
	assert.NotEqual(t, first, second)
	n, _ := vs.Len()
	assert.Equal(t, 1, n)
	vs.Close()
	assert.Empty(t, dirs(t, tmp))
	verify(vs, a) // closed: nothing kept
	assert.Empty(t, dirs(t, tmp))

	vs = NewViews(2, 1) // one byte: no image fits
	verify(vs, a)
	assert.Empty(t, dirs(t, tmp))
	n, bytes := vs.Len()
	assert.Zero(t, n)
	assert.Zero(t, bytes)

	// Closed while a check holds the image: removed when it lets go.
	vs = NewViews(0, 0)
	k, err := vs.acquire(context.Background(), o, a, "sha256:held")
	require.NoError(t, err)
	vs.Close()
	assert.Len(t, dirs(t, tmp), 1, "removed while a check reads it")
	vs.release(k)
	assert.Empty(t, dirs(t, tmp))
}

// Concurrent checks of one image with different JARs share one reading,
// judge as the check without reuse does, and leave one directory (run
// with -race).
func TestViewsConcurrentChecks(t *testing.T) {
	t.Parallel()
	img := viewsImage(t)
	jobs := viewsJobs(t)
	tmp := t.TempDir()
	want := map[string][]string{}
	for name, p := range jobs {
		res, err := VerifyOptions{TempDir: tmp, JobJARs: []JobJAR{{Name: name, Path: p}}}.Verify(context.Background(), img)
		require.NoError(t, err)
		want[name] = allFindings(res)
	}
	vs := NewViews(0, 0)
	var reads atomic.Int64
	var wg sync.WaitGroup
	got := make([][]string, 16)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range jobs {
			if !yield(n) {
				return
			}
		}
	})
	for i := range got {
		wg.Go(func() {
			name := names[i%len(names)]
			o := VerifyOptions{TempDir: tmp, JobJARs: []JobJAR{{Name: name, Path: jobs[name]}}, Progress: func(u Update) {
				if u.Finished {
					reads.Add(1)
				}
			}}
			res, err := vs.Verify(context.Background(), o, img)
			if assert.NoError(t, err) {
				got[i] = allFindings(res)
			}
		})
	}
	wg.Wait()
	for i := range got {
		assert.Equal(t, want[names[i%len(names)]], got[i])
	}
	layers, err := img.Layers()
	require.NoError(t, err)
	assert.LessOrEqual(t, reads.Load(), int64(len(layers)), "the image was read more than once")
	assert.Len(t, dirs(t, tmp), 1)
	vs.Close()
	assert.Empty(t, dirs(t, tmp))
}
