package ray

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/objects/codec"
)

// Actor lifetimes: a non-detached actor ends when its last handle is gone.

// tally is the actor whose lifetime the tests watch.
type tally struct{ N int }

// keeper is a long-lived actor that keeps a handle to a tally.
type keeper struct{ H ActorHandle[tally] }

var (
	tallyClass = Actor("test.Tally", func() *tally { return &tally{} })
	tallyAdd   = Method1(tallyClass, "Add", func(t *tally, _ context.Context, n int) (int, error) { t.N += n; return t.N, nil })
	// tallyWait returns once gate opens: calls queued behind it wait too.
	tallyWait = Method1(tallyClass, "Wait", func(t *tally, ctx context.Context, gate string) (int, error) {
		select {
		case <-gateOf(gate):
			return t.N, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})

	keeperClass = Actor("test.Keeper", func() *keeper { return &keeper{} })
	keeperKeep  = Method1(keeperClass, "Keep", func(k *keeper, _ context.Context, h ActorHandle[tally]) (bool, error) {
		k.H = h
		return true, nil
	})
	keeperForget = Method0(keeperClass, "Forget", func(k *keeper, _ context.Context) (bool, error) {
		k.H = ActorHandle[tally]{}
		return true, nil
	})
	// keeperAdd calls the tally through the handle the keeper keeps.
	keeperAdd = Method1(keeperClass, "Add", func(k *keeper, ctx context.Context, n int) (int, error) {
		return Get(ctx, tallyAdd.Remote(ctx, k.H, V(n)))
	})
	// handOver gives a tally's handle to a keeper, from a task: the task's argument, the
	// call it makes and the keeper's state each hold it in turn.
	handOver = Task2("test.handOver", func(ctx context.Context, k ActorHandle[keeper], h ActorHandle[tally]) (bool, error) {
		return Get(ctx, keeperKeep.Remote(ctx, k, V(h)))
	})
)

type tallyBox struct {
	H ActorHandle[tally]
	N int
}

// weak is a copy of h that calls the actor but does not keep it alive (the encoding of
// MarshalBinary), for the tests to watch an actor they no longer hold.
func weak[T any](t *testing.T, h ActorHandle[T]) ActorHandle[T] {
	t.Helper()
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var w ActorHandle[T]
	if err := w.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	return w
}

// newTally creates a tally, makes one call to it, and returns a weak copy of its handle:
// the only counting handle is gone once this returns.
func newTally(t *testing.T, ctx context.Context, opts ...TaskOption) ActorHandle[tally] {
	t.Helper()
	h := tallyClass.Remote(ctx, opts...)
	if h.Err() != nil {
		t.Fatal(h.Err())
	}
	if n := mustGet(t, ctx, tallyAdd.Remote(ctx, h, V(1))); n != 1 {
		t.Fatalf("Add = %d", n)
	}
	return weak(t, h)
}

// holds is the owner's count of references to the actor's handle object (the runtime of
// ctx owns it).
func holds[T any](ctx context.Context, h ActorHandle[T]) int32 {
	tc, _ := core.FromContext(ctx)
	local, _, _ := tc.Core.Refs().Counts(ids.ActorHandleID(h.id))
	return local
}

func phase[T any](t *testing.T, ctx context.Context, h ActorHandle[T]) ActorState {
	t.Helper()
	st, err := GetActorState(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitOutOfScope waits until the actor w names is dead, and checks why.
func waitOutOfScope[T any](t *testing.T, ctx context.Context, w ActorHandle[T]) {
	t.Helper()
	eventually.AfterGC(t, 20*time.Second, "the actor to go out of scope", func() bool { return phase(t, ctx, w).Phase == ActorDead })
	if st := phase(t, ctx, w); st.Detail != lifecycle.OutOfScopeDetail {
		t.Fatalf("dead actor's detail %q, want %q", st.Detail, lifecycle.OutOfScopeDetail)
	}
	_, err := Get(ctx, tallyAddAny(ctx, w))
	if !errors.Is(err, ErrActorDied) {
		t.Fatalf("a call to an actor out of scope: %v, want ErrActorDied", err)
	}
}

// tallyAddAny calls Add if w is a tally (the tests' only out-of-scope actors).
func tallyAddAny[T any](ctx context.Context, w ActorHandle[T]) ObjectRef[int] {
	return tallyAdd.Remote(ctx, ActorHandle[tally]{id: w.id, class: w.class}, V(1))
}

func TestActorOutOfScope(t *testing.T) {
	ctx := timeout(t)
	w := newTally(t, ctx)
	waitOutOfScope(t, ctx, w)
	if n := holds(ctx, w); n != 0 {
		t.Fatalf("the handle object is still held %d times", n)
	}
}

func TestActorOutOfScopeNamed(t *testing.T) {
	ctx := timeout(t)
	name := uniqueName(t)
	w := newTally(t, ctx, Name(name))
	waitOutOfScope(t, ctx, w)
	// The name is free again.
	if _, err := GetActor(ctx, tallyClass, name); !errors.Is(err, ErrNoSuchActor) {
		t.Fatalf("GetActor of a collected actor: %v", err)
	}
	h := tallyClass.Remote(ctx, Name(name))
	if h.Err() != nil {
		t.Fatalf("the name of a collected actor is not free: %v", h.Err())
	}
	runtime.KeepAlive(h)
}

func TestDetachedActorIsNotCollected(t *testing.T) {
	ctx := timeout(t)
	name := uniqueName(t)
	w := newTally(t, ctx, Name(name), Detached())
	if n := holds(ctx, w); n != 0 {
		t.Fatalf("a detached actor has a handle object held %d times", n)
	}
	for range 5 { // let the handle be collected
		runtime.GC()
		time.Sleep(2 * nurseryTick)
	}
	if st := phase(t, ctx, w); st.Phase != ActorAlive {
		t.Fatalf("detached actor without handles: %+v", st)
	}
	h, err := GetActor(ctx, tallyClass, name)
	if err != nil {
		t.Fatal(err)
	}
	if n := mustGet(t, ctx, tallyAdd.Remote(ctx, h, V(1))); n != 2 {
		t.Fatalf("Add = %d", n)
	}
	if err := Kill(ctx, h, true); err != nil {
		t.Fatal(err)
	}
}

func TestActorPendingCallsFinishBeforeOutOfScope(t *testing.T) {
	ctx := timeout(t)
	gate := uniqueName(t)
	var w ActorHandle[tally]
	var refs []ObjectRef[int]
	func() {
		h := tallyClass.Remote(ctx)
		w = weak(t, h)
		refs = append(refs, tallyWait.Remote(ctx, h, V(gate)))
		for i := 1; i <= 20; i++ {
			refs = append(refs, tallyAdd.Remote(ctx, h, V(i)))
		}
	}()
	// The handle is gone; only the unfinished calls hold the actor.
	eventually.AfterGC(t, 20*time.Second, "the dropped handle's reference to be given back", func() bool { return holds(ctx, w) == 1 })
	if st := phase(t, ctx, w); st.Phase == ActorDead {
		t.Fatalf("actor ended with calls pending: %+v", st)
	}
	close(gateOf(gate))
	vals, err := GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	if vals[len(vals)-1] != 210 {
		t.Fatalf("last Add = %d, want 210", vals[len(vals)-1])
	}
	waitOutOfScope(t, ctx, w)
}

func TestActorHandleInObjectKeepsActor(t *testing.T) {
	ctx := timeout(t)
	var w ActorHandle[tally]
	var box ObjectRef[tallyBox]
	func() {
		h := tallyClass.Remote(ctx)
		w = weak(t, h)
		var err error
		if box, err = Put(ctx, tallyBox{H: h, N: 5}); err != nil {
			t.Fatal(err)
		}
	}()
	eventually.AfterGC(t, 20*time.Second, "the dropped handle's reference to be given back", func() bool { return holds(ctx, w) == 1 })
	if st := phase(t, ctx, w); st.Phase == ActorDead {
		t.Fatalf("actor ended while an object holds its handle: %+v", st)
	}
	// The handle in the object works, here and in a task.
	b := mustGet(t, ctx, box)
	if n := mustGet(t, ctx, tallyAdd.Remote(ctx, b.H, V(b.N))); n != 5 {
		t.Fatalf("Add through the object's handle = %d", n)
	}
	if n := mustGet(t, ctx, addThroughBox.Remote(ctx, box)); n != 10 {
		t.Fatalf("Add through the object's handle in a task = %d", n)
	}
	b = tallyBox{}
	box.Release()
	waitOutOfScope(t, ctx, w)
}

var addThroughBox = Task1("test.addThroughBox", func(ctx context.Context, b tallyBox) (int, error) {
	return Get(ctx, tallyAdd.Remote(ctx, b.H, V(b.N)))
})

func TestActorHandleKeptByAnotherActor(t *testing.T) {
	ctx := timeout(t)
	k := keeperClass.Remote(ctx, AtMostOnce())
	var w ActorHandle[tally]
	func() {
		h := tallyClass.Remote(ctx)
		w = weak(t, h)
		if ok := mustGet(t, ctx, handOver.Remote(ctx, V(k), V(h))); !ok {
			t.Fatal("handOver")
		}
	}()
	eventually.AfterGC(t, 20*time.Second, "the dropped handle's reference to be given back", func() bool { return holds(ctx, w) == 1 })
	if st := phase(t, ctx, w); st.Phase == ActorDead {
		t.Fatalf("actor ended while another actor keeps its handle: %+v", st)
	}
	if n := mustGet(t, ctx, keeperAdd.Remote(ctx, k, V(2))); n != 2 {
		t.Fatalf("Add through the keeper = %d", n)
	}
	mustGet(t, ctx, keeperForget.Remote(ctx, k))
	waitOutOfScope(t, ctx, w)
	runtime.KeepAlive(k)
}

func TestGetActorHandleCounts(t *testing.T) {
	ctx := timeout(t)
	name := uniqueName(t)
	var w ActorHandle[tally]
	var got ActorHandle[tally]
	func() {
		h := tallyClass.Remote(ctx, Name(name))
		w = weak(t, h)
		var err error
		if got, err = GetActor(ctx, tallyClass, name); err != nil {
			t.Fatal(err)
		}
	}()
	eventually.AfterGC(t, 20*time.Second, "the dropped handle's reference to be given back", func() bool { return holds(ctx, w) == 1 })
	if n := mustGet(t, ctx, tallyAdd.Remote(ctx, got, V(3))); n != 3 {
		t.Fatalf("Add through GetActor's handle = %d", n)
	}
	got = ActorHandle[tally]{}
	waitOutOfScope(t, ctx, w)
}

func TestActorHandleEncoding(t *testing.T) {
	ctx := timeout(t)
	h := tallyClass.Remote(ctx)
	data, refs, err := codec.MarshalRefs(tallyBox{H: h, N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 {
		t.Fatalf("a handle inside a value carries %d refs, want 1 (its handle object)", len(refs))
	}
	back, err := codec.Unmarshal[tallyBox](data)
	if err != nil {
		t.Fatal(err)
	}
	if back.H.id != h.id || back.H.class != h.class || back.H.obj == nil || back.H.obj.id != ids.ActorHandleID(h.id) {
		t.Fatalf("decoded %+v from %+v", back.H, h)
	}
	// The encoding of a handle without a handle object (a detached actor's, or one made
	// before handles counted) is the byte string of MarshalBinary, and decodes to a handle
	// that works and does not count.
	old, err := codec.Marshal(struct{ H []byte }{H: mustBinary(t, h)})
	if err != nil {
		t.Fatal(err)
	}
	oldBack, err := codec.Unmarshal[struct{ H ActorHandle[tally] }](old)
	if err != nil {
		t.Fatal(err)
	}
	if oldBack.H.id != h.id || oldBack.H.obj != nil {
		t.Fatalf("old encoding decoded to %+v", oldBack.H)
	}
	if n := mustGet(t, ctx, tallyAdd.Remote(ctx, bindRefs(ctx, oldBack).H, V(4))); n != 4 {
		t.Fatalf("Add through an old handle = %d", n)
	}
	// The zero handle round-trips.
	zero, err := codec.Unmarshal[tallyBox](mustMarshal(t, tallyBox{}))
	if err != nil || zero.H.id != (ids.ActorID{}) || zero.H.obj != nil {
		t.Fatalf("zero handle decoded to %+v, %v", zero.H, err)
	}
	runtime.KeepAlive(h)
}

func mustBinary[T any](t *testing.T, h ActorHandle[T]) []byte {
	t.Helper()
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustMarshal[T any](t *testing.T, v T) []byte {
	t.Helper()
	b, err := codec.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// addWhenOpen signals that it runs, waits for its gate, then calls the tally.
var addWhenOpen = Task2("test.addWhenOpen", func(ctx context.Context, gate string, h ActorHandle[tally]) (int, error) {
	close(gateOf(gate + "/started"))
	select {
	case <-gateOf(gate):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return Get(ctx, tallyAdd.Remote(ctx, h, V(7)))
})

func TestActorHandleInTaskArgumentKeepsActor(t *testing.T) {
	ctx := timeout(t)
	gate := uniqueName(t)
	var w ActorHandle[tally]
	var res ObjectRef[int]
	func() {
		h := tallyClass.Remote(ctx)
		w = weak(t, h)
		res = addWhenOpen.Remote(ctx, V(gate), V(h))
	}()
	waitFor(t, gateOf(gate+"/started"))
	// Held by the running task's argument (the submitter's pin, and the task's decoded
	// copy) once the driver's handle is gone.
	eventually.AfterGC(t, 20*time.Second, "the dropped handle's reference to be given back", func() bool { return holds(ctx, w) == 2 })
	if st := phase(t, ctx, w); st.Phase == ActorDead {
		t.Fatalf("actor ended while a running task holds its handle: %+v", st)
	}
	close(gateOf(gate))
	if n := mustGet(t, ctx, res); n != 7 {
		t.Fatalf("Add from the task = %d", n)
	}
	res.Release()
	waitOutOfScope(t, ctx, w)
}

// TestDroppedActorGivesItsResourcesBack: an actor whose handles were dropped (no Kill)
// holds its resources until a collection finds the handles gone. A driver that then
// creates another actor needing them waits for that; Go collects a quiet process only
// every 2 minutes (a user's program waited 1m59s), so a caller whose actor waits for an
// instance asks for a collection (internal/assembly/core, collect.go). Automatic
// collections are off while the test runs: only that request can release the first
// actor within the test's bound.
func TestDroppedActorGivesItsResourcesBack(t *testing.T) {
	ctx := timeout(t)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	accel := Resources(map[string]float64{"accel": 1}) // the node has one
	first := newTally(t, ctx, accel, AtMostOnce())     // only a weak copy is left
	start := time.Now()
	second := tallyClass.Remote(ctx, accel, AtMostOnce())
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if n, err := Get(c, tallyAdd.Remote(c, second, V(2))); err != nil || n != 2 {
		t.Fatalf("the second actor's call: %d, %v (after %v; the first actor still holds the resource)", n, err, time.Since(start))
	}
	t.Logf("the second actor answered %v after it was created", time.Since(start).Round(time.Millisecond))
	if st := phase(t, ctx, first); st.Phase != ActorDead || st.Detail != lifecycle.OutOfScopeDetail {
		t.Fatalf("the first actor: %+v, want dead out of scope", st)
	}
	if err := Kill(ctx, second, true); err != nil {
		t.Fatal(err)
	}
}

// TestDroppedActorGivesItsResourcesToATask: as TestDroppedActorGivesItsResourcesBack,
// for a task that waits for the resources (its lease request is not granted): the owner
// of tasks that have waited a second for a lease asks for a collection.
func TestDroppedActorGivesItsResourcesToATask(t *testing.T) {
	ctx := timeout(t)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	first := newTally(t, ctx, Resources(map[string]float64{"accel": 1}), AtMostOnce())
	start := time.Now()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if n, err := Get(c, accelTask.Remote(c)); err != nil || n != 1 {
		t.Fatalf("the task: %d, %v (after %v; the actor still holds the resource)", n, err, time.Since(start))
	}
	t.Logf("the task ran %v after it was submitted", time.Since(start).Round(time.Millisecond))
	if st := phase(t, ctx, first); st.Phase != ActorDead || st.Detail != lifecycle.OutOfScopeDetail {
		t.Fatalf("the actor: %+v, want dead out of scope", st)
	}
}

// TestDroppedActorGivesItsResourcesToAGroup: as TestDroppedActorGivesItsResourcesBack,
// for a placement group whose bundle needs the resources: its creator, placing it again
// and again, asks for a collection once it has waited a second.
func TestDroppedActorGivesItsResourcesToAGroup(t *testing.T) {
	ctx := timeout(t)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	first := newTally(t, ctx, Resources(map[string]float64{"accel": 1}), AtMostOnce())
	start := time.Now()
	pg, err := PlacementGroup(ctx, []Bundle{{"accel": 1}}, StrategyPack)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pg.Remove(ctx); err != nil {
			t.Error(err)
		}
	}()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := pg.Ready(c); err != nil {
		t.Fatalf("the group: %v (after %v; the actor still holds the resource)", err, time.Since(start))
	}
	t.Logf("the group was placed %v after it was created", time.Since(start).Round(time.Millisecond))
	if st := phase(t, ctx, first); st.Phase != ActorDead || st.Detail != lifecycle.OutOfScopeDetail {
		t.Fatalf("the actor: %+v, want dead out of scope", st)
	}
}
