package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxFuncLines is the longest a function of the product may be without
// saying why in its doc comment ("It is long because ...").
const maxFuncLines = 80

// Every function of cmd/ and internal/ (tests aside) longer than
// maxFuncLines says in its doc comment why it is.
func TestLongFunctionsSayWhy(t *testing.T) {
	fset := token.NewFileSet()
	seen := 0
	for _, dir := range []string{"../../cmd", "../../internal"} {
		require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				seen++
				lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
				if lines <= maxFuncLines {
					continue
				}
				doc := ""
				if fn.Doc != nil {
					doc = strings.Join(strings.Fields(fn.Doc.Text()), " ")
				}
				assert.Contains(t, doc, "It is long because", "%s: %s is %d lines: split it, or say in its doc comment why it is long", fset.Position(fn.Pos()), fn.Name.Name, lines)
			}
			return nil
		}))
	}
	require.Greater(t, seen, 1000, "the scan read the product's functions")
}
