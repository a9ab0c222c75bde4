package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLinksNoTestCode: the host CLI links no test helper (package testing
// comes with testing/fstest and its flags), and no test kit.
func TestLinksNoTestCode(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/streamfusion/image-entrypoint/internal/image", "the list is the CLI's")
	for _, forbidden := range []string{"testing", "github.com/stretchr/testify", "github.com/streamfusion/image-entrypoint/internal/testkit"} {
		t.Run(forbidden, func(t *testing.T) {
			for _, d := range deps {
				assert.False(t, d == forbidden || strings.HasPrefix(d, forbidden+"/"), "the CLI links %s", d)
			}
		})
	}
}
