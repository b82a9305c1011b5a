package node

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/ray-go/ray/internal/base/identity"
)

func TestHandshakeSlotsEvictTheOldest(t *testing.T) {
	s := newHandshakeSlots(2)
	a, b, c := pipeConn(t), pipeConn(t), pipeConn(t)
	doneA := s.enter(a)
	doneB := s.enter(b)
	doneC := s.enter(c) // full: a, the oldest, is closed
	if !closed(a) || closed(b) || closed(c) {
		t.Fatalf("closed: a %v b %v c %v; want only a", closed(a), closed(b), closed(c))
	}
	doneA() // evicted: a no-op
	if n := s.waiting(); n != 2 {
		t.Fatalf("%d waiting, want 2", n)
	}
	doneB()
	doneC()
	if n := s.waiting(); n != 0 {
		t.Fatalf("%d waiting after every handshake ended, want 0", n)
	}
}

// pipeConn is one end of a connection whose other end the test closes.
func pipeConn(t *testing.T) net.Conn {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return a
}

// closed reports whether c was closed (a write to a closed pipe fails at once).
func closed(c net.Conn) bool {
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := c.Write([]byte{1})
	return err != nil && !isTimeout(err)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestRemoteSpeaksMutualTLS: a node's gRPC remote serves a peer of its CA, and refuses a
// peer of another CA, a client-role certificate and plain text; 300 connections that
// never finish a handshake do not keep a peer out.
func TestRemoteSpeaksMutualTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startLocalNode(t)
	addr := n.System().Address()
	own := n.cfg.Credentials
	if own == nil {
		t.Fatal("a local node has no credentials")
	}
	list := func(cfg *tls.Config) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			return err
		}
		defer conn.Close()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err = remote.NewRemotingClient(conn).ListProcesses(cctx, &remote.ListProcessesRequest{Pattern: "nothing-matches"})
		return err
	}
	// A member of the cluster: another certificate of the node's own CA is not at hand
	// (the local CA's key never leaves memory), so the node's own certificate stands in.
	// The remote's unary methods are refused (protoactor's panic); that the call reached
	// the method at all says the handshake passed.
	if err := list(own.PeerClientTLS()); status.Code(err) != codes.Unimplemented {
		t.Fatalf("a member of the cluster: %v, want Unimplemented", err)
	}
	ca, err := identity.NewCA("stranger", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := ca.Issue(identity.Request{Name: "stranger", Role: identity.RoleNode})
	if err != nil {
		t.Fatal(err)
	}
	trustsAnything := stranger.PeerClientTLS()
	trustsAnything.VerifyConnection = nil
	if err := list(trustsAnything); status.Code(err) != codes.Unavailable {
		t.Errorf("a peer of another CA: %v, want Unavailable (refused)", err)
	} else {
		t.Logf("a peer of another CA: %v", err)
	}
	if err := list(stranger.PeerClientTLS()); status.Code(err) != codes.Unavailable {
		t.Errorf("a client of another CA: %v, want Unavailable (it refuses the node)", err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = remote.NewRemotingClient(conn).ListProcesses(cctx, &remote.ListProcessesRequest{})
	ccancel()
	conn.Close()
	if status.Code(err) != codes.Unavailable {
		t.Errorf("a plain-text client: %v, want Unavailable", err)
	}

	// Connections that never finish a handshake.
	idle := make([]net.Conn, 0, 300)
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 300 {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	start := time.Now()
	if err := list(own.PeerClientTLS()); status.Code(err) != codes.Unimplemented {
		t.Fatalf("a member behind 300 idle connections: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a member behind 300 idle connections waited %v", d)
	}
}
