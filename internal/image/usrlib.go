package image

import (
	"archive/tar"
	"fmt"
	"path"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/image/flatten"
)

// addUsrlib adds the job JARs of opt to the layer, in usrlib beside lib
// (where Flink's application mode and the layout-usrlib rule look).
func addUsrlib(entries map[string]*tar.Header, add func(string, int64, []byte), lib string, opt BakeOptions) error {
	if len(opt.Usrlib) == 0 {
		return nil
	}
	dir := path.Join(path.Dir(lib), "usrlib")
	entries[dir+"/"] = &tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: flatten.Epoch(opt.Epoch), Format: tar.FormatPAX}
	for _, p := range opt.Usrlib {
		if p.Name == "" || strings.Contains(p.Name, "/") || !strings.HasSuffix(p.Name, ".jar") {
			return fmt.Errorf("job JAR file name %q: want a plain *.jar name", p.Name)
		}
		add(dir+"/"+p.Name, PayloadMode, p.Data)
	}
	return nil
}
