// Package kubekit runs a real Kubernetes API server for tests: etcd and
// kube-apiserver (built by scripts/build-kube-apiserver) on loopback,
// kubectl as the admin, and the Flink operator's CRDs from its API JAR. No
// controller-manager, scheduler or kubelet runs. The tests that start one
// carry the build tag k8sreal (make test-k8s); the kit itself builds
// without it, and no product binary links it.
//
// It also holds what those tests share besides the server: the objects
// they apply (FDYAML, SessionJobJARYAML), the job JARs a session job
// fetches and the HTTP server they are fetched from (JobJARs, JARServer),
// and the streamfusion CLI built for the host (BuildStreamfusion).
package kubekit

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// KubeVersion is the kube-apiserver release the suite runs.
const KubeVersion = "v1.37.2"

// Tool finds a program the suite needs, by the environment variable env
// or on PATH: outside CI a missing one skips, in CI (.ci/run installs
// them) it fails.
func Tool(t testing.TB, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := osexec.LookPath(name); err == nil {
		return p
	}
	missing(t, fmt.Sprintf("%s not found (set %s or put it on PATH; make test-k8s provides it)", name, env))
	return ""
}

// missing skips the test outside CI and fails it in CI.
func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// FreePort is a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// RandHex is 16 random bytes in hex.
func RandHex(t testing.TB) string {
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// Eventually retries f until it returns nil, for 30 seconds (what the API
// server is given reaches it through informers, a moment later).
func Eventually(t testing.TB, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// BuildStreamfusion builds the host CLI (cmd/streamfusion, without cgo)
// into dir and returns its path.
func BuildStreamfusion(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "streamfusion")
	build := osexec.Command("go", "build", "-trimpath", "-o", out, "github.com/streamfusion/image-entrypoint/cmd/streamfusion")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := build.CombinedOutput()
	require.NoError(t, err, "build streamfusion: %s", b)
	return out
}

// Proc is a process whose output goes to a log file; it is stopped
// (SIGTERM to its process group, then SIGKILL) when the test ends or by
// Stop.
type Proc struct {
	name string
	cmd  *osexec.Cmd
	log  string
	done chan struct{}
}

// StartProc starts name with args, its environment the test's and env,
// logging to a file in dir.
func StartProc(t testing.TB, dir, name string, env []string, args ...string) *Proc {
	t.Helper()
	logPath := filepath.Join(dir, filepath.Base(name)+fmt.Sprintf("-%d.log", time.Now().UnixNano()))
	f, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := osexec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start(), "start %s", name)
	p := &Proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(p.Stop)
	return p
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Stop stops the process and waits for it.
func (p *Proc) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Tail is the end of the process's log (4,000 bytes at most).
func (p *Proc) Tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
