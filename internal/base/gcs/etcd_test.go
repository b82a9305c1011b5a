package gcs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
)

// embedded starts a real etcd in a temporary directory for the test; the returned store
// uses the in-process client.
func embedded(t testing.TB, noFsync bool) gcs.Store {
	t.Helper()
	e, err := etcdstore.StartEmbedded(context.Background(), etcdstore.EmbedConfig{Dir: t.TempDir(), Namespace: "ray/t/", UnsafeNoFsync: noFsync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	s := e.Client()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Records written through a Writer and a Packer appear in a real etcd, can be read back
// by a recovery reader, and go away when removed.
func TestWriterPackerOnEtcd(t *testing.T) {
	ctx := testCtx(t)
	s := embedded(t, false)
	w := newWriter(t, s, gcs.WriterConfig{})
	p := newPacker(t, w, gcs.PackerConfig{PageRecords: 200})

	watch := s.Watch(ctx, gcs.NodesPrefix, 0)
	w.Put(gcs.NodeKey("n1"), []byte("addr"))
	w.Create(gcs.ActorKey("short"), []byte("gone before it is sent"))
	w.Delete(gcs.ActorKey("short"))
	const n = 2000
	for i := range n {
		id := fmt.Sprintf("%016x", i)
		if err := p.Append(id, rec(id, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-watch; r.Err != nil || len(r.Events) != 1 || r.Events[0].KV.Key != gcs.NodeKey("n1") {
		t.Fatalf("node watch: %+v", r)
	}
	if _, ok, err := s.Get(ctx, gcs.ActorKey("short")); err != nil || ok {
		t.Fatalf("short-lived actor key reached etcd (%v)", err)
	}
	recs, frames, pages := stored(t, s, gcs.LineagePrefix)
	if len(recs) != n || frames != n || pages < n/200 || pages > n/2 { // the seal timer may cut pages short
		t.Fatalf("%d records, %d frames, %d pages", len(recs), frames, pages)
	}
	for i := range n {
		p.Remove(fmt.Sprintf("%016x", i))
	}
	w.DeletePrefix(gcs.NodesPrefix)
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Count(ctx, ""); err != nil || c != 0 {
		t.Fatalf("%d keys left in etcd (%v)", c, err)
	}
	st := w.Stats()
	if st.Coalesced < 2 || st.Txns == 0 {
		t.Fatalf("writer stats %+v", st)
	}
	t.Logf("writer %+v", st)
	t.Logf("packer %+v", p.Stats())
}

// TestPackerRewritesPagesLostAtTheQuota: on a real etcd at a small quota, filled up, the
// pages of a Packer are dropped by the Writer (its Flush says so), and the Packer writes
// their live records again: once deletes made room, the store holds every live record
// (and no record removed while the store was full) without a new Append.
func TestPackerRewritesPagesLostAtTheQuota(t *testing.T) {
	defer func(d time.Duration) { gcs.LostRetryDelay = d }(gcs.LostRetryDelay)
	gcs.LostRetryDelay = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{Dir: t.TempDir(), Namespace: "ray/t/", QuotaBytes: 16 << 20,
		DefragEvery: 200 * time.Millisecond, AlarmDefragEvery: 200 * time.Millisecond, DefragMinBytes: 1, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := e.Client()
	defer s.Close()

	// Fill it so that it stays full: a defragmentation under the alarm disarms it when
	// the file is under 90% of the quota, so fill again until writes keep failing.
	junk := bytes.Repeat([]byte{'x'}, 100<<10)
	n, full := 0, false
	for round := 0; round < 20 && !full; round++ {
		for ; n < 1000; n++ {
			if _, err := s.Put(ctx, fmt.Sprintf("junk/%04d", n), junk, 0); errors.Is(err, gcs.ErrNoSpace) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		full = true
		for probe := 0; probe < 3 && full; probe++ {
			time.Sleep(250 * time.Millisecond)
			_, err := s.Put(ctx, "junk/probe", []byte("x"), 0)
			full = errors.Is(err, gcs.ErrNoSpace)
		}
	}
	if !full {
		t.Fatalf("the store took %d x 100 KiB and does not stay at its quota", n)
	}

	w := newWriter(t, s, gcs.WriterConfig{NoSpaceWait: 50 * time.Millisecond})
	p := newPacker(t, w, gcs.PackerConfig{PageRecords: 100})
	const records = 1000
	for i := range records {
		id := fmt.Sprintf("%016x", i)
		if err := p.Append(id, rec(id, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); !errors.Is(err, gcs.ErrNoSpace) {
		t.Fatalf("Flush at the quota = %v; want ErrNoSpace", err)
	}
	for i := 0; i < records; i += 2 { // removed while the store is full: never written
		p.Remove(fmt.Sprintf("%016x", i))
	}
	time.Sleep(300 * time.Millisecond) // a round or two of rewrites dropped again

	// The member rewrites its file every 200 ms while the alarm is on, blocking writes
	// meanwhile: on a loaded machine the delete can time out ("etcdserver: request timed
	// out"; CI saw it once). It is idempotent, so it is sent again, a bounded number of times.
	var rev int64
	for attempt := 1; ; attempt++ {
		_, rev, err = s.Txn(ctx, nil, []gcs.Op{{Kind: gcs.OpDeletePrefix, Key: "junk/"}})
		if err == nil {
			break
		}
		if attempt == 5 || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("delete the junk (attempt %d): %v", attempt, err)
		}
	}
	if err := s.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	// Every live record is in the store again. Removed ones are not rewritten; a page that
	// landed before the removals (the alarm's defragmentation can let a write through for
	// a moment, seen under load) keeps its dead records until the packer compacts it, as
	// any written page does, so some may be there, never all.
	live := func(recs map[string][]byte) bool {
		for i := 1; i < records; i += 2 {
			if _, ok := recs[fmt.Sprintf("%016x", i)]; !ok {
				return false
			}
		}
		return true
	}
	var recs map[string][]byte
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if recs, _, err = gcs.ReadAll(ctx, s, gcs.LineagePrefix); err == nil && live(recs) {
			break
		}
	}
	if !live(recs) || len(recs) >= records {
		t.Fatalf("%d records in the store once it had space again (%v); want the %d live ones, and not every removed one (packer %+v, writer %+v)",
			len(recs), err, records/2, p.Stats(), w.Stats())
	}
	for i := 1; i < records; i += 2 {
		id := fmt.Sprintf("%016x", i)
		if !bytes.Equal(recs[id], rec(id, 0)) {
			t.Fatalf("record %s = %q", id, recs[id])
		}
	}
	if st := p.Stats(); st.LostRewritten == 0 {
		t.Fatalf("packer %+v: want pages rewritten after the quota dropped them", st)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("Flush once the store has space: %v", err)
	}
}
