package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
)

// A secure head refuses agents without its token, with a wrong or rotated one, with a
// token of another cluster, and in plain text, each with an error that says so; its CA,
// token and credentials are private files; a restart on the same directory keeps them.
func TestJoinSecurity(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	head := startAgent(t, Config{Head: true, SessionDir: dir})
	tok, err := head.Token()
	if err != nil {
		t.Fatal(err)
	}
	if head.JoinAddress() == "" {
		t.Fatal("a secure head has no join endpoint")
	}
	eps := strings.Split(head.Address(), ",")
	join := func(cfg Config) error {
		cfg.GCSEndpoints, cfg.SessionDir, cfg.Logger = eps, t.TempDir(), quiet()
		cfg.Resources, cfg.ObjectStoreBytes, cfg.GCSDialTimeout = map[string]float64{"CPU": 1}, 1<<30, 2*time.Second
		if cfg.JoinAddress == "" && !cfg.Insecure {
			cfg.JoinAddress = head.JoinAddress()
		}
		a, err := Start(ctx, cfg)
		if err == nil {
			a.Stop(ctx)
		}
		return err
	}
	err = join(Config{})
	if !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "--token") {
		t.Errorf("no token: %v", err)
	}
	wrong := tok
	wrong.Secret[3] ^= 0x10
	if err := join(Config{Token: &wrong}); !errors.Is(err, ErrCredentials) || !errors.Is(err, identity.ErrTokenRejected) {
		t.Errorf("wrong token: %v", err)
	}
	otherCA, _ := identity.NewCA("another", time.Now())
	foreign, _ := identity.NewToken(otherCA)
	foreign.Secret = tok.Secret // even the right secret is not sent to a server of another CA
	if err := join(Config{Token: &foreign}); !errors.Is(err, ErrCredentials) || !errors.Is(err, identity.ErrCAMismatch) {
		t.Errorf("token of another cluster: %v", err)
	}
	if err := join(Config{Insecure: true}); !errors.Is(err, ErrCredentials) || !errors.Is(err, etcdstore.ErrNeedsTLS) {
		t.Errorf("plain text to a secure head: %v", err)
	}
	if err := join(Config{Token: &tok}); err != nil {
		t.Fatalf("the right token: %v", err)
	}

	// Rotation: the head reads the token file per request.
	rotated, _ := identity.NewToken(headCA(t, dir))
	if err := identity.SaveToken(TokenPath(dir), rotated); err != nil {
		t.Fatal(err)
	}
	if err := join(Config{Token: &tok}); !errors.Is(err, identity.ErrTokenRejected) {
		t.Errorf("the old token after a rotation: %v", err)
	}
	if err := join(Config{Token: &rotated}); err != nil {
		t.Errorf("the new token: %v", err)
	}

	// Private files.
	for _, d := range []string{CADir(dir), TLSDir(dir)} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, fi.Mode(), err)
		}
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if fi, _ := e.Info(); fi.Mode().Perm() != 0o600 {
				t.Errorf("%s/%s: mode %v", d, e.Name(), fi.Mode().Perm())
			}
		}
	}

	// A restart on the same directory keeps the CA and the token.
	fp := headCA(t, dir).Fingerprint()
	if err := head.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	again := startAgent(t, Config{Head: true, SessionDir: dir})
	tok2, err := again.Token()
	if err != nil || tok2 != rotated || headCA(t, dir).Fingerprint() != fp {
		t.Errorf("after a restart: token kept %v, CA kept %v (%v)", tok2 == rotated, headCA(t, dir).Fingerprint() == fp, err)
	}
}

// headCA loads the head's CA from its directory.
func headCA(t *testing.T, dir string) *identity.CA {
	t.Helper()
	ca, err := identity.LoadCA(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// An insecure head: joining without --insecure says to pass it; with it, the agent joins
// and its processes are told to talk plain text.
func TestInsecureCluster(t *testing.T) {
	ctx := context.Background()
	head := startAgent(t, Config{Head: true, Insecure: true})
	if head.JoinAddress() != "" || !head.CredentialFiles().IsZero() {
		t.Fatalf("an insecure head has a join endpoint %q or credentials %v", head.JoinAddress(), head.CredentialFiles())
	}
	eps := strings.Split(head.Address(), ",")
	_, err := Start(ctx, Config{GCSEndpoints: eps, SessionDir: t.TempDir(), Logger: quiet(), ObjectStoreBytes: 1 << 30})
	if !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("joining an insecure cluster without --insecure: %v", err)
	}
	a := startAgent(t, Config{GCSEndpoints: eps, Insecure: true})
	if env := a.credentialEnv(); len(env) != 1 || env[0] != "RAY_GO_INSECURE=1" {
		t.Fatalf("credential env of an insecure agent: %v", env)
	}
}
