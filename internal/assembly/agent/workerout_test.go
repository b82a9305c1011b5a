package agent

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs/memstore"
)

// syncBuf is a buffer one goroutine writes while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestWorkerOutputToDriver: an agent forwards what its worker process of a job appends to
// the job's log file to the job's driver once the driver wants it, prefixed with the
// worker's pid and host, without the runtime's own records below ERROR; a burst beyond
// WorkerOutBacklog is cut, and every line of it is either shown or counted in a note;
// once the driver stops, its want key is gone and the agent deletes its key.
func TestWorkerOutputToDriver(t *testing.T) {
	store := memstore.New(memstore.Options{})
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	a := &Agent{store: store, id: "a1", cfg: Config{SessionDir: dir, Host: "127.0.0.1"}, ctx: ctx, log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	a.workerPIDs.Store("j1", 42)
	a.wg.Add(1)
	go a.forwardWorkerOutput()
	defer func() { cancel(); a.wg.Wait() }()

	path := WorkerLogPath(dir, "j1")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, "before the driver asked")
	fmt.Fprintln(f, `time=2026-01-01T00:00:00.000Z level=WARN msg="node: lost the connection to a peer" address=x`)
	fmt.Fprintln(f, `time=2026-01-01T00:00:00.000Z level=ERROR msg="ray: worker process cannot serve its job"`)
	fmt.Fprint(f, "hello ")

	var out syncBuf
	stop := FollowWorkerOutput(store, "j1", &out, nil)
	const p = "(worker pid=42, ip=127.0.0.1) "
	waitFor(t, "the first lines", func() bool { return strings.Contains(out.String(), p+"before the driver asked\n") })
	fmt.Fprintln(f, "world")
	waitFor(t, "the line finished later", func() bool { return strings.Contains(out.String(), p+"hello world\n") })
	if s := out.String(); strings.Contains(s, "level=WARN") || !strings.Contains(s, p+`time=2026-01-01T00:00:00.000Z level=ERROR msg="ray: worker process cannot serve its job"`) {
		t.Fatalf("the runtime's records: want its ERROR only:\n%s", s)
	}

	// A burst of 3 MiB in one write: more than the backlog.
	const n = 60000
	var burst bytes.Buffer
	for i := range n {
		fmt.Fprintf(&burst, "burst %06d %s\n", i, strings.Repeat("x", 40))
	}
	if _, err := f.Write(burst.Bytes()); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "after the burst")
	waitFor(t, "the line after the burst", func() bool { return strings.Contains(out.String(), p+"after the burst\n") })
	s := out.String()
	shown := strings.Count(s, p+"burst ")
	var dropped int
	for _, m := range regexp.MustCompile(`\[ray: (\d+) lines of this worker's output dropped`).FindAllStringSubmatch(s, -1) {
		d, _ := strconv.Atoi(m[1])
		dropped += d
	}
	if dropped == 0 || shown+dropped != n || shown*len("burst 000000 \n")+shown*40 > WorkerOutBacklog+WorkerOutBatch {
		t.Fatalf("a burst of %d lines: %d shown, %d reported dropped; want some dropped, all accounted for, at most the backlog shown\n%s", n, shown, dropped, strings.Join(regexp.MustCompile(`.*\[ray.*`).FindAllString(s, -1), "\n"))
	}
	if _, found, _ := store.Get(ctx, WorkerOutWantKey("j1")); !found {
		t.Fatal("no want key while the driver follows")
	}
	stop(0)
	waitFor(t, "the want key and the agent's key to go", func() bool {
		_, want, _ := store.Get(ctx, WorkerOutWantKey("j1"))
		_, put, _ := store.Get(ctx, WorkerOutKey("j1", "a1"))
		return !want && !put
	})
}

// blockedWriter blocks every Write until released.
type blockedWriter struct {
	release chan struct{}
	out     syncBuf
}

func (b *blockedWriter) Write(p []byte) (int, error) {
	<-b.release
	return b.out.Write(p)
}

// TestWorkerOutputQueueBounded: a driver whose stderr does not take its lines holds at
// most WorkerOutQueue bytes of them (plus what its writer holds) and counts the rest, and
// says how many once its stderr moves again.
func TestWorkerOutputQueueBounded(t *testing.T) {
	w := &blockedWriter{release: make(chan struct{})}
	q := &outQueue{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.run(ctx)
	line := strings.Repeat("y", 1000) + "\n"
	const batches = 200 // 200 x 100 KiB: 20 MiB, 5 times the queue
	for i := range batches {
		q.add(WorkerOutput{Seq: uint64(i + 1), PID: 7, IP: "h", Data: []byte(strings.Repeat(line, 100))})
		q.mu.Lock()
		held := q.bytes
		q.mu.Unlock()
		if held > WorkerOutQueue {
			t.Fatalf("the queue holds %d bytes, more than %d", held, WorkerOutQueue)
		}
	}
	close(w.release)
	q.add(WorkerOutput{Seq: batches + 1, PID: 7, IP: "h", Data: []byte("the last\n")})
	q.close()
	select {
	case <-q.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the writer did not end")
	}
	s := w.out.String()
	m := regexp.MustCompile(`\[ray: (\d+) lines of the worker processes' output dropped`).FindStringSubmatch(s)
	if m == nil || !strings.HasSuffix(s, "(worker pid=7, ip=h) the last\n") {
		t.Fatalf("no note of the dropped lines, or the last line missing:\n%.300s ... %s", s, s[max(0, len(s)-300):])
	}
	d, _ := strconv.Atoi(m[1])
	if shown := strings.Count(s, "(worker pid=7, ip=h) yyy"); shown+d != batches*100 {
		t.Fatalf("%d lines shown and %d dropped, want %d in all", shown, d, batches*100)
	}
}
