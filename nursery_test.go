package ray

import (
	"runtime"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
)

// TestNursery: a handle released within its first tick never gets a finalizer (the
// nursery forgets it); one still in use gets its finalizer within two ticks and keeps its
// reference; one dropped without Release gives its reference back after the nursery's
// ticks and a garbage collection.
func TestNursery(t *testing.T) {
	ctx := timeout(t)
	c := nodeOf(ctx).Core
	released, err := Put(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := Put(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	rh := released.h
	released.Release()
	time.Sleep(3 * nurseryTick)
	eventually.AfterGC(t, 10*time.Second, "the nursery to set the finalizer of a handle in use", func() bool { return kept.h.fin.Load() })
	if rh.fin.Load() {
		t.Fatal("a handle released in its first tick got a finalizer")
	}
	if mustGet(t, ctx, kept) != 2 {
		t.Fatal("the kept handle's object changed")
	}
	keptID := kept.h.id
	if l, _, known := c.Refs().Counts(keptID); !known || l != 1 {
		t.Fatalf("the kept object's local count is %d (known %v), want 1", l, known)
	}
	runtime.KeepAlive(kept)

	// Dropped without Release: the nursery holds it a tick or two, sets its finalizer,
	// and a collection gives its reference back.
	id := func() [20]byte {
		r, err := Put(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		return r.h.id
	}()
	eventually.AfterGC(t, 10*time.Second, "a dropped handle's reference to be given back", func() bool {
		_, _, known := c.Refs().Counts(id)
		return !known
	})
}
