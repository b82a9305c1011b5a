package etcdstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
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
	foreignCert.GetClientCertificate = foreign.ClientTLS().GetClientCertificate
	noCert := client.ClientTLS()
	noCert.GetClientCertificate = nil
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
		// The prefix once: before, "etcdstore: etcd at X: etcdstore: TLS handshake ...".
		if n := strings.Count(err.Error(), "etcdstore: "); n != 1 {
			t.Errorf("%s: the error says \"etcdstore: \" %d times: %v", c.name, n, err)
		}
		if d := time.Since(t0); d > 10*time.Second {
			t.Errorf("%s: refused after %v", c.name, d)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// revocationServer starts an embedded server with TLS and a CRL (empty at first) of a new
// CA, and returns the CA, the server, and a function that rewrites the CRL to list the
// given certificates.
func revocationServer(t *testing.T) (*identity.CA, *etcdstore.Embedded, func(...*identity.Credentials)) {
	t.Helper()
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
	crl := filepath.Join(t.TempDir(), "ca.crl")
	writeCRL := func(revoked ...*identity.Credentials) {
		t.Helper()
		var list []identity.RevokedCert
		for _, c := range revoked {
			list = append(list, identity.RevokedCert{Serial: c.Leaf().SerialNumber, RevokedAt: now})
		}
		b, err := ca.CRL(list, int64(len(list)+1), time.Now())
		if err == nil {
			err = identity.WriteFile(crl, b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	writeCRL() // empty: etcd refuses everyone while it cannot read the file
	e, err := etcdstore.StartEmbedded(context.Background(), etcdstore.EmbedConfig{Dir: t.TempDir(), TLS: files, CRL: crl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return ca, e, writeCRL
}

// With a CRL file, the embedded server refuses new connections of the certificates it
// lists, from the first handshake after the file is replaced, and keeps serving the others.
func TestTLSRevocation(t *testing.T) {
	ctx := context.Background()
	ca, e, writeCRL := revocationServer(t)
	gone, _ := ca.Issue(identity.Request{Name: "agent-gone", Role: identity.RoleNode})
	kept, _ := ca.Issue(identity.Request{Name: "agent-kept", Role: identity.RoleNode})
	dial := func(c *identity.Credentials) error {
		s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: e.Endpoints(), TLS: c.ClientTLS(), DialTimeout: 2 * time.Second})
		if err != nil {
			return err
		}
		defer s.Close()
		_, err = s.Put(ctx, "k/"+c.Name(), []byte("v"), 0)
		return err
	}
	for _, c := range []*identity.Credentials{gone, kept} {
		if err := dial(c); err != nil {
			t.Fatalf("%s before any revocation: %v", c.Name(), err)
		}
	}
	writeCRL(gone)
	if err := dial(gone); !errors.Is(err, etcdstore.ErrTLSRefused) {
		t.Fatalf("a revoked certificate: %v, want ErrTLSRefused", err)
	} else {
		t.Logf("revoked: %v", err)
	}
	if err := dial(kept); err != nil {
		t.Fatalf("an unrevoked certificate after the revocation: %v", err)
	}
}

// TestRevocationCutsOpenWatches: a watch opened before its certificate's revocation gets no
// event after the cut (etcd checks a watch's permission only when the watch is created),
// while the watch of an unrevoked certificate, cut as well, resumes by itself and loses
// no event.
func TestRevocationCutsOpenWatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ca, e, writeCRL := revocationServer(t)
	admin := e.Client()
	gone, _ := ca.Issue(identity.Request{Name: "agent-gone", Role: identity.RoleNode})
	kept, _ := ca.Issue(identity.Request{Name: "agent-kept", Role: identity.RoleNode})
	connect := func(c *identity.Credentials) (gcs.Store, <-chan gcs.WatchResponse) {
		t.Helper()
		s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: e.Endpoints(), TLS: c.ClientTLS(), DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("%s: %v", c.Name(), err)
		}
		t.Cleanup(func() { s.Close() })
		return s, s.Watch(ctx, "w/", 0)
	}
	goneStore, goneWatch := connect(gone)
	_, keptWatch := connect(kept)
	if _, err := admin.Put(ctx, "w/1", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]<-chan gcs.WatchResponse{"gone": goneWatch, "kept": keptWatch} {
		if k, err := gcstest.NextPut(w, "w/1", 10*time.Second); k != "w/1" {
			t.Fatalf("%s's watch before the revocation: %q %v, want w/1", name, k, err)
		}
	}

	writeCRL(gone)
	if n := e.CutClientConnections(); n < 2 {
		t.Fatalf("CutClientConnections closed %d connections, want at least the 2 clients'", n)
	}
	if _, err := admin.Put(ctx, "w/2", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if k, err := gcstest.NextPut(keptWatch, "w/2", 30*time.Second); k != "w/2" {
		t.Fatalf("the unrevoked certificate's watch after the cut: %q %v, want w/2 (resumed, no event lost)", k, err)
	}
	if k, err := gcstest.NextPut(goneWatch, "w/2", 2*time.Second); k != "" {
		t.Fatalf("the revoked certificate's watch delivered %q after the cut (err %v)", k, err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if _, err := goneStore.Put(pctx, "w/3", []byte("x"), 0); err == nil {
		t.Fatal("the revoked certificate's open client put a key after the cut")
	}
}
