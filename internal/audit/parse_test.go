package audit

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseImageID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, repo, digest string
		ok               bool
	}{
		{"docker-pullable://registry.example/team/flink@" + testDigest, "registry.example/team/flink", testDigest, true},
		{"registry.example/team/flink@" + testDigest, "registry.example/team/flink", testDigest, true},
		{"localhost:5000/flink@" + testDigest, "localhost:5000/flink", testDigest, true},
		{testDigest, "", "", false},               // Docker's image ID: the config's digest
		{"docker://" + testDigest, "", "", false}, // the same
		{"flink@sha512:00", "", "", false},
		{"flink@", "", "", false},
		{"@" + testDigest, "", "", false},
		{"", "", "", false},
	} {
		repo, digest, ok := ParseImageID(tc.in)
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.Equal(t, tc.repo, repo, tc.in)
		assert.Equal(t, tc.digest, digest, tc.in)
	}
	ref, err := RunningRef("registry.example/team/flink:2.2.1", testDigest)
	require.NoError(t, err)
	assert.Equal(t, "registry.example/team/flink@"+testDigest, ref)
}

func TestImageMap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		m     string
		image string
		match bool
	}{
		{"registry.example/team/flink=x/y:1", "registry.example/team/flink:2.2.1", true},
		{"registry.example/team/flink=x/y:1", "registry.example/team/flink@" + testDigest, true},
		{"registry.example/team/flink=x/y:1", "registry.example/team/flink-sql:2.2.1", false},
		{"registry.example/team/flink:2.2.1=x/y:1", "registry.example/team/flink:2.2.1", true},
		{"registry.example/team/flink:2.2.1=x/y:1", "registry.example/team/flink:2.2.0", false},
		{"flink:2.2.1=x/y:1", name.DefaultRegistry + "/library/flink:2.2.1", true}, // the short name's registry
		{"localhost:5000/flink=x/y:1", "localhost:5000/flink:any", true},
	} {
		m, err := ParseImageMap(tc.m)
		require.NoError(t, err, tc.m)
		assert.Equal(t, tc.match, m.Matches(tc.image), "%s on %s", tc.m, tc.image)
	}
	for _, bad := range []string{"", "=", "a=", "=b", "a", "UPPER:x=y", "a=b c"} {
		_, err := ParseImageMap(bad)
		assert.ErrorIs(t, err, ErrWhatIf, bad)
	}
	f, err := os.Open("testdata/image-map.txt")
	require.NoError(t, err)
	defer f.Close()
	ms, err := ParseImageMapFile(f)
	require.NoError(t, err)
	require.Len(t, ms, 3)
	assert.Equal(t, "registry.example/team/flink-sql:2.2.1", ms[1].New)
	_, err = ParseImageMapFile(strings.NewReader("a=b\nnot a map\n"))
	assert.ErrorContains(t, err, "line 2:")
	assert.ErrorIs(t, WhatIf{Remove: []string{"lib/x.jar"}}.Validate(), ErrWhatIf)
	assert.ErrorIs(t, WhatIf{Remove: []string{"[x.jar"}}.Validate(), ErrWhatIf)
}

// TestPlanImageIDs: a runtime that reports no registry digest is said,
// not guessed; Pods not yet started are judged by their spec.
func TestPlanImageIDs(t *testing.T) {
	t.Parallel()
	img := "registry.example/team/flink:2.2.1"
	snap := Snapshot{Deployments: []Object{fd("flink", "a", img)}, Pods: []corev1.Pod{
		operatorPod("flink", "a-jm", "a", "jobmanager", img, testDigest),
		operatorPod("flink", "a-tm-1", "a", "taskmanager", img, ""),
		operatorPod("flink", "a-tm-2", "a", "taskmanager", img, "registry.example/team/flink@"+testDigest),
	}}
	items, unread := Plan(snap)
	require.Empty(t, unread)
	require.Len(t, items, 1)
	it := items[0]
	assert.Equal(t, 3, it.Pods)
	assert.Empty(t, it.Running[0], "the JobManager's runtime gave an image ID")
	assert.Equal(t, []string{"registry.example/team/flink@" + testDigest}, it.Running[1])
	require.Len(t, it.Notes, 1)
	assert.Contains(t, it.Notes[0], "Pod a-jm container flink-main-container: the runtime reports imageID \""+testDigest+"\", not a registry digest")
	vs := variants(it)
	require.Len(t, vs, 2, "as the Pods run it, and as the spec names it")
	assert.True(t, vs[0].running)
	assert.Equal(t, img, vs[0].res.Containers[0].Image)
	assert.Equal(t, "registry.example/team/flink@"+testDigest, vs[0].res.Containers[1].Image)
	assert.Equal(t, img, vs[1].res.Containers[1].Image)
}

func FuzzParseImageID(f *testing.F) {
	seeds, err := os.Open("testdata/imageids.txt")
	if err != nil {
		f.Fatal(err)
	}
	sc := bufio.NewScanner(seeds)
	for sc.Scan() {
		f.Add(sc.Text())
	}
	seeds.Close()
	f.Fuzz(func(t *testing.T, s string) {
		repo, digest, ok := ParseImageID(s)
		if !ok {
			if repo != "" || digest != "" {
				t.Fatalf("not ok but %q %q", repo, digest)
			}
			return
		}
		if !strings.HasPrefix(digest, "sha256:") || len(digest) != len(testDigest) || repo == "" {
			t.Fatalf("%q: repo %q digest %q", s, repo, digest)
		}
	})
}

func FuzzParseImageMapFile(f *testing.F) {
	seed, err := os.ReadFile("testdata/image-map.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(seed))
	f.Add("a=b\n#x\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseImageMapFile(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.Old == "" || m.New == "" {
				t.Fatalf("empty side in %+v", m)
			}
			m.Matches(m.Old) // must not panic
		}
	})
}
