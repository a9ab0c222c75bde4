package source

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// saved is a `docker save` tarball of a random image of layers layers,
// as go-containerregistry writes it.
func saved(t testing.TB, layers int64) []byte {
	t.Helper()
	img, err := random.Image(256, layers)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, tarball.Write(name.MustParseReference("localhost/flink:saved"), img, &b))
	return b.Bytes()
}

// same fails when two readings of one tarball differ: the config bytes,
// the layers, and each layer's bytes, uncompressed. Not the diff IDs:
// go-containerregistry computes a compressed layer's from its bytes,
// where this reader takes the config's and internal/image checks the
// bytes against it as it reads the layer (ErrLayer). Nor a layer stored
// compressed where the first is not, or the other way round:
// go-containerregistry takes every layer to be stored as the first is
// (its areLayersCompressed peeks at the first only), where this reader
// looks at each, as `docker load` does (TestOpenTarballReadsEachLayerAsStored).
func same(t testing.TB, ours, theirs v1.Image) {
	t.Helper()
	oc, err := ours.RawConfigFile()
	require.NoError(t, err)
	tc, err := theirs.RawConfigFile()
	require.NoError(t, err)
	require.Equal(t, tc, oc, "config")
	ol, err := ours.Layers()
	require.NoError(t, err)
	tl, err := theirs.Layers()
	require.NoError(t, err)
	require.Len(t, ol, len(tl))
	for i := range ol {
		if compressed(t, ol[i]) != compressed(t, ol[0]) {
			continue
		}
		ob, oerr := uncompressed(ol[i])
		tb, terr := uncompressed(tl[i])
		require.Equal(t, terr == nil, oerr == nil, "layer %d read: go-containerregistry %v, this %v", i, terr, oerr)
		require.True(t, bytes.Equal(tb, ob), "layer %d's bytes", i)
	}
}

// compressed says whether this reader found a layer stored compressed.
func compressed(t testing.TB, l v1.Layer) bool {
	t.Helper()
	mt, err := l.MediaType()
	require.NoError(t, err)
	return mt != types.DockerUncompressedLayer
}

func uncompressed(l v1.Layer) ([]byte, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func TestOpenTarballAsGoContainerRegistry(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, 1, 3} {
		t.Run(strconv.FormatInt(n, 10), func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "saved.tar")
			require.NoError(t, os.WriteFile(p, saved(t, n), 0o600))
			ours, err := openTarball(p)
			require.NoError(t, err)
			theirs, err := tarball.ImageFromPath(p, nil)
			require.NoError(t, err)
			same(t, ours, theirs)
			od, err := ours.ConfigFile()
			require.NoError(t, err)
			for i, l := range must(theirs.Layers()) {
				assert.Equal(t, od.RootFS.DiffIDs[i], must(l.DiffID()), "layer %d", i)
			}
		})
	}
}

// A tarball of many small files is refused at the bound, not indexed.
func TestOpenTarballBoundsItsFiles(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i := range maxMembers + 1 {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "f" + strconv.Itoa(i), Typeflag: tar.TypeReg, Mode: 0o644}))
	}
	require.NoError(t, tw.Close())
	p := filepath.Join(t.TempDir(), "many.tar")
	require.NoError(t, os.WriteFile(p, b.Bytes(), 0o600))
	_, err := openTarball(p)
	require.ErrorIs(t, err, ErrTarball)
	assert.Contains(t, err.Error(), "more than 10000 files")
}

// FuzzOpenTarball reads any bytes as a saved tarball, differentially:
// never a panic; what it opens, go-containerregistry's reader opens
// too, with the same config and layers.
func FuzzOpenTarball(f *testing.F) {
	f.Add(saved(f, 1))
	f.Add(saved(f, 2))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "saved.tar")
		require.NoError(t, os.WriteFile(p, data, 0o600))
		ours, err := openTarball(p)
		if err != nil {
			return
		}
		if _, err := ours.Digest(); err != nil {
			return // a layer the manifest names cannot be read whole: refused when the image is read
		}
		theirs, err := tarball.ImageFromPath(p, nil)
		if err != nil {
			t.Fatalf("go-containerregistry refuses what this reads: %v", err)
		}
		same(t, ours, theirs)
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A saved tarball may store one layer uncompressed and the next gzipped:
// each is read as it is stored (as `docker load` does), not as the first
// is (go-containerregistry's reader, which FuzzOpenTarball skips there).
func TestOpenTarballReadsEachLayerAsStored(t *testing.T) {
	t.Parallel()
	var files []imagekit.Entry
	var diffIDs []v1.Hash
	var tars [][]byte
	for i, gzipped := range []bool{false, true, false} {
		l, err := random.Layer(512, types.DockerLayer)
		require.NoError(t, err)
		plain := must(uncompressed(l))
		stored := plain
		if gzipped {
			stored = must(io.ReadAll(must(l.Compressed())))
		}
		files = append(files, imagekit.Entry{Name: "layer" + strconv.Itoa(i), Data: stored, Mode: 0o644})
		diffIDs = append(diffIDs, sha(plain))
		tars = append(tars, plain)
	}
	cfg := must(json.Marshal(v1.ConfigFile{RootFS: v1.RootFS{Type: "layers", DiffIDs: diffIDs}}))
	m := must(json.Marshal(tarball.Manifest{{Config: "config.json", Layers: []string{"layer0", "layer1", "layer2"}}}))
	files = append(files, imagekit.Entry{Name: "config.json", Data: cfg, Mode: 0o644}, imagekit.Entry{Name: "manifest.json", Data: m, Mode: 0o644})
	p := filepath.Join(t.TempDir(), "mixed.tar")
	require.NoError(t, os.WriteFile(p, must(uncompressed(imagekit.Layer(files...))), 0o600))

	img, err := openTarball(p)
	require.NoError(t, err)
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 3)
	for i, l := range layers {
		b, err := uncompressed(l)
		require.NoError(t, err, "layer %d", i)
		assert.True(t, bytes.Equal(tars[i], b), "layer %d's bytes", i)
	}
	assert.Equal(t, []bool{false, true, false}, []bool{compressed(t, layers[0]), compressed(t, layers[1]), compressed(t, layers[2])})
}
