package transfer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/ids"
)

// dialIdle opens n connections to addr that send nothing (or, with partial, the first
// bytes of a request and nothing more) and closes them when the test ends.
func dialIdle(t *testing.T, addr string, n int, partial bool) {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		conns = append(conns, c)
		if partial {
			if _, err := c.Write([]byte{streamMagic, 1, 2, 3}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// floodTuning gives idle connections far longer than any fetch of the flood tests may
// take (floodFetchDeadline): a fetch that succeeds did not wait for one to time out.
var floodTuning = func() tuning {
	t := defaultTuning
	t.firstRequest = 10 * time.Minute
	return t
}()

const floodFetchDeadline = time.Minute

// TestStreamIdleFlood: 500 connections that never ask for anything (some stopping halfway
// through a request) do not hold up a real 8 MiB fetch. They used to fill the 64 slots
// until they timed out (a cross-node Get took 13.7 s): now a slot is taken only by a
// request, and the oldest of the connections without one are closed to make room. Here
// they would time out only after 10 minutes, and each fetch must succeed within one.
func TestStreamIdleFlood(t *testing.T) {
	var objs objectMap
	srv := newTunedStreamServer(t, ServerConfig{Get: objs.get}, floodTuning)
	id := ids.PutID(ids.NewRootTaskID(), 1)
	data := randomBytes(8<<20, 7)
	objs.set(id, data)
	dialIdle(t, srv.Addr(), 400, false)
	dialIdle(t, srv.Addr(), 100, true)
	for round := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), floodFetchDeadline)
		start := time.Now()
		got, err := fetch(ctx, testPool(t), srv.Addr(), id, FetchOptions{Size: int64(len(data))}, defaultTuning)
		cancel()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("round %d: fetch of 8 MiB behind 500 idle connections: %v after %v", round, err, time.Since(start))
		}
		t.Logf("round %d: fetched in %v", round, time.Since(start))
	}
	if n := srv.evicted.Load(); n < 500-DefaultMaxWaiting {
		t.Errorf("%d idle connections closed to make room, want at least %d", n, 500-DefaultMaxWaiting)
	}
	srv.mu.Lock()
	open, waiting := len(srv.conns), srv.waiting
	srv.mu.Unlock()
	if open > DefaultMaxWaiting+DefaultMaxConns || waiting > DefaultMaxWaiting {
		t.Errorf("%d connections open, %d waiting: over the bounds %d + %d", open, waiting, DefaultMaxWaiting, DefaultMaxConns)
	}
}

// TestStreamFirstRequestTimeout: a connection that sends nothing, or half a request, is
// closed after firstRequestTimeout.
func TestStreamFirstRequestTimeout(t *testing.T) {
	srv := newStreamServer(t, ServerConfig{Get: (&objectMap{}).get})
	for _, partial := range [][]byte{nil, {streamMagic, 9, 9}} {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = c.Write(partial)
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(firstRequestTimeout + 3*time.Second))
		n, err := c.Read(make([]byte, 10))
		if d := time.Since(start); n != 0 || err == nil || errors.Is(err, context.DeadlineExceeded) || d > firstRequestTimeout+time.Second {
			t.Fatalf("sent %d bytes: read %d bytes, %v after %v; want the connection closed after %v", len(partial), n, err, d, firstRequestTimeout)
		}
	}
}

// TestStreamGarbage: garbage, truncated requests and requests followed by junk, on many
// connections, leave the server serving with bounded memory and no goroutine left behind;
// a connection that does not open with the magic byte is closed at once.
func TestStreamGarbage(t *testing.T) {
	var objs objectMap
	srv := newStreamServer(t, ServerConfig{Get: objs.get})
	id := ids.PutID(ids.NewRootTaskID(), 1)
	objs.set(id, []byte("still here"))
	baseG := runtime.NumGoroutine()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rng := rand.New(rand.NewPCG(1, 2))
	junk := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	cases := [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, // a huge length prefix, to a protocol without one
		append([]byte{streamMagic}, id[:10]...),          // truncated
		append(append([]byte{streamMagic}, id[:]...), junk(100)...),
	}
	for i := range 300 {
		var b []byte
		if i < len(cases)*50 {
			b = cases[i%len(cases)]
		} else {
			b = junk(1 + rng.IntN(4096))
			if b[0] == streamMagic {
				b[0] = 0
			}
		}
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write(b)
		_ = c.(*net.TCPConn).CloseWrite()
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := io.ReadAll(c)
		c.Close()
		if err != nil && !strings.Contains(err.Error(), "reset") {
			t.Fatalf("case %d: %v", i, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("case %d: the server took %v to close", i, d)
		}
		if b[0] != streamMagic && len(resp) != 0 {
			t.Fatalf("case %d: %d bytes of response to garbage", i, len(resp))
		}
	}
	got, err := fetch(context.Background(), testPool(t), srv.Addr(), id, FetchOptions{}, defaultTuning)
	if err != nil || string(got) != "still here" {
		t.Fatalf("after the garbage: %q, %v", got, err)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 8<<20 {
		t.Errorf("heap grew by %d bytes", grown)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseG+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseG+2 {
		t.Errorf("%d goroutines, %d before the garbage", n, baseG)
	}
}

// TestStreamAnnouncedSize: a peer that announces a size is not believed. With the
// object's size known, another announced size is ErrCorrupt before anything is allocated
// for it; unknown, the buffer grows with what arrives, so a peer that announces 512 GiB
// and sends 1 MiB costs a few MiB.
func TestStreamAnnouncedSize(t *testing.T) {
	resp := append(header(statusOK, 1<<39, ""), make([]byte, 1<<20)...) // made once: the fake's allocations count too
	addr := fakeServer(t, func(c net.Conn, _ ids.ObjectID) { _, _ = c.Write(resp) })
	id := ids.PutID(ids.NewRootTaskID(), 1)
	for _, c := range []struct {
		size  int64
		limit uint64
		text  string
	}{
		{1 << 20, 1 << 20, "response header says size 549755813888, the object has 1048576"},
		{0, 32 << 20, "connection closed after 1048576 of 549755813888 bytes"},
	} {
		var err error
		fuzzing.CheckAlloc(t, c.limit, "a fetch told 512 GiB", func() {
			_, err = fetch(context.Background(), testPool(t), addr, id, FetchOptions{Size: c.size, Timeout: 5 * time.Second}, defaultTuning)
		})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.text) {
			t.Fatalf("known size %d: %v", c.size, err)
		}
	}
}
