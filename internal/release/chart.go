package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"go.yaml.in/yaml/v3"
)

// ChartName is the chart's name, and its folder in the archive.
const ChartName = "streamfusion-webhook"

// writeChart packages the chart as helm package does (CHART-VERSION.tgz,
// every file under CHART/), with version and appVersion set to the
// release's and the values pulling the image by the index's digest.
func writeChart(o Options, index v1.Hash, m *Manifest) error {
	src := filepath.Join(o.Source, filepath.FromSlash(Chart))
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	chart := os.DirFS(src)
	err = fs.WalkDir(chart, ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: the chart holds only regular files", rel)
		}
		data, err := fs.ReadFile(chart, rel)
		if err != nil {
			return err
		}
		switch rel {
		case "Chart.yaml":
			data, err = chartYAML(data, o.Version)
		case "values.yaml":
			data, err = valuesYAML(data, o.Repository, index)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		h := &tar.Header{Name: path.Join(ChartName, rel), Mode: 0o644, Size: int64(len(data)), ModTime: o.Time, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	rel := "chart/" + ChartName + "-" + o.Version + ".tgz"
	if err := writeFile(o, rel, buf.Bytes()); err != nil {
		return err
	}
	m.Chart = rel
	return m.add(o.Out, rel, "helm-chart", "")
}

// chartYAML sets version and appVersion, keeping the rest as it is.
func chartYAML(data []byte, version string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a mapping")
	}
	set := map[string]bool{}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch k := root.Content[i].Value; k {
		case "version", "appVersion":
			root.Content[i+1].Kind, root.Content[i+1].Tag, root.Content[i+1].Value = yaml.ScalarNode, "!!str", version
			root.Content[i+1].Style = yaml.DoubleQuotedStyle
			set[k] = true
		}
	}
	if !set["version"] || !set["appVersion"] {
		return nil, fmt.Errorf("no version or appVersion to set")
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// The image's values, as the chart's values.yaml writes them: two-space
// indented under image:, each on a line of its own. Rewritten as text, so
// that the comments users read stay.
var (
	valuesRepository = regexp.MustCompile(`(?m)^(  repository: ).*$`)
	valuesDigest     = regexp.MustCompile(`(?m)^(  digest: )"".*$`)
)

func valuesYAML(data []byte, repository string, index v1.Hash) ([]byte, error) {
	for _, re := range []*regexp.Regexp{valuesRepository, valuesDigest} {
		if n := len(re.FindAll(data, -1)); n != 1 {
			return nil, fmt.Errorf("%d lines match %s, not one", n, re)
		}
	}
	data = valuesRepository.ReplaceAll(data, []byte("${1}"+repository))
	data = valuesDigest.ReplaceAll(data, []byte(`${1}"`+index.String()+`"  # the image index this chart was built with`))
	var check struct {
		Image struct{ Repository, Digest string }
	}
	if err := yaml.Unmarshal(data, &check); err != nil {
		return nil, err
	}
	if check.Image.Repository != repository || check.Image.Digest != index.String() {
		return nil, fmt.Errorf("image.repository and image.digest read back as %q and %q", check.Image.Repository, check.Image.Digest)
	}
	return data, nil
}
