package etcdstore

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// frontDoor is the client port of an embedded server that revokes certificates
// (EmbedConfig.CRL): it accepts the clients' TCP connections and relays their bytes,
// untouched, to the etcd listener behind it on 127.0.0.1, so that it can close every
// client connection open at a revocation (Embedded.CutClientConnections). etcd checks its
// CRL only at a connection's handshake, and a watch's permission only when the watch is
// created: without the cut, a watch opened before a revocation would go on delivering
// events. The TLS session is the client's with etcd, end to end (the relay sees only
// ciphertext, so etcd still takes the user from the client's certificate). Relaying is
// splice(2) on Linux (net.TCPConn.ReadFrom of a TCP connection): two goroutines per
// connection and no copy through user space.
type frontDoor struct {
	ln      net.Listener
	backend string // etcd's own client listener, host:port on 127.0.0.1

	mu     sync.Mutex
	conns  map[*relay]struct{}
	closed bool
	wg     sync.WaitGroup // the accept loop and every relay's goroutines
}

// maxFrontDoorConns bounds the client connections relayed at once (two descriptors and two
// goroutines each): beyond it a new one is closed at once. etcd closes a connection that
// has not finished its TLS handshake within 10 s, so idle connections hold a place for no
// longer than that.
const maxFrontDoorConns = 8192

// backendDialTimeout bounds the dial of etcd's listener for a new client connection.
const backendDialTimeout = 5 * time.Second

type relay struct{ client, backend net.Conn }

func (r *relay) close() {
	_ = r.client.Close()
	_ = r.backend.Close()
}

func newFrontDoor(ln net.Listener, backend string) *frontDoor {
	f := &frontDoor{ln: ln, backend: backend, conns: make(map[*relay]struct{})}
	f.wg.Add(1)
	go f.accept()
	return f
}

func (f *frontDoor) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		f.mu.Lock()
		full := len(f.conns) >= maxFrontDoorConns
		f.mu.Unlock()
		if full {
			_ = c.Close()
			continue
		}
		f.wg.Add(1)
		go f.open(c)
	}
}

// open dials etcd for client connection c and relays both ways until either side ends or
// the connection is cut.
func (f *frontDoor) open(c net.Conn) {
	defer f.wg.Done()
	b, err := net.DialTimeout("tcp", f.backend, backendDialTimeout)
	if err != nil {
		_ = c.Close()
		return
	}
	r := &relay{client: c, backend: b}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		r.close()
		return
	}
	f.conns[r] = struct{}{}
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		_, _ = io.Copy(b, c)
		closeWrite(b)
	}()
	_, _ = io.Copy(c, b)
	closeWrite(c)
	// One direction ended: the other ends when its peer sees the half-close, or at the
	// cut. Both are closed here so no relay outlives its first ended direction by more
	// than the peer's reaction; etcd and its clients close both ways on EOF anyway.
	f.mu.Lock()
	delete(f.conns, r)
	f.mu.Unlock()
	r.close()
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// cut closes every relayed connection open now and returns how many.
func (f *frontDoor) cut() int {
	f.mu.Lock()
	conns := make([]*relay, 0, len(f.conns))
	for r := range f.conns {
		conns = append(conns, r)
	}
	f.mu.Unlock()
	for _, r := range conns {
		r.close()
	}
	return len(conns)
}

// close stops accepting, cuts every connection and waits for the relays to end.
func (f *frontDoor) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	_ = f.ln.Close()
	f.cut()
	f.wg.Wait()
}
