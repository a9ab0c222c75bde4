package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

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

// Every relative link of README and docs/ names a file that exists, and
// every #anchor a heading of it: the reference moved out of README must
// stay reachable from it.
func TestDocLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	pages = append(pages, "../../README.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	n := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			body, err := os.ReadFile(path)
			if !assert.NoError(t, err, "%s links to %s", page, target) {
				continue
			}
			n++
			if anchor != "" {
				assert.Contains(t, anchors(string(body)), anchor, "%s links to %s: no such heading", page, target)
			}
		}
	}
	assert.Greater(t, n, 20)
}

// anchors are the GitHub anchors of a Markdown page's headings.
func anchors(md string) []string {
	var out []string
	for _, l := range strings.Split(md, "\n") {
		h, ok := strings.CutPrefix(l, "#")
		if !ok {
			continue
		}
		h = strings.TrimSpace(strings.TrimLeft(h, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ' || r == '-':
				b.WriteRune('-')
			case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
