package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/install"
	"github.com/streamfusion/image-entrypoint/internal/report"
)

// docs/rules.md is generated from the rule lists (make rules-doc, which
// runs this test with STREAMFUSION_UPDATE_RULES_DOC=1), and every row the
// binary's `rules --markdown` prints is in it, in the same order.
func TestRulesDocIsCurrent(t *testing.T) {
	const doc = "../../docs/rules.md"
	var want bytes.Buffer
	require.NoError(t, report.RulesDoc(&want, admission.Catalogue(), append(append([]admission.Rule(nil), image.GuardRules...), install.Rules...)))
	if os.Getenv("STREAMFUSION_UPDATE_RULES_DOC") == "1" {
		require.NoError(t, os.WriteFile(doc, want.Bytes(), 0o644))
	}
	got, err := os.ReadFile(doc)
	require.NoError(t, err)
	assert.Equal(t, want.String(), string(got), "docs/rules.md is stale: run `make rules-doc`")

	code, out, _ := cli(t, nil, "rules", "--markdown")
	require.Equal(t, 0, code)
	var rows []string
	for _, l := range strings.Split(string(got), "\n") {
		if strings.HasPrefix(l, "| `") {
			rows = append(rows, l)
		}
	}
	var printed []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "| `") {
			printed = append(printed, l)
		}
	}
	assert.Equal(t, printed, rows, "the binary's catalogue, row for row")
}
