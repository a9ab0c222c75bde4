package webhook

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/rs/zerolog"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// Environment of the load benchmark's helper processes.
const (
	loadHelperEnv = "STREAMFUSION_LOAD_HELPER" // "webhook" or "echo"
	loadCertEnv   = "STREAMFUSION_LOAD_CERT"
	loadKeyEnv    = "STREAMFUSION_LOAD_KEY"
)

// TestLoadHelperProcess is not a test: BenchmarkLoad runs the test binary
// again with STREAMFUSION_LOAD_HELPER set, and this serves, in a process
// of its own (its peak RSS its own), the webhook or the trivial HTTPS echo
// server that is the floor, printing its address and serving until its
// standard input closes.
func TestLoadHelperProcess(t *testing.T) {
	mode := os.Getenv(loadHelperEnv)
	if mode == "" {
		t.Skip("the helper process of BenchmarkLoad, run by it")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	certs, err := NewCertReloader(os.Getenv(loadCertEnv), os.Getenv(loadKeyEnv))
	if err != nil {
		t.Fatal(err)
	}
	var srv *http.Server
	switch mode {
	case "webhook":
		// The registry transport as `streamfusion webhook` makes it.
		transport := LimitRequests(remote.DefaultTransport.(*http.Transport).Clone(), 32, nil)
		cache := verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(transport)}})
		if srv, err = NewServer(Config{Cache: cache, Log: zerolog.Nop()}, certs); err != nil {
			t.Fatal(err)
		}
	case "echo":
		srv = &http.Server{TLSConfig: &tls.Config{GetCertificate: certs.GetCertificate, MinVersion: tls.VersionTLS12},
			ReadHeaderTimeout: 5 * time.Second,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.Copy(w, r.Body)
			})}
	default:
		t.Fatalf("%s=%q", loadHelperEnv, mode)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	fmt.Println(ln.Addr().String())
	_ = Serve(ctx, srv, ln)
}

// helper is a helper process serving on addr.
type helper struct {
	cmd   *osexec.Cmd
	stdin io.Closer
	addr  string
}

func startHelper(b *testing.B, mode string, p pki) *helper {
	b.Helper()
	cmd := osexec.Command(os.Args[0], "-test.run=^TestLoadHelperProcess$")
	cmd.Env = append(os.Environ(), loadHelperEnv+"="+mode, loadCertEnv+"="+p.certFile, loadKeyEnv+"="+p.keyFile)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("%s helper: %v", mode, err)
	}
	h := &helper{cmd: cmd, stdin: stdin, addr: strings.TrimSpace(line)}
	b.Cleanup(func() { h.stdin.Close(); _ = h.cmd.Wait() })
	return h
}

// peakRSS is the helper's peak resident set (VmHWM), in MiB.
func (h *helper) peakRSS(b *testing.B) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", h.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmHWM")
	return 0
}

// level is one load level's figures.
type level struct {
	perSecond, p50, p99, max float64 // reviews/s; ms
}

// drive sends n requests, inflight at a time, over one HTTP/2 client (as
// the API server keeps its connections), cycling through bodies; check
// judges each answer.
func drive(b *testing.B, client *http.Client, url string, bodies [][]byte, n, inflight int, check func(i int, status int, body []byte) error) level {
	b.Helper()
	took := make([]time.Duration, n)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	begin := time.Now()
	for range inflight {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() != nil {
					return
				}
				body := bodies[i%len(bodies)]
				start := time.Now()
				resp, err := client.Post(url, "application/json", strings.NewReader(string(body)))
				if err == nil {
					var data []byte
					data, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil {
						err = check(i, resp.StatusCode, data)
					}
				}
				took[i] = time.Since(start)
				if err != nil {
					failed.Store(&err)
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(begin)
	if p := failed.Load(); p != nil {
		b.Fatal(*p)
	}
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	q := func(f float64) float64 { return ms(took[int(f*float64(len(took)-1))]) }
	return level{perSecond: float64(n) / wall.Seconds(), p50: q(0.5), p99: q(0.99), max: ms(took[len(took)-1])}
}

// BenchmarkLoad is `make bench-webhook`: warm reviews over HTTP/2 and TLS
// at 1, 8, 32 and 128 in flight, a mix of admitted and refused images
// (by tag: one manifest HEAD to a loopback registry each, and by digest:
// none), against the webhook in a process of its own; the same requests
// against a trivial HTTPS echo server in a process of its own are the
// floor. It prints reviews/s and p50/p99/max for both, the ratios, and the
// webhook's peak RSS. Run it alone (-benchtime 1x): it is one measurement.
func BenchmarkLoad(b *testing.B) {
	imgs := shared(b)
	host := registryWith(b, nil, map[string]v1Image{"good": imgs.good, "plain": imgs.plain})
	good, err := imgs.good.Digest()
	if err != nil {
		b.Fatal(err)
	}
	plain, err := imgs.plain.Digest()
	if err != nil {
		b.Fatal(err)
	}
	refs := []struct {
		image   string
		allowed bool
	}{
		{host + "/flink:good", true}, {host + "/flink@" + good.String(), true},
		{host + "/flink:plain", false}, {host + "/flink@" + plain.String(), false},
	}
	var bodies [][]byte
	for _, r := range refs {
		bodies = append(bodies, reviewOf(b, "FlinkDeployment", admissionv1.Create, flinkDeployment(r.image, "v2_2", "")))
	}
	p := newPKI(b, b.TempDir(), "load")
	p.write(b, time.Now().Add(-time.Minute))
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: p.caPool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 200}}
	hook := startHelper(b, "webhook", p)
	echo := startHelper(b, "echo", p)
	hookURL, echoURL := "https://"+hook.addr+"/validate?timeout=10s", "https://"+echo.addr+"/validate"
	reviewed := func(i, status int, data []byte) error {
		want := fmt.Sprintf(`"allowed":%t`, refs[i%len(refs)].allowed)
		if status != http.StatusOK || !strings.Contains(string(data), want) {
			return fmt.Errorf("review %d: %d, want %s: %.300s", i, status, want, data)
		}
		return nil
	}
	echoed := func(i, status int, data []byte) error {
		if status != http.StatusOK || len(data) != len(bodies[i%len(bodies)]) {
			return fmt.Errorf("echo %d: %d, %d bytes", i, status, len(data))
		}
		return nil
	}
	// Warm: each image's verdict known before the clock starts.
	drive(b, client, hookURL, bodies, len(bodies), 1, reviewed)
	drive(b, client, echoURL, bodies, len(bodies), 1, echoed)
	n := 3000
	if s := os.Getenv("STREAMFUSION_LOAD_REQUESTS"); s != "" {
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var lines []string
	bestHook, bestEcho := 0.0, 0.0
	var at128, p99at1Hook, p99at1Echo float64
	for b.Loop() {
		lines = lines[:0]
		for _, inflight := range []int{1, 8, 32, 128} {
			e := drive(b, client, echoURL, bodies, n, inflight, echoed)
			w := drive(b, client, hookURL, bodies, n, inflight, reviewed)
			bestHook, bestEcho = max(bestHook, w.perSecond), max(bestEcho, e.perSecond)
			if inflight == 1 {
				p99at1Hook, p99at1Echo = w.p99, e.p99
			}
			if inflight == 128 {
				at128 = w.perSecond
			}
			lines = append(lines, fmt.Sprintf("| %d | %.0f | %.2f / %.2f / %.1f | %.0f | %.2f / %.2f / %.1f | %.2f | %.1fx |",
				inflight, w.perSecond, w.p50, w.p99, w.max, e.perSecond, e.p50, e.p99, e.max, w.perSecond/e.perSecond, w.p99/e.p99))
		}
	}
	b.StopTimer()
	fmt.Printf("\n%d requests per level, HTTP/2 over TLS on loopback, warm verdicts (half admitted, half refused; half by tag, half by digest)\n\n", n)
	fmt.Println("| in flight | webhook reviews/s | webhook p50 / p99 / max ms | echo req/s | echo p50 / p99 / max ms | throughput ratio | p99 ratio |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Printf("\nbest throughput %.0f reviews/s = %.0f%% of the echo server's best (%.0f/s); at 128 in flight %.0f%% of the webhook's best; p99 at 1 in flight %.1fx the echo server's\n",
		bestHook, 100*bestHook/bestEcho, bestEcho, 100*at128/bestHook, p99at1Hook/p99at1Echo)
	fmt.Printf("peak RSS: webhook %.1f MiB, echo server %.1f MiB\n", hook.peakRSS(b), echo.peakRSS(b))
	b.ReportMetric(bestHook, "reviews/s")
	b.ReportMetric(100*bestHook/bestEcho, "%-of-echo")
	b.ReportMetric(hook.peakRSS(b), "peak-RSS-MiB")
	b.ReportMetric(0, "ns/op")
}
