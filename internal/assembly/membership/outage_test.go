package membership

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/netx"
)

// captured is a slog.Handler that keeps every record.
type captured struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *captured) Enabled(context.Context, slog.Level) bool { return true }
func (h *captured) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.recs = append(h.recs, r.Clone())
	h.mu.Unlock()
	return nil
}
func (h *captured) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *captured) WithGroup(string) slog.Handler      { return h }

// lines renders the records as "LEVEL message k=v ...".
func (h *captured) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.recs {
		var b strings.Builder
		b.WriteString(r.Level.String() + " " + r.Message)
		r.Attrs(func(a slog.Attr) bool {
			b.WriteString(" " + a.String())
			return true
		})
		out = append(out, b.String())
	}
	return out
}

// TestGCSOutageLoggedOnce: a GCS outage of 41 s in which the provider's retry loops fail
// every attempt is logged as one warning when it starts (the call, its error, the GCS's
// address, that it keeps retrying), one reminder with its length after 30 s, and one line
// when the GCS answers again; a second loop failing in the same outage adds nothing.
// Before, every failed attempt logged "GCS call failed; retrying" (41 lines here, one a
// second or back-off in a real outage) and nothing said when it ended.
func TestGCSOutageLoggedOnce(t *testing.T) {
	h := &captured{}
	o := newOutage(slog.New(h), "127.0.0.1:2379")
	clock := time.Unix(1000, 0)
	o.now = func() time.Time { return clock } // the attempts below run on this goroutine
	down := errors.New("context deadline exceeded")
	calls := 0
	err := retryCall(context.Background(), o, "register member", time.Second, time.Microsecond, time.Microsecond, func(context.Context) error {
		calls++
		clock = clock.Add(time.Second) // each attempt takes a second of the outage
		if calls <= 41 {
			if calls%2 == 0 {
				o.failed("list members", down) // the members' listing fails alongside
			}
			return down
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := h.lines()
	want := []string{
		"WARN membership: the GCS does not answer; retrying until it does gcs=127.0.0.1:2379 op=register member error=context deadline exceeded",
		"WARN membership: the GCS still does not answer; retrying gcs=127.0.0.1:2379 for=30s op=register member error=context deadline exceeded",
		"INFO membership: GCS reachable again after 41s gcs=127.0.0.1:2379 outage=41s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the outage's log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A call that succeeds outside an outage logs nothing; the next outage is logged anew.
	h.recs = nil
	calls = 0
	if err := retryCall(context.Background(), o, "list members", time.Second, time.Microsecond, time.Microsecond, func(context.Context) error {
		calls++
		clock = clock.Add(time.Second)
		if calls == 2 || calls == 3 {
			return down
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := h.lines(); len(got) != 0 {
		t.Errorf("a call that succeeded at once logged:\n%s", strings.Join(got, "\n"))
	}
	calls = 1
	_ = retryCall(context.Background(), o, "list members", time.Second, time.Microsecond, time.Microsecond, func(context.Context) error {
		calls++
		clock = clock.Add(time.Second)
		if calls == 2 || calls == 3 {
			return down
		}
		return nil
	})
	if got := h.lines(); len(got) != 2 || !strings.HasPrefix(got[0], "WARN membership: the GCS does not answer") ||
		!strings.HasPrefix(got[1], "INFO membership: GCS reachable again after 2s") {
		t.Errorf("a second outage of 2 s logged:\n%s", strings.Join(got, "\n"))
	}
}

// TestGCSOutageOfARealGCS: the provider's retry loop (retryCall) over a real GCS (an
// embedded etcd, reached through a gRPC client) that is stopped for a while and started
// again on its data: one warning naming the GCS's address when the first call fails, and
// one line when a call succeeds again, saying after how long; nothing for the attempts in
// between. Before, each of the outage's attempts logged a warning and its end nothing.
func TestGCSOutageOfARealGCS(t *testing.T) {
	dir := t.TempDir()
	start := func(client, peer int) *etcdstore.Embedded {
		t.Helper()
		e, err := etcdstore.StartEmbedded(context.Background(), etcdstore.EmbedConfig{Dir: dir, ClientPort: client, PeerPort: peer, UnsafeNoFsync: true})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	cport, err := netx.FreePorts("127.0.0.1", 2) // the client port and the next, the peer port
	if err != nil {
		t.Fatal(err)
	}
	pport := cport + 1
	e := start(cport, pport)
	u, err := url.Parse(e.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	store, err := etcdstore.New(context.Background(), etcdstore.Config{Endpoints: []string{u.Host}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	h := &captured{}
	o := newOutage(slog.New(h), u.Host)
	list := func(ctx context.Context) error {
		_, _, err := store.List(ctx, gcs.MembersPrefix)
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := retryCall(ctx, o, "list members", 200*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond, list); err != nil {
		t.Fatal(err)
	}
	_ = e.Close() // the outage
	done := make(chan error, 1)
	go func() {
		done <- retryCall(ctx, o, "list members", 200*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond, list)
	}()
	time.Sleep(2 * time.Second) // about ten attempts fail
	e = start(cport, pport)
	defer e.Close()
	if err := <-done; err != nil {
		t.Fatalf("retryCall after the GCS came back: %v", err)
	}
	got := h.lines()
	if len(got) != 2 || !strings.HasPrefix(got[0], "WARN membership: the GCS does not answer; retrying until it does gcs="+u.Host+" op=list members error=") ||
		!strings.HasPrefix(got[1], "INFO membership: GCS reachable again after ") {
		t.Fatalf("the outage's log:\n%s\nwant one warning and one line when it ended", strings.Join(got, "\n"))
	}
	t.Logf("the outage's log:\n%s", strings.Join(got, "\n"))
}
