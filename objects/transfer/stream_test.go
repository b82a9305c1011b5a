package transfer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/ids"
)

// objectMap serves the objects of a map; IDs not in it are ErrNotFound.
type objectMap struct {
	mu   sync.Mutex
	objs map[ids.ObjectID][]byte
}

func (m *objectMap) set(id ids.ObjectID, b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objs == nil {
		m.objs = make(map[ids.ObjectID][]byte)
	}
	m.objs[id] = b
}

func (m *objectMap) get(_ context.Context, id ids.ObjectID) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objs[id]
	if !ok {
		return nil, fmt.Errorf("shard: object %s: %w", id, ErrNotFound)
	}
	return b, nil
}

func newStreamServer(t testing.TB, cfg ServerConfig) *Server {
	t.Helper()
	return newTunedStreamServer(t, cfg, defaultTuning)
}

// newTunedStreamServer is newStreamServer with the server's tuning given.
func newTunedStreamServer(t testing.TB, cfg ServerConfig, tune tuning) *Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	s, err := newServer(cfg, tune)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// testPool is a pool of the test's own, so tests do not share connections.
func testPool(t testing.TB) *connPool {
	p := &connPool{}
	t.Cleanup(p.closeAll)
	return p
}

func TestStream(t *testing.T) {
	var objs objectMap
	srv := newStreamServer(t, ServerConfig{Get: objs.get})
	if host, port, err := net.SplitHostPort(srv.Addr()); err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("Addr() = %q", srv.Addr())
	}
	pool := testPool(t)
	root := ids.NewRootTaskID()
	for i, data := range [][]byte{{}, randomBytes(1, 1), randomBytes(1<<20+3, 2), randomBytes(50<<20, 3)} {
		id := ids.PutID(root, uint32(i+1))
		objs.set(id, data)
		for round := range 2 {
			got, err := fetch(context.Background(), pool, srv.Addr(), id, FetchOptions{}, defaultTuning)
			if err != nil {
				t.Fatalf("%d bytes, round %d: %v", len(data), round, err)
			}
			if !bytes.Equal(got, data) || got == nil {
				t.Fatalf("%d bytes, round %d: fetched %d bytes, differing", len(data), round, len(got))
			}
		}
	}
	// One connection served every fetch.
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections accepted, want 1 (reused)", n)
	}
}

// TestStreamPublic goes through Fetch and its shared pool.
func TestStreamPublic(t *testing.T) {
	var objs objectMap
	srv := newStreamServer(t, ServerConfig{Get: objs.get})
	t.Cleanup(CloseIdleConnections)
	id := ids.PutID(ids.NewRootTaskID(), 1)
	data := randomBytes(3<<20+5, 4)
	objs.set(id, data)
	for range 3 {
		got, err := Fetch(context.Background(), srv.Addr(), id, FetchOptions{Timeout: 10 * time.Second})
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetched %d bytes: %v", len(got), err)
		}
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections accepted, want 1 (reused)", n)
	}
	CloseIdleConnections()
	if _, err := Fetch(context.Background(), srv.Addr(), id, FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := srv.accepted.Load(); n != 2 {
		t.Errorf("%d connections accepted after CloseIdleConnections, want 2", n)
	}
}

func TestStreamErrors(t *testing.T) {
	root := ids.NewRootTaskID()
	missing, broken, failing := ids.PutID(root, 1), ids.PutID(root, 2), ids.PutID(root, 3)
	long := strings.Repeat("x", 100_000)
	srv := newStreamServer(t, ServerConfig{Get: func(_ context.Context, id ids.ObjectID) ([]byte, error) {
		switch id {
		case missing:
			return nil, fmt.Errorf("object %s: %w", id, ErrNotFound)
		case broken:
			return nil, fmt.Errorf("%w: spill file fails its checksum", ErrUnreadable)
		case failing:
			return nil, errors.New("store did not answer " + long)
		}
		return []byte("ok"), nil
	}})
	pool := testPool(t)
	for _, c := range []struct {
		id       ids.ObjectID
		sentinel error
		text     string
	}{
		{missing, ErrNotFound, ErrNotFound.Error()},
		{broken, ErrUnreadable, "spill file fails its checksum"},
		{failing, nil, "store did not answer xxx"},
	} {
		_, err := fetch(context.Background(), pool, srv.Addr(), c.id, FetchOptions{}, defaultTuning)
		if err == nil || c.sentinel != nil && !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.text) ||
			!strings.Contains(err.Error(), c.id.String()) || !strings.Contains(err.Error(), srv.Addr()) {
			t.Fatalf("object %s: %.300v", c.id, err)
		}
		if c.sentinel == nil && (errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnreadable) || errors.Is(err, ErrCorrupt)) {
			t.Fatalf("a failure is not a sentinel: %.300v", err)
		}
	}
	// The connection stays usable after error replies.
	if got, err := fetch(context.Background(), pool, srv.Addr(), ids.PutID(root, 4), FetchOptions{}, defaultTuning); err != nil || string(got) != "ok" {
		t.Fatalf("after errors: %q, %v", got, err)
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections accepted, want 1", n)
	}
	if _, err := NewServer(ServerConfig{}); err == nil {
		t.Error("a server without Get")
	}
	if _, err := NewServer(ServerConfig{Addr: "127.0.0.1:-1", Get: srv.cfg.Get}); err == nil {
		t.Error("a server on a bad address")
	}
}

// fakeServer accepts connections on loopback and lets respond answer the first request of
// each; the connection closes when respond returns. It stops when the test ends.
func fakeServer(t *testing.T, respond func(c net.Conn, id ids.ObjectID)) string {
	t.Helper()
	return loopbackServer(t, func(c net.Conn) {
		var req [requestLen]byte
		if _, err := io.ReadFull(c, req[:]); err != nil || req[0] != streamMagic {
			return
		}
		respond(c, ids.ObjectID(req[1:]))
	})
}

// loopbackServer accepts connections on loopback and serves each with serve on a
// goroutine of its own, closing it when serve returns. When the test ends it stops
// listening, closes every connection and waits for the goroutines.
func loopbackServer(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	})
	return ln.Addr().String()
}

func header(status byte, size uint64, text string) []byte {
	h := make([]byte, headerLen, headerLen+len(text))
	h[0] = status
	binary.BigEndian.PutUint64(h[1:], size)
	binary.BigEndian.PutUint16(h[9:], uint16(len(text)))
	return append(h, text...)
}

func crcTrailer(data []byte) []byte {
	return binary.BigEndian.AppendUint32(nil, crc32.Checksum(data, castagnoli))
}

// TestStreamCorrupt: a response that fails a check is ErrCorrupt, never bytes.
func TestStreamCorrupt(t *testing.T) {
	data := randomBytes(2<<20+11, 5)
	whole := func(c net.Conn) {
		_, _ = c.Write(append(append(header(statusOK, uint64(len(data)), ""), data...), crcTrailer(data)...))
	}
	for _, c := range []struct {
		name    string
		respond func(c net.Conn)
		corrupt bool
	}{
		{"intact", whole, false},
		{"wrong checksum", func(c net.Conn) {
			tr := crcTrailer(data)
			tr[3] ^= 1
			_, _ = c.Write(append(append(header(statusOK, uint64(len(data)), ""), data...), tr...))
		}, true},
		{"flipped byte", func(c net.Conn) {
			bad := bytes.Clone(data)
			bad[1<<20+7] ^= 0x40
			_, _ = c.Write(append(append(header(statusOK, uint64(len(bad)), ""), bad...), crcTrailer(data)...))
		}, true},
		{"truncated body", func(c net.Conn) {
			_, _ = c.Write(append(header(statusOK, uint64(len(data)), ""), data[:len(data)/2]...))
		}, true},
		{"no trailer", func(c net.Conn) {
			_, _ = c.Write(append(header(statusOK, uint64(len(data)), ""), data...))
		}, true},
		{"half a trailer", func(c net.Conn) {
			_, _ = c.Write(append(append(header(statusOK, uint64(len(data)), ""), data...), crcTrailer(data)[:2]...))
		}, true},
		{"absurd size", func(c net.Conn) { _, _ = c.Write(header(statusOK, MaxStreamSize+1, "")) }, true},
		{"huge size", func(c net.Conn) { _, _ = c.Write(header(statusOK, 1<<63+5, "")) }, true},
		{"text with ok", func(c net.Conn) { _, _ = c.Write(header(statusOK, 0, "hm")) }, true},
		{"unknown status", func(c net.Conn) { _, _ = c.Write(header(9, 0, "")) }, true},
		{"half a header", func(c net.Conn) { _, _ = c.Write(header(statusOK, 0, "")[:5]) }, false},
		{"closed at once", func(net.Conn) {}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := fakeServer(t, func(conn net.Conn, _ ids.ObjectID) { c.respond(conn) })
			id := ids.PutID(ids.NewRootTaskID(), 1)
			got, err := fetch(context.Background(), testPool(t), addr, id, FetchOptions{Timeout: 5 * time.Second}, defaultTuning)
			switch {
			case c.name == "intact":
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("intact: %v", err)
				}
			case err == nil || got != nil:
				t.Fatalf("got %d bytes, %v", len(got), err)
			case c.corrupt != errors.Is(err, ErrCorrupt):
				t.Fatalf("corrupt %v: %v", c.corrupt, err)
			case !strings.Contains(err.Error(), id.String()) || !strings.Contains(err.Error(), addr):
				t.Fatalf("no object or address in %v", err)
			}
		})
	}
}

// stallingServer announces size bytes, sends the first MiB and then nothing.
func stallingServer(t *testing.T, size uint64) string {
	stop := make(chan struct{})
	addr := fakeServer(t, func(c net.Conn, _ ids.ObjectID) {
		_, _ = c.Write(append(header(statusOK, size, ""), make([]byte, 1<<20)...))
		<-stop
	})
	t.Cleanup(func() { close(stop) }) // runs before fakeServer's cleanup
	return addr
}

func TestStreamCancel(t *testing.T) {
	addr := stallingServer(t, 50<<20)
	id := ids.PutID(ids.NewRootTaskID(), 1)
	pool := testPool(t)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fetch(ctx, pool, addr, id, FetchOptions{}, defaultTuning); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: %v", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	if _, err := fetch(ctx, pool, addr, id, FetchOptions{}, defaultTuning); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), id.String()) {
		t.Fatalf("cancelled mid-transfer: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancelled fetch returned after %v", d)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := fetch(ctx, pool, addr, id, FetchOptions{}, defaultTuning); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}

	// The idle timeout: the server sends nothing for Timeout.
	start = time.Now()
	_, err := fetch(context.Background(), pool, addr, id, FetchOptions{Timeout: 100 * time.Millisecond}, defaultTuning)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("idle timeout: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("idle timeout after %v", d)
	}
	// None of these left a connection to reuse.
	if c, _, _ := pool.get(addr); c != nil {
		t.Fatal("a failed fetch's connection was kept")
	}
}

// TestStreamDeadAddress: nothing listens at the address.
func TestStreamDeadAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	id := ids.PutID(ids.NewRootTaskID(), 1)
	start := time.Now()
	_, err = Fetch(context.Background(), addr, id, FetchOptions{})
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), id.String()) {
		t.Fatalf("dead address: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("dead address failed after %v", d)
	}
	if _, err := Fetch(context.Background(), "127.0.0.1", id, FetchOptions{}); err == nil {
		t.Fatal("no port")
	}
}

// TestStreamClose: Close ends idle connections, transfers in progress and Gets waiting,
// and returns.
func TestStreamClose(t *testing.T) {
	big := randomBytes(50<<20, 6)
	root := ids.NewRootTaskID()
	small, large, blocked := ids.PutID(root, 1), ids.PutID(root, 2), ids.PutID(root, 3)
	getting := make(chan struct{})
	srv, err := NewServer(ServerConfig{Logger: quiet, Get: func(ctx context.Context, id ids.ObjectID) ([]byte, error) {
		switch id {
		case small:
			return []byte("small"), nil
		case large:
			return big, nil
		}
		close(getting)
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	if err != nil {
		t.Fatal(err)
	}
	pool := testPool(t)
	// An idle connection, kept by the pool.
	if _, err := fetch(context.Background(), pool, srv.Addr(), small, FetchOptions{}, defaultTuning); err != nil {
		t.Fatal(err)
	}
	// A client that asks for 50 MiB and reads none: the server blocks writing.
	raw, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write(append([]byte{streamMagic}, large[:]...)); err != nil {
		t.Fatal(err)
	}
	// A fetch whose Get waits.
	fetched := make(chan error, 1)
	pool2 := testPool(t)
	go func() {
		_, err := fetch(context.Background(), pool2, srv.Addr(), blocked, FetchOptions{}, defaultTuning)
		fetched <- err
	}()
	<-getting
	time.Sleep(50 * time.Millisecond) // let the raw request arrive
	start := time.Now()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	select {
	case err := <-fetched:
		if err == nil {
			t.Fatal("the fetch in progress succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the fetch in progress did not end")
	}
	// The raw client gets part of the object, then the end of the stream.
	_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := io.Copy(io.Discard, raw); err != nil && !errors.Is(err, syscall.ECONNRESET) || n >= int64(len(big)) {
		t.Fatalf("raw client read %d bytes, %v", n, err)
	}
	// The pooled connection is stale; the retry finds no server.
	if _, err := fetch(context.Background(), pool, srv.Addr(), small, FetchOptions{}, defaultTuning); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("after Close: %v", err)
	}
}

// TestStreamMaxConns: at MaxWaiting, a new connection closes an idle one (whose client
// retries on a new connection); at MaxConns, a request waits for a busy one to finish.
func TestStreamMaxConns(t *testing.T) {
	root := ids.NewRootTaskID()
	fast, slow := ids.PutID(root, 1), ids.PutID(root, 2)
	release := make(chan struct{})
	slowStarted := make(chan struct{}, 1)
	srv := newStreamServer(t, ServerConfig{MaxConns: 1, MaxWaiting: 1, Get: func(ctx context.Context, id ids.ObjectID) ([]byte, error) {
		if id == slow {
			slowStarted <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return id[:], nil
	}})
	poolA, poolB := testPool(t), testPool(t)
	check := func(pool *connPool, id ids.ObjectID) {
		t.Helper()
		got, err := fetch(context.Background(), pool, srv.Addr(), id, FetchOptions{Timeout: 10 * time.Second}, defaultTuning)
		if err != nil || string(got) != string(id[:]) {
			t.Fatalf("fetch: %v", err)
		}
	}
	check(poolA, fast) // A's connection idles in poolA
	check(poolB, fast) // evicts it
	check(poolA, fast) // A's stale connection fails; A retries on a new one, evicting B's
	if n := srv.accepted.Load(); n != 3 {
		t.Errorf("%d connections accepted, want 3", n)
	}

	// A busy connection is not evicted: B waits for A's slow fetch.
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(poolA, slow)
	}()
	<-slowStarted
	bDone := make(chan struct{})
	go func() {
		defer close(bDone)
		check(poolB, fast)
	}()
	select {
	case <-bDone:
		t.Fatal("a second connection was served beyond MaxConns")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-done
	<-bDone
}

// TestStreamBadRequest: a connection that does not open with the magic byte is closed.
func TestStreamBadRequest(t *testing.T) {
	srv := newStreamServer(t, ServerConfig{Get: (&objectMap{}).get})
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 100)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes, %v; want the connection closed", n, err)
	}
}

// TestStreamConcurrent: fetchers at once, each fetching every object, some of them
// missing, through the shared pool.
func TestStreamConcurrent(t *testing.T) {
	var objs objectMap
	srv := newStreamServer(t, ServerConfig{Get: objs.get})
	t.Cleanup(CloseIdleConnections)
	root := ids.NewRootTaskID()
	var list []ids.ObjectID
	for i, size := range []int{0, 1, 4 << 10, 1 << 20, 1<<20 + 1, 3<<20 + 7} {
		id := ids.PutID(root, uint32(i+1))
		objs.set(id, randomBytes(size, byte(10+i)))
		list = append(list, id)
	}
	missing := ids.PutID(root, 100)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for g := range cap(errs) {
		wg.Go(func() {
			for round := range 3 {
				for k := range list {
					id := list[(k+g)%len(list)]
					want, _ := objs.get(context.Background(), id)
					got, err := Fetch(context.Background(), srv.Addr(), id, FetchOptions{Timeout: 10 * time.Second})
					if err == nil && !bytes.Equal(got, want) {
						err = errors.New("wrong bytes")
					}
					if err != nil {
						errs <- fmt.Errorf("fetcher %d round %d, %d bytes: %w", g, round, len(want), err)
						return
					}
				}
				if _, err := Fetch(context.Background(), srv.Addr(), missing, FetchOptions{}); !errors.Is(err, ErrNotFound) {
					errs <- fmt.Errorf("fetcher %d: missing object: %v", g, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := srv.accepted.Load(); n > 8+8 {
		t.Errorf("%d connections for 8 fetchers", n)
	}
}

// The benchmark's server process (see BenchmarkStream): the test binary run with
// streamServeEnv set to an object size serves that many random bytes for any ID, prints
// its address and stops when its standard input closes.
const streamServeEnv = "TRANSFER_STREAM_SERVE_BYTES"

// streamTLSEnv, with streamServeEnv, names a directory of credentials (identity.FilesIn)
// the server process serves mutual TLS with.
const streamTLSEnv = "TRANSFER_STREAM_TLS_DIR"

// streamUnixEnv, with streamServeEnv, is a Unix socket's path the server process also
// listens on (ServerConfig.Socket); it prints that address instead of the TCP one.
const streamUnixEnv = "TRANSFER_STREAM_UNIX"

// streamProfileEnv, with streamServeEnv, is a file the server process writes a CPU
// profile to (set it in the benchmark's environment to profile the serving side).
const streamProfileEnv = "TRANSFER_STREAM_CPUPROFILE"

func TestMain(m *testing.M) {
	if v := os.Getenv(streamServeEnv); v != "" {
		os.Exit(serveStreamProcess(v))
	}
	os.Exit(m.Run())
}

func serveStreamProcess(size string) int {
	n, err := strconv.Atoi(size)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	data := randomBytes(n, 42)
	cfg := ServerConfig{Logger: quiet, Get: func(context.Context, ids.ObjectID) ([]byte, error) { return data, nil }}
	if dir := os.Getenv(streamTLSEnv); dir != "" {
		creds, err := identity.Load(identity.FilesIn(dir))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cfg.TLS = creds.PeerServerTLS()
	}
	cfg.Socket = os.Getenv(streamUnixEnv)
	if path := os.Getenv(streamProfileEnv); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	srv, err := NewServer(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if cfg.Socket != "" {
		fmt.Println(srv.Socket())
	} else {
		fmt.Println(srv.Addr())
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// readAddr reads the server process's first line.
func readAddr(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	return strings.TrimSpace(line), err
}
