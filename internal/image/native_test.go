package image

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// Verify judges the payloads' native libraries against the image's own
// runtime libraries, always (not only with Deep).
func TestVerifyJudgesNativeLibraries(t *testing.T) {
	t.Parallel()
	dist := testkit.Good("2.2.1").With(
		testkit.Placed{Name: "streamfusion-ops-0.1.0.jar", Payload: testkit.NativePayload("ops", "2.2", "0.1.0", testkit.NativeNewGlibc, nativeLib(t, testkit.NativeNewGlibc))})
	base := imagekit.Base{Dist: dist, User: "9999", Extra: []imagekit.Entry{
		{Name: "lib", Link: "usr/lib"},
		{Name: "usr/lib/x86_64-linux-gnu/libc.so.6", Data: nativeLib(t, testkit.StubLibc236)},
	}}
	img, err := base.Image()
	require.NoError(t, err)
	res, err := VerifyOptions{TempDir: t.TempDir()}.Verify(context.Background(), img)
	require.NoError(t, err)
	got := nativeErrors(res.Decision.Errors())
	require.Len(t, got, 1, "%v", got)
	assert.Equal(t, "native-symbol-version", got[0].Rule)
	assert.Equal(t, "libc.so.6 at /lib/x86_64-linux-gnu/libc.so.6 defines up to GLIBC_2.36", got[0].Required)

	// The same image with a library that needs only GLIBC_2.2.5 is admitted.
	base.Dist = testkit.Good("2.2.1").With(
		testkit.Placed{Name: "streamfusion-ops-0.1.0.jar", Payload: testkit.NativePayload("ops", "2.2", "0.1.0", testkit.NativeGood, nativeLib(t, testkit.NativeGood))})
	img, err = base.Image()
	require.NoError(t, err)
	res, err = VerifyOptions{TempDir: t.TempDir()}.Verify(context.Background(), img)
	require.NoError(t, err)
	assert.Empty(t, nativeErrors(res.Decision.Errors()))
}

// nativeErrors are the native-* findings (the test image is not baked:
// the guard's findings are not this test's).
func nativeErrors(fs []admission.Finding) []admission.Finding {
	var out []admission.Finding
	for _, f := range fs {
		if strings.HasPrefix(f.Rule, "native-") {
			out = append(out, f)
		}
	}
	return out
}
