package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/report"
)

// docs/rules.md is generated from the rule lists (make rules-doc, which
// runs this test with STREAMFUSION_UPDATE_RULES_DOC=1), and every row the
// binary's `rules --markdown` prints is in it, in the same order.
func TestRulesDocIsCurrent(t *testing.T) {
	const doc = "../../docs/rules.md"
	var want bytes.Buffer
	require.NoError(t, report.RulesDoc(&want, admission.Catalogue(), hostRules()))
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

// Every rule ID the product's code can put into a finding is in the
// catalogue: the string constants named Rule* and the string literals
// given as a Rule field, in every non-test file of cmd/ and internal/ (the
// entrypoint's own rules are in it by construction). Each ID is in it
// once, with a tier.
func TestEveryEmittedRuleIsCatalogued(t *testing.T) {
	known := map[string]bool{}
	for _, r := range catalogue() {
		assert.False(t, known[r.ID], "%s is in the catalogue twice", r.ID)
		known[r.ID] = true
		assert.NotEmpty(t, r.Tier, r.ID)
		assert.NotEmpty(t, r.Doc, r.ID)
	}
	emitted := map[string]string{} // ID -> where
	fset := token.NewFileSet()
	for _, dir := range []string{"../../cmd", "../../internal"} {
		require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.Contains(p, "testdata") || strings.Contains(p, "testkit") {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			lit := func(e ast.Expr) (string, bool) {
				if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
					s, err := strconv.Unquote(b.Value)
					return s, err == nil
				}
				return "", false
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, name := range n.Names {
						if i < len(n.Values) && strings.HasPrefix(name.Name, "Rule") && len(name.Name) > 4 && unicode.IsUpper(rune(name.Name[4])) {
							if s, ok := lit(n.Values[i]); ok {
								emitted[s] = fset.Position(name.Pos()).String()
							}
						}
					}
				case *ast.KeyValueExpr:
					if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Rule" {
						if s, ok := lit(n.Value); ok {
							emitted[s] = fset.Position(n.Pos()).String()
						}
					}
				}
				return true
			})
			return nil
		}))
	}
	require.Greater(t, len(emitted), 15, "the scan found the rule constants")
	for id, where := range emitted {
		assert.True(t, known[id], "%s (%s) is emitted but not in the rule catalogue", id, where)
	}
}
