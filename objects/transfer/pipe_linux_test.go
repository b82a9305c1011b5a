//go:build linux

package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/ids"
)

// openFDs lists this process's open file descriptors and what each refers to.
func openFDs(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	fds := make(map[string]string, len(entries))
	for _, e := range entries {
		target, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name())) // "" once closed
		fds[e.Name()] = target
	}
	return fds
}

// checkFDs fails t if the process has another number of open descriptors than before
// (call it once every connection, server and pool of the test is closed), naming the
// descriptors that differ. A count that differs for a moment, then matches (a goroutine
// of the runtime or of an earlier test closing its own), is logged, not a failure: a
// leaked descriptor stays open.
func checkFDs(t *testing.T, before map[string]string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	first := openFDs(t)
	for now := first; ; now = openFDs(t) {
		if len(now) == len(before) {
			if len(first) != len(before) {
				t.Logf("for a moment %d file descriptors were open, %d before: %s", len(first), len(before), fdDiff(before, first))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d file descriptors open, %d before: a descriptor leaked (or one was closed twice): %s", len(now), len(before), fdDiff(before, now))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fdDiff says which descriptors are open in only one of before and after, and to what.
func fdDiff(before, after map[string]string) string {
	var diff []string
	for fd, target := range after {
		if old, ok := before[fd]; !ok || old != target {
			diff = append(diff, fmt.Sprintf("new %s -> %s", fd, target))
		}
	}
	for fd, target := range before {
		if now, ok := after[fd]; !ok || now != target {
			diff = append(diff, fmt.Sprintf("gone %s -> %s", fd, target))
		}
	}
	sort.Strings(diff)
	return strings.Join(diff, ", ")
}

func socketPath(t *testing.T) string { return filepath.Join(t.TempDir(), "d.sock") }

// TestStreamPipe: over the Unix socket an object of pipeMinSize or more comes through a
// pipe, intact, with the size known or not; smaller ones, errors and TCP come through the
// socket; no descriptor is left open.
func TestStreamPipe(t *testing.T) {
	CloseIdleConnections()
	fds := openFDs(t)
	var objs objectMap
	srv := newStreamServer(t, ServerConfig{Get: objs.get, Socket: socketPath(t)})
	pool := &connPool{}
	root := ids.NewRootTaskID()
	sizes := []int{0, 1, 4 << 10, pipeMinSize - 1, pipeMinSize, 3<<20 + 7, 9<<20 + 1}
	wantPiped := int64(0)
	for i, size := range sizes {
		id := ids.PutID(root, uint32(i+1))
		objs.set(id, randomBytes(size, byte(i)))
		if size >= pipeMinSize {
			wantPiped++
		}
	}
	fetchAll := func(addr string) {
		for i, size := range sizes {
			id := ids.PutID(root, uint32(i+1))
			want, _ := objs.get(context.Background(), id)
			for _, known := range []bool{true, false} {
				opt := FetchOptions{}
				if known {
					opt.Size = int64(size)
				}
				got, err := fetch(context.Background(), pool, addr, id, opt, defaultTuning)
				if err != nil {
					t.Fatalf("%s, %d bytes, size known %v: %v", addr, size, known, err)
				}
				if sha256.Sum256(got) != sha256.Sum256(want) || len(got) != size {
					t.Fatalf("%s, %d bytes, size known %v: got %d other bytes", addr, size, known, len(got))
				}
			}
		}
		if _, err := fetch(context.Background(), pool, addr, ids.PutID(root, 99), FetchOptions{}, defaultTuning); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: missing object: %v, want ErrNotFound", addr, err)
		}
	}
	fetched := pipeFetches.Load()
	fetchAll(srv.Socket())
	if got := srv.piped.Load(); got != 2*wantPiped {
		t.Errorf("over the Unix socket, %d answers through a pipe, want %d", got, 2*wantPiped)
	}
	if got := pipeFetches.Load() - fetched; got != 2*wantPiped {
		t.Errorf("the client read %d bodies from a pipe, want %d", got, 2*wantPiped)
	}
	if all, local := srv.Accepted(); all != 1 || local != 1 {
		t.Errorf("accepted %d connections (%d local), want one kept", all, local)
	}
	fetchAll(srv.Addr())
	if got := srv.piped.Load(); got != 2*wantPiped {
		t.Errorf("over TCP, answers through a pipe: %d in all, want still %d", got, 2*wantPiped)
	}
	pool.closeAll()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	checkFDs(t, fds)
}

// TestStreamPipeFallback: a server that makes no pipe (as when pipe2 fails), one that
// writes into the pipe (as when vmsplice is refused), a client that does not ask for a
// pipe and a server that predates the pipe request (it closes a
// connection whose first byte is not 0xD1) all move the bytes intact through the socket.
func TestStreamPipeFallback(t *testing.T) {
	CloseIdleConnections()
	fds := openFDs(t)
	data := randomBytes(2<<20+3, 7)
	id := ids.PutID(ids.NewRootTaskID(), 1)
	get := func(context.Context, ids.ObjectID) ([]byte, error) { return data, nil }
	pool := &connPool{}
	check := func(name string, got []byte, err error) {
		t.Helper()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %d bytes, %v", name, len(got), err)
		}
	}

	noPipe := defaultTuning
	noPipe.noPipe = true
	srv := newTunedStreamServer(t, ServerConfig{Get: get, Socket: socketPath(t)}, noPipe)
	fetched := pipeFetches.Load()
	got, err := fetch(context.Background(), pool, srv.Socket(), id, FetchOptions{Size: int64(len(data))}, defaultTuning)
	check("a server without pipes", got, err)
	if srv.piped.Load() != 0 || pipeFetches.Load() != fetched {
		t.Errorf("a server without pipes: %d answers through a pipe", srv.piped.Load())
	}

	copyIn := defaultTuning
	copyIn.pipeCopy = true
	srv3 := newTunedStreamServer(t, ServerConfig{Get: get, Socket: socketPath(t)}, copyIn)
	got, err = fetch(context.Background(), pool, srv3.Socket(), id, FetchOptions{}, defaultTuning)
	check("a server that writes into the pipe (vmsplice refused)", got, err)
	if srv3.piped.Load() != 1 {
		t.Errorf("a server that writes into the pipe: %d answers through a pipe, want 1", srv3.piped.Load())
	}

	srv2 := newStreamServer(t, ServerConfig{Get: get, Socket: socketPath(t)})
	got, err = fetch(context.Background(), pool, srv2.Socket(), id, FetchOptions{}, noPipe)
	check("a client that asks for no pipe", got, err)
	if srv2.piped.Load() != 0 {
		t.Errorf("a client that asks for no pipe: %d answers through a pipe", srv2.piped.Load())
	}

	var conns sync.WaitGroup
	old := fakeUnixServer(t, &conns, func(c *net.UnixConn, req []byte) bool {
		if req[0] != streamMagic {
			return false // as a server of the protocol's first version
		}
		_, _ = c.Write(response(data))
		return true
	})
	for range 2 { // a new connection, then the kept one
		got, err = fetch(context.Background(), pool, old.addr, id, FetchOptions{Size: int64(len(data))}, defaultTuning)
		check("a server that predates the pipe request", got, err)
	}
	if n := old.accepted(); n != 2 {
		t.Errorf("the old server accepted %d connections, want 2 (the pipe request refused once, then one kept)", n)
	}

	pool.closeAll()
	_ = srv.Close()
	_ = srv2.Close()
	_ = srv3.Close()
	old.close()
	conns.Wait()
	checkFDs(t, fds)
}

// fakeUnix is a Unix socket server of the tests: serve handles each request, and returns
// false to close the connection.
type fakeUnix struct {
	addr  string
	ln    *net.UnixListener
	mu    sync.Mutex
	count int
}

func (f *fakeUnix) accepted() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count
}

func (f *fakeUnix) close() { _ = f.ln.Close() }

func fakeUnixServer(t *testing.T, conns *sync.WaitGroup, serve func(c *net.UnixConn, req []byte) bool) *fakeUnix {
	t.Helper()
	path := socketPath(t)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeUnix{addr: UnixPrefix + path, ln: ln}
	t.Cleanup(f.close)
	conns.Go(func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.count++
			f.mu.Unlock()
			conns.Go(func() {
				defer c.Close()
				for {
					req := make([]byte, requestLen)
					if _, err := io.ReadFull(c, req); err != nil || !serve(c, req) {
						return
					}
				}
			})
		}
	})
	return f
}

// newPipe returns a pipe's two ends as files (nil and an error reported to t if it
// cannot; the fake servers call it on their goroutines).
func newPipe(t *testing.T) (r, w *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Error(err)
		return nil, nil
	}
	return r, w
}

// sendWithFDs writes b on c with the descriptors of files passed alongside.
func sendWithFDs(c *net.UnixConn, b []byte, files ...*os.File) error {
	var fds []int
	for _, f := range files {
		fds = append(fds, int(f.Fd()))
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	_, _, err := c.WriteMsgUnix(b, oob, nil)
	return err
}

// TestStreamPipeCorrupt: a pipe answer that fails a check (no descriptor, two, one that
// is not a pipe's read end, a body cut short, a size other than the known one, a pipe not
// asked for) is ErrCorrupt, never bytes; a descriptor passed with an answer through the
// socket is closed; no descriptor stays open.
func TestStreamPipeCorrupt(t *testing.T) {
	CloseIdleConnections()
	fds := openFDs(t)
	data := randomBytes(3<<20+5, 8)
	size := uint64(len(data))
	var writers sync.WaitGroup
	pipeWith := func(t *testing.T, body []byte) *os.File { // a read end holding body, written from a goroutine
		r, w := newPipe(t)
		writers.Go(func() {
			// Fails once every read end is closed, or (a client that leaks its end) at
			// the deadline: the descriptor count then tells.
			_ = w.SetWriteDeadline(time.Now().Add(10 * time.Second))
			_, _ = w.Write(body)
			_ = w.Close()
		})
		return r
	}
	cases := []struct {
		name     string
		noPipe   bool  // the client asks through the socket
		known    int64 // FetchOptions.Size
		serve    func(t *testing.T, c *net.UnixConn)
		wantData bool
	}{
		{name: "no descriptor", serve: func(t *testing.T, c *net.UnixConn) {
			_, _ = c.Write(header(statusPipe, size, ""))
		}},
		{name: "two descriptors", serve: func(t *testing.T, c *net.UnixConn) {
			r1, r2 := pipeWith(t, data), pipeWith(t, data)
			defer r1.Close()
			defer r2.Close()
			_ = sendWithFDs(c, header(statusPipe, size, ""), r1, r2)
		}},
		{name: "a regular file", serve: func(t *testing.T, c *net.UnixConn) {
			path := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Error(err)
				return
			}
			f, err := os.Open(path)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			_ = sendWithFDs(c, header(statusPipe, size, ""), f)
		}},
		{name: "a pipe's write end", serve: func(t *testing.T, c *net.UnixConn) {
			r, w := newPipe(t)
			if r == nil {
				return
			}
			defer r.Close()
			defer w.Close()
			_ = sendWithFDs(c, header(statusPipe, size, ""), w)
		}},
		{name: "the peer dies mid-body", serve: func(t *testing.T, c *net.UnixConn) {
			r := pipeWith(t, data[:size/2])
			defer r.Close()
			_ = sendWithFDs(c, header(statusPipe, size, ""), r)
		}},
		{name: "another size than the known one", known: int64(size) - 1, serve: func(t *testing.T, c *net.UnixConn) {
			r := pipeWith(t, data)
			defer r.Close()
			_ = sendWithFDs(c, header(statusPipe, size, ""), r)
		}},
		{name: "announces 512 GiB, sends 3 MiB", serve: func(t *testing.T, c *net.UnixConn) {
			r := pipeWith(t, data)
			defer r.Close()
			_ = sendWithFDs(c, header(statusPipe, 1<<39, ""), r)
		}},
		{name: "a pipe not asked for", noPipe: true, serve: func(t *testing.T, c *net.UnixConn) {
			r := pipeWith(t, data)
			defer r.Close()
			_ = sendWithFDs(c, header(statusPipe, size, ""), r)
		}},
		{name: "a descriptor with an answer through the socket", wantData: true, serve: func(t *testing.T, c *net.UnixConn) {
			r := pipeWith(t, data)
			defer r.Close()
			resp := response(data)
			if err := sendWithFDs(c, resp[:headerLen], r); err == nil {
				_, _ = c.Write(resp[headerLen:])
			}
		}},
	}
	id := ids.PutID(ids.NewRootTaskID(), 1)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var conns sync.WaitGroup
			f := fakeUnixServer(t, &conns, func(c *net.UnixConn, req []byte) bool {
				tc.serve(t, c)
				return true
			})
			tune := defaultTuning
			tune.noPipe = tc.noPipe
			pool := &connPool{}
			got, err := fetch(context.Background(), pool, f.addr, id, FetchOptions{Size: tc.known, Timeout: 10 * time.Second}, tune)
			switch {
			case tc.wantData && (err != nil || !bytes.Equal(got, data)):
				t.Errorf("%d bytes, %v; want the object", len(got), err)
			case !tc.wantData && !errors.Is(err, ErrCorrupt):
				t.Errorf("%d bytes, %v; want ErrCorrupt", len(got), err)
			}
			t.Log(err)
			pool.closeAll()
			f.close()
			conns.Wait()
		})
	}
	writers.Wait()
	checkFDs(t, fds)
}

// TestStreamPipeCancel: cancelling the context while the body comes through the pipe
// ends the fetch at once (the server still holds the pipe open) and leaves no descriptor.
func TestStreamPipeCancel(t *testing.T) {
	CloseIdleConnections()
	fds := openFDs(t)
	data := randomBytes(4<<20, 3)
	wrote, release := make(chan struct{}), make(chan struct{})
	var conns sync.WaitGroup
	f := fakeUnixServer(t, &conns, func(c *net.UnixConn, req []byte) bool {
		defer close(wrote)
		r, w := newPipe(t)
		if r == nil {
			return false
		}
		defer w.Close()
		err := sendWithFDs(c, header(statusPipe, uint64(len(data)), ""), r)
		_ = r.Close()
		if err == nil {
			_, _ = w.Write(data[:64<<10]) // fits the pipe
		}
		wrote <- struct{}{}
		<-release
		return false
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-wrote
		cancel()
	}()
	defer cancel()
	pool := &connPool{}
	_, err := fetch(ctx, pool, f.addr, ids.PutID(ids.NewRootTaskID(), 1), FetchOptions{Timeout: time.Minute}, defaultTuning)
	close(release)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("fetch: %v, want context.Canceled", err)
	}
	pool.closeAll()
	f.close()
	conns.Wait()
	checkFDs(t, fds)
}

// TestStreamPipeServerClose: Server.Close ends an answer blocked on a client that does
// not read the pipe; the client then reads what the pipe held and the end.
func TestStreamPipeServerClose(t *testing.T) {
	CloseIdleConnections()
	fds := openFDs(t)
	data := randomBytes(8<<20, 4)
	srv := newStreamServer(t, ServerConfig{Get: func(context.Context, ids.ObjectID) ([]byte, error) { return data, nil }, Socket: socketPath(t)})
	c, err := net.Dial("unix", srv.cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := append([]byte{streamMagicPipe}, make([]byte, ids.ObjectIDLen)...)
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var hdr [headerLen]byte
	got, err := readHeaderFDs(c, hdr[:])
	if err != nil || hdr[0] != statusPipe || len(got) != 1 {
		closeFDs(got)
		t.Fatalf("header %v, %d descriptors, %v", hdr, len(got), err)
	}
	p, err := openBodyPipe(got[0])
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := srv.Close(); err != nil { // returns although the answer is blocked
		t.Fatal(err)
	}
	_, _, _, err = readBody(p, "pipe", uint64(len(data)), FetchOptions{Timeout: time.Minute}, defaultTuning, false)
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("reading the pipe after the server closed: %v, want ErrCorrupt", err)
	}
	_ = p.Close()
	_ = c.Close()
	checkFDs(t, fds)
}

// TestStreamPipeProcesses: across processes (the test binary as the server, see
// TestMain) the bytes come through a pipe intact; when the server process is killed
// mid-body, the client reads what the pipe held, then the end (ErrCorrupt), and no
// descriptor stays open.
func TestStreamPipeProcesses(t *testing.T) {
	CloseIdleConnections()
	fds := openFDs(t)
	const size = 24<<20 + 13
	want := randomBytes(size, 42) // as the server process's
	socket := socketPath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", streamServeEnv, size), streamUnixEnv+"="+socket)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	addr, err := readAddr(stdout)
	if err != nil {
		t.Fatal(err)
	}
	id := ids.PutID(ids.NewRootTaskID(), 1)
	pool := &connPool{}
	fetched := pipeFetches.Load()
	for _, known := range []int64{size, 0} {
		got, err := fetch(context.Background(), pool, addr, id, FetchOptions{Size: known}, defaultTuning)
		if err != nil || sha256.Sum256(got) != sha256.Sum256(want) {
			t.Fatalf("size known %v: %d bytes, %v; want the server process's object", known != 0, len(got), err)
		}
	}
	if n := pipeFetches.Load() - fetched; n != 2 {
		t.Errorf("%d bodies through a pipe, want 2", n)
	}
	pool.closeAll()

	// The same protocol by hand, to kill the server between two reads of the body.
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(append([]byte{streamMagicPipe}, id[:]...)); err != nil {
		t.Fatal(err)
	}
	var hdr [headerLen]byte
	got, err := readHeaderFDs(c, hdr[:])
	if err != nil || hdr[0] != statusPipe || len(got) != 1 {
		closeFDs(got)
		t.Fatalf("header %v, %d descriptors, %v", hdr, len(got), err)
	}
	p, err := openBodyPipe(got[0])
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	first := make([]byte, 1<<20)
	if _, err := io.ReadFull(p, first); err != nil || !bytes.Equal(first, want[:len(first)]) {
		t.Fatalf("the body's first MiB: %v", err)
	}
	_ = stdin.Close()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	_, _, _, err = readBody(p, "pipe", size-uint64(len(first)), FetchOptions{Timeout: time.Minute}, defaultTuning, false)
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("the rest of the body after the server died: %v, want ErrCorrupt", err)
	}
	_ = p.Close()
	_ = c.Close()
	if _, err := fetch(context.Background(), pool, addr, id, FetchOptions{Timeout: 5 * time.Second}, defaultTuning); err == nil {
		t.Error("fetch from a dead server process succeeded")
	}
	pool.closeAll()
	checkFDs(t, fds)
}

// TestStreamPipeNoLeak: many fetches through pipes from several goroutines, found, not
// found and refused for their size, leave as many descriptors open as before.
func TestStreamPipeNoLeak(t *testing.T) {
	CloseIdleConnections()
	fds := openFDs(t)
	data := randomBytes(pipeMinSize+100, 6)
	root := ids.NewRootTaskID()
	missing := ids.PutID(root, 2)
	srv := newStreamServer(t, ServerConfig{Socket: socketPath(t), Get: func(_ context.Context, id ids.ObjectID) ([]byte, error) {
		if id == missing {
			return nil, fmt.Errorf("object %s: %w", id, ErrNotFound)
		}
		return data, nil
	}})
	pool := &connPool{}
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for g := range cap(errs) {
		wg.Go(func() {
			for i := range 60 {
				var err error
				switch i % 3 {
				case 0:
					var got []byte
					if got, err = fetch(context.Background(), pool, srv.Socket(), ids.PutID(root, 1), FetchOptions{}, defaultTuning); err == nil && !bytes.Equal(got, data) {
						err = errors.New("wrong bytes")
					}
				case 1:
					if _, err = fetch(context.Background(), pool, srv.Socket(), missing, FetchOptions{}, defaultTuning); errors.Is(err, ErrNotFound) {
						err = nil
					}
				case 2:
					if _, err = fetch(context.Background(), pool, srv.Socket(), ids.PutID(root, 1), FetchOptions{Size: 5}, defaultTuning); errors.Is(err, ErrCorrupt) {
						err = nil
					}
				}
				if err != nil {
					errs <- fmt.Errorf("goroutine %d, fetch %d: %w", g, i, err)
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
	if srv.piped.Load() < 4*20 {
		t.Errorf("%d answers through a pipe, want at least 80", srv.piped.Load())
	}
	pool.closeAll()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	checkFDs(t, fds)
}

// TestStreamPipeAck: the server waits for the client's acknowledgement after a body
// through a pipe (it keeps the object's pages until then): with it the connection serves
// the next request; with another byte the server closes the connection.
func TestStreamPipeAck(t *testing.T) {
	CloseIdleConnections()
	fds := openFDs(t)
	data := randomBytes(3<<20+1, 5)
	srv := newStreamServer(t, ServerConfig{Get: func(context.Context, ids.ObjectID) ([]byte, error) { return data, nil }, Socket: socketPath(t)})
	c, err := net.Dial("unix", srv.cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := ids.PutID(ids.NewRootTaskID(), 1)
	// one fetches the body by hand and answers with ack; it reports whether a response came.
	one := func(ack byte) bool {
		t.Helper()
		if _, err := c.Write(append([]byte{streamMagicPipe}, id[:]...)); err != nil {
			return false // the server closed the connection
		}
		var hdr [headerLen]byte
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		got, err := readHeaderFDs(c, hdr[:])
		if isStale(err) {
			return false
		}
		if err != nil || hdr[0] != statusPipe || len(got) != 1 {
			closeFDs(got)
			t.Fatalf("header %v, %d descriptors, %v", hdr, len(got), err)
		}
		p, err := openBodyPipe(got[0])
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		body, _, _, err := readBody(p, "pipe", uint64(len(data)), FetchOptions{Timeout: time.Minute}, defaultTuning, false)
		if err != nil || !bytes.Equal(body, data) {
			t.Fatalf("body: %d bytes, %v", len(body), err)
		}
		if _, err := c.Write([]byte{ack}); err != nil {
			t.Fatal(err)
		}
		if ack == pipeAck {
			var held [1]byte
			if _, err := io.ReadFull(c, held[:]); err != nil || held[0] != pipeHeld {
				t.Fatalf("the server's answer to the acknowledgement: %x, %v", held, err)
			}
		}
		return true
	}
	if !one(pipeAck) || !one(0x00) {
		t.Fatal("no response on a connection whose every body was acknowledged")
	}
	if one(pipeAck) {
		t.Error("the server answered on a connection after a wrong acknowledgement")
	}
	_ = c.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	checkFDs(t, fds)
}

// TestStreamPipeUnconfirmed: a body read whole through a pipe is taken only once the server
// confirms (pipeHeld) that it kept the pages until the client's acknowledgement; a server
// that let go of them first (it gave up waiting, it closed) makes the fetch ErrCorrupt, since
// the pages may hold other bytes by then.
func TestStreamPipeUnconfirmed(t *testing.T) {
	fds := openFDs(t)
	body := randomBytes(1<<20, 7)
	for _, tc := range []struct {
		name   string
		answer []byte // the server's answer to the acknowledgement
		ok     bool
	}{
		{"confirmed", []byte{pipeHeld}, true},
		{"closed without an answer", nil, false},
		{"another byte", []byte{pipeAck}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := ids.PutID(ids.NewRootTaskID(), 1)
			opt := FetchOptions{Timeout: 5 * time.Second}
			data, err := fetchFromFakePipeServer(t, id, header(statusPipe, uint64(len(body)), ""), body, true, opt, defaultTuning, func(server *net.UnixConn) {
				var ack [1]byte
				if _, err := io.ReadFull(server, ack[:]); err != nil || ack[0] != pipeAck {
					t.Errorf("the client's acknowledgement: %x, %v", ack, err)
					return
				}
				_, _ = server.Write(tc.answer)
			})
			switch {
			case tc.ok && (err != nil || !bytes.Equal(data, body)):
				t.Fatalf("fetch: %d bytes, %v; want the body", len(data), err)
			case !tc.ok && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "did not confirm") || data != nil):
				t.Fatalf("fetch: %d bytes, %v; want ErrCorrupt saying the server did not confirm", len(data), err)
			}
		})
	}
	checkFDs(t, fds)
}

// fetchFromFakePipeServer fetches id with fetchOn, asking for a pipe, from a fake server on
// a socket pair: it reads the request, sends hdr with the read end of a pipe carrying body
// (without a descriptor unless passFD), then calls then (the connection closes after it).
func fetchFromFakePipeServer(t *testing.T, id ids.ObjectID, hdr, body []byte, passFD bool, opt FetchOptions, tune tuning, then func(server *net.UnixConn)) ([]byte, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	client, server := unixConn(t, pair[0]), unixConn(t, pair[1])
	defer client.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		defer server.Close()
		var req [requestLen]byte
		if _, err := io.ReadFull(server, req[:]); err != nil {
			return
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Error(err)
			return
		}
		wg.Go(func() {
			_ = w.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_, _ = w.Write(body) // fails once every read end is closed
			_ = w.Close()
		})
		if passFD {
			_ = sendWithFDs(server, hdr, r)
		} else {
			_, _ = server.Write(hdr)
		}
		_ = r.Close()
		then(server)
	})
	data, _, _, err := fetchOn(context.Background(), client, "unix:test", id, opt, tune, true)
	_ = client.Close()
	wg.Wait()
	return data, err
}

func streamPipeResponseSeeds() [][]any {
	body := randomBytes(3000, 11)
	var seeds [][]any
	add := func(hdr, body []byte, size uint32, known, passFD bool) {
		seeds = append(seeds, []any{hdr, body, size, known, passFD})
	}
	n := uint64(len(body))
	add(header(statusPipe, n, ""), body, uint32(n), true, true)
	add(header(statusPipe, n, ""), body, 0, false, true)
	add(header(statusPipe, n, ""), body[:100], 0, false, true)                  // the pipe ends early
	add(header(statusPipe, n, ""), body, 0, false, false)                       // no descriptor
	add(header(statusPipe, 1<<39, ""), body, 0, false, true)                    // announces 512 GiB
	add(header(statusPipe, 1<<39, ""), body, uint32(n), true, true)             // to a client that knows better
	add(header(statusPipe, 0, ""), nil, 0, false, true)                         // empty
	add(header(statusPipe, n, "text"), body, 0, false, true)                    // text with ok
	add(response(body), body, uint32(n), true, true)                            // through the socket, a pipe passed anyway
	add(header(statusNotFound, 0, "object x: not found"), body, 0, false, true) // an error, a pipe passed anyway
	add(header(statusPipe, n, "")[:5], body, 0, false, true)                    // a short header
	return seeds
}

func TestFuzzStreamPipeResponseCorpus(t *testing.T) {
	fuzzing.Corpus(t, "FuzzStreamPipeResponse", streamPipeResponseSeeds())
}

// FuzzStreamPipeResponse answers a pipe request (0xD2) with arbitrary header bytes on a
// Unix socket, with or without a pipe passed alongside that carries arbitrary body bytes,
// the object's size known or not. Fetch must return an error or bytes that are the body
// announced (through the pipe) or encode to the socket's bytes; never panic; allocate in
// proportion to what arrived (and the known size), not to the size announced; and leave
// no descriptor open.
func FuzzStreamPipeResponse(f *testing.F) {
	f.Fuzz(func(t *testing.T, hdr, body []byte, size32 uint32, known, passFD bool) {
		var opt FetchOptions
		opt.Timeout = 2 * time.Second
		if known {
			opt.Size = int64(size32 % (256 << 10))
		}
		id := ids.PutID(ids.NewRootTaskID(), 1)
		var (
			data []byte
			err  error
		)
		fds := openFDs(t)
		limit := uint64(fuzzTuning.initialBody) + 3*uint64(len(hdr)+len(body)) + 2*uint64(fuzzTuning.readChunk) + uint64(opt.Size) + 1<<20
		fuzzing.CheckAlloc(t, limit, "fetchOn", func() {
			data, err = fetchFromFakePipeServer(t, id, hdr, body, passFD, opt, fuzzTuning, func(server *net.UnixConn) {
				if len(hdr) != headerLen || hdr[0] != statusPipe || !passFD {
					_ = server.CloseWrite() // a short or other answer ends here, not at the client's timeout
				}
				var ack [1]byte
				if n, _ := server.Read(ack[:]); n == 1 && ack[0] == pipeAck { // or its close
					_, _ = server.Write([]byte{pipeHeld})
				}
			})
		})
		checkFDs(t, fds)
		if err != nil {
			if !strings.Contains(err.Error(), id.String()) {
				t.Fatalf("error without the object: %v", err)
			}
			return
		}
		if opt.Size > 0 && int64(len(data)) != opt.Size {
			t.Fatalf("accepted %d bytes of an object of %d", len(data), opt.Size)
		}
		if hdr[0] == statusPipe {
			if !passFD || uint64(len(data)) != binary.BigEndian.Uint64(hdr[1:]) || !bytes.HasPrefix(body, data) {
				t.Fatalf("accepted %d bytes through a pipe that do not match the body announced", len(data))
			}
			return
		}
		if enc := response(data); !bytes.HasPrefix(hdr, enc) {
			t.Fatalf("accepted %d bytes that do not encode to the response", len(data))
		}
	})
}

// unixConn makes a *net.UnixConn of a socket's descriptor (which it takes over).
func unixConn(t *testing.T, fd int) *net.UnixConn {
	f := os.NewFile(uintptr(fd), "socket")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	return c.(*net.UnixConn)
}
