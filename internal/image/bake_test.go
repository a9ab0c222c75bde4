package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/image/flatten"
	"github.com/streamfusion/image-entrypoint/internal/image/source"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// saveUncompressed writes img as `podman save` and `docker save` do: a
// tar of manifest.json, the config and every layer uncompressed.
func saveUncompressed(t *testing.T, img v1.Image, file string) {
	t.Helper()
	f, err := os.Create(file)
	require.NoError(t, err)
	defer f.Close()
	tw := tar.NewWriter(f)
	put := func(name string, r io.Reader, size int64) {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}))
		_, err := io.Copy(tw, r)
		require.NoError(t, err)
	}
	cfg, err := img.RawConfigFile()
	require.NoError(t, err)
	put("config.json", bytesReader(cfg), int64(len(cfg)))
	layers, err := img.Layers()
	require.NoError(t, err)
	var names []string
	for _, l := range layers {
		d, err := l.DiffID()
		require.NoError(t, err)
		rc, err := l.Uncompressed()
		require.NoError(t, err)
		data, err := io.ReadAll(rc)
		require.NoError(t, err)
		rc.Close()
		n := d.Hex + "/layer.tar"
		put(n, bytesReader(data), int64(len(data)))
		names = append(names, n)
	}
	m, err := json.Marshal(tarball.Manifest{{Config: "config.json", RepoTags: []string{"localhost/flink:base"}, Layers: names}})
	require.NoError(t, err)
	put("manifest.json", bytesReader(m), int64(len(m)))
	require.NoError(t, tw.Close())
}

// members returns the sha256 of every regular file of a tar file.
func members(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		s := sha256.New()
		_, err = io.Copy(s, tr)
		require.NoError(t, err)
		out[h.Name] = hex.EncodeToString(s.Sum(nil))
	}
}

// flinkDirs are the base's Flink directories, owned by flink (9999) as in
// the official images.
var flinkDirs = []imagekit.Entry{
	{Name: "opt/flink", Dir: true, Mode: 0o775, UID: 9999, GID: 9999},
	{Name: "opt/flink/lib", Dir: true, Mode: 0o770, UID: 9999, GID: 9999},
}

func testPayloads(line string) []File {
	var out []File
	for _, p := range testkit.StreamFusion(line, "0.1.0") {
		out = append(out, File{Name: p.Name, Data: p.Payload.Bytes()})
	}
	return out
}

func headers(t *testing.T, l v1.Layer) map[string]*tar.Header {
	t.Helper()
	rc, err := l.Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out[h.Name] = h
	}
}

// TestBakeKeepsTheBase bakes from a `podman save` tarball (uncompressed
// layers) and from an OCI layout (gzipped layers), for both lines: the
// base's blobs are the baked image's first blobs, byte for byte, and every
// directory the new layer names carries the base's owner, group and mode.
func TestBakeKeepsTheBase(t *testing.T) {
	t.Parallel()
	entrypoint, err := stampedTrue() // a small ELF binary of this machine's architecture
	require.NoError(t, err)
	for _, flink := range []string{"1.18.1", "2.2.1"} {
		for _, format := range []string{"tarball", "layout"} {
			t.Run(flink+" "+format, func(t *testing.T) {
				t.Parallel()
				d := testkit.Good(flink)
				d.Payloads = nil
				base, err := imagekit.Base{Dist: d, User: "9999", Extra: flinkDirs}.Image()
				require.NoError(t, err)
				dir := t.TempDir()
				ref := filepath.Join(dir, "base")
				if format == "tarball" {
					ref += ".tar"
					saveUncompressed(t, base, ref)
				} else {
					p, err := layout.Write(ref, empty.Index)
					require.NoError(t, err)
					require.NoError(t, p.AppendImage(base))
				}
				src, err := source.Open(context.Background(), ref)
				require.NoError(t, err)
				baked, _, err := Bake(context.Background(), src.Image, BakeOptions{Entrypoint: entrypoint,
					Payloads: testPayloads(testkit.LineOf(flink)), Read: VerifyOptions{TempDir: dir}})
				require.NoError(t, err)

				// The base's environment, nothing added: no GLIBC_TUNABLES
				// (docs/glibc-tunables.md).
				baseCfg, err := src.Image.ConfigFile()
				require.NoError(t, err)
				bakedCfg, err := baked.ConfigFile()
				require.NoError(t, err)
				assert.Equal(t, baseCfg.Config.Env, bakedCfg.Config.Env)

				baseLayers, err := src.Image.Layers()
				require.NoError(t, err)
				bakedLayers, err := baked.Layers()
				require.NoError(t, err)
				require.Len(t, bakedLayers, len(baseLayers)+1)
				for i, bl := range baseLayers {
					want, err := bl.Digest()
					require.NoError(t, err)
					got, err := bakedLayers[i].Digest()
					require.NoError(t, err)
					assert.Equal(t, want, got, "base layer %d", i)
					wantMT, _ := bl.MediaType()
					gotMT, _ := bakedLayers[i].MediaType()
					assert.Equal(t, wantMT, gotMT, "base layer %d", i)
					if format == "tarball" {
						assert.Equal(t, types.DockerUncompressedLayer, gotMT, "an uncompressed base layer stays uncompressed")
						diffID, err := bl.DiffID()
						require.NoError(t, err)
						assert.Equal(t, diffID, got)
					}
				}

				if format == "tarball" {
					out := filepath.Join(dir, "baked.tar")
					require.NoError(t, tarball.WriteToFile(out, name.MustParseReference("localhost/flink:baked"), baked))
					in, written := members(t, ref), members(t, out)
					for _, bl := range baseLayers {
						d, _ := bl.Digest()
						assert.Contains(t, written, d.Hex+".tar")
						assert.Equal(t, in[d.Hex+"/layer.tar"], written[d.Hex+".tar"], "the written blob is the base's file")
					}
				}

				top := headers(t, bakedLayers[len(bakedLayers)-1])
				baseHeaders := headers(t, baseLayers[len(baseLayers)-1])
				for _, dirName := range []string{"opt/", "opt/flink/", "opt/flink/lib/"} {
					got, ok := top[dirName]
					require.True(t, ok, "the new layer names %s", dirName)
					want, ok := baseHeaders[dirName]
					if !ok {
						continue // the base's layer has no entry: root-owned by default
					}
					assert.Equal(t, [3]int64{want.Mode, int64(want.Uid), int64(want.Gid)}, [3]int64{got.Mode, int64(got.Uid), int64(got.Gid)}, dirName)
				}
				assert.Equal(t, 9999, top["opt/flink/lib/"].Uid)
				assert.Equal(t, 9999, top["opt/flink/"].Gid)
			})
		}
	}
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// stampedTrue is a small ELF binary of this machine's architecture
// (/bin/true) carrying the entrypoint's stamp, so that the guard takes it
// for a StreamFusion entrypoint.
func stampedTrue() ([]byte, error) {
	bin, err := os.ReadFile("/bin/true")
	return append(bin, flatten.Stamp()...), err
}
