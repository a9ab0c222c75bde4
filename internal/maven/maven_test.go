package maven

import (
	"context"
	"crypto/sha1" //nolint:gosec // the checksum Maven repositories publish
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, path, err string
	}{
		{in: "tech.streamfusion:streamfusion-core:0.1.0-rc4:runtime", path: "tech/streamfusion/streamfusion-core/0.1.0-rc4/streamfusion-core-0.1.0-rc4-runtime.jar"},
		{in: "tech.streamfusion:streamfusion-kafka:0.1.0-rc4", path: "tech/streamfusion/streamfusion-kafka/0.1.0-rc4/streamfusion-kafka-0.1.0-rc4.jar"},
		{in: "a:b", err: "want group:artifact:version[:classifier]"},
		{in: "a:b:c:d:e", err: "want group:artifact:version[:classifier]"},
		{in: "a:b:../../etc", err: "is not a Maven coordinate"},
		{in: "a:b:1..0", err: "is not a Maven coordinate"},
		{in: "a::1.0", err: "is not a Maven coordinate"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			c, err := Parse(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.path, c.Path())
			assert.Equal(t, tc.in, c.String())
		})
	}
}

// repo is a Maven repository served on loopback: files by path, optional
// basic auth, and a count of requests.
type repo struct {
	mu    sync.Mutex
	files map[string][]byte
	user  string
	pass  string
	hits  int
}

func (r *repo) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hits++
	if r.user != "" {
		u, p, ok := req.BasicAuth()
		if !ok || u != r.user || p != r.pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="repo"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	data, ok := r.files[strings.TrimPrefix(req.URL.Path, "/maven/")]
	if !ok {
		http.NotFound(w, req)
		return
	}
	_, _ = w.Write(data)
}

var jar = []byte("PK\x05\x06" + strings.Repeat("\x00", 18)) // an empty ZIP archive

func hexSum(h interface{ Sum([]byte) []byte }) string { return hex.EncodeToString(h.Sum(nil)) }

func sha1Of(b []byte) string {
	h := sha1.New() //nolint:gosec // the checksum Maven repositories publish
	h.Write(b)
	return hexSum(h)
}

func sha256Of(b []byte) string {
	h := sha256.New()
	h.Write(b)
	return hexSum(h)
}

const coords = "tech.streamfusion:streamfusion-core:0.1.0:runtime"

// serve serves one artifact with the given checksum files.
func serve(t *testing.T, sums map[string]string) (*repo, string) {
	t.Helper()
	c, err := Parse(coords)
	require.NoError(t, err)
	r := &repo{files: map[string][]byte{c.Path(): jar}}
	for ext, v := range sums {
		r.files[c.Path()+ext] = []byte(v)
	}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv.URL + "/maven"
}

func resolve(t *testing.T, res *Resolver) (string, error) {
	t.Helper()
	c, err := Parse(coords)
	require.NoError(t, err)
	return res.Resolve(context.Background(), c)
}

func TestChecksums(t *testing.T) {
	for _, tc := range []struct {
		name string
		sums map[string]string
		err  string
	}{
		{name: "good sha1", sums: map[string]string{".sha1": sha1Of(jar)}},
		{name: "good sha1 as sha1sum prints it", sums: map[string]string{".sha1": strings.ToUpper(sha1Of(jar)) + "  streamfusion-core-0.1.0-runtime.jar\n"}},
		{name: "good sha1 and sha256", sums: map[string]string{".sha1": sha1Of(jar), ".sha256": sha256Of(jar)}},
		{name: "bad sha1", sums: map[string]string{".sha1": sha1Of([]byte("other"))}, err: coords + " from "},
		{name: "good sha1, bad sha256", sums: map[string]string{".sha1": sha1Of(jar), ".sha256": sha256Of([]byte("other"))}, err: "checksum mismatch: sha256 says"},
		{name: "only sha512, bad", sums: map[string]string{".sha512": strings.Repeat("0", 128)}, err: "checksum mismatch: sha512 says"},
		{name: "none", sums: nil, err: "no checksum: the repository serves no streamfusion-core-0.1.0-runtime.jar.sha1"},
		{name: "empty sha1", sums: map[string]string{".sha1": ""}, err: "is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := serve(t, tc.sums)
			local := t.TempDir()
			p, err := resolve(t, &Resolver{Local: local, Remotes: []Repository{{ID: "test", URL: url}}})
			stored := filepath.Join(local, "tech/streamfusion/streamfusion-core/0.1.0/streamfusion-core-0.1.0-runtime.jar")
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Contains(t, err.Error(), coords, "names the coordinates")
				assert.NoFileExists(t, stored, "nothing stored")
				left, _ := os.ReadDir(filepath.Dir(stored))
				assert.Empty(t, left, "no partial download left")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, stored, p)
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, jar, data)
			sum, err := os.ReadFile(p + ".sha1")
			require.NoError(t, err)
			assert.Equal(t, sha1Of(jar), string(sum), "the local repository keeps the .sha1 as Maven does")
		})
	}
}

func TestLocalRepositoryFirstThenReposInOrder(t *testing.T) {
	empty := &repo{files: map[string][]byte{}}
	srvEmpty := httptest.NewServer(empty)
	defer srvEmpty.Close()
	full, url := serve(t, map[string]string{".sha1": sha1Of(jar)})
	res := &Resolver{Local: t.TempDir(), Remotes: []Repository{{ID: "first", URL: srvEmpty.URL}, {ID: "second", URL: url}}}
	_, err := resolve(t, res)
	require.NoError(t, err)
	assert.Equal(t, 1, empty.hits, "asked the first repository, which has nothing")
	hits := full.hits
	_, err = resolve(t, res)
	require.NoError(t, err)
	assert.Equal(t, hits, full.hits, "the second time it comes from the local repository")

	_, err = resolve(t, &Resolver{Local: t.TempDir(), Remotes: []Repository{{ID: "first", URL: srvEmpty.URL}}})
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), srvEmpty.URL)

	_, err = resolve(t, &Resolver{Local: t.TempDir()})
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), "no remote repository is configured")
}

func writeSettings(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "settings.xml")
	require.NoError(t, os.WriteFile(p, []byte(`<?xml version="1.0" encoding="UTF-8"?>
<settings>`+body+`</settings>`), 0o644))
	return p
}

func TestSettingsMirrorWithCredentials(t *testing.T) {
	r, url := serve(t, map[string]string{".sha1": sha1Of(jar)})
	r.user, r.pass = "deployer", "s3cret"
	home := t.TempDir()
	env := map[string]string{"REPO_TOKEN": "s3cret"}
	settings := writeSettings(t, `
  <localRepository>${user.home}/m2-local</localRepository>
  <mirrors><mirror><id>corp</id><mirrorOf>*</mirrorOf><url>`+url+`</url></mirror></mirrors>
  <servers><server><id>corp</id><username>deployer</username><password>${env.REPO_TOKEN}</password></server></servers>`)
	s, err := ReadSettings(settings, false, func(k string) string { return env[k] }, home)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, "m2-local"), s.Local(home))
	remotes := s.Remotes()
	require.Len(t, remotes, 1, "central, through the mirror")
	assert.Equal(t, "corp", remotes[0].Via)
	p, err := resolve(t, &Resolver{Local: s.Local(home), Remotes: remotes})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(p, filepath.Join(home, "m2-local")))

	// Without the server's credentials: 401, and what to fix.
	s.Servers = nil
	_, err = resolve(t, &Resolver{Local: t.TempDir(), Remotes: s.Remotes()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	assert.Contains(t, err.Error(), "a <server> with id corp")
}

func TestSettingsProfilesAndMirrorPatterns(t *testing.T) {
	_, url := serve(t, map[string]string{".sha1": sha1Of(jar)})
	s, err := ReadSettings(writeSettings(t, `
  <mirrors>
    <mirror><id>internal-only</id><mirrorOf>external:*,!streamfusion</mirrorOf><url>http://127.0.0.1:9/never</url></mirror>
  </mirrors>
  <profiles>
    <profile><id>sf</id><repositories><repository><id>streamfusion</id><url>`+url+`</url></repository></repositories></profile>
    <profile><id>off</id><repositories><repository><id>off</id><url>http://127.0.0.1:9/off</url></repository></repositories></profile>
    <profile><id>snapshots</id><activation><activeByDefault>true</activeByDefault></activation>
      <repositories><repository><id>snap</id><url>http://127.0.0.1:9/snap</url><releases><enabled>false</enabled></releases></repository></repositories></profile>
  </profiles>
  <activeProfiles><activeProfile>sf</activeProfile></activeProfiles>`), false, func(string) string { return "" }, t.TempDir())
	require.NoError(t, err)
	remotes := s.Remotes()
	var urls []string
	for _, r := range remotes {
		urls = append(urls, r.URL)
	}
	assert.Equal(t, []string{url, "http://127.0.0.1:9/never"}, urls, "the active profile's repository (excluded from the mirror), then central through the mirror; inactive and release-disabled repositories left out")
	_, err = resolve(t, &Resolver{Local: t.TempDir(), Remotes: remotes})
	require.NoError(t, err)
}

func TestSettingsErrors(t *testing.T) {
	_, err := ReadSettings(filepath.Join(t.TempDir(), "settings.xml"), false, os.Getenv, "/home/x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no such file")
	s, err := ReadSettings(filepath.Join(t.TempDir(), "settings.xml"), true, os.Getenv, "/home/x")
	require.NoError(t, err, "the default settings file may be absent")
	assert.Equal(t, "/home/x/.m2/repository", s.Local("/home/x"))
	assert.Empty(t, s.Remotes(), "no host of our own: central is reached only through a mirror")

	_, err = ReadSettings(writeSettings(t, `<servers><server><id>a</id><password>{COQLCE6DU6GtcS5P=}</password></server></servers>`), false, os.Getenv, "/h")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "encrypted password")
	_, err = ReadSettings(writeSettings(t, `<localRepository>${env.STREAMFUSION_TEST_UNSET_VAR}</localRepository>`), false, func(string) string { return "" }, "/h")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "${env.STREAMFUSION_TEST_UNSET_VAR} not set")
	_, err = ReadSettings(writeSettings(t, `<mirrors><mirror>`), false, os.Getenv, "/h")
	require.Error(t, err)
}
