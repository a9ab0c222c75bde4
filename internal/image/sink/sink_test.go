package sink

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutLayer is a layer whose bytes end in an error halfway, its digests
// those of the whole: what a base layer read again from a registry whose
// connection drops gives (the image package's
// TestRegistryDropsTheConnectionMidLayer drops a real one; here the cut
// is made by the reader, so that the writes alone are held).
type cutLayer struct{ v1.Layer }

func (l cutLayer) Compressed() (io.ReadCloser, error) {
	rc, err := l.Layer.Compressed()
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(rc, 512<<10), errReader{}), rc}, nil
}

func (l cutLayer) Uncompressed() (io.ReadCloser, error) { return l.Compressed() }

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

// A tarball or a layout whose image cannot be read whole is not written:
// no file at the path, no temporary file beside it.
func TestWritesAreAllOrNothing(t *testing.T) {
	t.Parallel()
	good, err := random.Image(1024, 1)
	require.NoError(t, err)
	whole, err := random.Layer(1<<20, types.OCIUncompressedLayer)
	require.NoError(t, err)
	cut, err := mutate.AppendLayers(empty.Image, cutLayer{whole})
	require.NoError(t, err)
	ref := name.MustParseReference("localhost/flink:baked")
	for _, tc := range []struct {
		name  string
		write func(dir string, img v1.Image) (string, error)
	}{
		{"tarball", func(dir string, img v1.Image) (string, error) {
			p := filepath.Join(dir, "baked.tar")
			return p, WriteTarball(p, ref, img)
		}},
		{"layout", func(dir string, img v1.Image) (string, error) {
			p := filepath.Join(dir, "layout")
			return p, WriteLayout(p, img, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p, werr := tc.write(dir, good)
			require.NoError(t, werr)
			assert.True(t, exists(p), "the good image is written") // the checks below can fail
			dir = t.TempDir()
			p, werr = tc.write(dir, cut)
			require.Error(t, werr)
			assert.NoFileExists(t, p)
			assert.NoDirExists(t, p)
			ents, rerr := os.ReadDir(dir)
			require.NoError(t, rerr)
			assert.Empty(t, ents, "no temporary file left either")
		})
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
