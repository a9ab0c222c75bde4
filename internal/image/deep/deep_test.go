package deep

import (
	"errors"
	"slices"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/image/flatten/flattentest"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bounds: a lib beyond them is refused before its bytes are copied.
func TestDeepBudget(t *testing.T) {
	var b budget
	for range maxDeepBytes / (1 << 30) {
		require.NoError(t, b.add("opt/flink/lib/big.jar", 1<<30, 10))
	}
	err := b.add("opt/flink/lib/one-too-many.jar", 1, 1)
	require.ErrorIs(t, err, ErrLimit)
	assert.Contains(t, err.Error(), "/opt/flink/lib/one-too-many.jar")

	b = budget{}
	require.NoError(t, b.add("a.jar", 1, maxDeepEntries))
	assert.ErrorIs(t, b.add("b.jar", 1, 1), ErrLimit)

	b = budget{}
	for range maxDeepJARs {
		require.NoError(t, b.add("a.jar", 1, 1))
	}
	assert.True(t, errors.Is(b.add("b.jar", 1, 1), ErrLimit))
}

// deepJARs reads lib, usrlib and the JARs directly in each plugin folder
// that has one not the host's own (as host's openPlugins judges them):
// not the host's own plugin folders, not a plugin's subfolders, not JARs
// straight in plugins/.
func TestDeepJARsOfPlugins(t *testing.T) {
	t.Parallel()
	own := testkit.ClassJAR(testkit.Manifest("Implementation-Vendor-Id", "org.apache.flink", "Implementation-Version", "2.2.0"), nil, nil)
	other := testkit.ClassJAR("", nil, nil)
	dist := testkit.ClassJAR(testkit.Manifest("Implementation-Version", "2.2.0"), nil, nil)
	e := func(name string, data []byte) imagekit.Entry { return imagekit.Entry{Name: name, Data: data} }
	v := flattentest.View(t, imagekit.Layer(e("opt/flink/lib/flink-dist-2.2.0.jar", dist), e("opt/flink/usrlib/job.jar", other),
		e("opt/flink/plugins/own/flink-own-2.2.0.jar", own), e("opt/flink/plugins/own/sub/other.jar", other),
		e("opt/flink/plugins/acme/acme.jar", other), e("opt/flink/plugins/acme/flink-own-2.2.0.jar", own), e("opt/flink/plugins/loose.jar", other)))
	got := deepJARs(v, "/opt/flink/lib", "/opt/flink/plugins")
	slices.Sort(got)
	assert.Equal(t, []string{"opt/flink/lib/flink-dist-2.2.0.jar", "opt/flink/plugins/acme/acme.jar", "opt/flink/plugins/acme/flink-own-2.2.0.jar",
		"opt/flink/usrlib/job.jar"}, got)
}
