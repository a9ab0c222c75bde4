package image

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// ErrPayload marks payload files bake will not install.
var ErrPayload = errors.New("payload")

// CheckPayloads checks the payload files before any base is read: each is
// a JAR that reads, carries a valid StreamFusion identity, and all are of
// one line and one release. Whether the line fits the base's Flink is
// decided with the base. Stock JARs only have to be JARs.
func CheckPayloads(files []File) error {
	var errs []error
	line, release, first := "", "", ""
	named := func(f File) string {
		if f.Source != "" {
			return f.Name + " (from " + f.Source + ")"
		}
		return f.Name
	}
	for _, f := range files {
		if f.Name == "" || strings.Contains(f.Name, "/") || !strings.HasSuffix(f.Name, ".jar") {
			errs = append(errs, fmt.Errorf("%w: file name %q: want a plain *.jar name", ErrPayload, f.Name))
			continue
		}
		j := payload.Read(bytes.NewReader(f.Data), int64(len(f.Data)), f.Name, payload.Options{})
		if j.Err != nil {
			errs = append(errs, fmt.Errorf("%w %s: %w", ErrPayload, named(f), j.Err))
			continue
		}
		id := admission.Identify(j)
		switch {
		case f.Stock:
			continue
		case id == nil:
			errs = append(errs, fmt.Errorf("%w %s: not StreamFusion content (no %s attribute, no tech/streamfusion/ classes); stock JARs go with --lib", ErrPayload, named(f), admission.AttrPayload))
			continue
		case !id.Valid():
			errs = append(errs, fmt.Errorf("%w %s: its manifest is not valid: %s", ErrPayload, named(f), strings.Join(append(id.Problems, id.Incoherent...), "; ")))
			continue
		}
		if first == "" {
			line, release, first = id.Line, id.Version, named(f)
			continue
		}
		rule := "payload-version"
		if id.Line != line {
			rule = "payload-line"
		}
		if id.Line != line || id.Version != release {
			errs = append(errs, fmt.Errorf("[%s] %w %s is %s for Flink line %s, %s is %s for line %s: bake payloads of one release and one line",
				rule, ErrPayload, named(f), id.Version, id.Line, first, release, line))
		}
	}
	return errors.Join(errs...)
}
