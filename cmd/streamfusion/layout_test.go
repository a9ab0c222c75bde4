//go:build installcrash

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var bakedDigest = regexp.MustCompile(`baked linux/amd64 (sha256:[0-9a-f]{64})`)

// Two bakes writing one --layout at once, as child processes, ten rounds:
// exactly one wins, the other fails saying the layout was written by
// another (or already exists), and the layout is always a valid OCI
// layout (every blob matching its digest, go-containerregistry's
// validate.Index) holding the winner's image.
func TestBakesToOneLayoutAtOnce(t *testing.T) {
	base := writeTarball(t, flinkBase(t, "amd64"))
	payloads := payloadFiles(t, nil)
	raced := 0
	for round := range 10 {
		dir := filepath.Join(t.TempDir(), "layout")
		bake := func(epoch string) *started {
			env := map[string]string{"STREAMFUSION_NO_CACHE": "1", "SOURCE_DATE_EPOCH": epoch, "HOME": t.TempDir()}
			return startBin(t, cliBin(), env, append([]string{"bake", "--base", base, "--layout", dir, "--entrypoint", entrypoints["amd64"]}, payloads...)...)
		}
		a, b := bake("1700000000"), bake("1700000001") // two different images
		ra, rb := a.wait(t), b.wait(t)
		winner, loser := ra, rb
		if ra.code != 0 {
			winner, loser = rb, ra
		}
		require.Equal(t, 0, winner.code, "round %d: one bake wins:\n%s\n%s", round, ra.stderr, rb.stderr)
		require.Equal(t, 1, loser.code, "round %d: the other fails:\n%s", round, loser.stderr)
		assert.Regexp(t, `layout .* (was written meanwhile by another writer|exists and is not empty)`, loser.stderr)
		if regexp.MustCompile(`written meanwhile`).MatchString(loser.stderr) {
			raced++ // both wrote their layout; the rename decided
		}

		p, err := layout.FromPath(dir)
		require.NoError(t, err, "round %d", round)
		idx, err := p.ImageIndex()
		require.NoError(t, err)
		require.NoError(t, validate.Index(idx), "round %d: a valid layout", round)
		m, err := idx.IndexManifest()
		require.NoError(t, err)
		require.Len(t, m.Manifests, 1)
		want := bakedDigest.FindStringSubmatch(winner.stdout + winner.stderr)
		require.NotNil(t, want, winner.stdout)
		assert.Equal(t, want[1], m.Manifests[0].Digest.String(), "round %d: the winner's image", round)
		ents, err := os.ReadDir(filepath.Dir(dir))
		require.NoError(t, err)
		assert.Len(t, ents, 1, "round %d: no temporary directory left", round)
	}
	t.Logf("in %d of 10 rounds both bakes wrote a whole layout and the rename chose", raced)
}
