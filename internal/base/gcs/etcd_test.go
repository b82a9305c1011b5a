package gcs_test

import (
	"context"
	"fmt"
	"testing"

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
