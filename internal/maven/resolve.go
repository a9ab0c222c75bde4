package maven

import (
	"context"
	"crypto/sha1" //nolint:gosec // Maven repositories publish SHA-1 checksums; it is checked, never trusted alone when a SHA-2 one is there
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Errors of resolution, for errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrChecksum = errors.New("checksum mismatch")
	ErrNoSum    = errors.New("no checksum")
)

// Resolver finds artifacts: in Local, else in Remotes, in order.
type Resolver struct {
	Local   string // the local repository directory
	Remotes []Repository
	Client  *http.Client // nil: http.DefaultClient (proxies from the environment)
}

// checksum files, strongest first.
var sums = []struct {
	ext string
	new func() hash.Hash
}{
	{".sha512", sha512.New},
	{".sha256", sha256.New},
	{".sha1", sha1.New},
}

// Resolve returns the path of the artifact in the local repository,
// downloading it there first when it is not yet there.
func (r *Resolver) Resolve(ctx context.Context, c Coordinates) (string, error) {
	local := filepath.Join(r.Local, filepath.FromSlash(c.Path()))
	if info, err := os.Stat(local); err == nil && info.Mode().IsRegular() {
		return local, nil
	}
	if c.Snapshot() {
		return "", fmt.Errorf("%s: %w in the local repository %s; SNAPSHOT versions are resolved from the local repository only (mvn install or mvn dependency:get puts them there)", c, ErrNotFound, r.Local)
	}
	if len(r.Remotes) == 0 {
		return "", fmt.Errorf("%s: %w in the local repository %s, and no remote repository is configured: pass --maven-repo URL, or give settings.xml a mirror or an active profile's repository", c, ErrNotFound, r.Local)
	}
	var tried []string
	for _, repo := range r.Remotes {
		err := r.fetch(ctx, repo, c, local)
		if err == nil {
			return local, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return "", err
		}
		tried = append(tried, "  "+err.Error())
	}
	return "", fmt.Errorf("%s: %w in the local repository %s nor in:\n%s", c, ErrNotFound, r.Local, strings.Join(tried, "\n"))
}

func (r *Resolver) client() *http.Client {
	if r.Client != nil {
		return r.Client
	}
	return http.DefaultClient
}

func (r *Resolver) get(ctx context.Context, repo Repository, p string) (*http.Response, error) {
	url := strings.TrimSuffix(repo.URL, "/") + "/" + p
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", repo, err)
	}
	if repo.Username != "" || repo.Password != "" {
		req.SetBasicAuth(repo.Username, repo.Password)
	}
	resp, err := r.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", repo, err)
	}
	return resp, nil
}

func statusErr(repo Repository, c Coordinates, p string, resp *http.Response) error {
	switch resp.StatusCode {
	case http.StatusNotFound:
		return fmt.Errorf("%s: %w", repo, ErrNotFound)
	case http.StatusUnauthorized, http.StatusForbidden:
		hint := "a <server> with id " + repo.ID
		if repo.Via != "" {
			hint = "a <server> with id " + repo.Via
		}
		if repo.Username != "" {
			hint = "the credentials of " + hint
		}
		return fmt.Errorf("%s from %s: %s: check %s in settings.xml", c, repo, resp.Status, hint)
	}
	return fmt.Errorf("%s from %s: GET %s: %s", c, repo, p, resp.Status)
}

// fetch downloads the artifact from repo into the local repository at
// local, checking it against the repository's checksums first.
func (r *Resolver) fetch(ctx context.Context, repo Repository, c Coordinates, local string) error {
	resp, err := r.get(ctx, repo, c.Path())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusErr(repo, c, c.Path(), resp)
	}
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil { //nolint:gosec // the local repository's modes, as Maven makes them
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(local), "."+filepath.Base(local)+".part-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // gone after the rename; there after a failure
	hashes := make([]hash.Hash, len(sums))
	writers := []io.Writer{tmp}
	for i, s := range sums {
		hashes[i] = s.new()
		writers = append(writers, hashes[i])
	}
	_, err = io.Copy(io.MultiWriter(writers...), resp.Body)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s from %s: %w", c, repo, err)
	}
	checked := 0
	var sha1Line string
	for i, s := range sums {
		want, err := r.sum(ctx, repo, c, s.ext)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		got := hex.EncodeToString(hashes[i].Sum(nil))
		if want != got {
			return fmt.Errorf("%s from %s: %w: %s says %s, the downloaded file is %s; refusing it", c, repo, ErrChecksum, strings.TrimPrefix(s.ext, "."), want, got)
		}
		if s.ext == ".sha1" {
			sha1Line = got
		}
		checked++
	}
	if checked == 0 {
		return fmt.Errorf("%s from %s: %w: the repository serves no %s.sha1 (nor .sha256, .sha512); refusing an unchecked download", c, repo, ErrNoSum, c.FileName())
	}
	if sha1Line == "" {
		sha1Line = hex.EncodeToString(hashes[len(hashes)-1].Sum(nil))
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil { //nolint:gosec // the local repository's modes, as Maven makes them
		return err
	}
	if err := os.Rename(tmp.Name(), local); err != nil {
		return err
	}
	// Maven keeps the .sha1 beside the artifact in its local repository.
	return os.WriteFile(local+".sha1", []byte(sha1Line), 0o644) //nolint:gosec // as Maven writes it
}

// sum fetches a checksum file: its first word, lower case.
func (r *Resolver) sum(ctx context.Context, repo Repository, c Coordinates, ext string) (string, error) {
	resp, err := r.get(ctx, repo, c.Path()+ext)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return "", ErrNotFound
	}
	if resp.StatusCode != http.StatusOK {
		return "", statusErr(repo, c, c.Path()+ext, resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", fmt.Errorf("%s%s from %s: %w", c, ext, repo, err)
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "", fmt.Errorf("%s from %s: %w: %s%s is empty", c, repo, ErrChecksum, c.FileName(), ext)
	}
	return strings.ToLower(f[0]), nil
}
