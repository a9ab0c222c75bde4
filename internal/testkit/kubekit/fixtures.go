package kubekit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// FDYAML is a FlinkDeployment ns/name on img at flinkVersion version
// (v2_2), its service account flink; extra is more of its spec, indented
// by two spaces.
func FDYAML(ns, name, img, version string, extra string) string {
	return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: %s, namespace: %s}
spec:
  image: %s
  flinkVersion: %s
  serviceAccount: flink
  jobManager: {resource: {memory: 2048m, cpu: 1}}
  taskManager: {resource: {memory: 2048m, cpu: 1}}
%s`, name, ns, img, version, extra)
}

// SessionJobJARYAML is a FlinkSessionJob ns/name on the session cluster
// (a FlinkDeployment) named cluster, its job the JAR at jarURI.
func SessionJobJARYAML(ns, name, cluster, jarURI string) string {
	return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkSessionJob
metadata: {name: %s, namespace: %s}
spec:
  deploymentName: %s
  job: {jarURI: %q, parallelism: 1, upgradeMode: stateless}
`, name, ns, cluster, jarURI)
}

// Object is one YAML document as an object for the dynamic client.
func Object(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	require.NoError(t, k8syaml.Unmarshal([]byte(y), &m))
	return &unstructured.Unstructured{Object: m}
}

// SplitDocs splits a YAML stream into its documents, each re-encoded;
// empty documents are left out.
func SplitDocs(t testing.TB, data []byte) [][]byte {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out [][]byte
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if len(n.Content) == 0 {
			continue
		}
		b, err := yaml.Marshal(&n)
		require.NoError(t, err)
		out = append(out, b)
	}
}

// JobJARs are the JARs the real API server's cases fetch, by path:
// testkit's good and mismatched job JARs, a 2 MiB one that is no ZIP, and
// the good one where an example job's JAR would be.
func JobJARs() map[string][]byte {
	return map[string][]byte{
		"good-job.jar":       testkit.GoodJobJAR(),
		"mismatched-job.jar": testkit.MismatchedJobJAR(),
		"big-job.jar":        bytes.Repeat([]byte("PK"), 1<<20),
		"flink-examples-streaming/TopSpeedWindowing.jar": testkit.GoodJobJAR(),
	}
}

// JARServer serves job JARs by path on loopback, with ETags (a matching
// If-None-Match is answered 304), and counts the bodies it sends. The
// path /slow.jar answers nothing for 30 seconds.
type JARServer struct {
	*httptest.Server
	jars   map[string][]byte
	bodies atomic.Int64
}

// NewJARServer serves jars until the test ends.
func NewJARServer(t testing.TB, jars map[string][]byte) *JARServer {
	s := &JARServer{jars: jars}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow.jar" {
			select {
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
			return
		}
		b, ok := s.jars[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		etag := fmt.Sprintf(`"%x"`, len(b))
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		s.bodies.Add(1)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

// Bodies is how many JAR bodies the server has sent.
func (s *JARServer) Bodies() int64 { return s.bodies.Load() }
