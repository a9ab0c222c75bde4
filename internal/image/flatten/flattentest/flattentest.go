// Package flattentest reads layers into a merged view for the tests of the
// packages that take one (deep, image): Flink's usual directories, one
// reading as flatten.Read does it.
package flattentest

import (
	"context"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/image/flatten"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// View is the merged view of an image of layers whose payload
// directories are /opt/flink/lib and /opt/flink/plugins.
func View(t testing.TB, layers ...v1.Layer) *flatten.View {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	require.NoError(t, err)
	sel := flatten.NewSelection(settings.Config{LibDir: "/opt/flink/lib", PluginsDir: "/opt/flink/plugins", Original: settings.DefaultOriginal}, "")
	_, v, err := flatten.Read(context.Background(), img, sel, flatten.Options{TempDir: t.TempDir()})
	require.NoError(t, err)
	return v
}
