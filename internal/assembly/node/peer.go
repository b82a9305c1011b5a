package node

import (
	"container/list"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/ray-go/ray/internal/assembly/membership"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/identity"
)

// Limits of the node's gRPC server (protoactor's remote), for what reaches the port before
// and after a peer proved who it is (DESIGN §9).
const (
	// handshakeTimeout bounds a new connection's TLS handshake (gRPC's default is 120 s).
	handshakeTimeout = 5 * time.Second
	// maxHandshakes is how many connections may be in their handshake at once; a new one
	// beyond it closes the oldest (see handshakeSlots). A peer's handshake takes
	// milliseconds, so connections that sit in it are what is closed.
	maxHandshakes = 256
	// maxStreams per connection: protoactor opens one Receive stream per peer connection
	// and the odd unary call.
	maxStreams = 32
	// maxHeaderBytes bounds a stream's header list (protoactor sends a few bytes).
	maxHeaderBytes = 64 << 10
)

// remoteOptions configures protoactor's gRPC remote: message limits and batching, the
// limits above and, with creds, mutual TLS between members of the cluster (PeerServerTLS,
// PeerClientTLS). Without creds (a cluster started with --insecure, a test cluster) the
// remote speaks plain text, as before.
func remoteOptions(creds *identity.Credentials) []remote.ConfigOption {
	var server, client credentials.TransportCredentials
	if creds != nil {
		server = &trackedCreds{TransportCredentials: credentials.NewTLS(creds.PeerServerTLS()), creds: creds}
		client = &trackedCreds{TransportCredentials: credentials.NewTLS(creds.PeerClientTLS()), creds: creds}
	} else {
		server, client = insecure.NewCredentials(), insecure.NewCredentials()
	}
	return []remote.ConfigOption{
		remote.WithServerOptions(
			grpc.Creds(&limitedCreds{TransportCredentials: server, slots: newHandshakeSlots(maxHandshakes)}),
			grpc.ConnectionTimeout(handshakeTimeout),
			grpc.MaxConcurrentStreams(maxStreams),
			grpc.MaxHeaderListSize(maxHeaderBytes),
			grpc.MaxRecvMsgSize(maxMessageBytes), grpc.MaxSendMsgSize(maxMessageBytes),
			grpc.UnaryInterceptor(refuseUnary),
			grpc.StreamInterceptor(membership.BlockListInterceptor)),
		remote.WithDialOptions(grpc.WithTransportCredentials(client)),
		remote.WithEndpointWriterBatchSize(endpointBatch),
		// protoactor's default preallocates a queue of 1,000,000 slots (16 MB) per peer
		// endpoint: ~36 MiB of heap per peer, 3.5 GiB per process at 100 nodes. The queue
		// grows when it fills (goring doubles it), so nothing is lost with a small start.
		remote.WithEndpointWriterQueueSize(endpointQueue),
	}
}

// refuseUnary answers every unary call Unimplemented. protoactor's remote uses only its
// Receive stream; its unary methods (ListProcesses, GetProcessDiagnostics) panic "implement
// me", and a panic in a gRPC handler ends the process: one call from a peer killed a node.
func refuseUnary(_ context.Context, _ any, info *grpc.UnaryServerInfo, _ grpc.UnaryHandler) (any, error) {
	return nil, status.Errorf(codes.Unimplemented, "ray-go: %s is not served", info.FullMethod)
}

// peerServerTLS and peerClientTLS are the object data stream's TLS configurations: the
// cluster's mutual TLS with creds, nil (plain TCP) without.
func peerServerTLS(creds *identity.Credentials) *tls.Config {
	if creds == nil {
		return nil
	}
	return creds.PeerServerTLS()
}

// trackPeer is the data stream's ServerConfig.TrackPeer: nil without creds.
func trackPeer(creds *identity.Credentials) func(io.Closer, *x509.Certificate) func() {
	if creds == nil {
		return nil
	}
	return creds.TrackPeer
}

func peerClientTLS(creds *identity.Credentials) *tls.Config {
	if creds == nil {
		return nil
	}
	return creds.PeerClientTLS()
}

// limitedCreds runs the server's handshakes under handshakeSlots.
type limitedCreds struct {
	credentials.TransportCredentials
	slots *handshakeSlots
}

func (l *limitedCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	done := l.slots.enter(c)
	defer done()
	return l.TransportCredentials.ServerHandshake(c)
}

func (l *limitedCreds) Clone() credentials.TransportCredentials {
	return &limitedCreds{TransportCredentials: l.TransportCredentials.Clone(), slots: l.slots}
}

// trackedCreds makes each TLS connection, accepted or dialed, one that a revocation of
// the peer's certificate closes (Credentials.TrackPeer): gRPC then ends its streams, and
// the peer must connect again, which the handshake refuses.
type trackedCreds struct {
	credentials.TransportCredentials
	creds *identity.Credentials
}

func (t *trackedCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := t.TransportCredentials.ServerHandshake(c)
	if err != nil {
		return conn, info, err
	}
	return t.track(conn, info), info, nil
}

func (t *trackedCreds) ClientHandshake(ctx context.Context, authority string, c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := t.TransportCredentials.ClientHandshake(ctx, authority, c)
	if err != nil {
		return conn, info, err
	}
	return t.track(conn, info), info, nil
}

func (t *trackedCreds) Clone() credentials.TransportCredentials {
	return &trackedCreds{TransportCredentials: t.TransportCredentials.Clone(), creds: t.creds}
}

func (t *trackedCreds) track(conn net.Conn, info credentials.AuthInfo) net.Conn {
	ti, ok := info.(credentials.TLSInfo)
	if !ok || len(ti.State.PeerCertificates) == 0 {
		return conn
	}
	tc := &trackedConn{Conn: conn}
	tc.untrack = t.creds.TrackPeer(conn, ti.State.PeerCertificates[0])
	return tc
}

// trackedConn stops being tracked when it closes.
type trackedConn struct {
	net.Conn
	once    sync.Once
	untrack func()
}

func (t *trackedConn) Close() error {
	t.once.Do(t.untrack)
	return t.Conn.Close()
}

// handshakeSlots bounds the connections in their handshake. When all slots are taken, a
// new connection closes the one that has waited longest (its handshake fails at once):
// idle or slow connections cannot keep a peer out, and whoever opens them pays a
// connection for each one they hold.
type handshakeSlots struct {
	mu    sync.Mutex
	max   int
	conns list.List // of net.Conn, oldest first
}

func newHandshakeSlots(max int) *handshakeSlots { return &handshakeSlots{max: max} }

// enter takes a slot for c, closing the oldest holder if none is free, and returns the
// function that gives the slot back.
func (s *handshakeSlots) enter(c net.Conn) (done func()) {
	s.mu.Lock()
	for s.conns.Len() >= s.max {
		oldest := s.conns.Remove(s.conns.Front()).(net.Conn)
		oldest.Close()
	}
	e := s.conns.PushBack(c)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.conns.Remove(e) // a no-op when c was evicted
		s.mu.Unlock()
	}
}

// waiting is how many connections hold a slot.
func (s *handshakeSlots) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns.Len()
}

// watchRevoked makes a node of a secure cluster refuse the peers whose certificates were
// revoked (`rayctl cert revoke`: the GCS's revoked/ records) on its gRPC remote and object
// data stream, from before its remote starts until it stops: the list is read now, then
// watched. A local-mode node (its own CA, in memory) and a plain-text one have nothing to
// watch. Connections open when a certificate is revoked are closed (the gRPC remote's,
// both ways, and those the data stream serves: Credentials.TrackPeer); new ones are
// refused.
func (n *Node) watchRevoked(ctx context.Context) error {
	creds := n.cfg.Credentials
	if creds == nil || n.cfg.Role == RoleLocal {
		return nil
	}
	revoked := &identity.Revoked{Log: n.cfg.Logger}
	apply := func(recs []gcs.RevokedRecord) {
		serials := make([]string, len(recs))
		for i, r := range recs {
			serials[i] = r.Serial
		}
		if len(serials) != revoked.Len() {
			n.cfg.Logger.Info("node: revoked certificates", "count", len(serials))
		}
		revoked.Replace(serials)
	}
	recs, rev, err := gcs.ListRevoked(ctx, n.store)
	if err != nil {
		return fmt.Errorf("node: read the revoked certificates: %w", err)
	}
	apply(recs)
	creds.SetRevoked(revoked)
	wctx, cancel := context.WithCancel(context.Background())
	n.revokedStop, n.revokedDone = cancel, make(chan struct{})
	go func() {
		defer close(n.revokedDone)
		gcs.WatchRevoked(wctx, n.store, rev, time.Second, apply)
	}()
	return nil
}
