package source

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ErrTarball marks a saved tarball that is not one image: its manifest
// and config disagree, or it holds far more files than a saved image.
var ErrTarball = errors.New("not a saved image")

// maxMembers bounds the files of a saved tarball this tool indexes (each
// is a map entry): `docker save` and podman write a manifest, a config
// and one to four files per layer.
const maxMembers = 10000

// A `docker save` tarball holds layers as they were stored: podman and
// docker write them uncompressed. go-containerregistry's tarball image
// reports such layers gzipped (it compresses them to compute digests, and
// again when written), so an image baked from it would carry other blobs
// than its base. openTarball keeps every layer as it is: an uncompressed
// layer is its own blob (digest = diff ID, media type "tar"), a compressed
// one keeps its bytes and its compression. Nothing is read to open it but
// the tar headers, the manifest and the config.
func openTarball(file string) (v1.Image, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	members, err := index(f)
	if err != nil {
		return nil, err
	}
	read := func(name string) ([]byte, error) {
		s, ok := members[path.Clean(name)]
		if !ok {
			return nil, fmt.Errorf("the tarball has no %s", name)
		}
		if s.size > 64<<20 {
			return nil, fmt.Errorf("%s is %d bytes, more than this tool reads", name, s.size)
		}
		b := make([]byte, s.size)
		_, err := f.ReadAt(b, s.off)
		return b, err
	}
	mb, err := read("manifest.json")
	if err != nil {
		return nil, err
	}
	var m tarball.Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("the tarball holds %d images; this tool reads tarballs of one", len(m))
	}
	cfgBytes, err := read(m[0].Config)
	if err != nil {
		return nil, err
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(cfgBytes))
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	if len(cfg.RootFS.DiffIDs) != len(m[0].Layers) {
		return nil, fmt.Errorf("%w: the config lists %d layers, manifest.json %d", ErrTarball, len(cfg.RootFS.DiffIDs), len(m[0].Layers))
	}
	img := &rawTarball{file: file, config: cfgBytes}
	for i, name := range m[0].Layers {
		s, ok := members[path.Clean(name)]
		if !ok {
			return nil, fmt.Errorf("the tarball has no layer %s", name)
		}
		l := &storedLayer{file: file, sec: s, diffID: cfg.RootFS.DiffIDs[i]}
		head := make([]byte, 4)
		n, _ := f.ReadAt(head, s.off)
		switch head = head[:n]; {
		case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
			l.mediaType = types.DockerLayer
		case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
			l.mediaType = types.OCILayerZStd
		default:
			l.mediaType, l.digest = types.DockerUncompressedLayer, cfg.RootFS.DiffIDs[i]
		}
		img.layers = append(img.layers, l)
	}
	return partial.CompressedToImage(img)
}

type section struct{ off, size int64 }

// index finds where each regular file of a tarball is: its data's offset
// and size, by cleaned name; at most maxMembers files.
func index(f *os.File) (map[string]section, error) {
	members := map[string]section{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return members, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read tar: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if len(members) == maxMembers {
			return nil, fmt.Errorf("%w: more than %d files; a saved image has a few per layer", ErrTarball, maxMembers)
		}
		off, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, err
		}
		members[path.Clean(h.Name)] = section{off, h.Size}
	}
}

type rawTarball struct {
	file   string
	config []byte
	layers []*storedLayer

	once     sync.Once
	manifest []byte
	err      error
}

func (r *rawTarball) RawConfigFile() ([]byte, error)      { return r.config, nil }
func (r *rawTarball) MediaType() (types.MediaType, error) { return types.DockerManifestSchema2, nil }

func (r *rawTarball) RawManifest() ([]byte, error) {
	r.once.Do(func() {
		m := v1.Manifest{SchemaVersion: 2, MediaType: types.DockerManifestSchema2, Config: v1.Descriptor{
			MediaType: types.DockerConfigJSON, Size: int64(len(r.config)), Digest: sha(r.config)}}
		for _, l := range r.layers {
			d, err := l.Digest()
			if err != nil {
				r.err = err
				return
			}
			m.Layers = append(m.Layers, v1.Descriptor{MediaType: l.mediaType, Size: l.sec.size, Digest: d})
		}
		r.manifest, r.err = json.Marshal(m)
	})
	return r.manifest, r.err
}

func (r *rawTarball) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	for _, l := range r.layers {
		if d, err := l.Digest(); err == nil && d == h {
			return l, nil
		}
	}
	return nil, fmt.Errorf("the tarball has no layer %s", h)
}

func sha(b []byte) v1.Hash {
	s := sha256.Sum256(b)
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(s[:])}
}

// storedLayer is one layer file of the tarball, as stored.
type storedLayer struct {
	file      string
	sec       section
	mediaType types.MediaType
	diffID    v1.Hash

	mu     sync.Mutex
	digest v1.Hash // of a compressed layer: hashed once, when asked
}

func (l *storedLayer) Digest() (v1.Hash, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.digest.Hex != "" {
		return l.digest, nil
	}
	rc, err := l.Compressed()
	if err != nil {
		return v1.Hash{}, err
	}
	defer rc.Close()
	h, _, err := v1.SHA256(rc)
	if err != nil {
		return v1.Hash{}, err
	}
	l.digest = h
	return h, nil
}

func (l *storedLayer) DiffID() (v1.Hash, error)            { return l.diffID, nil }
func (l *storedLayer) Size() (int64, error)                { return l.sec.size, nil }
func (l *storedLayer) MediaType() (types.MediaType, error) { return l.mediaType, nil }

func (l *storedLayer) Compressed() (io.ReadCloser, error) {
	f, err := os.Open(l.file)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{bufio.NewReaderSize(io.NewSectionReader(f, l.sec.off, l.sec.size), 1<<20), f}, nil
}
