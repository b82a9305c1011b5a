package ray

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
)

// A dead actor's instance is freed: its heap and the refs in its state go with it, whether
// it was killed, went out of scope or was an at-most-once actor. protoactor keeps a stopped
// grain reachable from any PID of it still held somewhere, so the grain must let go of its
// instance when it stops (grain.stop).

// hoard is an actor whose instance the tests watch: its constructor registers a cleanup
// that marks its key freed once the instance is collected.
type hoard struct {
	Buf  []byte
	Refs []ObjectRef[[]byte]
}

type hoardRefs struct{ List []ObjectRef[[]byte] }

var (
	hoardClass = Actor2("test.Hoard", func(_ context.Context, key string, mib int) (*hoard, error) {
		h := &hoard{Buf: make([]byte, mib<<20)}
		for i := range h.Buf {
			h.Buf[i] = byte(i)
		}
		freedFlag := freedOf(key)
		runtime.AddCleanup(h, func(f *atomic.Bool) { f.Store(true) }, freedFlag)
		return h, nil
	})
	hoardKeep = Method1(hoardClass, "Keep", func(h *hoard, _ context.Context, r hoardRefs) (int, error) {
		h.Refs = append(h.Refs, r.List...)
		return len(h.Refs) + len(h.Buf), nil
	})
	hoardLen = Method0(hoardClass, "Len", func(h *hoard, _ context.Context) (int, error) { return len(h.Buf), nil })
)

// freedOf is the flag hoard instances made with key set when they are collected.
func freedOf(key string) *atomic.Bool {
	testMu.Lock()
	defer testMu.Unlock()
	f, ok := freedM[key]
	if !ok {
		f = new(atomic.Bool)
		freedM[key] = f
	}
	return f
}

var freedM = map[string]*atomic.Bool{}

// newHoard makes a hoard of mib MiB that keeps three objects the caller Put and then
// dropped: the actor's state holds the only refs. It returns the handle and the objects' IDs.
func newHoard(t *testing.T, ctx context.Context, key string, mib int, opts ...TaskOption) (ActorHandle[hoard], []string) {
	t.Helper()
	h := hoardClass.Remote(ctx, V(key), V(mib), opts...)
	if h.Err() != nil {
		t.Fatal(h.Err())
	}
	var refs hoardRefs
	var idsOf []string
	for i := 0; i < 3; i++ {
		r, err := Put(ctx, make([]byte, 1<<20+i))
		if err != nil {
			t.Fatal(err)
		}
		refs.List = append(refs.List, r)
		idsOf = append(idsOf, r.ID())
	}
	if n := mustGet(t, ctx, hoardKeep.Remote(ctx, h, V(refs))); n != 3+mib<<20 {
		t.Fatalf("Keep = %d", n)
	}
	for _, r := range refs.List {
		r.Release() // the actor's copies are the only ones left
	}
	return h, idsOf
}

// objectsHeld counts the listed references to the objects ids.
func objectsHeld(t *testing.T, ctx context.Context, idsOf []string) int {
	t.Helper()
	n := 0
	for _, id := range idsOf {
		_, total, err := ListObjects(ctx, ObjectFilter{ObjectID: id})
		if err != nil {
			t.Fatal(err)
		}
		n += total
	}
	return n
}

// waitFreed waits until the instance made with key is collected and the objects it held
// are freed.
func waitFreed(t *testing.T, ctx context.Context, key string, idsOf []string) {
	t.Helper()
	eventually.AfterGC(t, 20*time.Second, "the dead actor's instance to be collected", func() bool { return freedOf(key).Load() })
	eventually.AfterGC(t, 20*time.Second, "the objects the dead actor held to be freed", func() bool { return objectsHeld(t, ctx, idsOf) == 0 })
}

func TestKilledActorInstanceIsFreed(t *testing.T) {
	bothModes(t, func(t *testing.T, opts ...TaskOption) {
		ctx := timeout(t)
		key := uniqueName(t)
		h, idsOf := newHoard(t, ctx, key, 16, opts...)
		if n := objectsHeld(t, ctx, idsOf); n == 0 {
			t.Fatal("the objects the actor keeps are not listed")
		}
		if err := Kill(ctx, h, true); err != nil {
			t.Fatal(err)
		}
		eventually.True(t, 10*time.Second, "calls fail with ErrActorDied", func() bool {
			_, err := Get(ctx, hoardLen.Remote(ctx, h))
			return errors.Is(err, ErrActorDied)
		})
		waitFreed(t, ctx, key, idsOf)
		runtime.KeepAlive(h)
	})
}

func TestActorOutOfScopeInstanceIsFreed(t *testing.T) {
	bothModes(t, func(t *testing.T, opts ...TaskOption) {
		ctx := timeout(t)
		key := uniqueName(t)
		h, idsOf := newHoard(t, ctx, key, 16, opts...)
		w := weak(t, h)
		h = ActorHandle[hoard]{} // the last counting handle is gone
		eventually.AfterGC(t, 20*time.Second, "the actor to go out of scope", func() bool { return phase(t, ctx, w).Phase == ActorDead })
		waitFreed(t, ctx, key, idsOf)
		runtime.KeepAlive(h)
	})
}

// A restart makes a fresh instance and frees the one before it; the new one serves.
func TestRestartedActorFreesOldInstance(t *testing.T) {
	bothModes(t, func(t *testing.T, opts ...TaskOption) {
		ctx := timeout(t)
		key := uniqueName(t)
		h, idsOf := newHoard(t, ctx, key, 4, append(opts, MaxRestarts(1))...)
		if err := Kill(ctx, h, false); err != nil {
			t.Fatal(err)
		}
		if n := mustGet(t, ctx, hoardLen.Remote(ctx, h)); n != 4<<20 {
			t.Fatalf("Len after the restart = %d", n)
		}
		eventually.True(t, 10*time.Second, "the actor restarted", func() bool { return phase(t, ctx, h).Restarts == 1 })
		if len(opts) > 0 {
			// At most once: the new instance starts from its constructor (the same key:
			// its flag is set when it goes too). The old instance's refs go with it.
			eventually.AfterGC(t, 20*time.Second, "the objects the old instance held to be freed", func() bool { return objectsHeld(t, ctx, idsOf) == 0 })
		}
		if err := Kill(ctx, h, true); err != nil {
			t.Fatal(err)
		}
		waitFreed(t, ctx, key, idsOf)
	})
}
