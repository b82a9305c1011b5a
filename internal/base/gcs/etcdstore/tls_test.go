package etcdstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
)

// An embedded server with TLS serves clients holding a certificate of its CA, and refuses
// clients without one, with one of another CA, and in plain text: each with an error that
// says so, within the dial timeout.
func TestTLS(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	ca, err := identity.NewCA("gcs test", now)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := ca.Issue(identity.Request{Name: "gcs", Role: identity.RoleHead})
	files, err := srv.Save(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{Dir: t.TempDir(), TLS: files})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	eps := e.Endpoints()
	if len(eps) != 1 || eps[0][:8] != "https://" {
		t.Fatalf("endpoints %v: want https", eps)
	}
	// The in-process client needs no certificate.
	in := e.Client()
	if _, err := in.Put(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	in.Close()

	client, _ := ca.Issue(identity.Request{Name: "c", Role: identity.RoleClient})
	s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: eps, TLS: client.ClientTLS(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("a client of the CA: %v", err)
	}
	if kv, ok, err := s.Get(ctx, "k"); err != nil || !ok || string(kv.Value) != "v" {
		t.Fatalf("get: %v %v %q", err, ok, kv.Value)
	}
	s.Close()

	other, _ := identity.NewCA("another cluster", now)
	foreign, _ := other.Issue(identity.Request{Name: "f", Role: identity.RoleClient})
	// Trusts the server, presents a certificate of another CA.
	foreignCert := client.ClientTLS()
	foreignCert.Certificates = foreign.ClientTLS().Certificates
	noCert := client.ClientTLS()
	noCert.Certificates = nil
	for _, c := range []struct {
		name string
		cfg  etcdstore.Config
		want error
	}{
		{"plain text", etcdstore.Config{Endpoints: eps}, etcdstore.ErrNeedsTLS},
		{"no client certificate", etcdstore.Config{Endpoints: eps, TLS: noCert}, etcdstore.ErrTLSRefused},
		{"another CA's client", etcdstore.Config{Endpoints: eps, TLS: foreign.ClientTLS()}, etcdstore.ErrTLSRefused},
		{"another CA's certificate", etcdstore.Config{Endpoints: eps, TLS: foreignCert}, etcdstore.ErrTLSRefused},
	} {
		c.cfg.DialTimeout = time.Second
		t0 := time.Now()
		s, err := etcdstore.New(ctx, c.cfg)
		if err == nil {
			s.Close()
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if d := time.Since(t0); d > 10*time.Second {
			t.Errorf("%s: refused after %v", c.name, d)
		}
		t.Logf("%s: %v", c.name, err)
	}
}
