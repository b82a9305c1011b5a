package gcs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
)

const long = time.Hour // a MaxDelay/SealDelay that never fires: batches go out on Flush only

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// hookStore records committed transactions and lets a test fail or hold them.
type hookStore struct {
	gcs.Store
	hook func(ctx context.Context, ops []gcs.Op) error // before each Txn; set before use

	mu   sync.Mutex
	txns [][]gcs.Op
}

func (h *hookStore) Txn(ctx context.Context, cmps []gcs.Cmp, ops []gcs.Op) (bool, int64, error) {
	if h.hook != nil {
		if err := h.hook(ctx, ops); err != nil {
			return false, 0, err
		}
	}
	ok, rev, err := h.Store.Txn(ctx, cmps, ops)
	if err == nil {
		h.mu.Lock()
		h.txns = append(h.txns, slices.Clone(ops))
		h.mu.Unlock()
	}
	return ok, rev, err
}

func (h *hookStore) committed() [][]gcs.Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.txns)
}

func newMem(t testing.TB) *memstore.Store {
	s := memstore.New(memstore.Options{})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newWriter(t testing.TB, s gcs.Store, cfg gcs.WriterConfig) *gcs.Writer {
	w := gcs.NewWriter(s, cfg)
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	return w
}

// dump returns the store's keys and values as "k=v" strings.
func dump(t testing.TB, s gcs.Store, prefix string) []string {
	t.Helper()
	kvs, _, err := s.List(testCtx(t), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range kvs {
		out = append(out, kv.Key+"="+string(kv.Value))
	}
	return out
}

func checkInvariant(t *testing.T, st gcs.WriterStats) {
	t.Helper()
	if st.Enqueued != st.Keys+st.Coalesced+st.Dropped+uint64(st.Pending) {
		t.Fatalf("stats do not add up: %+v", st)
	}
}

// TestWriterCoalescing runs scripts of ops inside one pending batch against a store that
// already holds some keys, and checks the result and what reached the store.
func TestWriterCoalescing(t *testing.T) {
	type step struct {
		op, key, value string // op: put, create, del, delprefix, barrier
	}
	put := func(k, v string) step { return step{"put", k, v} }
	create := func(k, v string) step { return step{"create", k, v} }
	del := func(k string) step { return step{"del", k, ""} }
	delp := func(p string) step { return step{"delprefix", p, ""} }
	barrier := step{op: "barrier"}
	seed := []string{"a=old", "p/old=1", "p/x/y=2"}
	for _, tc := range []struct {
		name       string
		steps      []step
		want       []string // the whole store afterwards
		sent       uint64   // ops that reached the store
		coalesced  uint64
		txns       uint64
		noRevision bool // nothing may change in the store
	}{
		{"put twice", []step{put("b", "1"), put("b", "2")}, []string{"a=old", "b=2", "p/old=1", "p/x/y=2"}, 1, 1, 1, false},
		{"create then delete vanishes", []step{create("n", "1"), del("n")}, seed, 0, 2, 0, true},
		{"create, put, delete vanishes", []step{create("n", "1"), put("n", "2"), del("n")}, seed, 0, 3, 0, true},
		{"put then delete sends the delete", []step{put("a", "new"), del("a")}, []string{"p/old=1", "p/x/y=2"}, 1, 1, 1, false},
		{"delete then put", []step{del("a"), put("a", "3")}, []string{"a=3", "p/old=1", "p/x/y=2"}, 1, 1, 1, false},
		{"create after delete is a plain put", []step{del("a"), create("a", "4"), del("a")}, []string{"p/old=1", "p/x/y=2"}, 1, 2, 1, false},
		{"delete twice", []step{del("a"), del("a")}, []string{"p/old=1", "p/x/y=2"}, 1, 1, 1, false},
		{"prefix delete swallows pending ops", []step{put("p/1", "x"), create("p/2", "y"), del("p/old"), delp("p/")},
			[]string{"a=old"}, 1, 3, 1, false},
		{"put after prefix delete goes later", []step{delp("p/"), put("p/3", "z")}, []string{"a=old", "p/3=z"}, 2, 0, 2, false},
		{"delete under pending prefix delete", []step{delp("p/"), del("p/old")}, []string{"a=old"}, 1, 1, 1, false},
		{"nested prefix deletes", []step{delp("p/x/"), delp("p/")}, []string{"a=old"}, 1, 1, 1, false},
		{"covered prefix delete", []step{delp("p/"), delp("p/x/")}, []string{"a=old"}, 1, 1, 1, false},
		{"barrier splits transactions", []step{put("b", "1"), barrier, put("c", "2")},
			[]string{"a=old", "b=1", "c=2", "p/old=1", "p/x/y=2"}, 2, 0, 2, false},
		{"cancellation crosses barriers", []step{create("n", "1"), barrier, put("b", "1"), del("n")},
			[]string{"a=old", "b=1", "p/old=1", "p/x/y=2"}, 1, 2, 1, false},
		{"delete after a barrier follows the put", []step{put("a", "1"), barrier, del("a")}, []string{"p/old=1", "p/x/y=2"}, 2, 0, 2, false},
		{"delete covered by an earlier segment", []step{delp("p/"), barrier, put("b", "1"), del("p/old")},
			[]string{"a=old", "b=1"}, 2, 1, 2, false},
		{"create after an earlier put is not fresh", []step{put("n", "1"), barrier, create("n", "2"), del("n")},
			[]string{"a=old", "p/old=1", "p/x/y=2"}, 2, 1, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			s := newMem(t)
			for _, kv := range seed {
				k, v, _ := strings.Cut(kv, "=")
				if _, err := s.Put(ctx, k, []byte(v), 0); err != nil {
					t.Fatal(err)
				}
			}
			rev0, _ := s.Revision(ctx)
			w := newWriter(t, s, gcs.WriterConfig{MaxDelay: long})
			for _, st := range tc.steps {
				switch st.op {
				case "put":
					w.Put(st.key, []byte(st.value))
				case "create":
					w.Create(st.key, []byte(st.value))
				case "del":
					w.Delete(st.key)
				case "delprefix":
					w.DeletePrefix(st.key)
				case "barrier":
					w.Barrier()
				}
			}
			if err := w.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if got := dump(t, s, ""); !slices.Equal(got, tc.want) {
				t.Fatalf("store = %q, want %q", got, tc.want)
			}
			st := w.Stats()
			if st.Keys != tc.sent || st.Coalesced != tc.coalesced || st.Txns != tc.txns {
				t.Fatalf("sent %d coalesced %d txns %d, want %d %d %d", st.Keys, st.Coalesced, st.Txns, tc.sent, tc.coalesced, tc.txns)
			}
			checkInvariant(t, st)
			if rev, _ := s.Revision(ctx); tc.noRevision && rev != rev0 {
				t.Fatalf("store changed: revision %d -> %d", rev0, rev)
			}
		})
	}
}

func TestWriterSplitsTransactions(t *testing.T) {
	ctx := testCtx(t)
	h := &hookStore{Store: newMem(t)}
	w := newWriter(t, h, gcs.WriterConfig{MaxDelay: long})
	for i := range 300 {
		w.Put(fmt.Sprintf("k/%03d", i), []byte("v"))
	}
	big := bytes.Repeat([]byte("b"), 600<<10)
	for i := range 3 {
		w.Put(fmt.Sprintf("big/%d", i), big)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, ops := range h.committed() {
		n := 0
		for _, op := range ops {
			n += gcs.OpBytes(op)
		}
		if len(ops) > gcs.MaxTxnOps || n > gcs.MaxRequestBytes {
			t.Fatalf("txn of %d ops, %d bytes exceeds the limits", len(ops), n)
		}
		sizes = append(sizes, len(ops))
	}
	slices.Sort(sizes)
	// 303 ops: 128 + 128 + 44 small ones plus the big ones, at most two per txn.
	if total := w.Stats().Keys; total != 303 || len(sizes) < 4 {
		t.Fatalf("sent %d ops in txns of sizes %v", total, sizes)
	}
	if n, _ := h.Count(ctx, ""); n != 303 {
		t.Fatalf("store holds %d keys", n)
	}
}

// Segments are committed in order: a put that follows a prefix delete is committed in a
// later transaction than the delete.
func TestWriterOrder(t *testing.T) {
	ctx := testCtx(t)
	h := &hookStore{Store: newMem(t)}
	w := newWriter(t, h, gcs.WriterConfig{MaxDelay: long, MaxInFlight: 4})
	for i := range 500 {
		w.Put(fmt.Sprintf("o/a/%03d", i), []byte("1"))
	}
	w.DeletePrefix("o/")
	for i := range 500 {
		w.Put(fmt.Sprintf("o/b/%03d", i), []byte("2"))
	}
	w.Barrier()
	w.Put("o/last", []byte("3"))
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	txns := h.committed()
	pos := func(match func(gcs.Op) bool) (first, last int) {
		first = -1
		for i, ops := range txns {
			if slices.ContainsFunc(ops, match) {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		return first, last
	}
	_, lastDel := pos(func(op gcs.Op) bool { return op.Kind == gcs.OpDeletePrefix })
	firstB, lastB := pos(func(op gcs.Op) bool { return strings.HasPrefix(op.Key, "o/b/") })
	firstLast, _ := pos(func(op gcs.Op) bool { return op.Key == "o/last" })
	if lastDel < 0 || firstB <= lastDel || firstLast <= lastB {
		t.Fatalf("order: delete prefix in txn %d, o/b/ in %d..%d, o/last in %d", lastDel, firstB, lastB, firstLast)
	}
	if n, _ := h.Count(ctx, "o/"); n != 501 {
		t.Fatalf("%d keys under o/, want 501", n)
	}
	if st := w.Stats(); st.Coalesced != 500 {
		t.Fatalf("coalesced %d, want the 500 puts the prefix delete covered", st.Coalesced)
	}
}

// Without Flush, an idle writer sends its first op on its own (within MaxDelay).
func TestWriterSendsWithoutFlush(t *testing.T) {
	ctx := testCtx(t)
	s := newMem(t)
	w := newWriter(t, s, gcs.WriterConfig{})
	ch := s.Watch(ctx, "idle", 0)
	w.Put("idle", []byte("1"))
	select {
	case r := <-ch:
		if r.Err != nil || len(r.Events) != 1 || r.Events[0].KV.Key != "idle" {
			t.Fatalf("watch: %+v", r)
		}
	case <-ctx.Done():
		t.Fatal("op never sent")
	}
}

// Many producers and Flush: everything enqueued before Flush is durable when it returns.
func TestWriterConcurrentFlush(t *testing.T) {
	ctx := testCtx(t)
	s := newMem(t)
	w := newWriter(t, s, gcs.WriterConfig{MaxDelay: 500 * time.Microsecond})
	const producers, each = 8, 2000
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := fmt.Sprintf("c/%d/%05d", p, i)
				w.Put(key, []byte("v"))
				if i%3 == 0 {
					w.Delete(key)
				}
				if i%500 == 0 {
					mark := fmt.Sprintf("m/%d/%d", p, i)
					w.Put(mark, nil)
					if err := w.Flush(ctx); err != nil {
						t.Error(err)
						return
					}
					if _, ok, err := s.Get(ctx, mark); err != nil || !ok {
						t.Errorf("key put before Flush missing after it (%v)", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := s.Count(ctx, "c/")
	if want := int64(producers * (each - (each+2)/3)); err != nil || n != want {
		t.Fatalf("Count = %d, %v; want %d", n, err, want)
	}
	checkInvariant(t, w.Stats())
}

func TestWriterRetriesTransientErrors(t *testing.T) {
	ctx := testCtx(t)
	var failures atomic.Int32
	h := &hookStore{Store: newMem(t)}
	h.hook = func(context.Context, []gcs.Op) error {
		if failures.Add(1) <= 3 {
			return errors.New("etcdserver: request timed out")
		}
		return nil
	}
	w := newWriter(t, h, gcs.WriterConfig{RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	w.Put("r", []byte("1"))
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Retries != 3 || st.Txns != 1 || w.Err() != nil {
		t.Fatalf("stats %+v, err %v", st, w.Err())
	}
}

func TestWriterPermanentFailure(t *testing.T) {
	ctx := testCtx(t)
	h := &hookStore{Store: newMem(t)}
	h.hook = func(context.Context, []gcs.Op) error { return fmt.Errorf("x: %w", gcs.ErrPermissionDenied) }
	w := newWriter(t, h, gcs.WriterConfig{})
	w.Put("p", []byte("1"))
	if err := w.Flush(ctx); !errors.Is(err, gcs.ErrPermissionDenied) {
		t.Fatalf("Flush = %v, want ErrPermissionDenied", err)
	}
	if !errors.Is(w.Err(), gcs.ErrPermissionDenied) {
		t.Fatalf("Err = %v", w.Err())
	}
	w.Put("q", []byte("2")) // dropped
	st := w.Stats()
	if st.Dropped != 2 || st.Retries != 0 {
		t.Fatalf("stats %+v", st)
	}
	checkInvariant(t, st)
	if err := w.Close(ctx); !errors.Is(err, gcs.ErrPermissionDenied) {
		t.Fatalf("Close = %v", err)
	}
}

// TestWriterDropsAtTheQuota: a batch the store refuses at its space quota is retried for
// NoSpaceWait, then dropped (its Flush says so), and the Writer goes on: once the store has
// space, later ops are written.
func TestWriterDropsAtTheQuota(t *testing.T) {
	ctx := testCtx(t)
	var full atomic.Bool
	full.Store(true)
	var refused atomic.Int32
	h := &hookStore{Store: newMem(t)}
	h.hook = func(context.Context, []gcs.Op) error {
		if full.Load() {
			refused.Add(1)
			return fmt.Errorf("x: %w", gcs.ErrNoSpace)
		}
		return nil
	}
	w := newWriter(t, h, gcs.WriterConfig{NoSpaceWait: 20 * time.Millisecond, RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	w.Put("p", []byte("1"))
	if err := w.Flush(ctx); !errors.Is(err, gcs.ErrNoSpace) {
		t.Fatalf("Flush at the quota = %v, want ErrNoSpace", err)
	}
	if w.Err() != nil {
		t.Fatalf("Err = %v: the quota must not stop the Writer", w.Err())
	}
	if n := refused.Load(); n < 2 {
		t.Fatalf("the refused transaction was tried %d times, want retries for NoSpaceWait", n)
	}
	full.Store(false)
	w.Put("q", []byte("2"))
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush once the store has space = %v", err)
	}
	st := w.Stats()
	if st.Dropped != 1 || st.NoSpace != 1 || st.Keys != 1 {
		t.Fatalf("stats %+v", st)
	}
	checkInvariant(t, st)
	if got := h.committed(); len(got) != 1 || got[0][0].Key != "q" {
		t.Fatalf("committed %v, want only q", got)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
}

func TestWriterRejectsBadOps(t *testing.T) {
	for name, do := range map[string]func(w *gcs.Writer){
		"empty key": func(w *gcs.Writer) { w.Put("", []byte("x")) },
		"too large": func(w *gcs.Writer) { w.Put("k", make([]byte, gcs.MaxRequestBytes)) },
	} {
		t.Run(name, func(t *testing.T) {
			w := newWriter(t, newMem(t), gcs.WriterConfig{})
			do(w)
			err := w.Flush(testCtx(t))
			if !errors.Is(err, gcs.ErrEmptyKey) && !errors.Is(err, gcs.ErrTooLarge) {
				t.Fatalf("Flush = %v", err)
			}
		})
	}
}

// gate is a hook that holds every transaction until released.
type gate struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 1000), release: make(chan struct{})} }

func (g *gate) hook(ctx context.Context, _ []gcs.Op) error {
	g.entered <- struct{}{}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func TestWriterBackpressure(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	t.Cleanup(g.open)
	h := &hookStore{Store: newMem(t), hook: g.hook}
	const limit = 8
	w := newWriter(t, h, gcs.WriterConfig{MaxDelay: long, MaxPendingOps: limit})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			w.Put(fmt.Sprintf("bp/%03d", i), []byte("v"))
		}
	}()
	<-g.entered // the first batch is stuck in the store
	eventually.True(t, 10*time.Second, fmt.Sprintf("the producer to fill the writer's %d pending ops", limit), func() bool {
		return w.Stats().Enqueued >= limit
	})
	// A negative check: through a window the producer stays blocked at the limit (a
	// bounded sleep is the honest tool for "does not happen").
	time.Sleep(50 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("producer enqueued 100 ops while the store held the first batch")
	default:
	}
	if st := w.Stats(); st.Enqueued != limit || st.Pending != limit {
		t.Fatalf("while blocked: %+v, want %d enqueued and pending", st, limit)
	}
	g.open()
	<-done
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.Count(ctx, "bp/"); n != 100 {
		t.Fatalf("%d keys", n)
	}
}

func TestWriterClose(t *testing.T) {
	ctx := testCtx(t)
	s := newMem(t)
	w := gcs.NewWriter(s, gcs.WriterConfig{MaxDelay: long})
	w.Put("c1", []byte("1"))
	w.Put("c2", []byte("2"))
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, s, "c"); !slices.Equal(got, []string{"c1=1", "c2=2"}) {
		t.Fatalf("after Close: %q", got)
	}
	w.Put("c3", []byte("3"))
	if st := w.Stats(); st.Dropped != 1 {
		t.Fatalf("op after Close not dropped: %+v", st)
	}
	if err := w.Close(ctx); !errors.Is(err, gcs.ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush after Close with nothing pending = %v", err)
	}
}

// Close with a deadline returns even if the store never answers.
func TestWriterCloseDeadline(t *testing.T) {
	g := newGate()
	t.Cleanup(g.open)
	h := &hookStore{Store: newMem(t), hook: g.hook}
	w := gcs.NewWriter(h, gcs.WriterConfig{})
	w.Put("stuck", []byte("1"))
	<-g.entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := w.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want DeadlineExceeded", err)
	}
	if w.Err() == nil {
		t.Fatal("lost ops not reported by Err")
	}
}

func TestWriterConfigValidate(t *testing.T) {
	if err := (gcs.WriterConfig{MaxDelay: -1}).Validate(); err == nil {
		t.Fatal("negative MaxDelay accepted")
	}
	if err := (gcs.WriterConfig{RetryMin: time.Second, RetryMax: time.Millisecond}).Validate(); err == nil {
		t.Fatal("RetryMin above RetryMax accepted")
	}
	for name, do := range map[string]func(){
		"nil store":  func() { gcs.NewWriter(nil, gcs.WriterConfig{}) },
		"bad config": func() { gcs.NewWriter(newMem(t), gcs.WriterConfig{MaxInFlight: -1}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewWriter with %s did not panic", name)
				}
			}()
			do()
		}()
	}
}
