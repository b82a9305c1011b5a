package etcdstore_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
)

// startEmbedded starts a server in a temporary directory, stopped when the test ends.
func startEmbedded(t testing.TB, ns string) *etcdstore.Embedded {
	t.Helper()
	e, err := etcdstore.StartEmbedded(context.Background(), etcdstore.EmbedConfig{Dir: t.TempDir(), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func TestConformanceInProcess(t *testing.T) {
	t.Parallel()
	gcstest.Run(t, func(t *testing.T) gcs.Store { return startEmbedded(t, "ns1/").Client() })
}

func TestConformanceGRPC(t *testing.T) {
	t.Parallel()
	gcstest.Run(t, func(t *testing.T) gcs.Store {
		e := startEmbedded(t, "")
		s, err := etcdstore.New(context.Background(), etcdstore.Config{Endpoints: e.Endpoints(), Namespace: "ray/c1/"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Namespaces isolate stores on one server; the in-process and gRPC clients agree.
func TestNamespaces(t *testing.T) {
	ctx := context.Background()
	e := startEmbedded(t, "a/")
	inA := e.Client()
	defer inA.Close()
	grpcA, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: e.Endpoints(), Namespace: "a/"})
	if err != nil {
		t.Fatal(err)
	}
	defer grpcA.Close()
	grpcB, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: e.Endpoints(), Namespace: "b/"})
	if err != nil {
		t.Fatal(err)
	}
	defer grpcB.Close()
	raw, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: e.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()

	if _, err := inA.Put(ctx, "k", []byte("from a"), 0); err != nil {
		t.Fatal(err)
	}
	if kv, ok, err := grpcA.Get(ctx, "k"); err != nil || !ok || string(kv.Value) != "from a" {
		t.Fatalf("gRPC client of a: %+v %v %v", kv, ok, err)
	}
	if _, ok, err := grpcB.Get(ctx, "k"); err != nil || ok {
		t.Fatalf("namespace b sees a's key (%v, %v)", ok, err)
	}
	if n, err := grpcB.Count(ctx, ""); err != nil || n != 0 {
		t.Fatalf("Count in b = %d, %v", n, err)
	}
	kvs, _, err := raw.List(ctx, "")
	if err != nil || len(kvs) != 1 || kvs[0].Key != "a/k" {
		t.Fatalf("raw List = %+v, %v", kvs, err)
	}
	// DeletePrefix("") in b must not touch a.
	if _, _, err := grpcB.Txn(ctx, nil, []gcs.Op{{Kind: gcs.OpDeletePrefix, Key: ""}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := inA.Get(ctx, "k"); !ok {
		t.Fatal("DeletePrefix(\"\") in b deleted a's key")
	}
}

func TestNewUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := "http://" + l.Addr().String()
	l.Close() // nothing listens there now
	_, err = etcdstore.New(context.Background(), etcdstore.Config{Endpoints: []string{ep}, DialTimeout: 300 * time.Millisecond})
	if err == nil {
		t.Fatal("New succeeded against a closed port")
	}
	if !strings.Contains(err.Error(), ep) || !strings.HasPrefix(err.Error(), "etcdstore: ") {
		t.Fatalf("error does not name the endpoint: %v", err)
	}
	t.Log(err)
	if _, err := etcdstore.New(context.Background(), etcdstore.Config{}); err == nil {
		t.Fatal("New without endpoints succeeded")
	}
}

func TestPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = etcdstore.StartEmbedded(context.Background(), etcdstore.EmbedConfig{Dir: t.TempDir(), ClientPort: port})
	if err == nil {
		t.Fatal("StartEmbedded on a port in use succeeded")
	}
	if !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Fatalf("unclear error: %v", err)
	}
	t.Log(err)
}

// Data survives a restart on the same directory; fixed ports are honoured.
func TestRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := e.Client()
	rev, err := s.Put(ctx, "durable", []byte("yes"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "x", nil, 0); !errors.Is(err, gcs.ErrClosed) {
		t.Fatalf("client of a closed server: %v", err)
	}
	if _, _, err := e.Client().Get(ctx, "durable"); !errors.Is(err, gcs.ErrClosed) {
		t.Fatalf("Client after Close: %v", err)
	}

	e2, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	s2 := e2.Client()
	kv, ok, err := s2.Get(ctx, "durable")
	if err != nil || !ok || string(kv.Value) != "yes" || kv.ModRev != rev {
		t.Fatalf("after restart: %+v %v %v", kv, ok, err)
	}
}

// A single member with NoPeerListener serves clients, listens on no peer port, and starts
// again on its directory; a member of a named cluster cannot ask for it.
func TestNoPeerListener(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peerPort := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cfg := etcdstore.EmbedConfig{Dir: dir, PeerPort: peerPort, NoPeerListener: true}
	for round := 1; round <= 2; round++ {
		e, err := etcdstore.StartEmbedded(ctx, cfg)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort)), time.Second); err == nil {
			_ = c.Close()
			e.Close()
			t.Fatalf("round %d: something listens on the peer port %d", round, peerPort)
		}
		s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: e.Endpoints()})
		if err != nil {
			e.Close()
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "k"+strconv.Itoa(round), []byte("v"), 0); err != nil {
			t.Fatalf("round %d: put: %v", round, err)
		}
		if _, ok, err := s.Get(ctx, "k1"); err != nil || !ok {
			t.Fatalf("round %d: get k1: %v %v", round, ok, err)
		}
		s.Close()
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	bad := etcdstore.EmbedConfig{Dir: dir, NoPeerListener: true, InitialCluster: "gcs=http://127.0.0.1:1"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "single-member") {
		t.Fatalf("Validate of NoPeerListener with InitialCluster: %v", err)
	}
}
