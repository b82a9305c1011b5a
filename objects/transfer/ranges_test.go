package transfer

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/ids"
)

// rangeTuning splits objects of more than 1 MiB into ranges of 256 KiB, so that tests
// cover many ranges with small objects.
var rangeTuning = func() tuning {
	t := defaultTuning
	t.splitMin, t.rangeBytes = 1<<20, 256<<10
	return t
}()

// checkGoroutines fails t unless the goroutines are back to before within a bounded
// wait (the fetch's and, after their Close, the servers').
func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	eventually.True(t, 10*time.Second, "goroutines back to where they were", func() bool { return runtime.NumGoroutine() <= before })
}

// TestStreamRanges: an object of more than splitMin bytes comes over several connections,
// exact, over plain TCP and mutual TLS, for sizes at and around the threshold and not a
// multiple of the range; at the threshold and below, one connection.
func TestStreamRanges(t *testing.T) {
	ca, srvCreds := clusterCreds(t, identity.RoleNode)
	clientTLS := issueFor(t, ca, "driver", identity.RoleDriver).PeerClientTLS()
	tune := rangeTuning
	for _, secure := range []bool{false, true} {
		var objs objectMap
		cfg := ServerConfig{Get: objs.get}
		var ctls *tls.Config
		if secure {
			cfg.TLS, ctls = srvCreds.PeerServerTLS(), clientTLS
		}
		srv := newStreamServer(t, cfg)
		root := ids.NewRootTaskID()
		for i, c := range []struct {
			size, streams, conns int // conns: the connections the fetch opens
		}{
			{tune.splitMin, 4, 1},                     // the threshold: one stream
			{tune.splitMin + 1, 4, 4},                 // 1 byte over: 5 ranges, the last of 1 byte
			{3*tune.rangeBytes + 12345 + 1<<20, 3, 3}, // not a multiple of the range
			{tune.splitMin + 7, 2, 2},
			{tune.splitMin + 1, 1, 1}, // Streams 1: one connection
			{4<<20 + 3, 16, maxStreams},
		} {
			id := ids.PutID(root, uint32(i+1))
			data := randomBytes(c.size, byte(i+1))
			objs.set(id, data)
			pool := testPool(t)
			before, _ := srv.Accepted()
			got, err := fetch(context.Background(), pool, srv.Addr(), id, FetchOptions{Size: int64(c.size), Streams: c.streams, TLS: ctls}, tune)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("tls %v, %d bytes over %d streams: %v (%d bytes, equal %v)", secure, c.size, c.streams, err, len(got), bytes.Equal(got, data))
			}
			// A stream that finds no range left opens no connection: at most conns. The
			// connections are kept: fetching again opens none beyond them.
			if got, err = fetch(context.Background(), pool, srv.Addr(), id, FetchOptions{Size: int64(c.size), Streams: c.streams, TLS: ctls}, tune); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("tls %v, %d bytes, again: %v", secure, c.size, err)
			}
			if after, _ := srv.Accepted(); after-before > int64(c.conns) || after == before {
				t.Errorf("tls %v, %d bytes over %d streams, twice: %d connections, want 1 to %d", secure, c.size, c.streams, after-before, c.conns)
			}
		}
	}
}

// TestStreamRangesDefaults: the default split (32 MiB, ranges of 16 MiB) and streams
// (FetchOptions.Streams 0: min(4, GOMAXPROCS) over TLS, 1 over plain TCP), through Fetch.
func TestStreamRangesDefaults(t *testing.T) {
	if DefaultStreams(false) != 1 || DefaultStreams(true) != min(4, runtime.GOMAXPROCS(0)) {
		t.Fatalf("DefaultStreams: %d plain, %d TLS", DefaultStreams(false), DefaultStreams(true))
	}
	ca, srvCreds := clusterCreds(t, identity.RoleNode)
	var objs objectMap
	srv := newStreamServer(t, ServerConfig{Get: objs.get, TLS: srvCreds.PeerServerTLS()})
	id := ids.PutID(ids.NewRootTaskID(), 1)
	data := randomBytes(splitMin+rangeBytes+5, 3)
	objs.set(id, data)
	pool := testPool(t)
	opt := FetchOptions{Size: int64(len(data)), TLS: issueFor(t, ca, "driver", identity.RoleDriver).PeerClientTLS()}
	got, err := fetch(context.Background(), pool, srv.Addr(), id, opt, defaultTuning)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("%v (%d bytes)", err, len(got))
	}
	if n, _ := srv.Accepted(); n > int64(min(3, DefaultStreams(true))) {
		t.Errorf("%d connections, want at most %d", n, min(3, DefaultStreams(true)))
	}
	// Unknown size: one connection, the whole object.
	opt.Size = 0
	pool.closeAll()
	before, _ := srv.Accepted()
	if got, err = fetch(context.Background(), pool, srv.Addr(), id, opt, defaultTuning); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("unknown size: %v", err)
	}
	if n, _ := srv.Accepted(); n != before+1 {
		t.Errorf("unknown size: %d connections, want 1", n-before)
	}
	for _, size := range []int64{-1, MaxStreamSize + 1} {
		if _, err := fetch(context.Background(), pool, srv.Addr(), id, FetchOptions{Size: size}, defaultTuning); err == nil || !strings.Contains(err.Error(), "outside 0..") {
			t.Errorf("size %d: %v", size, err)
		}
	}
}

// rangeServer answers range requests for data on every connection, one after another,
// through respond, which gets the range asked for and the correct answer and writes what
// it likes (returning false to close the connection). It stops when the test ends.
func rangeServer(t *testing.T, data []byte, respond func(c net.Conn, off, n uint64, answer []byte) bool) string {
	t.Helper()
	return loopbackServer(t, func(c net.Conn) {
		for {
			var req [rangeRequestLen]byte
			if _, err := io.ReadFull(c, req[:]); err != nil || req[0] != streamMagicRange {
				return
			}
			off, n := binary.BigEndian.Uint64(req[requestLen:]), binary.BigEndian.Uint64(req[requestLen+8:])
			body := data[off : off+n]
			answer := append(append(header(statusOK, uint64(len(data)), ""), body...), crcTrailer(body)...)
			if !respond(c, off, n, answer) {
				return
			}
		}
	})
}

// TestStreamRangesFail: a range that fails ends the whole fetch with its error and no
// bytes, every connection closed and every goroutine ended, without waiting for the other
// ranges: a flipped byte (ErrCorrupt), a server that closes mid-range, one that stalls
// (the Timeout), a cancelled context.
func TestStreamRangesFail(t *testing.T) {
	data := randomBytes(3<<20+77, 8)
	const badOff = 5 * (256 << 10) // the sixth range
	id := ids.PutID(ids.NewRootTaskID(), 1)
	// stall sends half the answer and then reads until the client closes the connection.
	stall := func(c net.Conn, answer []byte) bool {
		_, _ = c.Write(answer[:len(answer)/2])
		_, _ = io.Copy(io.Discard, c)
		return false
	}
	for _, c := range []struct {
		name    string
		respond func(c net.Conn, answer []byte) bool // for the range at badOff
		opt     FetchOptions
		cancel  bool
		check   func(err error) bool
	}{
		{"flipped byte", func(c net.Conn, answer []byte) bool {
			answer[headerLen+100] ^= 4
			_, err := c.Write(answer)
			return err == nil
		}, FetchOptions{}, false, func(err error) bool { return errors.Is(err, ErrCorrupt) && strings.Contains(err.Error(), "CRC-32C") }},
		{"closed mid-range", func(c net.Conn, answer []byte) bool {
			_, _ = c.Write(answer[:len(answer)/2])
			return false
		}, FetchOptions{}, false, func(err error) bool {
			return errors.Is(err, ErrCorrupt) && strings.Contains(err.Error(), "closed after")
		}},
		{"reset mid-range", func(c net.Conn, answer []byte) bool {
			_, _ = c.Write(answer[:len(answer)/2])
			_ = c.(*net.TCPConn).SetLinger(0)
			return false
		}, FetchOptions{}, false, func(err error) bool { return err != nil }},
		{"stalls", stall, FetchOptions{Timeout: 300 * time.Millisecond}, false, func(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }},
		{"cancelled", stall, FetchOptions{}, true, func(err error) bool { return errors.Is(err, context.Canceled) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			reached := make(chan struct{}) // the bad range is being answered
			var once sync.Once
			addr := rangeServer(t, data, func(conn net.Conn, off, _ uint64, answer []byte) bool {
				if off == badOff {
					once.Do(func() { close(reached) })
					return c.respond(conn, answer)
				}
				_, err := conn.Write(answer)
				return err == nil
			})
			before := runtime.NumGoroutine()
			pool := testPool(t)
			opt := c.opt
			opt.Size, opt.Streams = int64(len(data)), 3
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if c.cancel {
				go func() {
					<-reached
					time.Sleep(50 * time.Millisecond)
					cancel()
				}()
			}
			got, err := fetch(ctx, pool, addr, id, opt, rangeTuning)
			if got != nil || !c.check(err) || !strings.Contains(err.Error(), id.String()) || !strings.Contains(err.Error(), addr) {
				t.Fatalf("got %d bytes, %v", len(got), err)
			}
			if c.name != "cancelled" && errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the fetch hung until its context's deadline: %v", err)
			}
			// The bad range's connection was closed; the others' were closed too or kept.
			pool.closeAll()
			checkGoroutines(t, before+1) // +1: the cancelling goroutine may still be ending
		})
	}
}

// TestStreamRangesBadSize: a caller whose size is larger than the server's object gets
// ErrCorrupt (the server refuses the ranges past its end and says its size), not bytes.
func TestStreamRangesBadSize(t *testing.T) {
	var objs objectMap
	srv := newStreamServer(t, ServerConfig{Get: objs.get})
	id := ids.PutID(ids.NewRootTaskID(), 1)
	objs.set(id, randomBytes(2<<20, 1))
	got, err := fetch(context.Background(), testPool(t), srv.Addr(), id, FetchOptions{Size: 3 << 20, Streams: 2}, rangeTuning)
	if got != nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "2097152") {
		t.Fatalf("got %d bytes, %v", len(got), err)
	}
	// Missing: ErrNotFound, with every stream.
	got, err = fetch(context.Background(), testPool(t), srv.Addr(), ids.PutID(ids.NewRootTaskID(), 2), FetchOptions{Size: 3 << 20, Streams: 2}, rangeTuning)
	if got != nil || !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing: got %d bytes, %v", len(got), err)
	}
}

// rangeRequest encodes a range request.
func rangeRequest(id ids.ObjectID, off, n uint64) []byte {
	req := append([]byte{streamMagicRange}, id[:]...)
	req = binary.BigEndian.AppendUint64(req, off)
	return binary.BigEndian.AppendUint64(req, n)
}

// TestStreamRangeValidation: the server refuses ranges outside the object (offset past
// the end, zero length, an end past the end, offset+length overflowing 64 bits) with
// statusBadRange, the object's size and the reason, allocating nothing, and goes on
// serving the connection; a valid range gets its bytes and their checksum.
func TestStreamRangeValidation(t *testing.T) {
	var objs objectMap
	srv := newStreamServer(t, ServerConfig{Get: objs.get})
	id := ids.PutID(ids.NewRootTaskID(), 1)
	data := randomBytes(1000, 2)
	objs.set(id, data)
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	for _, r := range []struct {
		off, n uint64
		text   string // "" valid
	}{
		{0, 1000, ""},
		{999, 1, ""},
		{10, 20, ""},
		{1001, 1, "range of 1 bytes at 1001 ends past the object's 1000 bytes"},
		{1000, 1, "range of 1 bytes at 1000 ends past the object's 1000 bytes"},
		{0, 0, "range at 0 of 0 bytes (a range has at least one)"},
		{500, 501, "range of 501 bytes at 500 ends past the object's 1000 bytes"},
		{1<<64 - 1, 2, "range of 2 bytes at 18446744073709551615 ends past the object's 1000 bytes"},
		{2, 1<<64 - 1, "range of 18446744073709551615 bytes at 2 ends past the object's 1000 bytes"},
		{0, 1 << 62, "range of 4611686018427387904 bytes at 0 ends past the object's 1000 bytes"},
	} {
		if _, err := c.Write(rangeRequest(id, r.off, r.n)); err != nil {
			t.Fatal(err)
		}
		var want []byte
		if r.text == "" {
			body := data[r.off : r.off+r.n]
			want = append(append(header(statusOK, uint64(len(data)), ""), body...), crcTrailer(body)...)
		} else {
			want = header(statusBadRange, uint64(len(data)), r.text)
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("range %d+%d: %v", r.off, r.n, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("range %d+%d: answer %q, want %q", r.off, r.n, got[:min(len(got), 64)], want[:min(len(want), 64)])
		}
	}
	// A range of a missing object: not found, as a whole request.
	missing := ids.PutID(ids.NewRootTaskID(), 9)
	if _, err := c.Write(rangeRequest(missing, 0, 1)); err != nil {
		t.Fatal(err)
	}
	var hdr [headerLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil || hdr[0] != statusNotFound {
		t.Fatalf("missing: %v %v", hdr, err)
	}
	text := make([]byte, binary.BigEndian.Uint16(hdr[9:]))
	if _, err := io.ReadFull(c, text); err != nil {
		t.Fatal(err)
	}
	// A whole request still works on the same connection.
	if _, err := c.Write(append([]byte{streamMagic}, id[:]...)); err != nil {
		t.Fatal(err)
	}
	want := append(append(header(statusOK, uint64(len(data)), ""), data...), crcTrailer(data)...)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("whole request after ranges: %v", err)
	}
	if n, _ := srv.Accepted(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
	if crc32.Checksum(nil, castagnoli) != 0 {
		t.Fatal("castagnoli") // the trailer of an empty body would be 0
	}
}

// TestStreamRangesMaxConns: a server's MaxConns still bounds the requests served at once
// when clients fetch over several connections each; the fetches complete (requests beyond
// the bound wait for a slot).
func TestStreamRangesMaxConns(t *testing.T) {
	data := randomBytes(4<<20+5, 4)
	var inGet, most atomic.Int64
	srv := newStreamServer(t, ServerConfig{MaxConns: 2, Get: func(context.Context, ids.ObjectID) ([]byte, error) {
		n := inGet.Add(1)
		defer inGet.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(5 * time.Millisecond) // long enough for others to arrive meanwhile
		return data, nil
	}})
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := range 3 {
		wg.Go(func() {
			got, err := fetch(context.Background(), testPool(t), srv.Addr(), ids.PutID(ids.NewRootTaskID(), uint32(i+1)),
				FetchOptions{Size: int64(len(data)), Streams: 4}, rangeTuning)
			if err == nil && !bytes.Equal(got, data) {
				err = errors.New("bytes differ")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := srv.Accepted(); n > 12 {
		t.Errorf("%d connections, want at most 12 (3 clients, 4 each)", n)
	}
	if m := most.Load(); m > 2 || m < 1 {
		t.Errorf("%d requests served at once, MaxConns 2", m)
	}
}

// TestStreamRangesParallel: the streams' requests are outstanding at once, on as many
// connections: the server answers none of the first k until all k have arrived.
func TestStreamRangesParallel(t *testing.T) {
	ca, srvCreds := clusterCreds(t, identity.RoleNode)
	clientTLS := issueFor(t, ca, "driver", identity.RoleDriver).PeerClientTLS()
	data := randomBytes(4<<20+1, 6)
	for _, secure := range []bool{false, true} {
		for _, k := range []int{2, 4} {
			var arrived atomic.Int64
			all := make(chan struct{})
			cfg := ServerConfig{Get: func(ctx context.Context, _ ids.ObjectID) ([]byte, error) {
				if arrived.Add(1) == int64(k) {
					close(all)
				}
				select {
				case <-all:
					return data, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(20 * time.Second):
					return nil, errors.New("the other streams' requests did not arrive")
				}
			}}
			opt := FetchOptions{Size: int64(len(data)), Streams: k}
			if secure {
				cfg.TLS, opt.TLS = srvCreds.PeerServerTLS(), clientTLS
			}
			srv := newStreamServer(t, cfg)
			got, err := fetch(context.Background(), testPool(t), srv.Addr(), ids.PutID(ids.NewRootTaskID(), 1), opt, rangeTuning)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("tls %v, %d streams: %v", secure, k, err)
			}
			if n, _ := srv.Accepted(); n != int64(k) {
				t.Errorf("tls %v, %d streams: %d connections", secure, k, n)
			}
		}
	}
}

// TestStreamRangesOldServer: a server that predates range requests closes a connection
// that opens with one; Fetch then asks for the whole object on one connection.
func TestStreamRangesOldServer(t *testing.T) {
	data := randomBytes(3<<20+9, 7)
	var conns atomic.Int64
	addr := fakeServer(t, func(c net.Conn, _ ids.ObjectID) {
		conns.Add(1)
		_, _ = c.Write(append(append(header(statusOK, uint64(len(data)), ""), data...), crcTrailer(data)...))
	}) // closes a connection whose request is not streamMagic's
	before := runtime.NumGoroutine()
	pool := testPool(t)
	got, err := fetch(context.Background(), pool, addr, ids.PutID(ids.NewRootTaskID(), 1), FetchOptions{Size: int64(len(data)), Streams: 3}, rangeTuning)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("%v (%d bytes)", err, len(got))
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d whole requests answered, want 1", n)
	}
	pool.closeAll()
	checkGoroutines(t, before)
}

// TestStreamRangesServerCloses: over TLS, a server that closes (its process ending) while
// a split fetch is under way fails the fetch with an error and no bytes, without waiting
// for a timeout, and every goroutine ends.
func TestStreamRangesServerCloses(t *testing.T) {
	ca, srvCreds := clusterCreds(t, identity.RoleNode)
	data := randomBytes(4<<20+3, 9)
	var gets atomic.Int64
	waiting := make(chan struct{})
	srv, err := newServer(ServerConfig{Logger: quiet, TLS: srvCreds.PeerServerTLS(), Get: func(ctx context.Context, _ ids.ObjectID) ([]byte, error) {
		if gets.Add(1) == 5 { // the fifth range waits for the server's end
			close(waiting)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return data, nil
	}}, defaultTuning)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	go func() {
		<-waiting
		_ = srv.Close()
	}()
	opt := FetchOptions{Size: int64(len(data)), Streams: 3, TLS: issueFor(t, ca, "driver", identity.RoleDriver).PeerClientTLS()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := testPool(t)
	got, err := fetch(ctx, pool, srv.Addr(), ids.PutID(ids.NewRootTaskID(), 1), opt, rangeTuning)
	// Usually the range's error (its connection cut); a stream that connects only now
	// is refused instead.
	if got != nil || err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("got %d bytes, %v", len(got), err)
	}
	pool.closeAll()
	_ = srv.Close()
	checkGoroutines(t, before)
}
