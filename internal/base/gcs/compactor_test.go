package gcs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
)

func TestCompactorKeepsHistoryShort(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()
	c := gcs.NewCompactor(store, gcs.CompactorConfig{Interval: 5 * time.Millisecond, Keep: 10, MinGap: 20})
	defer c.Stop()
	// Below MinGap + Keep revisions nothing is compacted.
	for i := range 25 {
		if _, err := store.Put(ctx, fmt.Sprintf("k%d", i%3), []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Two passes more: the second read the revision after the writes.
	passes := c.Checks() + 2
	eventually.True(t, 10*time.Second, "two compactor passes", func() bool { return c.Checks() >= passes })
	if rev, runs := c.Compacted(); runs != 0 {
		t.Fatalf("compacted to %d after only 25 revisions", rev)
	}
	for i := range 100 {
		if _, err := store.Put(ctx, fmt.Sprintf("k%d", i%3), []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Once the writes stop, the compactor catches up: it never keeps less than Keep
	// revisions, and leaves at most Keep+MinGap.
	cur, err := store.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, fmt.Sprintf("a compaction to within [%d, %d]", cur-30, cur-10), func() bool {
		rev, runs := c.Compacted()
		if rev > cur-10 {
			t.Fatalf("compacted to %d with the store at %d: less than Keep=10 revisions kept", rev, cur)
		}
		return runs > 0 && rev >= cur-10-20
	})
	// History before the compaction is gone: a watch from revision 1 fails.
	if resp, ok := <-store.Watch(ctx, "k", 1); !ok || !errors.Is(resp.Err, gcs.ErrCompacted) {
		t.Fatalf("watch from revision 1: %v (open %v), want ErrCompacted", resp.Err, ok)
	}
}

// TestCompactorWindow: however few revisions pass, history older than Window is compacted
// (large values make few revisions many bytes); history younger than Window stays.
func TestCompactorWindow(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()
	const window = 300 * time.Millisecond
	c := gcs.NewCompactor(store, gcs.CompactorConfig{Interval: 10 * time.Millisecond, Keep: 1 << 40, MinGap: 1 << 40, Window: window})
	defer c.Stop()
	put := func() int64 {
		rev, err := store.Put(ctx, "k", []byte("v"), 0)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	first := put()
	start := time.Now()
	put()
	eventually.True(t, 10*time.Second, "a compaction once the first writes are a window old", func() bool {
		rev, runs := c.Compacted()
		return runs > 0 && rev >= first
	})
	if d := time.Since(start); d < window {
		t.Fatalf("compacted %v after the writes; want history younger than the window (%v) kept", d, window)
	}
	young := put()
	if rev, _ := c.Compacted(); rev >= young {
		t.Fatalf("compacted to %d, past a revision (%d) written just now", rev, young)
	}
	eventually.True(t, 10*time.Second, "the next compaction a window later", func() bool {
		rev, _ := c.Compacted()
		return rev >= young
	})
}
