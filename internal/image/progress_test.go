package image

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// TestProgressIsPlainTextOffATerminal: written to a file or pipe, progress
// is one line when a layer starts and one when it ends, without terminal
// control sequences.
func TestProgressIsPlainTextOffATerminal(t *testing.T) {
	t.Parallel()
	img, err := imagekit.Base{Dist: testkit.Good("2.2.1"), User: "9999", Extra: []imagekit.Entry{
		{Name: "opt/flink/opt/big.bin", Data: bytes.Repeat([]byte{1, 2, 3, 5, 8, 13, 21}, 1<<20)}}}.Image()
	require.NoError(t, err)
	var out bytes.Buffer
	_, err = VerifyOptions{Progress: ProgressPrinter(&out)}.Verify(context.Background(), img)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, out.String())
	assert.Regexp(t, `^read layer 1/1 sha256:[0-9a-f]{12} 0\.0 MB of \d+\.\d MB$`, lines[0])
	assert.Regexp(t, `^read layer 1/1 sha256:[0-9a-f]{12} done, \d+\.\d MB$`, lines[1])
	assert.NotContains(t, out.String(), "\r")
	assert.NotContains(t, out.String(), "\033")
}
