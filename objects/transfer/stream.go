package transfer

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ray-go/ray/internal/base/ids"
)

// The data-plane stream (see the package documentation for the protocol).
const (
	// streamMagic opens every request: the protocol's magic and version in one byte. A new
	// version takes a new value; a server closes a connection that opens with another.
	streamMagic byte = 0xD1
	// streamMagicPipe opens a request of a client on the same machine (the Unix socket)
	// that accepts the body through a pipe (statusPipe); otherwise as streamMagic.
	streamMagicPipe byte = 0xD2

	requestLen = 1 + ids.ObjectIDLen // magic, object ID
	headerLen  = 1 + 8 + 2           // status, size, error text length
	trailerLen = 4                   // CRC-32C of the body

	// MaxStreamSize is the largest object a client accepts; a larger announced size is
	// ErrCorrupt.
	MaxStreamSize = 1 << 40
	// DefaultMaxConns is the default of ServerConfig.MaxConns.
	DefaultMaxConns = 64
	// DefaultMaxWaiting is the default of ServerConfig.MaxWaiting.
	DefaultMaxWaiting = 256
	// DefaultStreamAddr is the default of ServerConfig.Addr.
	DefaultStreamAddr = "127.0.0.1:0"
)

// Status byte of a response header.
const (
	statusOK         byte = 0 // size bytes and the trailer follow
	statusNotFound   byte = 1 // ErrNotFound
	statusUnreadable byte = 2 // ErrUnreadable
	statusFailed     byte = 3 // Get failed otherwise (e.g. the store did not answer)
	statusPipe       byte = 4 // ok; the size bytes come through the pipe passed with the header, no trailer
)

// The body through a pipe (Linux, the Unix socket: see the package documentation).
const (
	// pipeMinSize is the smallest object answered through a pipe: below it, making and
	// passing the pipe costs about what it saves (chosen, not measured closely).
	pipeMinSize = 256 << 10
	// pipeBufSize is the pipe's capacity asked for (F_SETPIPE_SZ): 1 MiB, the most an
	// unprivileged process may ask by default (/proc/sys/fs/pipe-max-size).
	pipeBufSize = 1 << 20
	// maxPassedFDs descriptors are received with a header at most.
	maxPassedFDs = 4
	// pipeAck is the byte a client sends once it has read a whole body through a pipe.
	pipeAck byte = 0xA5
	// pipeHeld is the server's answer to pipeAck: it kept the body's pages referenced
	// until the acknowledgement, so every byte the client read was the object's.
	pipeHeld byte = 0x5A
)

// Timeouts and sizes of the stream, fixed.
const (
	// firstRequestTimeout bounds the wait for a new connection's first request (a client
	// sends it right after connecting), and serverIdleTimeout the wait for the next one:
	// the connection is closed then. The first is short so that connections that never
	// ask for anything go soon; they also hold no serving slot meanwhile (see Server).
	// Clients keep idle connections for poolIdleTimeout, well below the second, so they
	// rarely reuse one the server is closing (and retry once on a fresh connection when
	// they do).
	firstRequestTimeout = 2 * time.Second
	serverIdleTimeout   = 90 * time.Second
	poolIdleTimeout     = 30 * time.Second
	// serverWriteTimeout bounds each chunk's write: a client that stops reading releases
	// its connection then.
	serverWriteTimeout = 30 * time.Second
	// maxDialTimeout bounds connecting (FetchOptions.Timeout, if shorter, too): a peer that
	// does not answer a SYN within it is down.
	maxDialTimeout = 10 * time.Second
	// poolMaxIdle idle connections are kept per address.
	poolMaxIdle = 4
	// maxErrorText bytes of an error's text are sent.
	maxErrorText = math.MaxUint16
)

// tuning holds the sizes the benchmarks compare; the code uses defaultTuning.
type tuning struct {
	writeChunk int // server: bytes hashed then written per write call
	readChunk  int // client: bytes read (one deadline) then hashed per step
	sockBuf    int // SO_SNDBUF / SO_RCVBUF to set on both ends; 0 leaves the kernel's autotuning
	// initialBody is the most a client allocates for a body before any of it arrived,
	// when it does not know the object's size (FetchOptions.Size).
	initialBody int
	// firstRequest is the server's firstRequestTimeout (tests lengthen it to show that
	// a fetch does not wait for idle connections to time out).
	firstRequest time.Duration
	// noPipe: a client does not ask for the body through a pipe, a server answers such a
	// request through the socket (as when it cannot make a pipe).
	noPipe bool
	// pipeCopy: a server writes bodies into the pipe instead of vmsplicing them (as when
	// vmsplice is refused).
	pipeCopy bool
}

var defaultTuning = tuning{writeChunk: 1 << 20, readChunk: 1 << 20, initialBody: 8 << 20, firstRequest: firstRequestTimeout}

// ServerConfig configures a stream Server.
type ServerConfig struct {
	// Addr is the TCP address to listen on; "" means DefaultStreamAddr.
	Addr string
	// Get returns an object's bytes, or an error wrapping ErrNotFound or ErrUnreadable
	// (any other error is sent as a failure without either). The server only reads the
	// slice. Get must return soon after ctx is done: ctx ends when the server closes.
	Get func(ctx context.Context, id ids.ObjectID) ([]byte, error)
	// Logger receives the server's logs; nil means slog.Default().
	Logger *slog.Logger
	// MaxConns bounds the requests served at once (a request read, its answer not yet
	// written); 0 means DefaultMaxConns. A request that arrives at the bound waits for a
	// slot.
	MaxConns int
	// MaxWaiting bounds the connections without a request being served: new ones waiting
	// for their first request, idle ones waiting for the next, and requests waiting for a
	// slot; 0 means DefaultMaxWaiting. At the bound, a new connection closes the oldest
	// one waiting for its first request, else the oldest idle one, else (every one holds
	// a request) it is closed itself.
	MaxWaiting int
	// TLS, when set, is the TLS server configuration every connection must complete
	// (within firstRequestTimeout, as the first request) before it is served: the
	// cluster's mutual TLS (identity.PeerServerTLS). Nil serves plain TCP.
	TLS *tls.Config
	// TrackPeer, with TLS, is told of each connection whose handshake succeeded, with the
	// peer's certificate, and returns what to call when the connection ends; closing the
	// connection meanwhile (a revoked certificate: identity.Credentials.TrackPeer) ends
	// it. Nil: nothing is told.
	TrackPeer func(c io.Closer, leaf *x509.Certificate) (untrack func())
	// Socket, when set, is the path of a Unix socket the server also listens on (made
	// 0600; a stale file there is replaced), for clients on the same machine: its
	// connections skip TLS (the file's permissions admit only this user, whose session
	// holds the cluster's keys anyway) and the TCP stack. Fetch reaches it with the
	// address "unix:" + Socket. The listener shares the server's slots and bounds.
	Socket string
}

// UnixPrefix marks a Fetch address that is a Unix socket's path.
const UnixPrefix = "unix:"

// Server serves objects' bytes to Fetch over TCP. It owns its listener, its accept loop
// and one goroutine per connection; Close ends them all.
//
// Connections that send nothing cannot starve those that ask for objects: accepting one
// is cheap (a goroutine waiting for 21 bytes, at most firstRequestTimeout), a serving
// slot is taken only once a valid request has arrived, and the connections without one
// are bounded (MaxWaiting), the oldest closed first. A connection whose first byte is not
// the protocol's magic is closed at once.
type Server struct {
	cfg    ServerConfig
	tune   tuning
	ln     net.Listener
	uln    net.Listener    // ServerConfig.Socket's; nil without
	ctx    context.Context // ends at Close; Get receives it
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and the connection goroutines
	slots  chan struct{}  // one per request being served

	mu      sync.Mutex
	conns   map[*serverConn]struct{}
	waiting int // connections in state fresh, idle or queued
	closed  bool

	accepted atomic.Int64 // connections accepted (tests)
	local    atomic.Int64 // of which through the Unix socket
	piped    atomic.Int64 // answers whose body went through a pipe (tests)
	evicted  atomic.Int64 // connections closed to make room (tests)
}

// connState is where a connection is in its life; all but serving count toward
// MaxWaiting.
type connState uint8

const (
	fresh   connState = iota // accepted, no request yet
	idle                     // served a request, waiting for the next
	queued                   // a request read, waiting for a serving slot
	serving                  // holds a slot
)

type serverConn struct {
	local   bool     // came through the Unix socket: no TLS
	c       net.Conn // the TCP connection: closing it ends every read and write at once
	state   connState
	since   time.Time // when it entered fresh or idle (eviction order)
	evicted bool      // closed to make room: its goroutine ends
}

// NewServer listens on cfg.Addr and serves until Close.
func NewServer(cfg ServerConfig) (*Server, error) {
	return newServer(cfg, defaultTuning)
}

func newServer(cfg ServerConfig, tune tuning) (*Server, error) {
	if tune.firstRequest <= 0 {
		tune.firstRequest = firstRequestTimeout
	}
	if cfg.Get == nil {
		return nil, errors.New("transfer: stream server: ServerConfig.Get is nil")
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultStreamAddr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxWaiting <= 0 {
		cfg.MaxWaiting = DefaultMaxWaiting
	}
	if cfg.TLS != nil {
		cfg.TLS = streamTLS(cfg.TLS)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("transfer: stream server: %w", err)
	}
	s := &Server{cfg: cfg, tune: tune, ln: ln, conns: make(map[*serverConn]struct{}),
		slots: make(chan struct{}, cfg.MaxConns)}
	if cfg.Socket != "" {
		if s.uln, err = listenUnix(cfg.Socket); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("transfer: stream server: %w", err)
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.acceptLoop(s.ln, false)
	if s.uln != nil {
		s.wg.Add(1)
		go s.acceptLoop(s.uln, true)
	}
	return s, nil
}

// Addr returns the address the server listens on (host:port, the port bound).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Accepted counts the connections accepted so far: in all, and through the Unix socket.
func (s *Server) Accepted() (all, local int64) { return s.accepted.Load(), s.local.Load() }

// Socket returns the Fetch address of the server's Unix socket ("" without one).
func (s *Server) Socket() string {
	if s.uln == nil {
		return ""
	}
	return UnixPrefix + s.cfg.Socket
}

// listenUnix listens on a Unix socket at path, 0600, replacing a stale file.
func listenUnix(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, err
	}
	return ln, nil
}

// Close stops accepting, closes every connection (transfers in progress fail on the
// client), cancels the context of Gets in progress and waits for the server's goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	for sc := range s.conns {
		_ = sc.c.Close()
	}
	s.mu.Unlock()
	var err error
	if !already {
		s.cancel()
		if err = s.ln.Close(); errors.Is(err, net.ErrClosed) {
			err = nil
		}
		if s.uln != nil {
			_ = s.uln.Close()
			_ = os.Remove(s.cfg.Socket)
		}
	}
	s.wg.Wait()
	return err
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) acceptLoop(ln net.Listener, local bool) {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or the like: wait a little and try again.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.cfg.Logger.Error("transfer: stream server cannot accept connections", "addr", s.Addr(), "err", err, "retry_in", backoff)
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		s.accepted.Add(1)
		if local {
			s.local.Add(1)
		}
		sc := &serverConn{c: c, state: fresh, since: time.Now(), local: local}
		if !s.admit(sc) {
			_ = c.Close()
			if s.isClosed() {
				return
			}
			continue
		}
		setSockBuf(c, s.tune.sockBuf)
		s.wg.Add(1)
		go s.serveConn(sc)
	}
}

// admit registers sc (fresh), making room among the waiting connections if needed. It
// never blocks. It reports false if there is no room (every waiting connection holds a
// request) or the server closed.
func (s *Server) admit(sc *serverConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.makeRoomLocked() {
		return false
	}
	s.conns[sc] = struct{}{}
	s.waiting++
	return true
}

// makeRoomLocked brings the waiting connections under MaxWaiting by one, closing the
// oldest fresh one, else the oldest idle one. It reports false if every waiting
// connection holds a request (queued).
func (s *Server) makeRoomLocked() bool {
	if s.waiting < s.cfg.MaxWaiting {
		return true
	}
	var victim *serverConn
	for o := range s.conns {
		if o.evicted || o.state != fresh && o.state != idle {
			continue
		}
		if victim == nil || o.state < victim.state || o.state == victim.state && o.since.Before(victim.since) {
			victim = o
		}
	}
	if victim == nil {
		return false
	}
	victim.evicted = true
	s.waiting-- // it leaves now; its goroutine only unregisters it
	s.evicted.Add(1)
	_ = victim.c.Close()
	return true
}

// setState moves sc to state, counting it in or out of the waiting connections. It
// reports false if sc was closed to make room or the server closed: the connection must
// end. A connection that becomes idle when there is no room and nothing to close ends.
func (s *Server) setState(sc *serverConn, state connState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc.evicted || s.closed {
		return false
	}
	wasWaiting, isWaiting := sc.state != serving, state != serving
	switch {
	case wasWaiting && !isWaiting:
		s.waiting--
	case !wasWaiting && isWaiting:
		if !s.makeRoomLocked() {
			return false
		}
		s.waiting++
	}
	sc.state = state
	if state == idle {
		sc.since = time.Now()
	}
	return true
}

func (s *Server) drop(sc *serverConn) {
	_ = sc.c.Close()
	s.mu.Lock()
	if _, ok := s.conns[sc]; ok {
		delete(s.conns, sc)
		if !sc.evicted && sc.state != serving {
			s.waiting--
		}
	}
	s.mu.Unlock()
}

// readRequest reads one request from c within timeout and returns its object ID, and
// whether the client accepts the body through a pipe. A first byte that is not a magic
// fails at once, without waiting for the rest.
func readRequest(c net.Conn, timeout time.Duration) (ids.ObjectID, bool, error) {
	var req [requestLen]byte
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	for n := 0; n < requestLen; {
		m, err := c.Read(req[n:])
		n += m
		if n > 0 && req[0] != streamMagic && req[0] != streamMagicPipe {
			return ids.ObjectID{}, false, fmt.Errorf("%w: first byte 0x%02x", errNotStream, req[0])
		}
		if err != nil {
			if n > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return ids.ObjectID{}, false, err
		}
	}
	return ids.ObjectID(req[1:]), req[0] == streamMagicPipe, nil
}

var errNotStream = errors.New("not a stream request (another protocol or version?)")

// serveConn answers the requests that arrive on one connection, one at a time, each in a
// serving slot.
func (s *Server) serveConn(sc *serverConn) {
	defer s.wg.Done()
	defer s.drop(sc)
	log := s.cfg.Logger.With("remote", sc.c.RemoteAddr().String())
	conn := sc.c
	var out *coalescer
	if s.cfg.TLS != nil && !sc.local {
		// The handshake counts as part of the first request: same deadline, no slot.
		out = &coalescer{Conn: sc.c}
		tc := tls.Server(out, s.cfg.TLS)
		_ = sc.c.SetDeadline(time.Now().Add(s.tune.firstRequest))
		if err := tc.Handshake(); err != nil {
			if !quietEnd(err) {
				log.Warn("transfer: stream server: refusing a connection that did not prove it belongs to the cluster", "err", err)
			}
			return
		}
		_ = sc.c.SetWriteDeadline(time.Time{})
		if s.cfg.TrackPeer != nil {
			if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
				defer s.cfg.TrackPeer(sc.c, certs[0])()
			}
		}
		conn = tc
	}
	timeout := s.tune.firstRequest
	for {
		id, pipe, err := readRequest(conn, timeout)
		if err != nil {
			switch {
			case errors.Is(err, errNotStream):
				log.Warn("transfer: stream server: closing a connection that does not speak the protocol", "err", err)
			case !quietEnd(err):
				log.Debug("transfer: stream server: reading a request", "err", err)
			}
			return
		}
		if !s.setState(sc, queued) {
			return
		}
		select {
		case s.slots <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		if !s.setState(sc, serving) {
			<-s.slots
			return
		}
		err = s.answer(conn, id, out, pipe && sc.local)
		<-s.slots
		if err != nil {
			if !s.isClosed() {
				log.Debug("transfer: stream server: sending an object", "object", id, "err", err)
			}
			return
		}
		if !s.setState(sc, idle) {
			return
		}
		timeout = serverIdleTimeout
	}
}

// answer sends the response to a request for id: the header, and for an object found its
// bytes and their CRC-32C. Each chunk is hashed right after it is written, while the
// kernel's copy has left it in the cache (the last one before: the trailer goes with it).
//
// With TLS, out gathers the connection's records (16 KiB each) into writes of up to
// coalesceBytes, flushed when the answer is written. With pipe (a client on the Unix
// socket that accepts it), an object of pipeMinSize or more goes through a pipe if one
// can be made.
func (s *Server) answer(c net.Conn, id ids.ObjectID, out *coalescer, pipe bool) (err error) {
	if out != nil {
		out.begin()
		defer func() {
			if ferr := out.end(); err == nil {
				err = ferr
			}
		}()
	}
	data, err := s.cfg.Get(s.ctx, id)
	var hdr [headerLen]byte
	if err != nil {
		switch {
		case errors.Is(err, ErrNotFound):
			hdr[0] = statusNotFound
		case errors.Is(err, ErrUnreadable):
			hdr[0] = statusUnreadable
		default:
			hdr[0] = statusFailed
		}
		text := err.Error()
		if len(text) > maxErrorText {
			text = text[:maxErrorText]
		}
		binary.BigEndian.PutUint16(hdr[9:], uint16(len(text)))
		_ = c.SetWriteDeadline(time.Now().Add(serverWriteTimeout))
		bufs := net.Buffers{hdr[:], []byte(text)}
		_, err := bufs.WriteTo(c)
		return err
	}
	binary.BigEndian.PutUint64(hdr[1:], uint64(len(data)))
	if pipe && pipeSupported && !s.tune.noPipe && len(data) >= pipeMinSize {
		if sent, err := s.answerPipe(c, hdr, data); sent {
			return err
		}
	}
	hdr[0] = statusOK
	var trailer [trailerLen]byte
	var sum uint32
	for off := 0; ; {
		end := min(off+s.tune.writeChunk, len(data))
		last := end == len(data)
		bufs := make(net.Buffers, 0, 3)
		if off == 0 {
			bufs = append(bufs, hdr[:])
		}
		bufs = append(bufs, data[off:end])
		if last {
			if out == nil {
				sum = crc32.Update(sum, castagnoli, data[off:end])
			}
			binary.BigEndian.PutUint32(trailer[:], sum)
			bufs = append(bufs, trailer[:])
		}
		_ = c.SetWriteDeadline(time.Now().Add(serverWriteTimeout))
		if _, err := bufs.WriteTo(c); err != nil || last {
			return err
		}
		if out == nil {
			sum = crc32.Update(sum, castagnoli, data[off:end])
		}
		off = end
	}
}

// answerPipe sends the header with the read end of a new pipe, hands data's pages to the
// pipe and waits for the client's acknowledgement (pipeAck) that it has read them: until
// then the pipe refers to data's pages, so data stays referenced here. sent is false,
// with nothing written, when no pipe could be made (the caller answers through the
// socket).
func (s *Server) answerPipe(c net.Conn, hdr [headerLen]byte, data []byte) (sent bool, err error) {
	rfd, w, err := newBodyPipe()
	if err != nil {
		s.cfg.Logger.Debug("transfer: stream server: no pipe, answering through the socket", "err", err)
		return false, nil
	}
	defer w.Close()
	hdr[0] = statusPipe
	_ = c.SetWriteDeadline(time.Now().Add(serverWriteTimeout))
	err = sendHeaderWithFD(c, hdr[:], rfd)
	closeFDs([]int{rfd})
	if err != nil {
		return true, err
	}
	s.piped.Add(1)
	stop := context.AfterFunc(s.ctx, func() { _ = w.Close() }) // Close ends a blocked write
	err = vmspliceAll(w, data, serverWriteTimeout, s.tune.pipeCopy)
	stop()
	_ = w.Close()
	if err != nil {
		return true, err
	}
	// The client acknowledges once it has read the whole body (or it closes the
	// connection and the pipe: then nothing reads the pages any more either).
	var ack [1]byte
	_ = c.SetReadDeadline(time.Now().Add(serverWriteTimeout))
	if _, err := io.ReadFull(c, ack[:]); err != nil {
		return true, fmt.Errorf("waiting for the acknowledgement of a body through a pipe: %w", err)
	}
	if ack[0] != pipeAck {
		return true, fmt.Errorf("%w: 0x%02x instead of the acknowledgement of a body through a pipe", errNotStream, ack[0])
	}
	// data was held until here, after the client's last read: say so. A client takes the
	// bytes only with this answer, since a server that gave up waiting (its timeout, its
	// Close) lets go of data, and then the pages a stalled client reads later may hold
	// another object's bytes (a recycled encode buffer, objects/codec).
	runtime.KeepAlive(data)
	_ = c.SetWriteDeadline(time.Now().Add(serverWriteTimeout))
	_, err = c.Write([]byte{pipeHeld})
	return true, err
}

// FetchOptions tune one Fetch. The zero value is valid.
type FetchOptions struct {
	// Timeout bounds every wait for data: the request's write, the response header (the
	// server's Get included) and each 1 MiB of the body; and connecting, with at most 10 s.
	// 0 means DefaultTimeout. The context's deadline bounds the whole fetch.
	Timeout time.Duration
	// Size is the object's size as the caller knows it (its owner's record), 0 if
	// unknown. A response that announces another size is ErrCorrupt before any of its
	// body is read. Unknown, the buffer grows with the bytes as they arrive, so a peer
	// cannot make Fetch allocate more than about twice what it sends.
	Size int64
	// TLS, when set, is the TLS client configuration to connect with (the cluster's
	// mutual TLS: identity.PeerClientTLS), for a Server with ServerConfig.TLS.
	TLS *tls.Config
}

// Fetch fetches object id from the stream Server at addr and returns its bytes, checked
// against their size and CRC-32C. Errors wrap ErrNotFound, ErrUnreadable, ErrCorrupt, the
// context's error, or the network's error (a refused dial, os.ErrDeadlineExceeded when
// the server stays silent for opt.Timeout), with the object ID and the address.
//
// Connections are kept for reuse, a few per address (see CloseIdleConnections).
// Cancelling ctx closes the connection at once.
func Fetch(ctx context.Context, addr string, id ids.ObjectID, opt FetchOptions) ([]byte, error) {
	return fetch(ctx, &clientPool, addr, id, opt, defaultTuning)
}

// CloseIdleConnections closes the connections Fetch keeps for reuse.
func CloseIdleConnections() { clientPool.closeAll() }

func fetchErrorf(addr string, id ids.ObjectID, format string, args ...any) error {
	return fmt.Errorf("transfer: fetch object %s from %s: %w", id, addr, fmt.Errorf(format, args...))
}

func fetch(ctx context.Context, pool *connPool, addr string, id ids.ObjectID, opt FetchOptions, tune tuning) ([]byte, error) {
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if err := ctx.Err(); err != nil {
		return nil, fetchErrorf(addr, id, "%w", err)
	}
	key := addr
	if opt.TLS != nil && !strings.HasPrefix(addr, UnixPrefix) {
		key = "tls " + addr
	}
	pipe := pipeSupported && !tune.noPipe && strings.HasPrefix(addr, UnixPrefix)
	c, reused, plain := pool.get(key)
	asked := pipe // whether this connection asks for pipes
	if plain {
		asked = false
	}
	for {
		if c == nil {
			var err error
			if c, err = dial(ctx, addr, opt, tune); err != nil {
				if ctx.Err() != nil {
					return nil, fetchErrorf(addr, id, "%w", ctx.Err())
				}
				return nil, fetchErrorf(addr, id, "connect: %w", err)
			}
		}
		data, keep, stale, err := fetchOn(ctx, c, addr, id, opt, tune, asked)
		if keep {
			pool.put(key, c, pipe && !asked)
		} else {
			_ = c.Close()
		}
		if stale && reused {
			// The server closed the idle connection (or restarted): the others kept for
			// addr are likely closed too. Try once more on a new connection.
			pool.closeAddr(key)
			c, reused, asked = nil, false, pipe
			continue
		}
		if stale && asked {
			// A new connection closed at the request: a server that predates the pipe
			// request closes a connection that opens with streamMagicPipe. Ask as it
			// knows, and remember it with the connection.
			c, asked = nil, false
			continue
		}
		return data, err
	}
}

// dial connects to addr, and with opt.TLS completes the handshake (within the dial
// timeout). The connection's Close closes the TCP connection at once.
func dial(ctx context.Context, addr string, opt FetchOptions, tune tuning) (net.Conn, error) {
	timeout := min(opt.Timeout, maxDialTimeout)
	d := net.Dialer{Timeout: timeout}
	if path, ok := strings.CutPrefix(addr, UnixPrefix); ok {
		return d.DialContext(ctx, "unix", path) // the same machine's: no TLS (ServerConfig.Socket)
	}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	setSockBuf(raw, tune.sockBuf)
	if opt.TLS == nil {
		return raw, nil
	}
	tc := tls.Client(&readAhead{Conn: raw, r: bufio.NewReaderSize(raw, coalesceBytes)}, opt.TLS)
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tlsConn{tc, raw}, nil
}

// tlsConn is a TLS connection whose Close closes the TCP connection without a
// close_notify: it never waits on a write in progress (tls.Conn.Close would, up to its
// deadline), and both ends treat a closed connection as the end anyway.
type tlsConn struct {
	*tls.Conn
	raw net.Conn
}

func (c tlsConn) Close() error { return c.raw.Close() }

// readAhead reads a TLS client's connection in large reads: crypto/tls asks for one
// record (16 KiB) at a time, one system call each, where the plain stream reads 1 MiB.
type readAhead struct {
	net.Conn
	r *bufio.Reader
}

func (c *readAhead) Read(p []byte) (int, error) { return c.r.Read(p) }

// streamTLS adapts a TLS server configuration to the stream: full-size records from the
// first byte (a connection carries objects of megabytes; Go's dynamic record sizing
// starts small for the latency of web pages).
func streamTLS(cfg *tls.Config) *tls.Config {
	cfg = cfg.Clone()
	cfg.DynamicRecordSizingDisabled = true
	return cfg
}

// coalesceBytes is the most a TLS connection's coalescer gathers before it writes.
const coalesceBytes = 256 << 10

var coalesceBufs = sync.Pool{New: func() any { b := make([]byte, 0, coalesceBytes); return &b }}

// coalescer sits under a TLS connection and, between begin and end, gathers the records
// TLS writes one by one (one write call, so one system call and one wake-up of the
// reader, per 16 KiB) into writes of up to coalesceBytes. Outside an answer it writes
// through (the handshake needs its flights sent as written). Only connections writing
// an answer hold a buffer (from a pool): at most MaxConns of them.
type coalescer struct {
	net.Conn
	buf *[]byte
}

func (c *coalescer) begin() { c.buf = coalesceBufs.Get().(*[]byte) }

// end writes what is gathered and gives the buffer back.
func (c *coalescer) end() error {
	err := c.flush()
	*c.buf = (*c.buf)[:0]
	coalesceBufs.Put(c.buf)
	c.buf = nil
	return err
}

func (c *coalescer) flush() error {
	if len(*c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(*c.buf)
	*c.buf = (*c.buf)[:0]
	return err
}

func (c *coalescer) Write(p []byte) (int, error) {
	if c.buf == nil {
		return c.Conn.Write(p)
	}
	if len(*c.buf)+len(p) > cap(*c.buf) {
		if err := c.flush(); err != nil {
			return 0, err
		}
		if len(p) >= cap(*c.buf) {
			return c.Conn.Write(p)
		}
	}
	*c.buf = append(*c.buf, p...)
	return len(p), nil
}

// quietEnd reports whether err is how a connection ends without anything to report: the
// peer closed it, it was closed here, or it stayed silent past its deadline.
func quietEnd(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, syscall.ECONNRESET)
}

// fetchOn sends the request for id on c and reads the response. keep reports that c is
// in a state to be reused; stale that c failed before any byte of a response arrived
// (the server had closed it). With pipe (c is a Unix socket's), the request accepts the
// body through a pipe.
func fetchOn(ctx context.Context, c net.Conn, addr string, id ids.ObjectID, opt FetchOptions, tune tuning, pipe bool) (data []byte, keep, stale bool, err error) {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer func() {
		if !stop() { // ctx ended: c is closed or being closed
			keep, stale = false, false
			data, err = nil, fetchErrorf(addr, id, "%w", ctx.Err())
		}
	}()
	fail := func(format string, args ...any) ([]byte, bool, bool, error) {
		return nil, false, false, fetchErrorf(addr, id, format, args...)
	}

	var req [requestLen]byte
	req[0] = streamMagic
	if pipe {
		req[0] = streamMagicPipe
	}
	copy(req[1:], id[:])
	_ = c.SetWriteDeadline(time.Now().Add(opt.Timeout))
	if _, err := c.Write(req[:]); err != nil {
		return nil, false, isStale(err), fetchErrorf(addr, id, "send request: %w", err)
	}

	var hdr [headerLen]byte
	_ = c.SetReadDeadline(time.Now().Add(opt.Timeout))
	var fds []int // passed with the header: the body's pipe (statusPipe)
	if pipe {
		fds, err = readHeaderFDs(c, hdr[:])
	} else {
		_, err = io.ReadFull(c, hdr[:])
	}
	if err != nil {
		return nil, false, isStale(err), fetchErrorf(addr, id, "read response header: %w", err)
	}
	status, size, textLen := hdr[0], binary.BigEndian.Uint64(hdr[1:]), int(binary.BigEndian.Uint16(hdr[9:]))
	if status != statusPipe || len(fds) != 1 {
		closeFDs(fds)
		switch {
		case status == statusPipe && !pipe:
			return fail("%w: response header says the body comes through a pipe, not asked for", ErrCorrupt)
		case status == statusPipe:
			return fail("%w: response header says the body comes through a pipe, with %d descriptors passed", ErrCorrupt, len(fds))
		}
		fds = nil
	}
	if status != statusOK && status != statusPipe {
		text := make([]byte, textLen)
		if _, err := io.ReadFull(c, text); err != nil {
			return fail("read error text: %w", err)
		}
		var sentinel error
		switch status {
		case statusNotFound:
			sentinel = ErrNotFound
		case statusUnreadable:
			sentinel = ErrUnreadable
		case statusFailed:
			return nil, true, false, fetchErrorf(addr, id, "server failed: %s", text)
		default:
			return fail("%w: unknown status %d", ErrCorrupt, status)
		}
		return nil, true, false, fetchErrorf(addr, id, "%w: server says: %s", sentinel, text)
	}
	if textLen != 0 || size > MaxStreamSize || size > math.MaxInt {
		closeFDs(fds)
		return fail("%w: response header says size %d, error text %d bytes", ErrCorrupt, size, textLen)
	}
	if opt.Size > 0 && size != uint64(opt.Size) {
		closeFDs(fds)
		return fail("%w: response header says size %d, the object has %d", ErrCorrupt, size, opt.Size)
	}
	if status == statusPipe {
		p, err := openBodyPipe(fds[0])
		if err != nil {
			return fail("%w: %w", ErrCorrupt, err)
		}
		defer p.Close()
		stopPipe := context.AfterFunc(ctx, func() { _ = p.Close() })
		defer stopPipe()
		// No checksum: the bytes never leave this machine's memory, and the server's
		// pages stay unchanged until this client's acknowledgement (see answerPipe).
		buf, _, msg, err := readBody(p, "pipe", size, opt, tune, false)
		if err != nil {
			return fail("%s%w", msg, err)
		}
		// The server keeps the pages referenced until this acknowledgement and then says
		// it did (pipeHeld): only then were all the bytes read the object's, not those of
		// memory the server had let go of and reused (see answerPipe).
		_ = c.SetWriteDeadline(time.Now().Add(opt.Timeout))
		if _, err := c.Write([]byte{pipeAck}); err != nil {
			return fail("%w: acknowledging a body read through a pipe: %w", ErrCorrupt, err)
		}
		var held [1]byte
		_ = c.SetReadDeadline(time.Now().Add(opt.Timeout))
		if _, err := io.ReadFull(c, held[:]); err != nil || held[0] != pipeHeld {
			if err == nil {
				err = fmt.Errorf("0x%02x", held[0])
			}
			return fail("%w: the server did not confirm it kept the pages until the body was read through the pipe: %w", ErrCorrupt, err)
		}
		pipeFetches.Add(1)
		return buf, true, false, nil
	}
	// Over the Unix socket there is no TLS whatever opt.TLS says: the checksum is sent.
	check := opt.TLS == nil || strings.HasPrefix(addr, UnixPrefix)
	buf, sum, msg, err := readBody(c, "connection", size, opt, tune, check)
	if err != nil {
		return fail("%s%w", msg, err)
	}
	var trailer [trailerLen]byte
	_ = c.SetReadDeadline(time.Now().Add(opt.Timeout))
	if _, err := io.ReadFull(c, trailer[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fail("%w: connection closed before the checksum", ErrCorrupt)
		}
		return fail("read checksum: %w", err)
	}
	if want := binary.BigEndian.Uint32(trailer[:]); check && sum != want {
		return fail("%w: CRC-32C of %d bytes is %08x, the server says %08x", ErrCorrupt, size, sum, want)
	}
	return buf, true, false, nil
}

// deadlineReader is a connection or a pipe.
type deadlineReader interface {
	io.Reader
	SetReadDeadline(time.Time) error
}

// readBody reads a body of size bytes from r (what: "connection" or "pipe"), each step
// of tune.readChunk under opt.Timeout, and with check its CRC-32C. The buffer is allocated whole only for a size
// the caller knows (opt.Size); else it grows with the bytes as they arrive. On error, msg
// is "" or says where it failed, ending in ": " (err is ErrCorrupt for a body cut short).
func readBody(r deadlineReader, what string, size uint64, opt FetchOptions, tune tuning, check bool) (buf []byte, sum uint32, msg string, err error) {

	if opt.Size > 0 {
		buf = make([]byte, size)
	} else {
		buf = make([]byte, min(size, uint64(max(tune.initialBody, tune.readChunk))))
	}
	for off := 0; off < int(size); {
		end := min(off+tune.readChunk, int(size))
		if end > len(buf) {
			buf = append(buf, make([]byte, min(int(size), 2*len(buf)+tune.readChunk)-len(buf))...)
		}
		_ = r.SetReadDeadline(time.Now().Add(opt.Timeout))
		n, err := io.ReadFull(r, buf[off:end])
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, 0, "", fmt.Errorf("%w: %s closed after %d of %d bytes", ErrCorrupt, what, off+n, size)
			}
			return nil, 0, fmt.Sprintf("read body at %d of %d bytes: ", off+n, size), err
		}
		if check {
			sum = crc32.Update(sum, castagnoli, buf[off:end])
		}
		off = end
	}
	return buf, sum, "", nil
}

// isStale reports whether err, before any byte of a response, means the server had
// closed the connection.
func isStale(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func setSockBuf(c net.Conn, n int) {
	if tc, ok := c.(*net.TCPConn); ok && n > 0 {
		_ = tc.SetReadBuffer(n)
		_ = tc.SetWriteBuffer(n)
	}
}

// connPool keeps idle connections per address, most recent last. It has no goroutine:
// expired connections are closed when the pool is next used.
type connPool struct {
	mu   sync.Mutex
	idle map[string][]idleConn
}

type idleConn struct {
	c     net.Conn
	since time.Time
	plain bool // its server refused the pipe request: ask it through the socket
}

var clientPool connPool

// pipeFetches counts the fetches whose body came through a pipe (tests).
var pipeFetches atomic.Int64

// get returns the most recently used idle connection to addr, or nil; reused reports
// one, plain that its server refused the pipe request.
func (p *connPool) get(addr string) (c net.Conn, reused, plain bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(time.Now())
	list := p.idle[addr]
	if len(list) == 0 {
		return nil, false, false
	}
	ic := list[len(list)-1]
	list[len(list)-1] = idleConn{}
	if list = list[:len(list)-1]; len(list) == 0 {
		delete(p.idle, addr)
	} else {
		p.idle[addr] = list
	}
	return ic.c, true, ic.plain
}

func (p *connPool) put(addr string, c net.Conn, plain bool) {
	_ = c.SetDeadline(time.Time{})
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.expireLocked(now)
	if len(p.idle[addr]) >= poolMaxIdle {
		_ = c.Close()
		return
	}
	if p.idle == nil {
		p.idle = make(map[string][]idleConn)
	}
	p.idle[addr] = append(p.idle[addr], idleConn{c: c, since: now, plain: plain})
}

// expireLocked closes the connections idle for poolIdleTimeout.
func (p *connPool) expireLocked(now time.Time) {
	for addr, list := range p.idle {
		keep := list[:0]
		for _, ic := range list {
			if now.Sub(ic.since) >= poolIdleTimeout {
				_ = ic.c.Close()
			} else {
				keep = append(keep, ic)
			}
		}
		clear(list[len(keep):])
		if len(keep) == 0 {
			delete(p.idle, addr)
		} else {
			p.idle[addr] = keep
		}
	}
}

func (p *connPool) closeAddr(addr string) {
	p.mu.Lock()
	list := p.idle[addr]
	delete(p.idle, addr)
	p.mu.Unlock()
	for _, ic := range list {
		_ = ic.c.Close()
	}
}

func (p *connPool) closeAll() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, list := range idle {
		for _, ic := range list {
			_ = ic.c.Close()
		}
	}
}
