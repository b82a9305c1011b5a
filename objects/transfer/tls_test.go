package transfer

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/ids"
)

// clusterCreds issues a certificate of a new CA for role.
func clusterCreds(t testing.TB, role string) (*identity.CA, *identity.Credentials) {
	t.Helper()
	ca, err := identity.NewCA("transfer test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.Issue(identity.Request{Name: "server", Role: role})
	if err != nil {
		t.Fatal(err)
	}
	return ca, c
}

func issueFor(t testing.TB, ca *identity.CA, name, role string) *identity.Credentials {
	t.Helper()
	c, err := ca.Issue(identity.Request{Name: name, Role: role})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStreamTLS: over mutual TLS the stream serves members of the cluster, reusing one
// connection, and refuses a client of another CA, a client-role certificate and a plain
// TCP client, each with an error and nothing served.
func TestStreamTLS(t *testing.T) {
	ca, srvCreds := clusterCreds(t, identity.RoleNode)
	var objs objectMap
	srv := newStreamServer(t, ServerConfig{Get: objs.get, TLS: srvCreds.PeerServerTLS()})
	id := ids.PutID(ids.NewRootTaskID(), 1)
	data := randomBytes(3<<20+5, 11)
	objs.set(id, data)

	member := FetchOptions{Size: int64(len(data)), TLS: issueFor(t, ca, "driver", identity.RoleDriver).PeerClientTLS()}
	pool := testPool(t)
	for round := range 3 {
		got, err := fetch(context.Background(), pool, srv.Addr(), id, member, defaultTuning)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("round %d: member fetch: %v (%d bytes)", round, err, len(got))
		}
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections accepted for 3 fetches, want 1 (reused)", n)
	}

	otherCA, _ := clusterCreds(t, identity.RoleNode)
	// A stranger that does not check the server: the server must refuse it.
	trustsAnything := issueFor(t, otherCA, "x", identity.RoleNode).PeerClientTLS()
	trustsAnything.VerifyConnection = nil
	for name, opt := range map[string]FetchOptions{
		"a peer of another CA":      {TLS: trustsAnything},
		"a client-role certificate": {TLS: issueFor(t, ca, "rayctl", identity.RoleClient).PeerClientTLS()},
		"plain TCP":                 {Timeout: 3 * time.Second},
	} {
		start := time.Now()
		got, err := fetch(context.Background(), testPool(t), srv.Addr(), id, opt, defaultTuning)
		if err == nil || got != nil {
			t.Errorf("%s: fetched %d bytes, err %v; want refused", name, len(got), err)
			continue
		}
		if d := time.Since(start); d > firstRequestTimeout+2*time.Second {
			t.Errorf("%s: refused after %v", name, d)
		}
		t.Logf("%s: %v", name, err)
	}
	// A client that trusts another CA does not talk to this server.
	_, err := fetch(context.Background(), testPool(t), srv.Addr(), id,
		FetchOptions{TLS: issueFor(t, otherCA, "y", identity.RoleNode).PeerClientTLS()}, defaultTuning)
	if !errors.Is(err, identity.ErrNotAPeer) {
		t.Errorf("a client of another CA: %v, want ErrNotAPeer (it refuses the server)", err)
	}
	// The member still gets its object.
	if got, err := fetch(context.Background(), pool, srv.Addr(), id, member, defaultTuning); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("member fetch after the strangers: %v", err)
	}
}

// TestStreamTLSIdleFlood: 500 connections that never finish a TLS handshake (silent, or
// a ClientHello and nothing more) do not hold up a member's 8 MiB fetch (they would time
// out only after 10 minutes: floodTuning), and are bounded like plain idle connections.
func TestStreamTLSIdleFlood(t *testing.T) {
	ca, srvCreds := clusterCreds(t, identity.RoleNode)
	var objs objectMap
	srv := newTunedStreamServer(t, ServerConfig{Get: objs.get, TLS: srvCreds.PeerServerTLS()}, floodTuning)
	id := ids.PutID(ids.NewRootTaskID(), 1)
	data := randomBytes(8<<20, 12)
	objs.set(id, data)
	dialIdle(t, srv.Addr(), 400, false)
	hellos := make([]net.Conn, 0, 100)
	t.Cleanup(func() {
		for _, c := range hellos {
			c.Close()
		}
	})
	for range 100 {
		c, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		hellos = append(hellos, c)
		// A TLS record header announcing a ClientHello whose body never comes.
		if _, err := c.Write([]byte{22, 3, 1, 0x02, 0x00, 1, 0, 1, 0xfc}); err != nil {
			t.Fatal(err)
		}
	}
	opt := FetchOptions{Size: int64(len(data)), TLS: issueFor(t, ca, "node", identity.RoleNode).PeerClientTLS()}
	for round := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), floodFetchDeadline)
		start := time.Now()
		got, err := fetch(ctx, testPool(t), srv.Addr(), id, opt, defaultTuning)
		cancel()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("round %d: TLS fetch of 8 MiB behind 500 idle connections: %v after %v", round, err, time.Since(start))
		}
		t.Logf("round %d: fetched in %v", round, time.Since(start))
	}
	srv.mu.Lock()
	open, waiting := len(srv.conns), srv.waiting
	srv.mu.Unlock()
	if open > DefaultMaxWaiting+DefaultMaxConns || waiting > DefaultMaxWaiting {
		t.Errorf("%d connections open, %d waiting: over the bounds %d + %d", open, waiting, DefaultMaxWaiting, DefaultMaxConns)
	}
}

// TestStreamTLSConfigUntouched: the server adapts a copy of the caller's configuration.
func TestStreamTLSConfigUntouched(t *testing.T) {
	_, c := clusterCreds(t, identity.RoleNode)
	cfg := c.PeerServerTLS()
	newStreamServer(t, ServerConfig{Get: (&objectMap{}).get, TLS: cfg})
	if cfg.DynamicRecordSizingDisabled {
		t.Fatal("NewServer changed the caller's tls.Config")
	}
}

// TestStreamTrackPeer: the server tells TrackPeer of each connection that proved itself,
// with the peer's certificate; closing what it was given ends the connection (a revoked
// certificate), and the connection's end untracks it.
func TestStreamTrackPeer(t *testing.T) {
	ca, srvCreds := clusterCreds(t, identity.RoleNode)
	member := issueFor(t, ca, "member", identity.RoleNode)
	var mu sync.Mutex
	var closers []io.Closer
	var names []string
	var untracked atomic.Int32
	var objs objectMap
	srv := newStreamServer(t, ServerConfig{Get: objs.get, TLS: srvCreds.PeerServerTLS(),
		TrackPeer: func(c io.Closer, leaf *x509.Certificate) func() {
			mu.Lock()
			closers, names = append(closers, c), append(names, identity.NameOf(leaf))
			mu.Unlock()
			return func() { untracked.Add(1) }
		}})
	id := ids.PutID(ids.NewRootTaskID(), 1)
	data := randomBytes(1<<20, 5)
	objs.set(id, data)
	pool := testPool(t) // keeps the connection open, idle, after the fetch
	got, err := fetch(context.Background(), pool, srv.Addr(), id, FetchOptions{Size: int64(len(data)), TLS: member.PeerClientTLS()}, defaultTuning)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetch: %v", err)
	}
	mu.Lock()
	if len(closers) != 1 || names[0] != member.Name() {
		mu.Unlock()
		t.Fatalf("TrackPeer was told of %d connections %v, want 1 of %q", len(closers), names, member.Name())
	}
	c := closers[0]
	mu.Unlock()
	open := func() int { srv.mu.Lock(); defer srv.mu.Unlock(); return len(srv.conns) }
	if n := open(); n != 1 {
		t.Fatalf("%d connections open on the server after the fetch, want the pooled one", n)
	}
	_ = c.Close()
	eventually.True(t, 10*time.Second, "the closed connection ends and is untracked", func() bool {
		return open() == 0 && untracked.Load() == 1
	})
}

// TestStreamUnixSocket: a server that speaks mutual TLS on TCP also serves its Unix
// socket (0600), without TLS, to a client of the same machine; plain TCP is still
// refused; Close removes the socket.
func TestStreamUnixSocket(t *testing.T) {
	_, srvCreds := clusterCreds(t, identity.RoleNode)
	var objs objectMap
	path := filepath.Join(t.TempDir(), "d.sock")
	srv := newStreamServer(t, ServerConfig{Get: objs.get, TLS: srvCreds.PeerServerTLS(), Socket: path})
	id := ids.PutID(ids.NewRootTaskID(), 1)
	data := randomBytes(3<<20+5, 12)
	objs.set(id, data)
	if srv.Socket() != UnixPrefix+path {
		t.Fatalf("Socket() = %q", srv.Socket())
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the socket: %v, %v; want mode 0600", fi, err)
	}
	pool := testPool(t)
	for round := range 3 {
		// The client's TLS configuration does not matter on the socket.
		got, err := fetch(context.Background(), pool, srv.Socket(), id, FetchOptions{Size: int64(len(data))}, defaultTuning)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("round %d: fetch over the socket: %v (%d bytes)", round, err, len(got))
		}
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections accepted for 3 fetches, want 1 (reused)", n)
	}
	if got, err := fetch(context.Background(), testPool(t), srv.Addr(), id, FetchOptions{Timeout: 3 * time.Second}, defaultTuning); err == nil || got != nil {
		t.Fatalf("plain TCP to a TLS server: %d bytes, %v; want refused", len(got), err)
	}
	if _, err := fetch(context.Background(), testPool(t), srv.Socket(), ids.PutID(ids.NewRootTaskID(), 2), FetchOptions{}, defaultTuning); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an object the server does not hold: %v, want ErrNotFound", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket after Close: %v, want removed", err)
	}
}
