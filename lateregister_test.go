package ray

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for a logger's writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLateRegistrationWarnsOnce: a remote function registered after Init joined a
// cluster (lateLogger set, as join does) is logged once as one the job's worker processes
// will not have, with what to do; registrations before that (package level, or with no
// cluster joined) log nothing.
func TestLateRegistrationWarnsOnce(t *testing.T) {
	old := lateLogger.Load()
	t.Cleanup(func() { lateLogger.Store(old); lateWarned.Store(false) })
	lateLogger.Store(nil)
	lateWarned.Store(false)
	var buf syncBuffer
	_ = Task1("test.lateBeforeJoin", func(ctx context.Context, x int) (int, error) { return x, nil })
	lateLogger.Store(slog.New(slog.NewTextHandler(&buf, nil)))
	if buf.String() != "" {
		t.Fatalf("a registration before a cluster was joined logged %q", buf.String())
	}
	_ = Task1("test.lateAfterJoin", func(ctx context.Context, x int) (int, error) { return x, nil })
	_ = Task2("test.lateAfterJoin2", func(ctx context.Context, x, y int) (int, error) { return x + y, nil })
	got := buf.String()
	for _, want := range []string{"level=WARN", `\"test.lateAfterJoin\"`, "after ray.Init joined a cluster", "worker processes", "package level"} {
		if !strings.Contains(got, want) {
			t.Errorf("the log %q does not say %q", got, want)
		}
	}
	if n := strings.Count(got, "level=WARN"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, got)
	}
}
