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
	"runtime/pprof"
	"strconv"
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
	// streamMagicRange opens a request for a range of an object's bytes (offset and
	// length follow the object ID); the answer is that of streamMagic with the range's
	// bytes as the body.
	streamMagicRange byte = 0xD3

	requestLen      = 1 + ids.ObjectIDLen // magic, object ID
	rangeRequestLen = requestLen + 8 + 8  // and offset, length
	headerLen       = 1 + 8 + 2           // status, size, error text length
	trailerLen      = 4                   // CRC-32C of the body

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
	statusBadRange   byte = 5 // a range request outside the object (size: the object's); the error text follows
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
	// poolMaxIdle idle connections are kept per address: as many as a Fetch split over
	// the most streams uses (maxStreams).
	poolMaxIdle = maxStreams
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
	// splitMin and rangeBytes: a client splits an object of more than splitMin bytes
	// into ranges of rangeBytes (FetchOptions.Streams).
	splitMin, rangeBytes int
}

var defaultTuning = tuning{writeChunk: 1 << 20, readChunk: 1 << 20, initialBody: 8 << 20, firstRequest: firstRequestTimeout,
	splitMin: splitMin, rangeBytes: rangeBytes}

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

// request is a client's request as a server read it.
type request struct {
	id   ids.ObjectID
	pipe bool // the client accepts the body through a pipe (streamMagicPipe)
	// ranged: only the bytes [off, off+n) of the object are asked for
	// (streamMagicRange); the server checks them against the object's size.
	ranged bool
	off, n uint64
}

// readRequest reads one request from c within timeout. A first byte that is not a magic
// fails at once, without waiting for the rest.
func readRequest(c net.Conn, timeout time.Duration) (request, error) {
	var req [rangeRequestLen]byte
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	want := requestLen
	for n := 0; n < want; {
		m, err := c.Read(req[n:want])
		n += m
		if n > 0 {
			switch req[0] {
			case streamMagic, streamMagicPipe:
			case streamMagicRange:
				want = rangeRequestLen
			default:
				return request{}, fmt.Errorf("%w: first byte 0x%02x", errNotStream, req[0])
			}
		}
		if err != nil {
			if n > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return request{}, err
		}
	}
	r := request{id: ids.ObjectID(req[1:requestLen]), pipe: req[0] == streamMagicPipe, ranged: req[0] == streamMagicRange}
	if r.ranged {
		r.off = binary.BigEndian.Uint64(req[requestLen:])
		r.n = binary.BigEndian.Uint64(req[requestLen+8:])
	}
	return r, nil
}

// rangeError says why a range request does not fit an object of size bytes, or returns
// "" if it does: at least one byte, all within the object.
func rangeError(off, n uint64, size int) string {
	switch {
	case n == 0:
		return fmt.Sprintf("range at %d of 0 bytes (a range has at least one)", off)
	case off > uint64(size) || n > uint64(size)-off:
		return fmt.Sprintf("range of %d bytes at %d ends past the object's %d bytes", n, off, size)
	}
	return ""
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
		req, err := readRequest(conn, timeout)
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
		req.pipe = req.pipe && sc.local
		err = s.answer(conn, req, out)
		<-s.slots
		if err != nil {
			if !s.isClosed() {
				log.Debug("transfer: stream server: sending an object", "object", req.id, "err", err)
			}
			return
		}
		if !s.setState(sc, idle) {
			return
		}
		timeout = serverIdleTimeout
	}
}

// answer sends the response to req: the header, and for an object found its bytes (for a
// range request, the range's) and their CRC-32C. Each chunk is hashed right after it is
// written, while the kernel's copy has left it in the cache (the last one before: the
// trailer goes with it). A range outside the object is answered with statusBadRange, the
// object's size and the reason.
//
// With TLS, out gathers the connection's records (16 KiB each) into writes of up to
// coalesceBytes, flushed when the answer is written. With req.pipe (a client on the Unix
// socket that accepts it), an object of pipeMinSize or more goes through a pipe if one
// can be made.
func (s *Server) answer(c net.Conn, req request, out *coalescer) (err error) {
	if out != nil {
		out.begin()
		defer func() {
			if ferr := out.end(); err == nil {
				err = ferr
			}
		}()
	}
	data, err := s.cfg.Get(s.ctx, req.id)
	var hdr [headerLen]byte
	if err == nil && req.ranged {
		if text := rangeError(req.off, req.n, len(data)); text != "" {
			hdr[0] = statusBadRange
			binary.BigEndian.PutUint64(hdr[1:], uint64(len(data)))
			binary.BigEndian.PutUint16(hdr[9:], uint16(len(text)))
			_ = c.SetWriteDeadline(time.Now().Add(serverWriteTimeout))
			bufs := net.Buffers{hdr[:], []byte(text)}
			_, err := bufs.WriteTo(c)
			return err
		}
	}
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
	if req.ranged {
		data = data[req.off : req.off+req.n] // the header keeps the whole object's size
	} else if req.pipe && pipeSupported && !s.tune.noPipe && len(data) >= pipeMinSize {
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
	// Streams is the most connections an object of more than 32 MiB (splitMin) is
	// fetched over at once, in ranges of 16 MiB (rangeBytes), each connection read by a
	// goroutine of its own (with TLS, its decryption then runs on a core of its own); at
	// most 8 (maxStreams). 0 means DefaultStreams: min(4, GOMAXPROCS) over TLS, 1
	// over plain TCP, whose one stream already runs at memory speed. Only for a size
	// the caller knows (Size); never over the Unix socket (one stream, or a pipe).
	Streams int
}

// Splitting an object over several connections (FetchOptions.Streams).
const (
	// maxStreams is the most connections one Fetch uses.
	maxStreams = 8
	// splitMin: an object of more bytes than this is split into ranges.
	splitMin = 32 << 20
	// rangeBytes is the size of a range (the last one is the rest): a range costs a
	// round trip on its connection, ~1% of its time at 1 GB/s and 0.2 ms.
	rangeBytes = 16 << 20
)

// DefaultStreams returns the streams a Fetch uses when FetchOptions.Streams is 0: with
// TLS each stream's decryption takes a core, about 1.1-1.3 GB/s per core here, so a
// fast link needs several; plain TCP runs one stream at memory speed.
func DefaultStreams(tlsOn bool) int {
	if !tlsOn {
		return 1
	}
	return min(4, runtime.GOMAXPROCS(0))
}

// streams returns how many connections to fetch an object of opt.Size bytes from addr
// over: 1 unless the size is known and above splitMin, addr is TCP and more than one is
// allowed.
func (opt FetchOptions) streams(addr string, tune tuning) int {
	if opt.Size <= int64(tune.splitMin) || strings.HasPrefix(addr, UnixPrefix) {
		return 1
	}
	k := opt.Streams
	if k <= 0 {
		k = DefaultStreams(opt.TLS != nil)
	}
	ranges := (opt.Size + int64(tune.rangeBytes) - 1) / int64(tune.rangeBytes)
	return int(min(int64(k), int64(maxStreams), ranges))
}

// Fetch fetches object id from the stream Server at addr and returns its bytes, checked
// against their size and CRC-32C. Errors wrap ErrNotFound, ErrUnreadable, ErrCorrupt, the
// context's error, or the network's error (a refused dial, os.ErrDeadlineExceeded when
// the server stays silent for opt.Timeout), with the object ID and the address.
//
// An object of a known size (opt.Size) above 32 MiB comes in ranges over several
// connections at once (opt.Streams); any range that fails fails the whole fetch.
// Connections are kept for reuse, a few per address (see CloseIdleConnections).
// Cancelling ctx closes the connections at once.
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
	if opt.Size < 0 || opt.Size > MaxStreamSize {
		return nil, fetchErrorf(addr, id, "size %d outside 0..%d (MaxStreamSize)", opt.Size, int64(MaxStreamSize))
	}
	if k := opt.streams(addr, tune); k > 1 {
		data, err := fetchRanges(ctx, pool, key, addr, id, opt, tune, k)
		if !errors.Is(err, errNoRanges) {
			return data, err
		}
		// A server that predates range requests: ask for the whole object below.
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

// fetchRanges fetches an object of opt.Size bytes as ranges of tune.rangeBytes over k
// connections at once, each read by a goroutine of its own straight into its slice of
// the one buffer. Any range that fails ends the whole fetch with its error: the others'
// connections are closed (a context of their own is cancelled), every goroutine ends
// before it returns, and no bytes are returned. An error wrapping errNoRanges means the
// server does not know range requests.
func fetchRanges(ctx context.Context, pool *connPool, key, addr string, id ids.ObjectID, opt FetchOptions, tune tuning, k int) ([]byte, error) {
	buf := make([]byte, opt.Size)
	ranges := (opt.Size + int64(tune.rangeBytes) - 1) / int64(tune.rangeBytes)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64 // the next range to fetch
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for w := range k {
		wg.Go(func() {
			// A label per stream: a CPU profile shows each stream's work (TLS's
			// decryption) in a goroutine of its own (pprof -tags).
			pprof.SetGoroutineLabels(pprof.WithLabels(rctx, pprof.Labels("transfer_stream", strconv.Itoa(w))))
			c, reused, _ := pool.get(key)
			defer func() {
				if c != nil {
					pool.put(key, c, false)
				}
			}()
			for {
				i := next.Add(1) - 1
				if i >= ranges {
					return
				}
				off := i * int64(tune.rangeBytes)
				rng := &span{off: off, dst: buf[off:min(off+int64(tune.rangeBytes), opt.Size)]}
				var err error
				c, reused, err = fetchRange(rctx, pool, key, addr, id, opt, tune, c, reused, rng)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel() // the others stop, their connections closed
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return buf, nil
}

// errNoRanges: the server closed a new connection at a range request (it predates them).
var errNoRanges = errors.New("the server closed a new connection at a range request")

// fetchRange fetches rng on c (nil: a new connection), and returns the connection to go
// on with (nil if it cannot be reused). As fetch, it retries once on a new connection when
// a reused one turns out closed by the server.
func fetchRange(ctx context.Context, pool *connPool, key, addr string, id ids.ObjectID, opt FetchOptions, tune tuning,
	c net.Conn, reused bool, rng *span) (net.Conn, bool, error) {
	for {
		dialled := c == nil // a new connection, which has answered nothing yet
		if c == nil {
			var err error
			if c, err = dial(ctx, addr, opt, tune); err != nil {
				if ctx.Err() != nil {
					return nil, false, fetchErrorf(addr, id, "%w", ctx.Err())
				}
				return nil, false, fetchErrorf(addr, id, "range of %d bytes at %d: connect: %w", len(rng.dst), rng.off, err)
			}
			reused = false
		}
		_, keep, stale, err := exchange(ctx, c, addr, id, opt, tune, false, rng)
		if !keep {
			_ = c.Close()
			c = nil
		}
		if stale && reused {
			pool.closeAddr(key)
			c, reused = nil, false
			continue
		}
		if stale && dialled {
			// A new connection closed at the request, before any byte of an answer: a
			// server that predates range requests closes a connection that opens with
			// streamMagicRange. (One that answered ranges before and is closed now is
			// a server that went away: that error stands.)
			return nil, false, fmt.Errorf("%w: %w", errNoRanges, err)
		}
		if err != nil && c != nil {
			pool.put(key, c, false) // an error answered in full (e.g. not found): c is still good
			c = nil
		}
		return c, reused, err
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
	return exchange(ctx, c, addr, id, opt, tune, pipe, nil)
}

// span is a range of an object's bytes asked for (streamMagicRange), and the slice of
// the result buffer its bytes are read into (len(dst) bytes from off).
type span struct {
	off int64
	dst []byte
}

// exchange is fetchOn, and with rng a range request instead (over a TCP connection; not
// with pipe): the body is read into rng.dst, which is also what it returns. The whole
// object's size must be known (opt.Size): the header must announce it.
func exchange(ctx context.Context, c net.Conn, addr string, id ids.ObjectID, opt FetchOptions, tune tuning, pipe bool, rng *span) (data []byte, keep, stale bool, err error) {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer func() {
		if !stop() { // ctx ended: c is closed or being closed
			keep, stale = false, false
			data, err = nil, fetchErrorf(addr, id, "%w", ctx.Err())
		}
	}()
	where := "" // the range's, in error messages
	if rng != nil {
		where = fmt.Sprintf("range of %d bytes at %d: ", len(rng.dst), rng.off)
	}
	fail := func(format string, args ...any) ([]byte, bool, bool, error) {
		return nil, false, false, fetchErrorf(addr, id, where+format, args...)
	}

	var reqBuf [rangeRequestLen]byte
	req := reqBuf[:requestLen]
	req[0] = streamMagic
	if pipe {
		req[0] = streamMagicPipe
	}
	copy(req[1:], id[:])
	if rng != nil {
		req[0] = streamMagicRange
		req = binary.BigEndian.AppendUint64(req, uint64(rng.off))
		req = binary.BigEndian.AppendUint64(req, uint64(len(rng.dst)))
	}
	_ = c.SetWriteDeadline(time.Now().Add(opt.Timeout))
	if _, err := c.Write(req); err != nil {
		return nil, false, isStale(err), fetchErrorf(addr, id, where+"send request: %w", err)
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
		return nil, false, isStale(err), fetchErrorf(addr, id, where+"read response header: %w", err)
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
		case statusBadRange:
			if rng == nil {
				return fail("%w: a range refused, none asked for", ErrCorrupt)
			}
			if size != uint64(opt.Size) {
				// The range was chosen for opt.Size: the server's object has another size.
				return nil, true, false, fetchErrorf(addr, id, where+"%w: the server's object has %d bytes, not %d: %s", ErrCorrupt, size, opt.Size, text)
			}
			return nil, true, false, fetchErrorf(addr, id, where+"server refused the range: %s", text)
		case statusNotFound:
			sentinel = ErrNotFound
		case statusUnreadable:
			sentinel = ErrUnreadable
		case statusFailed:
			return nil, true, false, fetchErrorf(addr, id, where+"server failed: %s", text)
		default:
			return fail("%w: unknown status %d", ErrCorrupt, status)
		}
		return nil, true, false, fetchErrorf(addr, id, where+"%w: server says: %s", sentinel, text)
	}
	if textLen != 0 || size > MaxStreamSize || size > math.MaxInt {
		closeFDs(fds)
		return fail("%w: response header says size %d, error text %d bytes", ErrCorrupt, size, textLen)
	}
	if (opt.Size > 0 || rng != nil) && size != uint64(opt.Size) {
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
	var dst []byte
	if rng != nil {
		dst, size = rng.dst, uint64(len(rng.dst))
	}
	buf, sum, msg, err := readBodyTo(c, "connection", size, dst, opt, tune, check)
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
	return readBodyTo(r, what, size, nil, opt, tune, check)
}

// readBodyTo is readBody into dst (of size bytes) when dst is not nil.
func readBodyTo(r deadlineReader, what string, size uint64, dst []byte, opt FetchOptions, tune tuning, check bool) (buf []byte, sum uint32, msg string, err error) {
	switch {
	case dst != nil:
		buf = dst[:size]
	case opt.Size > 0:
		buf = make([]byte, size)
	default:
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
