package ray

import (
	"context"
	"runtime"
	"testing"
	"time"
	goweak "weak"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/objects"
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

// TestReleasedRefKeepsNoTaskRecord: an ObjectRef released while the program and the
// nursery still hold it does not keep its task's record from the garbage collector: the
// handle's pointer to its entry (which lives in the owner's record of the task: core's
// pending) is cleared when the reference is given back. Before, every task's record lived
// one to two nursery ticks after its Release, and each collection marked tens of thousands
// of them. A burst of tasks, got and released, leaves none of its records behind either
// (nothing on the way, a worker's queue or a batch of results, keeps one).
func TestReleasedRefKeepsNoTaskRecord(t *testing.T) {
	ctx := timeout(t)
	r := tiny.Remote(ctx)
	if _, err := Get(ctx, r); err != nil {
		t.Fatal(err)
	}
	e := r.h.e.Load()
	if e == nil {
		t.Fatal("a task's ref has no entry: nothing to check")
	}
	w := goweak.Make(e)
	e = nil
	r.Release()
	eventually.AfterGC(t, 10*time.Second, "a released task's record to be collected while its ref is held", func() bool { return w.Value() == nil })
	if r.h.e.Load() != nil || !r.h.gone.Load() {
		t.Fatal("the released handle still points to its entry")
	}
	runtime.KeepAlive(r) // held throughout, and by the nursery: a tick is 50 ms

	refs := make([]ObjectRef[[]byte], 500)
	for i := range refs {
		refs[i] = tiny.Remote(ctx)
	}
	collectedAfterRelease(t, ctx, refs, "the records of a released burst of tasks")
}

// collectedAfterRelease gets refs, releases them, and waits until the garbage collector
// has taken the owner's records (the entries) of a sample of them.
func collectedAfterRelease[T any](t *testing.T, ctx context.Context, refs []ObjectRef[T], what string) {
	t.Helper()
	var ws []goweak.Pointer[objects.Entry]
	for i := 0; i < len(refs); i += 25 {
		ws = append(ws, goweak.Make(refs[i].h.e.Load()))
	}
	if _, err := GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		r.Release()
	}
	eventually.AfterGC(t, 10*time.Second, what+" to be collected", func() bool {
		for _, w := range ws {
			if w.Value() != nil {
				return false
			}
		}
		return true
	})
}

// TestReleasedActorCallsKeepNoRecords: after a burst of calls to an actor, got and
// released, the caller's records of the calls are garbage, though no later call has
// brought the actor the acknowledgements of their results (which it keeps until then):
// a result holds a copy of its task's ID, not the caller's spec's bytes (worker.ResultID),
// and neither the actor's messages nor its log entries keep a call's spec once it ran
// (grain.accept, outbox.add). Before, every record of the burst lived until later calls
// came.
func TestReleasedActorCallsKeepNoRecords(t *testing.T) {
	ctx := timeout(t)
	h := clockClass.Remote(ctx, AtMostOnce())
	refs := make([]ObjectRef[int64], 500)
	for i := range refs {
		refs[i] = clockTick.Remote(ctx, h)
	}
	collectedAfterRelease(t, ctx, refs, "the records of released actor calls")

	// One call at a time: each goes straight to the actor (core's sendDirect), its message
	// from a slab of the caller's; the actor (at-most-once, lazy) reports what ran to its
	// grain only when its next message comes, so the last call's entry waits there.
	var ws []goweak.Pointer[objects.Entry]
	for range 40 {
		r := clockTick.Remote(ctx, h)
		ws = append(ws, goweak.Make(r.h.e.Load()))
		if _, err := Get(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	eventually.AfterGC(t, 10*time.Second, "the records of released calls made one at a time to be collected", func() bool {
		for _, w := range ws {
			if w.Value() != nil {
				return false
			}
		}
		return true
	})
	runtime.KeepAlive(h)
}
