package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
)

func sweepKeys(t *testing.T, s gcs.Store) []string {
	t.Helper()
	var out []string
	for _, prefix := range []string{gcs.LineagePrefix, gcs.ObjectsPrefix} {
		kvs, _, err := s.List(context.Background(), prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			out = append(out, kv.Key)
		}
	}
	sort.Strings(out)
	return out
}

// TestSweepGoneNodes: the head deletes the lineage pages and object table entries of a node
// whose record went (and of one it never saw, found by its scan) once the grace passed,
// not before, and keeps those of live nodes and of a node that came back.
func TestSweepGoneNodes(t *testing.T) {
	s := memstore.New(memstore.Options{})
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	a := &Agent{cfg: Config{Head: true}, store: s, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	put := func(key string) {
		if _, err := s.Put(ctx, key, []byte("x"), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"live", "dead", "back", "old"} {
		put(gcs.LineageOf(n) + "0000000000000001")
		put(gcs.LineageOf(n) + "0000000000000002")
		put(gcs.ObjectKey(n, "ff01"))
	}
	grace := 10 * time.Minute
	sw := newGoneSweeper(a, time.Second, grace)
	t0 := time.Unix(1_000_000, 0)
	sw.apply(tableUpdate{prefix: gcs.NodesPrefix, reset: true, kvs: []gcs.KV{
		{Key: gcs.NodeKey("live")}, {Key: gcs.NodeKey("dead")}, {Key: gcs.NodeKey("back")}}}, t0)
	sw.apply(tableUpdate{prefix: gcs.NodesPrefix, events: []gcs.Event{
		{Type: gcs.EventDelete, KV: gcs.KV{Key: gcs.NodeKey("dead")}},
		{Type: gcs.EventDelete, KV: gcs.KV{Key: gcs.NodeKey("back")}}}}, t0)
	all := sweepKeys(t, s)
	sw.sweep(ctx, t0) // scans: "old" left before this head watched
	sw.apply(tableUpdate{prefix: gcs.NodesPrefix, events: []gcs.Event{
		{Type: gcs.EventPut, KV: gcs.KV{Key: gcs.NodeKey("back")}}}}, t0.Add(time.Minute))
	sw.sweep(ctx, t0.Add(grace-time.Second))
	if got := sweepKeys(t, s); fmt.Sprint(got) != fmt.Sprint(all) {
		t.Fatalf("records deleted within the grace: %v, want %v", got, all)
	}
	sw.sweep(ctx, t0.Add(grace))
	var want []string
	for _, k := range all {
		if n := nodeOfKey(k); n == "live" || n == "back" {
			want = append(want, k)
		}
	}
	if got := sweepKeys(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the grace: %v, want %v", got, want)
	}
	if len(sw.gone) != 0 {
		t.Fatalf("nodes still tracked as gone after their records went: %v", sw.gone)
	}
}

// TestSweepBounded: one sweep deletes the records of at most sweepMaxNodes nodes, the oldest
// gone first; the next sweep the rest.
func TestSweepBounded(t *testing.T) {
	s := memstore.New(memstore.Options{})
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	a := &Agent{cfg: Config{Head: true}, store: s, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	sw := newGoneSweeper(a, time.Second, time.Minute)
	t0 := time.Unix(1_000_000, 0)
	sw.apply(tableUpdate{prefix: gcs.NodesPrefix, reset: true}, t0)
	n := sweepMaxNodes + 10
	for i := range n {
		id := fmt.Sprintf("n%03d", i)
		if _, err := s.Put(ctx, gcs.LineageOf(id)+"0000000000000001", []byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		sw.markGone(id, t0.Add(time.Duration(i)*time.Millisecond))
	}
	sw.scanned = t0 // no scan: the marks above are the test's
	sw.sweep(ctx, t0.Add(time.Hour/2))
	left := sweepKeys(t, s)
	if len(left) != 10 || nodeOfKey(left[0]) != fmt.Sprintf("n%03d", sweepMaxNodes) {
		t.Fatalf("after one sweep %d keys are left (%v), want the 10 newest gone", len(left), left)
	}
	sw.sweep(ctx, t0.Add(time.Hour/2+time.Second))
	if left := sweepKeys(t, s); len(left) != 0 {
		t.Fatalf("after two sweeps: %v", left)
	}
}

func nodeOfKey(k string) string {
	for _, p := range []string{gcs.LineagePrefix, gcs.ObjectsPrefix} {
		if rest, ok := gcs.TrimKey(p, k); ok {
			for i := range len(rest) {
				if rest[i] == '/' {
					return rest[:i]
				}
			}
		}
	}
	return ""
}
