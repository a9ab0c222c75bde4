package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// An image with the payloads copied into lib but without the StreamFusion
// entrypoint starts unchecked: verify refuses it, with the fix.
func TestVerifyRefusesAnUnguardedImage(t *testing.T) {
	img, err := imagekit.Base{Dist: testkit.Good("2.2.1"), User: "9999"}.Image()
	require.NoError(t, err)
	code, out, stderr := cli(t, nil, "verify", writeTarball(t, img))
	assert.Equal(t, 78, code, stderr)
	assert.Contains(t, out, "[image-entrypoint]")
	assert.Contains(t, out, "[image-original-script]")
	assert.Contains(t, out, "streamfusion bake")
	assert.NotContains(t, out, "[payload-", "the payloads themselves are fine")

	// Baked, it is guarded; an ENTRYPOINT that bypasses the guard is not.
	baked := bakeTarball(t, writeTarball(t, flinkBase(t, "amd64")), nil)
	code, _, stderr = cli(t, nil, "verify", writeTarball(t, baked))
	require.Equal(t, 0, code, stderr)
	cf, err := baked.ConfigFile()
	require.NoError(t, err)
	cf = cf.DeepCopy()
	cf.Config.Entrypoint = []string{"/opt/streamfusion/docker-entrypoint.sh"}
	bypass, err := mutate.ConfigFile(baked, cf)
	require.NoError(t, err)
	code, out, _ = cli(t, nil, "verify", writeTarball(t, bypass))
	assert.Equal(t, 78, code)
	assert.Contains(t, out, "[image-entrypoint-unreached]")
	assert.NotContains(t, out, "[image-entrypoint]")
}

func TestBakeRefusesAnEntrypointThatIsNotOne(t *testing.T) {
	base := writeTarball(t, flinkBase(t, "amd64"))
	self, err := os.Executable()
	require.NoError(t, err)
	notELF := filepath.Join(t.TempDir(), "script.sh")
	require.NoError(t, os.WriteFile(notELF, []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755))
	for name, bin := range map[string]string{"/bin/true": "/bin/true", "this very CLI": self, "a script": notELF} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "x.tar")
			code, _, stderr := cli(t, nil, append([]string{"bake", "--base", base, "--output", out, "--entrypoint", bin}, payloadFiles(t, nil)...)...)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr, "--entrypoint "+bin+": not a StreamFusion entrypoint")
			assert.NoFileExists(t, out)
		})
	}
}

func TestBakeFindingsNameTheArgument(t *testing.T) {
	base := writeTarball(t, flinkBase(t, "amd64"))
	args := payloadFiles(t, func(p *testkit.Payload) {
		if p.Module == "streamfusion-kafka" {
			p.Version = "0.2.0"
		}
	})
	var kafka string
	for _, a := range args {
		if strings.Contains(a, "kafka") {
			kafka = a
		}
	}
	code, _, stderr := cli(t, nil, append([]string{"bake", "--base", base, "--output", filepath.Join(t.TempDir(), "x.tar"), "--entrypoint", entrypoints["amd64"]}, args...)...)
	assert.Equal(t, 78, code)
	assert.Contains(t, stderr, "[payload-version]")
	assert.Contains(t, stderr, "(from --payload "+kafka+")")
}

func TestBakeRefusesTwoPayloadsOfOneFileName(t *testing.T) {
	base := writeTarball(t, flinkBase(t, "amd64"))
	args := payloadFiles(t, nil)
	other := filepath.Join(t.TempDir(), filepath.Base(args[1]))
	data, err := os.ReadFile(args[1])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(other, data, 0o644))
	code, _, stderr := cli(t, nil, append([]string{"bake", "--base", base, "--output", filepath.Join(t.TempDir(), "x.tar"), "--entrypoint", entrypoints["amd64"], "--lib", other}, args...)...)
	assert.Equal(t, 64, code)
	assert.Contains(t, stderr, "have the same file name "+filepath.Base(other))
}

func TestBakeTarballSaysItsName(t *testing.T) {
	out := filepath.Join(t.TempDir(), "baked.tar")
	code, stdout, stderr := cli(t, nil, append([]string{"bake", "--base", writeTarball(t, flinkBase(t, "amd64")), "--output", out,
		"--name", "my/flink:2.2.1-sf", "--entrypoint", entrypoints["amd64"]}, payloadFiles(t, nil)...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "loads as my/flink:2.2.1-sf")
}
