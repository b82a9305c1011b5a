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

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
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

// Short-lived records never reach the store: removed while their page is open, full and
// waiting for SealDelay, or while the page's Create is still pending in the Writer.
func TestPackerShortLivedRecordsStayOut(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pageRecords int
		sealDelay   time.Duration
	}{
		{"page still open", 1000, long},
		{"page full, waiting", 10, long},
		{"page sealed, not yet sent", 10, time.Nanosecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			s := newMem(t)
			rev0, _ := s.Revision(ctx)
			w := newWriter(t, s, gcs.WriterConfig{MaxDelay: long})
			p := newPacker(t, w, gcs.PackerConfig{SealDelay: tc.sealDelay, PageRecords: tc.pageRecords})
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
	eventually.True(t, 30*time.Second, "page 1 rewritten", func() bool { return p.Stats().Rewrites > 0 })
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

// pageIDs returns the IDs of the records of each page under prefix, in key order, one
// space-separated string per page.
func pageIDs(t testing.TB, s gcs.Store, prefix string) []string {
	t.Helper()
	kvs, _, err := s.List(testCtx(t), prefix)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, kv := range kvs {
		page, err := gcs.DecodePage(kv.Value)
		if err != nil {
			t.Fatalf("page %s: %v", kv.Key, err)
		}
		var ids []string
		for _, r := range page {
			ids = append(ids, r.ID)
		}
		out = append(out, strings.Join(ids, " "))
	}
	return out
}

// TestPackerCompaction runs scripts against a Packer whose pages are sealed by Flush
// only, and checks which records each written page holds: only those still live when it
// was sealed, and no page at all when none is.
func TestPackerCompaction(t *testing.T) {
	window := func(n, keep int) string { // +k0 +k1 ... each record removed keep appends later
		var b strings.Builder
		for i := range n {
			if i >= keep {
				fmt.Fprintf(&b, "-k%d ", i-keep)
			}
			fmt.Fprintf(&b, "+k%d ", i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name         string
		cfg          gcs.PackerConfig
		script       string   // +id: append, -id: remove, F: Packer.Flush, W: Writer.Flush and snapshot
		wantW        []string // pages at the W step
		want         []string // pages after the script and a final Flush
		written      uint64
		dropped      uint64
		compacted    uint64
		rewrites     uint64
		records      uint64
		wantWritten1 bool // the only page written is page 0 (no other page was opened)
	}{
		{name: "removed before the seal", cfg: gcs.PackerConfig{PageRecords: 100},
			script: "+a +b +c +d -b -d", want: []string{"a c"}, written: 1, compacted: 2, records: 2},
		{name: "superseded in the open page", cfg: gcs.PackerConfig{PageRecords: 100},
			script: "+a +b +a +c +a", want: []string{"b c a"}, written: 1, compacted: 2, records: 3},
		{name: "every record removed: nothing written", cfg: gcs.PackerConfig{PageRecords: 100},
			script: "+a +b -a +c -b -c +d -d", want: []string{}, compacted: 4},
		{name: "full pages whose records all go are dropped", cfg: gcs.PackerConfig{PageRecords: 3},
			script: "+a +b +c +d +e +f +g W -a -b -c -e -d -f", wantW: []string{}, want: []string{"g"},
			written: 1, dropped: 2, compacted: 6, records: 1},
		{name: "full page compacted when sealed", cfg: gcs.PackerConfig{PageRecords: 3},
			script: "+a +b +c -b +d W", wantW: []string{}, want: []string{"a c", "d"},
			written: 2, compacted: 1, records: 3},
		{name: "full page with a superseded record", cfg: gcs.PackerConfig{PageRecords: 2},
			script: "+a +b +a", want: []string{"b", "a"}, written: 2, compacted: 1, records: 2},
		{name: "written page not compacted", cfg: gcs.PackerConfig{PageRecords: 100},
			script: "+a +b +c F -b +d", want: []string{"a b c", "d"}, written: 2, records: 4},
		{name: "open page absorbs records while most die", cfg: gcs.PackerConfig{PageBytes: 200, PageRecords: 100},
			script: window(60, 2), want: []string{"k58 k59"}, written: 1, compacted: 58, records: 2, wantWritten1: true},
		// 12 live records of 20 bytes: not worth compacting a 200-byte page for, so pages
		// of about 9 frames fill, and go when their records do.
		{name: "mostly live open page is full", cfg: gcs.PackerConfig{PageBytes: 200, PageRecords: 100},
			script: window(60, 12), want: []string{"k48 k49 k50 k51 k52 k53 k54", "k55 k56 k57 k58 k59"},
			written: 2, dropped: 5, compacted: 48, records: 12},
		{name: "slot limit makes a mostly dead page full", cfg: gcs.PackerConfig{PageRecords: 3},
			script: window(30, 2), want: []string{"k28 k29"}, written: 1, dropped: 2, compacted: 28, records: 2},
		// Superseding a (written in page 0) leaves page 0 below RewriteBelow: the rewrite
		// moves b only, not the superseded a.
		{name: "superseding rewrites the old page", cfg: gcs.PackerConfig{PageRecords: 100, RewriteBelow: 0.9},
			script: "+a +b F +a", want: []string{"b a"}, written: 2, rewrites: 1, records: 4},
		// The rewrite of page 0 moves a2 into page 1, which fills and waits, and a3 into
		// page 2, which is emptied at once: page 0 may go only after page 1 is written.
		{name: "rewritten page outlives the full page holding its records", cfg: gcs.PackerConfig{PageRecords: 4, RewriteBelow: 0.75},
			script: "+a0 +a1 +a2 +a3 F +c0 +c1 +c2 -a0 -a1 -a3 W", wantW: []string{"a0 a1 a2 a3"}, want: []string{"c0 c1 c2 a2"},
			written: 2, compacted: 1, rewrites: 1, records: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			s := newMem(t)
			w := newWriter(t, s, gcs.WriterConfig{MaxDelay: long})
			cfg := tc.cfg
			cfg.SealDelay, cfg.Owner = long, "o"
			p := newPacker(t, w, cfg)
			model := map[string][]byte{}
			gen := 0
			var gotW []string
			for _, step := range strings.Fields(tc.script) {
				switch {
				case step == "F":
					if err := p.Flush(ctx); err != nil {
						t.Fatal(err)
					}
				case step == "W":
					if err := w.Flush(ctx); err != nil {
						t.Fatal(err)
					}
					gotW = pageIDs(t, s, gcs.LineagePrefix)
				case step[0] == '+':
					gen++
					id := step[1:]
					if err := p.Append(id, rec(id, gen)); err != nil {
						t.Fatal(err)
					}
					model[id] = rec(id, gen)
				case step[0] == '-':
					if !p.Remove(step[1:]) {
						t.Fatalf("%s: nothing to remove", step)
					}
					delete(model, step[1:])
				}
			}
			if tc.wantW != nil && !slices.Equal(gotW, tc.wantW) {
				t.Errorf("pages at W: %q, want %q", gotW, tc.wantW)
			}
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if got := pageIDs(t, s, gcs.LineagePrefix); !slices.Equal(got, tc.want) {
				t.Errorf("pages %q, want %q", got, tc.want)
			}
			check(t, s, model, false)
			st := p.Stats()
			if st.PagesWritten != tc.written || st.PagesDropped != tc.dropped || st.Compacted != tc.compacted ||
				st.Rewrites != tc.rewrites || st.Records != tc.records || st.Live != len(model) {
				t.Errorf("stats %+v", st)
			}
			if st.Appended+st.Moved != st.Compacted+st.Records {
				t.Errorf("records do not add up: %+v", st)
			}
			if tc.wantWritten1 {
				if _, ok, _ := s.Get(ctx, p.PageKey(0)); !ok {
					t.Errorf("page 0 not written: %q", dump(t, s, ""))
				}
			}
		})
	}
}

// A random script (appends, re-appends, removes, bursts of short-lived records) with pages
// sealed by Flush only, so the store can be checked exactly: after each Flush it holds
// every live record with its latest value; each page written by that Flush holds only
// records live at that moment, at least one; and every other record it holds was live at
// an earlier Flush (a removed record lingers only in a page written before the removal).
func TestPackerCompactionModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			ctx := testCtx(t)
			rng := rand.New(rand.NewPCG(seed, 7))
			s := newMem(t)
			w := newWriter(t, s, gcs.WriterConfig{MaxDelay: long})
			p := newPacker(t, w, gcs.PackerConfig{
				SealDelay:    long,
				PageRecords:  2 + rng.IntN(30),
				PageBytes:    150 + rng.IntN(3000),
				RewriteBelow: 0.2 + 0.7*rng.Float64(),
			})
			model := map[string][]byte{}
			wasLive := map[string]bool{} // id + "=" + value, live at some Flush
			seen := map[string]bool{}    // page keys seen after earlier Flushes
			next := 0
			flush := func() {
				t.Helper()
				if err := p.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				for id, v := range model {
					wasLive[id+"="+string(v)] = true
				}
				kvs, _, err := s.List(ctx, gcs.LineagePrefix)
				if err != nil {
					t.Fatal(err)
				}
				for _, kv := range kvs {
					page, err := gcs.DecodePage(kv.Value)
					if err != nil {
						t.Fatal(err)
					}
					fresh := !seen[kv.Key]
					seen[kv.Key] = true
					if fresh && len(page) == 0 {
						t.Fatalf("empty page %s written", kv.Key)
					}
					ids := map[string]bool{}
					for _, r := range page {
						if ids[r.ID] {
							t.Fatalf("page %s holds %s twice", kv.Key, r.ID)
						}
						ids[r.ID] = true
						if fresh && !bytes.Equal(model[r.ID], r.Data) {
							t.Fatalf("page %s written now holds %s=%q, live value %q", kv.Key, r.ID, r.Data, model[r.ID])
						}
						if !wasLive[r.ID+"="+string(r.Data)] {
							t.Fatalf("page %s holds %s=%q, never live at a Flush", kv.Key, r.ID, r.Data)
						}
					}
				}
				check(t, s, model, false)
				st := p.Stats()
				if st.Live != len(model) || st.Appended+st.Moved != st.Compacted+st.Records {
					t.Fatalf("stats %+v, model %d", st, len(model))
				}
			}
			appendRec := func(id string) {
				v := bytes.Repeat([]byte{byte(next)}, rng.IntN(120))
				v = append(v, fmt.Sprint(next)...)
				next++
				if err := p.Append(id, v); err != nil {
					t.Fatal(err)
				}
				model[id] = v
			}
			for range 4000 {
				switch r := rng.IntN(100); {
				case r < 45:
					appendRec(fmt.Sprintf("%03d", rng.IntN(200)))
				case r < 88:
					id := fmt.Sprintf("%03d", rng.IntN(200))
					_, live := model[id]
					if p.Remove(id) != live {
						t.Fatalf("Remove(%s) disagrees with the model", id)
					}
					delete(model, id)
				case r < 97: // a burst of short-lived records, as tasks
					n := 1 + rng.IntN(50)
					var ids []string
					for range n {
						id := fmt.Sprintf("t%05d", next)
						ids = append(ids, id)
						appendRec(id)
					}
					for _, id := range ids {
						if rng.IntN(10) > 0 {
							p.Remove(id)
							delete(model, id)
						}
					}
				default:
					flush()
				}
			}
			flush()
		})
	}
}

// Full pages wait for SealDelay, then are written with their live records only.
func TestPackerFullPageWaitsForSealDelay(t *testing.T) {
	ctx := testCtx(t)
	s := newMem(t)
	w := newWriter(t, s, gcs.WriterConfig{MaxDelay: time.Millisecond})
	// Long enough for the appends and removes below to come before it on a loaded machine
	// under -race: at 50 ms, CI once sealed page 0 before its removes (10 records written).
	const delay = time.Second
	p := newPacker(t, w, gcs.PackerConfig{SealDelay: delay, PageRecords: 10})
	ch := s.Watch(ctx, gcs.LineagePrefix, 0)
	start := time.Now()
	for i := range 25 { // pages 0 and 1 full, page 2 open
		id := fmt.Sprintf("r%02d", i)
		if err := p.Append(id, rec(id, 0)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 25 {
		if i%10 != 0 {
			p.Remove(fmt.Sprintf("r%02d", i))
		}
	}
	var got []string
	for len(got) < 3 {
		select {
		case r := <-ch:
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			for _, ev := range r.Events {
				page, err := gcs.DecodePage(ev.KV.Value)
				if err != nil || len(page) != 1 {
					t.Fatalf("page %s: %+v, %v", ev.KV.Key, page, err)
				}
				got = append(got, page[0].ID)
			}
		case <-ctx.Done():
			t.Fatalf("pages written: %q", got)
		}
	}
	if el := time.Since(start); el < delay {
		t.Fatalf("pages written after %v, before SealDelay", el)
	}
	if !slices.Equal(got, []string{"r00", "r10", "r20"}) {
		t.Fatalf("pages hold %q", got)
	}
	if st := p.Stats(); st.PagesWritten != 3 || st.Compacted != 22 || st.Records != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// At most 4 MiB of full pages wait for SealDelay; beyond, the oldest is sealed at once.
func TestPackerFullPagesBounded(t *testing.T) {
	ctx := testCtx(t)
	s := newMem(t)
	w := newWriter(t, s, gcs.WriterConfig{MaxDelay: long})
	p := newPacker(t, w, gcs.PackerConfig{SealDelay: long, PageBytes: gcs.MaxRecordBytes, Owner: "o"})
	big := make([]byte, 600<<10) // one per page
	for i := range 6 {           // pages 0-4 full (4 may wait), page 5 open
		if err := p.Append(fmt.Sprint("big", i), big); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	kvs, _, err := s.List(ctx, gcs.LineagePrefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(kvs) != 1 || kvs[0].Key != p.PageKey(0) {
		t.Fatalf("%d pages written, want page 0 only", len(kvs))
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if recs, frames, pages := stored(t, s, gcs.LineagePrefix); len(recs) != 6 || frames != 6 || pages != 6 {
		t.Fatalf("%d records, %d frames, %d pages", len(recs), frames, pages)
	}
}

// Short-lived records from several goroutines, with timers sealing pages concurrently with
// Removes: whatever the interleaving, the store ends up holding the live records, and
// records that die young mostly never reach it.
func TestPackerConcurrentShortLived(t *testing.T) {
	ctx := testCtx(t)
	s := newMem(t)
	w := newWriter(t, s, gcs.WriterConfig{MaxDelay: time.Millisecond})
	p := newPacker(t, w, gcs.PackerConfig{SealDelay: 5 * time.Millisecond, PageRecords: 32, PageBytes: 2000})
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		model = map[string][]byte{}
	)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 3000 {
				id := fmt.Sprintf("%d/%05d", g, i)
				v := rec(id, 0)
				if err := p.Append(id, v); err != nil {
					t.Error(err)
					return
				}
				if i >= 8 && rng.IntN(20) > 0 { // most die 8 appends later, a few stay
					p.Remove(fmt.Sprintf("%d/%05d", g, i-8))
				} else if i >= 8 {
					mu.Lock()
					model[fmt.Sprintf("%d/%05d", g, i-8)] = rec(fmt.Sprintf("%d/%05d", g, i-8), 0)
					mu.Unlock()
				}
				if i%500 == 0 {
					// Pacing, not a wait: a pause now and then lets the packer seal and
					// rewrite pages between the appends.
					time.Sleep(time.Millisecond)
				}
			}
			mu.Lock()
			for i := 3000 - 8; i < 3000; i++ {
				id := fmt.Sprintf("%d/%05d", g, i)
				model[id] = rec(id, 0)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check(t, s, model, false)
	st := p.Stats()
	if st.Live != len(model) {
		t.Fatalf("Live = %d, model %d", st.Live, len(model))
	}
	t.Logf("packer %+v", st)
}

// The hot path allocates nothing in the steady state of records that die young: pages
// fill, wait and are dropped, their buffers reused; the open page compacts in place.
func TestPackerAppendRemoveAllocs(t *testing.T) {
	w := newWriter(t, newMem(t), gcs.WriterConfig{MaxDelay: long})
	for _, tc := range []struct {
		cfg                    gcs.PackerConfig
		minDropped, maxDropped uint64
	}{
		// Pages fill at 4*64 slots (records appended) and are dropped.
		{gcs.PackerConfig{SealDelay: long, PageRecords: 64}, 70, 80},
		// The open page compacts in place, full only at 4*4096 slots.
		{gcs.PackerConfig{SealDelay: long, PageBytes: 16 << 10, Prefix: "x/"}, 1, 1},
	} {
		cfg := tc.cfg
		p := newPacker(t, w, cfg)
		ids := make([]string, 1<<12)
		for i := range ids {
			ids[i] = fmt.Sprintf("%016x", i)
		}
		val := make([]byte, 150)
		i := 0
		step := func() {
			id := ids[i%len(ids)]
			if err := p.Append(id, val); err != nil {
				t.Fatal(err)
			}
			p.Remove(ids[(i+len(ids)-16)%len(ids)]) // 16 live records
			i++
		}
		for range 10_000 {
			step()
		}
		if n := testing.AllocsPerRun(10_000, step); n != 0 {
			t.Errorf("%+v: %v allocations per Append+Remove", cfg, n)
		}
		if st := p.Stats(); st.PagesWritten != 0 || st.PagesDropped < tc.minDropped || st.PagesDropped > tc.maxDropped {
			t.Errorf("%+v: stats %+v", cfg, st)
		}
	}
}

// TestShardedPacker: records appended from several goroutines land in the shards' pages
// under one owner, in disjoint page ranges; ReadAll of the owner reads every one, and
// removing them all deletes every page.
func TestShardedPacker(t *testing.T) {
	ctx := testCtx(t)
	s := newMem(t)
	w := newWriter(t, s, gcs.WriterConfig{MaxDelay: long})
	sp, err := gcs.NewShardedPacker(w, gcs.PackerConfig{Prefix: gcs.LineagePrefix, Owner: "node1", SealDelay: long, PageRecords: 50, RewriteMinAge: -1}, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sp.Close(context.Background()) })
	const goroutines, each = 4, 250
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("%02x%06x", g, i)
				if err := sp.Append(id, rec(id, 0)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, _, _ := stored(t, s, gcs.LineagePrefix+"node1/")
	if len(recs) != goroutines*each {
		t.Fatalf("%d records read back, want %d", len(recs), goroutines*each)
	}
	kvs, _, err := s.List(ctx, gcs.LineagePrefix)
	if err != nil {
		t.Fatal(err)
	}
	ranges := map[uint64]bool{}
	for _, kv := range kvs {
		owner, seq, err := gcs.ParsePageKey(gcs.LineagePrefix, kv.Key)
		if err != nil || owner != "node1" {
			t.Fatalf("page key %q: owner %q, %v", kv.Key, owner, err)
		}
		ranges[seq>>48] = true
	}
	if len(ranges) != 4 {
		t.Errorf("pages in %d shard ranges, want 4 (records spread over every shard)", len(ranges))
	}
	if st := sp.Stats(); st.Live != goroutines*each || st.Appended != goroutines*each {
		t.Fatalf("stats %+v", st)
	}
	for id := range recs {
		if !sp.Remove(id) {
			t.Fatalf("Remove(%s) found nothing", id)
		}
	}
	if err := sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Count(ctx, ""); n != 0 {
		t.Fatalf("%d keys left after removing every record", n)
	}
	if _, err := gcs.NewShardedPacker(w, gcs.PackerConfig{Prefix: gcs.LineagePrefix}, 3); err == nil {
		t.Error("3 shards accepted; want a power of two")
	}
}
