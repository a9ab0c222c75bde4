package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuditUsage: the what-if and the API access are checked before
// anything is read (exit 64).
func TestAuditUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "--image-map", "no-equals-sign"}, "--image-map \"no-equals-sign\": want OLD=NEW"},
		{[]string{"audit", "--remove-jar", "lib/x.jar"}, "no directory"},
		{[]string{"audit", "--add-jar", "/nonexistent/x.jar"}, "--add-jar"},
		{[]string{"audit", "--image-map-file", "/nonexistent/map.txt"}, "--image-map-file"},
		{[]string{"audit", "--concurrency", "0"}, "--concurrency 0"},
		{[]string{"audit", "--kubeconfig", "/nonexistent/kubeconfig"}, "no Kubernetes API access"},
		{[]string{"audit", "extra"}, "takes no arguments"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, nil, &stdout, &stderr)
		assert.Equal(t, exitUsage, code, "%v: %s", tc.args, stderr.String())
		assert.Contains(t, stderr.String(), tc.want, tc.args)
	}
}

// TestAuditUnreachable: an API server that does not answer leaves the
// audit incomplete (exit 75) and says what it could not read, in the
// table and in the JSON and JUnit reports.
func TestAuditUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, addr), 0o600))

	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"audit", "--kubeconfig", kubeconfig, "--namespace", "flink"}, nil, &stdout, &stderr)
	assert.Equal(t, 75, code, stderr.String())
	assert.Contains(t, stdout.String(), "NOT READ: list flinkdeployments.flink.apache.org in namespace flink:")
	assert.Contains(t, stdout.String(), "NOT READ: list pods in namespace flink:")
	assert.Contains(t, stdout.String(), "connection refused")
	assert.Empty(t, stderr.String(), "not a terminal: no progress")

	stdout.Reset()
	junit := filepath.Join(dir, "audit.xml")
	code = run(context.Background(), []string{"audit", "--kubeconfig", kubeconfig, "--json", "--junit", junit, "--json-file", filepath.Join(dir, "audit.json")}, nil, &stdout, &stderr)
	assert.Equal(t, 75, code)
	var rep struct {
		Unread []struct{ What, Error string }
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	assert.Len(t, rep.Unread, 3, "flinkdeployments, flinksessionjobs, pods")
	recorded, err := os.ReadFile(filepath.Join(dir, "audit.json"))
	require.NoError(t, err)
	assert.JSONEq(t, stdout.String(), string(recorded))
	x, err := os.ReadFile(junit)
	require.NoError(t, err)
	assert.Contains(t, string(x), `errors="3"`)
	assert.Contains(t, string(x), `<error message="not read: `)
}
