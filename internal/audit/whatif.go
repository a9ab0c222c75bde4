package audit

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ErrWhatIf is a what-if that cannot be used as given.
var ErrWhatIf = errors.New("what-if")

// ImageMap replaces an image: every container whose image is Old (the
// same reference, or any tag or digest of Old when Old is a bare
// repository) is judged as if it ran New.
type ImageMap struct {
	Old, New string
	repo     string // Old's repository when Old names no tag or digest
	ref      string // Old, normalised, otherwise
}

// ParseImageMap reads OLD=NEW.
func ParseImageMap(s string) (ImageMap, error) {
	old, nw, ok := strings.Cut(strings.TrimSpace(s), "=")
	old, nw = strings.TrimSpace(old), strings.TrimSpace(nw)
	if !ok || old == "" || nw == "" {
		return ImageMap{}, fmt.Errorf("%w: --image-map %q: want OLD=NEW (an image reference or a repository, then the image to judge instead)", ErrWhatIf, s)
	}
	m := ImageMap{Old: old, New: nw}
	if _, err := name.ParseReference(nw); err != nil {
		return ImageMap{}, fmt.Errorf("%w: --image-map %q: NEW %q is not an image reference: %w", ErrWhatIf, s, nw, err)
	}
	if strings.ContainsAny(old, "@") || hasTag(old) {
		r, err := name.ParseReference(old)
		if err != nil {
			return ImageMap{}, fmt.Errorf("%w: --image-map %q: OLD %q is not an image reference: %w", ErrWhatIf, s, old, err)
		}
		m.ref = r.Name()
		return m, nil
	}
	r, err := name.NewRepository(old)
	if err != nil {
		return ImageMap{}, fmt.Errorf("%w: --image-map %q: OLD %q is not a repository: %w", ErrWhatIf, s, old, err)
	}
	m.repo = r.Name()
	return m, nil
}

// hasTag says whether ref ends in :TAG (a colon after the last slash).
func hasTag(ref string) bool {
	i := strings.LastIndex(ref, ":")
	return i > strings.LastIndex(ref, "/")
}

// Matches says whether the map applies to image (as a spec names it).
func (m ImageMap) Matches(image string) bool {
	r, err := name.ParseReference(image)
	if err != nil {
		return false
	}
	if m.repo != "" {
		return r.Context().Name() == m.repo
	}
	return r.Name() == m.ref
}

// maxMapFile bounds an --image-map-file.
const maxMapFile = 1 << 20

// ParseImageMapFile reads one OLD=NEW a line; blank lines and lines
// starting with # are skipped.
func ParseImageMapFile(r io.Reader) ([]ImageMap, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxMapFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxMapFile {
		return nil, fmt.Errorf("%w: the image map file is larger than %d bytes", ErrWhatIf, maxMapFile)
	}
	var out []ImageMap
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxMapFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m, err := ParseImageMap(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// JAR is a file added to every image's lib by a what-if.
type JAR struct {
	Name string // its file name in lib
	Data []byte
}

// ReadJAR reads --add-jar PATH.
func ReadJAR(p string) (JAR, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return JAR{}, fmt.Errorf("%w: --add-jar: %w", ErrWhatIf, err)
	}
	n := filepath.Base(p)
	if !strings.HasSuffix(n, ".jar") {
		return JAR{}, fmt.Errorf("%w: --add-jar %s: found a file not named *.jar, required a JAR (Flink puts only *.jar of lib on the classpath)", ErrWhatIf, p)
	}
	return JAR{Name: n, Data: data}, nil
}

// WhatIf is the change an upgrade would make.
type WhatIf struct {
	Images []ImageMap
	Add    []JAR
	// Remove are file names or patterns (path.Match) of JARs in lib.
	Remove []string
}

// Empty says there is no what-if: "after" is "today".
func (w WhatIf) Empty() bool { return len(w.Images) == 0 && !w.changesLib() }

func (w WhatIf) changesLib() bool { return len(w.Add) > 0 || len(w.Remove) > 0 }

// Validate checks the patterns.
func (w WhatIf) Validate() error {
	for _, p := range w.Remove {
		if p == "" || strings.Contains(p, "/") {
			return fmt.Errorf("%w: --remove-jar %q: want a file name or pattern in lib (flink-connector-kafka-*.jar), no directory", ErrWhatIf, p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("%w: --remove-jar %q: %w", ErrWhatIf, p, err)
		}
	}
	return nil
}

// mapImage is the image a container is judged on after the what-if:
// the first map that matches its spec image (or what it runs), else the
// same.
func (w WhatIf) mapImage(spec, image string) string {
	for _, m := range w.Images {
		if m.Matches(spec) || m.Matches(image) {
			return m.New
		}
	}
	return image
}

// libLabel names the lib change in an image's reference for reports.
func (w WhatIf) libLabel() string {
	var parts []string
	for _, j := range w.Add {
		parts = append(parts, "+"+j.Name)
	}
	for _, r := range w.Remove {
		parts = append(parts, "-"+r)
	}
	return "lib " + strings.Join(parts, " ")
}

// changeLib appends one layer to img: each added JAR at libDir/NAME, and
// a whiteout for each JAR of the classpath (paths in the image) whose
// file name a removal pattern matches. unmatched are the patterns that
// matched no JAR.
func (w WhatIf) changeLib(img v1.Image, libDir string, classpath []string) (out v1.Image, unmatched []string, err error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	for _, p := range w.Remove {
		hit := false
		for _, cp := range classpath {
			if !path.IsAbs(cp) {
				cp = path.Join(libDir, cp)
			}
			if ok, _ := path.Match(p, path.Base(cp)); !ok {
				continue
			}
			hit = true
			wh := strings.TrimPrefix(path.Join(path.Dir(cp), ".wh."+path.Base(cp)), "/")
			if seen[wh] {
				continue
			}
			seen[wh] = true
			if err := tw.WriteHeader(&tar.Header{Name: wh, Typeflag: tar.TypeReg, Mode: 0o644, Format: tar.FormatPAX}); err != nil {
				return nil, nil, err
			}
		}
		if !hit {
			unmatched = append(unmatched, p)
		}
	}
	for _, j := range w.Add {
		n := strings.TrimPrefix(path.Join(libDir, j.Name), "/")
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(j.Data)), Format: tar.FormatPAX}); err != nil {
			return nil, nil, err
		}
		if _, err := tw.Write(j.Data); err != nil {
			return nil, nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, nil, err
	}
	layerType := types.OCILayer
	if mt == types.DockerManifestSchema2 {
		layerType = types.DockerLayer
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, tarball.WithMediaType(layerType))
	if err != nil {
		return nil, nil, err
	}
	out, err = mutate.Append(img, mutate.Addendum{Layer: l, MediaType: layerType, History: v1.History{CreatedBy: "streamfusion audit what-if: " + w.libLabel()}})
	sort.Strings(unmatched)
	return out, unmatched, err
}
