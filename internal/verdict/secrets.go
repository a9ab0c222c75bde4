package verdict

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/docker/cli/cli/config/configfile"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// Secrets reads image pull secrets mounted as files: Dir/NAME/.dockerconfigjson
// (kubernetes.io/dockerconfigjson) or Dir/NAME/.dockercfg (the legacy
// kubernetes.io/dockercfg), as a Secret volume lays them out. Files are
// read at each resolution, so a rotated secret takes effect at once.
type Secrets struct {
	Dir string
}

// Credentials returns a keychain that tries the named secrets first (a
// pod's imagePullSecrets), then every other mounted secret, then the
// Docker config; its key is the list of names.
func (s Secrets) Credentials(names []string) Credentials {
	if s.Dir == "" {
		return Credentials{Key: "", Keychain: authn.DefaultKeychain}
	}
	return Credentials{Key: "secrets:" + strings.Join(names, ","),
		Keychain: authn.NewMultiKeychain(secretKeychain{dir: s.Dir, first: names}, authn.DefaultKeychain)}
}

type secretKeychain struct {
	dir   string
	first []string
}

func (k secretKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	files, err := k.files()
	if err != nil {
		return nil, err
	}
	host := target.RegistryStr()
	if host == name.DefaultRegistry {
		host = authn.DefaultAuthKey
	}
	for _, f := range files {
		cf, err := load(f)
		if err != nil {
			return nil, err
		}
		ac, err := cf.GetAuthConfig(host)
		if err != nil {
			return nil, fmt.Errorf("pull secret %s: %w", f, err)
		}
		if ac.Username == "" && ac.Password == "" && ac.Auth == "" && ac.IdentityToken == "" && ac.RegistryToken == "" {
			continue
		}
		return authn.FromConfig(authn.AuthConfig{Username: ac.Username, Password: ac.Password, Auth: ac.Auth,
			IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken}), nil
	}
	return authn.Anonymous, nil
}

// files lists the secret files, the named secrets first.
func (k secretKeychain) files() ([]string, error) {
	var all []string
	err := filepath.WalkDir(k.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n := d.Name(); n == ".dockerconfigjson" || n == ".dockercfg" {
			all = append(all, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pull secrets in %s: %w", k.dir, err)
	}
	sort.Strings(all)
	rank := func(p string) int {
		secret := filepath.Base(filepath.Dir(p))
		for i, n := range k.first {
			if n == secret {
				return i
			}
		}
		return len(k.first)
	}
	sort.SliceStable(all, func(i, j int) bool { return rank(all[i]) < rank(all[j]) })
	return all, nil
}

// load reads a .dockerconfigjson, or a .dockercfg (the bare "auths" map).
func load(p string) (*configfile.ConfigFile, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("pull secret: %w", err)
	}
	if filepath.Base(p) == ".dockercfg" {
		data = append(append([]byte(`{"auths":`), bytes.TrimSpace(data)...), '}')
	}
	cf := configfile.New(p)
	if err := cf.LoadFromReader(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("pull secret %s: %w", p, err)
	}
	return cf, nil
}
