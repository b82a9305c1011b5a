package gcs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/gcs"
)

func newPacker(t testing.TB, w *gcs.Writer, cfg gcs.PackerConfig) *gcs.Packer {
	t.Helper()
	if cfg.Prefix == "" {
		cfg.Prefix = gcs.LineagePrefix
	}
	if cfg.RewriteMinAge == 0 {
		cfg.RewriteMinAge = -1 // rewrite at once: deterministic tests
	}
	p, err := gcs.NewPacker(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

func rec(id string, gen int) []byte { return []byte(fmt.Sprintf("spec of %s #%d", id, gen)) }

// stored returns the records in the store and how many frames its pages hold.
func stored(t testing.TB, s gcs.Store, prefix string) (map[string][]byte, int, int) {
	t.Helper()
	ctx := testCtx(t)
	recs, _, err := gcs.ReadAll(ctx, s, prefix)
	if err != nil {
		t.Fatal(err)
	}
	kvs, _, err := s.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	frames := 0
	for _, kv := range kvs {
		page, err := gcs.DecodePage(kv.Value)
		if err != nil {
			t.Fatalf("page %s: %v", kv.Key, err)
		}
		frames += len(page)
	}
	return recs, frames, len(kvs)
}

func TestPackerAppendFlushRemove(t *testing.T) {
	ctx := testCtx(t)
	s := newMem(t)
	w := newWriter(t, s, gcs.WriterConfig{MaxDelay: long})
	p := newPacker(t, w, gcs.PackerConfig{SealDelay: long, PageRecords: 100})
	const n = 1000
	for i := range n {
		id := fmt.Sprintf("%08x", i)
		if err := p.Append(id, rec(id, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, frames, pages := stored(t, s, gcs.LineagePrefix)
	if len(recs) != n || frames != n || pages != n/100 {
		t.Fatalf("%d records, %d frames in %d pages; want %d in %d", len(recs), frames, pages, n, n/100)
	}
	for id, r := range recs {
		if !bytes.Equal(r, rec(id, 0)) {
			t.Fatalf("record %s = %q", id, r)
		}
	}
	for i := range n {
		if !p.Remove(fmt.Sprintf("%08x", i)) {
			t.Fatalf("Remove(%d) found nothing", i)
		}
	}
	if p.Remove("nope") {
		t.Fatal("Remove of an unknown id reported a record")
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Count(ctx, ""); n != 0 {
		t.Fatalf("%d keys left after removing every record", n)
	}
	st := p.Stats()
	if st.Live != 0 || st.PagesWritten != 10 || st.PagesDeleted != 10 || st.Appended != n || st.Removed != n {
		t.Fatalf("stats %+v", st)
	}
}

// Short-lived records never reach the store: removed while their page is open, or while
// the page's Create is still pending in the Writer.
func TestPackerShortLivedRecordsStayOut(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pageRecords int
	}{
		{"page still open", 1000},
		{"page sealed, not yet sent", 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			s := newMem(t)
			rev0, _ := s.Revision(ctx)
			w := newWriter(t, s, gcs.WriterConfig{MaxDelay: long})
			p := newPacker(t, w, gcs.PackerConfig{SealDelay: long, PageRecords: tc.pageRecords})
			for round := range 3 {
				for i := range 50 {
					id := fmt.Sprintf("%d-%d", round, i)
					if err := p.Append(id, rec(id, 0)); err != nil {
						t.Fatal(err)
					}
				}
				for i := range 50 {
					p.Remove(fmt.Sprintf("%d-%d", round, i))
				}
			}
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if rev, _ := s.Revision(ctx); rev != rev0 {
				t.Fatalf("store touched: revision %d -> %d (writer %+v, packer %+v)", rev0, rev, w.Stats(), p.Stats())
			}
			if st := w.Stats(); st.Keys != 0 || st.Txns != 0 {
				t.Fatalf("writer sent %+v", st)
			}
		})
	}
}

// A page that becomes mostly dead is rewritten: its live records move to a new page and
// the old page is deleted after the new one is committed.
func TestPackerRewrite(t *testing.T) {
	ctx := testCtx(t)
	h := &hookStore{Store: newMem(t)}
	w := newWriter(t, h, gcs.WriterConfig{MaxDelay: long})
	p := newPacker(t, w, gcs.PackerConfig{SealDelay: long, PageRecords: 10, Owner: "o"})
	for i := range 10 {
		id := fmt.Sprint("r", i)
		if err := p.Append(id, rec(id, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	oldKey := p.PageKey(0)
	// 5 of 10 live is not below the threshold; 4 is.
	for i := range 5 {
		p.Remove(fmt.Sprint("r", i))
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Rewrites != 0 {
		t.Fatalf("rewritten at half live: %+v", st)
	}
	recs, _, _ := stored(t, h, gcs.LineagePrefix)
	if len(recs) != 10 {
		t.Fatalf("removed records are still readable until the page is rewritten: got %d", len(recs))
	}
	p.Remove("r5")
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, frames, pages := stored(t, h, gcs.LineagePrefix)
	var ids []string
	for id := range recs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"r6", "r7", "r8", "r9"}) || frames != 4 || pages != 1 {
		t.Fatalf("after rewrite: ids %q, %d frames, %d pages", ids, frames, pages)
	}
	if st := p.Stats(); st.Rewrites != 1 || st.Moved != 4 {
		t.Fatalf("stats %+v", st)
	}
	// The new page was committed in an earlier transaction than the old page's delete.
	newKey := p.PageKey(1)
	created, deleted := -1, -1
	for i, ops := range h.committed() {
		for _, op := range ops {
			switch {
			case op.Key == newKey && op.Kind == gcs.OpPut:
				created = i
			case op.Key == oldKey && op.Kind == gcs.OpDelete:
				deleted = i
			}
		}
	}
	if created < 0 || deleted <= created {
		t.Fatalf("new page committed in txn %d, old page deleted in txn %d", created, deleted)
	}
}

// With a minimum age, a half-dead page is not rewritten at once but when it comes of age;
// one whose records all go meanwhile is simply deleted.
func TestPackerRewriteMinAge(t *testing.T) {
	ctx := testCtx(t)
	s := newMem(t)
	w := newWriter(t, s, gcs.WriterConfig{})
	p := newPacker(t, w, gcs.PackerConfig{PageRecords: 10, RewriteMinAge: 20 * time.Millisecond})
	for i := range 20 {
		id := fmt.Sprint("a", i)
		if err := p.Append(id, rec(id, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Page 0 loses every record (it is deleted, normally without a rewrite); page 1 keeps
	// 3 of 10 and is rewritten once it is 20 ms old.
	for i := range 17 {
		p.Remove(fmt.Sprint("a", i))
	}
	for p.Stats().Rewrites == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("page never rewritten")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, frames, _ := stored(t, s, gcs.LineagePrefix)
	if len(recs) != 3 || frames != 3 {
		t.Fatalf("stored %d records in %d frames, want the 3 live ones", len(recs), frames)
	}
}

func TestPackerReappend(t *testing.T) {
	ctx := testCtx(t)
	s := newMem(t)
	w := newWriter(t, s, gcs.WriterConfig{MaxDelay: long})
	p := newPacker(t, w, gcs.PackerConfig{SealDelay: long, PageRecords: 4})
	for gen := range 3 {
		for _, id := range []string{"x", "y"} {
			if err := p.Append(id, rec(id, gen)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	recs, _, _ := stored(t, s, gcs.LineagePrefix)
	if len(recs) != 2 || !bytes.Equal(recs["x"], rec("x", 2)) || !bytes.Equal(recs["y"], rec("y", 2)) {
		t.Fatalf("records %q", recs)
	}
	if st := p.Stats(); st.Live != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// Under light load a partly filled page is sealed by the timer, without Flush.
func TestPackerSealDelay(t *testing.T) {
	ctx := testCtx(t)
	s := newMem(t)
	w := newWriter(t, s, gcs.WriterConfig{MaxDelay: time.Millisecond})
	p := newPacker(t, w, gcs.PackerConfig{SealDelay: time.Millisecond, Prefix: gcs.ObjectPagesPrefix})
	ch := s.Watch(ctx, gcs.ObjectPagesPrefix, 0)
	if err := p.Append("obj1", []byte("loc")); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		if r.Err != nil || len(r.Events) != 1 {
			t.Fatalf("watch %+v", r)
		}
		page, err := gcs.DecodePage(r.Events[0].KV.Value)
		if err != nil || len(page) != 1 || page[0].ID != "obj1" || string(page[0].Data) != "loc" {
			t.Fatalf("page %+v, %v", page, err)
		}
	case <-ctx.Done():
		t.Fatal("page never written")
	}
}

// A random script of appends, re-appends and removes with flushes: the store always holds
// every live record with its latest value, and at most twice as many frames as live
// records.
func TestPackerModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			ctx := testCtx(t)
			rng := rand.New(rand.NewPCG(seed, 99))
			s := newMem(t)
			w := newWriter(t, s, gcs.WriterConfig{MaxDelay: time.Duration(rng.IntN(3)) * time.Millisecond})
			p := newPacker(t, w, gcs.PackerConfig{
				SealDelay:   time.Duration(1+rng.IntN(3)) * time.Millisecond,
				PageRecords: 5 + rng.IntN(40),
				PageBytes:   500 + rng.IntN(4000),
			})
			model := map[string][]byte{}
			for step := range 3000 {
				id := fmt.Sprintf("%03d", rng.IntN(300))
				switch r := rng.IntN(10); {
				case r < 5:
					v := bytes.Repeat([]byte{byte(step)}, rng.IntN(100))
					v = append(v, fmt.Sprint(step)...)
					if err := p.Append(id, v); err != nil {
						t.Fatal(err)
					}
					model[id] = v
				case r < 9:
					_, live := model[id]
					if p.Remove(id) != live {
						t.Fatalf("Remove(%s) disagrees with the model", id)
					}
					delete(model, id)
				default:
					if rng.IntN(20) == 0 {
						if err := p.Flush(ctx); err != nil {
							t.Fatal(err)
						}
						check(t, s, model, true)
					}
				}
			}
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			check(t, s, model, true)
			if st := p.Stats(); st.Live != len(model) {
				t.Fatalf("Live = %d, model %d", st.Live, len(model))
			}
		})
	}
}

func check(t *testing.T, s gcs.Store, model map[string][]byte, bound bool) {
	t.Helper()
	recs, frames, _ := stored(t, s, gcs.LineagePrefix)
	for id, v := range model {
		if !bytes.Equal(recs[id], v) {
			t.Fatalf("record %s = %q, want %q", id, recs[id], v)
		}
	}
	if bound && frames > 2*len(model) {
		t.Fatalf("%d frames stored for %d live records", frames, len(model))
	}
}

func TestPackerConcurrent(t *testing.T) {
	ctx := testCtx(t)
	s := newMem(t)
	w := newWriter(t, s, gcs.WriterConfig{})
	p := newPacker(t, w, gcs.PackerConfig{PageRecords: 64})
	var wg sync.WaitGroup
	const workers, each = 4, 3000
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("%d/%05d", g, i)
				if err := p.Append(id, rec(id, 0)); err != nil {
					t.Error(err)
					return
				}
				if i >= 100 { // keep a window of 100 live records per worker
					p.Remove(fmt.Sprintf("%d/%05d", g, i-100))
				}
			}
		}()
	}
	wg.Wait()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	model := map[string][]byte{}
	for g := range workers {
		for i := each - 100; i < each; i++ {
			id := fmt.Sprintf("%d/%05d", g, i)
			model[id] = rec(id, 0)
		}
	}
	check(t, s, model, true)
}

func TestPackerErrors(t *testing.T) {
	ctx := testCtx(t)
	w := newWriter(t, newMem(t), gcs.WriterConfig{})
	if _, err := gcs.NewPacker(w, gcs.PackerConfig{}); err == nil {
		t.Fatal("empty Prefix accepted")
	}
	if _, err := gcs.NewPacker(w, gcs.PackerConfig{Prefix: "x/", Owner: "a/b"}); err == nil {
		t.Fatal("Owner with '/' accepted")
	}
	if _, err := gcs.NewPacker(w, gcs.PackerConfig{Prefix: "x/", RewriteBelow: 1}); err == nil {
		t.Fatal("RewriteBelow 1 accepted")
	}
	p := newPacker(t, w, gcs.PackerConfig{})
	if err := p.Append("", nil); !errors.Is(err, gcs.ErrEmptyKey) {
		t.Fatalf("Append of empty id: %v", err)
	}
	if err := p.Append("big", make([]byte, gcs.MaxRecordBytes)); !errors.Is(err, gcs.ErrTooLarge) {
		t.Fatalf("Append of a huge record: %v", err)
	}
	// A record just under the limit, incompressible, still fits one request.
	big := make([]byte, gcs.MaxRecordBytes-64)
	for i := range big {
		big[i] = byte(rand.Uint32())
	}
	if err := p.Append("large", big); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Append("late", nil); !errors.Is(err, gcs.ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if err := p.Close(ctx); !errors.Is(err, gcs.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func TestDecodePage(t *testing.T) {
	for name, v := range map[string][]byte{
		"empty":       nil,
		"bad version": {9, 1, 2},
		"bad s2":      {1, 0xff, 0xff, 0xff},
	} {
		if _, err := gcs.DecodePage(v); err == nil {
			t.Fatalf("%s: no error", name)
		}
	}
	owner, seq, err := gcs.ParsePageKey(gcs.LineagePrefix, gcs.LineagePageKey("n1/00000000000000ff"))
	if err != nil || owner != "n1" || seq != 255 {
		t.Fatalf("ParsePageKey = %q %d %v", owner, seq, err)
	}
	if _, _, err := gcs.ParsePageKey(gcs.LineagePrefix, "lineage/x"); err == nil {
		t.Fatal("bad page key parsed")
	}
	if !strings.HasPrefix(gcs.LineagePageKey("a"), gcs.LineagePrefix) {
		t.Fatal("LineagePageKey")
	}
}
