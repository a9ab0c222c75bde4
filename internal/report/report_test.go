package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
)

func decision(n int) *admission.Decision {
	d := &admission.Decision{}
	for i := range n {
		d.Findings = append(d.Findings, admission.Finding{Rule: "payload-line", Severity: admission.Error,
			Path: "/opt/flink/lib/ünïcødé-" + strings.Repeat("x", i%7) + ".jar", Message: "built for line 1.18", Found: "1.18", Required: "2.2", Fix: "remove it"})
	}
	d.Findings = append(d.Findings, admission.Finding{Rule: "line-experimental", Severity: admission.Warning, Message: "experimental"})
	return d
}

func TestSummaryIsBoundedAndNamesErrorsOnly(t *testing.T) {
	t.Parallel()
	s := Summary("jobmanager", decision(2))
	assert.True(t, strings.HasPrefix(s, "StreamFusion refused to start jobmanager (2 error(s)): /opt/flink/lib/"))
	assert.NotContains(t, s, "experimental")
	assert.Contains(t, s, "built for line 1.18 (fix: remove it)", "each error carries its fix")
	long := Summary("jobmanager", decision(500))
	assert.LessOrEqual(t, len(long), MaxTermination)
	assert.True(t, utf8.ValidString(long), "cut on a rune boundary")
	assert.True(t, strings.HasSuffix(long, "[...]"))
}

func TestClip(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "short", Clip("short", 10))
	for n := 8; n < 40; n++ {
		c := Clip(strings.Repeat("é", 30), n)
		assert.LessOrEqual(t, len(c), n)
		assert.True(t, utf8.ValidString(c))
	}
}

func TestWriteTermination(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "termination-log")
	require.NoError(t, os.WriteFile(p, []byte("old content that is longer"), 0o644))
	require.NoError(t, WriteTermination(p, "new"))
	got, _ := os.ReadFile(p)
	assert.Equal(t, "new", string(got))
	require.NoError(t, WriteTermination(filepath.Join(dir, "absent"), "x"))
	assert.NoFileExists(t, filepath.Join(dir, "absent"))
	require.NoError(t, WriteTermination(p, strings.Repeat("y", 10000)))
	got, _ = os.ReadFile(p)
	assert.Len(t, got, MaxTermination)
}

func TestLoggerFormats(t *testing.T) {
	t.Parallel()
	var text, js bytes.Buffer
	Findings(Logger(&text, false, zerolog.InfoLevel), decision(1))
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	require.Len(t, lines, 2)
	assert.True(t, strings.HasPrefix(lines[0], "streamfusion: ERROR [payload-line] /opt/flink/lib/"), lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "streamfusion: WARN [line-experimental]"), lines[1])

	Findings(Logger(&js, true, zerolog.ErrorLevel), decision(1))
	lines = strings.Split(strings.TrimSpace(js.String()), "\n")
	require.Len(t, lines, 1, "the level filters warnings")
	var ev map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &ev))
	assert.Equal(t, "2.2", ev["required"])
	assert.Equal(t, "streamfusion", ev["logger"])
}
