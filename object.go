package ray

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects"
	"github.com/ray-go/ray/objects/codec"
	"github.com/ray-go/ray/tasks"
)

// ObjectRef is a future: a reference to an immutable object that a task will return (or
// that Put stored). Refs are values: copy them freely, pass them to tasks (the task gets
// the value, not the ref). The object lives while any copy of the ref is reachable; when
// the last one is garbage-collected (or Release is called) the value and its records are
// freed. The zero ObjectRef refers to nothing. A ref travels inside values the runtime
// encodes (task arguments and results, Put, actor state); encoding/json refuses it with
// an error rather than losing it (MarshalJSON).
type ObjectRef[T any] struct {
	h *handle
}

type handle struct {
	id ids.ObjectID
	// e: the object's entry in its owner's table (newRef), or nil; cleared when the
	// reference is given back. The entry lives in the owner's record of the task that
	// returns the object (core's pending, with the task's spec): a released handle the
	// nursery or the program still holds must not keep that record from the garbage
	// collector, or every task's record lives one to two nursery ticks after its Release
	// and each collection marks tens of thousands of them.
	e     atomic.Pointer[objects.Entry]
	core  *core.Core  // nil for a ref decoded from a value and not bound yet (refs.go)
	owner *pb.PID     // the owner, for a ref decoded from a value
	err   error       // submission failed before an object existed
	gone  atomic.Bool // the reference was given back (Release, or the finalizer)
	fin   atomic.Bool // its finalizer is set (the nursery sets it: nursery.go)
}

// A handle bound to a runtime carries a finalizer (collected) that gives its reference back
// when the garbage collector finds it unreachable, set by the nursery (nursery.go) unless the
// handle is released within its first tick; Release clears it and gives the reference back
// at once. A finalizer, not runtime.AddCleanup: the handle points to nothing that could
// make a cycle back to it, so the finalizer's one drawback (an object in a cycle is never
// finalized) cannot arise, and it costs less per handle, which every task and Put pays:
// AddCleanup allocates a box for its argument and a closure besides the record both
// share (AddCleanup and Stop 184-189 ns against 153-156 ns for SetFinalizer and its
// clearing, with 1000 handles live; a task costs its owner about 3.3 µs).
func collected(h *handle) {
	if h.gone.CompareAndSwap(false, true) {
		h.giveBack(false)
	}
}

// giveBack drops the handle's reference (once: the caller won h.gone).
func (h *handle) giveBack(explicit bool) {
	if h.owner == nil { // made by newRef: this process owns the object
		h.core.ReleaseOwned(h.id, h.e.Swap(nil), explicit)
	} else {
		h.core.ReleaseRef(h.id, explicit)
	}
}

// newRef wraps an ID the caller already holds one reference to (core.Submit, core.Put),
// with its entry in the owner's table if the caller has it.
func newRef[T any](c *core.Core, id ids.ObjectID, e *objects.Entry) ObjectRef[T] {
	h := &handle{id: id, core: c}
	h.e.Store(e)
	toNursery(h)
	return ObjectRef[T]{h: h}
}

// unusableIn reports whether h cannot name an object of c: the zero ref, a failed
// submission, or a ref of another runtime. Wait counts such refs as ready (their Get fails
// at once).
func (h *handle) unusableIn(c *core.Core) bool { return h == nil || h.err != nil || h.core != c }

func failedRef[T any](err error) ObjectRef[T] { return ObjectRef[T]{h: &handle{err: err}} }

// ID is the object's ID in hex ("" for the zero ref).
func (r ObjectRef[T]) ID() string {
	if r.h == nil || r.h.err != nil {
		return ""
	}
	return r.h.id.String()
}

func (r ObjectRef[T]) String() string {
	if r.h == nil {
		return "ObjectRef(nil)"
	}
	if r.h.err != nil {
		return fmt.Sprintf("ObjectRef(failed: %v)", r.h.err)
	}
	return "ObjectRef(" + r.h.id.String() + ")"
}

// Release drops this ref's hold on the object now instead of at garbage collection. Every
// copy of the ref shares the hold, so do not use any copy afterwards.
func (r ObjectRef[T]) Release() {
	if r.h != nil && r.h.core != nil && r.h.gone.CompareAndSwap(false, true) {
		if r.h.fin.Load() {
			// (A finalizer the nursery sets after this finds gone set, and does nothing.)
			runtime.SetFinalizer(r.h, nil)
		}
		r.h.giveBack(true)
	}
}

func (r ObjectRef[T]) ref() *handle { return r.h }

// Ref is any ObjectRef, whatever its type: for Cancel and WaitAny.
type Ref interface {
	ID() string
	ref() *handle
}

// Arg is an argument of type T to a remote function: a value (V) or an ObjectRef[T].
type Arg[T any] interface {
	toArg(c *core.Core) (core.Arg, error)
	argType() *T
}

type value[T any] struct{ v T }

// V passes a plain value as a task argument; it is encoded at submission.
func V[T any](v T) Arg[T] { return value[T]{v} }

func (v value[T]) argType() *T { return nil }
func (v value[T]) toArg(*core.Core) (core.Arg, error) {
	b, refs, err := codec.MarshalRefs(v.v)
	if err != nil {
		return core.Arg{}, fmt.Errorf("%w: %v", ErrEncode, err)
	}
	nested, err := nestedOf(refs)
	return core.Arg{Data: b, Nested: nested}, err
}

func (r ObjectRef[T]) argType() *T { return nil }
func (r ObjectRef[T]) toArg(c *core.Core) (core.Arg, error) {
	h, err := r.check(c)
	if err != nil {
		return core.Arg{}, err
	}
	return core.Arg{Ref: h.id, IsRef: true}, nil
}

func (r ObjectRef[T]) check(c *core.Core) (*handle, error) {
	switch {
	case r.h == nil:
		return nil, errors.New("ray: the zero ObjectRef refers to no object")
	case r.h.err != nil:
		return nil, r.h.err
	case r.h.gone.Load():
		return nil, fmt.Errorf("%w: ref %s was released", ErrObjectLost, r.h.id)
	case r.h.core == nil && r.h.owner != nil:
		r.h.bind(c) // decoded outside Get and task arguments: bind at first use
	case r.h.core != c:
		return nil, errors.New("ray: ObjectRef belongs to another ray runtime (another Init)")
	}
	return r.h, nil
}

func taskContext(ctx context.Context) (*core.TaskContext, error) {
	tc, ok := core.FromContext(ctx)
	if !ok {
		return nil, ErrNotInitialized
	}
	return tc, nil
}

// Get waits for the object and returns its value. It honours ctx's deadline and
// cancellation. A failed task gives *TaskError (also for tasks that depended on it).
// Called inside a task with the task's own ctx, waiting lends the task's CPU to other
// tasks; with a driver's ctx (the one Init returned) it would not, and a Get that has to
// wait fails at once with ErrDriverContext instead of risking a deadlock.
func Get[T any](ctx context.Context, r ObjectRef[T]) (T, error) {
	var zero T
	tc, err := taskContext(ctx)
	if err != nil {
		return zero, err
	}
	h, err := r.check(tc.Core)
	if err != nil {
		return zero, err
	}
	data, owned, err := tc.GetInOwned(ctx, h.id, h.e.Load())
	runtime.KeepAlive(h)
	if err != nil {
		return zero, convert(err)
	}
	var v T
	if owned && len(data) >= tasks.OwnedArgMin {
		v, err = codec.UnmarshalOwned[T](data) // read from another node: no second copy
	} else {
		v, err = codec.Unmarshal[T](data)
	}
	if err != nil {
		return zero, decodeError[T](tc.Core, h.id, err)
	}
	v = bindRefs(ctx, v)
	return v, nil
}

// decodeError is the error of object id's value that does not decode as T. When this
// process holds the lineage record of the task that returned it, the error names the
// function and its registered return type: a Call[R] whose R is not what the function
// returns fails so ("cannot decode CBOR unsigned integer into string" alone named neither).
func decodeError[T any](c *core.Core, id ids.ObjectID, err error) error {
	if !id.IsPut() && id.Index() >= 1 {
		if spec := c.Refs().Spec(id.Task()); spec != nil {
			if fn, ok := tasks.Lookup(spec.Function); ok && fn.Return != nil {
				return rayErrorf("ray: object %s: the result of %s, registered to return %s, cannot be read as %s "+
					"(with ray.Call[R], R must be the function's return type): %w", id, spec.Function, fn.Return, typeOf[T](), err)
			}
		}
	}
	return rayErrorf("ray: object %s: %w", id, err)
}

// GetAll gets every ref, in order; it returns the first error met.
func GetAll[T any](ctx context.Context, refs []ObjectRef[T]) ([]T, error) {
	out := make([]T, len(refs))
	for i, r := range refs {
		v, err := Get(ctx, r)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Put stores v in the object store and returns a ref to it.
func Put[T any](ctx context.Context, v T) (ObjectRef[T], error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return ObjectRef[T]{}, err
	}
	b, refs, err := codec.MarshalRefs(v)
	if err != nil {
		return ObjectRef[T]{}, fmt.Errorf("%w: %v", ErrEncode, err)
	}
	nested, err := nestedOf(refs)
	if err != nil {
		return ObjectRef[T]{}, err
	}
	id, err := tc.PutNested(b, nested)
	if err != nil {
		return ObjectRef[T]{}, err
	}
	return newRef[T](tc.Core, id, nil), nil
}

// Wait returns when NumReady (default 1) of refs are ready, or the Timeout passes, or ctx
// is done (then with its error). As Ray's ray.wait, ready holds at most NumReady refs, the
// first ready ones in refs' order; notReady holds the others (ready or not), in order.
// Inside a task, as Get, it lends the task's CPU back while it waits, through the task's own
// ctx only (a driver's ctx gives ErrDriverContext).
//
// A driver that lost its cluster (ErrClusterLost) does not block in Wait: the refs that
// were ready stay ready (their value, or their own task's error, came before the loss),
// and no other ref will ever be (the result of a task or actor call the loss failed is not
// ready: its Get fails with ErrClusterLost). Wait returns the ready ones, at most NumReady,
// and, when there are fewer than NumReady, also an error matching ErrClusterLost, whatever
// the Timeout: with the ready ones in ready and the others in notReady, as for ctx's error.
//
// Its arguments are checked as Ray's ray.wait checks them: an empty refs returns two
// empty lists and no error, whatever NumReady says; otherwise NumReady must be between 1
// and len(refs), Timeout must not be negative, and refs must be unique (the same object
// twice is an error, not one object counted twice). The zero ObjectRef is refused with
// the error Get gives for it. A ref whose submission failed, or one of another runtime
// (another Init), counts as ready: its Get fails at once.
func Wait[T any](ctx context.Context, refs []ObjectRef[T], opts ...WaitOption) (ready, notReady []ObjectRef[T], err error) {
	return waitSplit(ctx, refs, func(r ObjectRef[T]) Ref { return r }, func(r ObjectRef[T]) *handle { return r.h }, opts)
}

// WaitAny is Wait for refs of mixed types.
func WaitAny(ctx context.Context, refs []Ref, opts ...WaitOption) (ready, notReady []Ref, err error) {
	return waitSplit(ctx, refs, func(r Ref) Ref { return r }, func(r Ref) *handle { return handleOfRef(r) }, opts)
}

// handleOfRef is r's handle (nil for a nil Ref, as for the zero ObjectRef).
func handleOfRef(r Ref) *handle {
	if r == nil {
		return nil
	}
	return r.ref()
}

func waitSplit[R any](ctx context.Context, refs []R, asRef func(R) Ref, handleOf func(R) *handle, opts []WaitOption) (ready, notReady []R, err error) {
	o := waitOpts{k: 1, timeout: -1}
	for _, f := range opts {
		f(&o)
	}
	tc, err := taskContext(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := checkWait(refs, handleOf, o); err != nil || len(refs) == 0 {
		return nil, nil, err // an empty refs: nothing to wait for (Ray returns [], [])
	}
	// Fast path: the first k ready refs are found by a scan that stops there (a loop of
	// Wait(NumReady(1)) over a long list does O(1) work per call when the head is ready).
	idx := make([]int, 0, o.k)
	for i := 0; i < len(refs) && len(idx) < o.k; i++ {
		if h := asRef(refs[i]).ref(); h.unusableIn(tc.Core) || tc.Core.Ready(h.id) {
			idx = append(idx, i) // a failed or foreign ref is "ready": its Get fails at once
		}
	}
	var mask []bool
	if len(idx) < o.k && (o.timeout != 0 || tc.Core.Lost() != nil) { // lost: the runtime says so
		mask, err = waitMask(tc, ctx, len(refs), func(i int) Ref { return asRef(refs[i]) }, o)
		if mask == nil {
			return nil, nil, err
		}
		idx = idx[:0]
		for i, m := range mask {
			if m {
				idx = append(idx, i)
			}
		}
	}
	ready = make([]R, 0, len(idx))
	notReady = make([]R, 0, len(refs)-len(idx))
	prev := 0
	for _, i := range idx {
		notReady = append(notReady, refs[prev:i]...)
		ready = append(ready, refs[i])
		prev = i + 1
	}
	notReady = append(notReady, refs[prev:]...)
	return ready, notReady, err
}

// checkWait checks Wait's arguments as Ray's ray.wait does (see Wait); handleOf gives a
// ref's handle. Its cost is O(len(refs)), ~3 ns a ref (BenchmarkWaitCheck: 3.2-5.7 µs for
// 1000 refs, at a load of ~10 on 2 cores): each object ID's hash (its bytes are random)
// goes into an open-addressing table of at least twice len(refs) slots, which keeps the
// hash beside the ref's index, so that IDs are compared only where full hashes meet. A
// loop of Wait(NumReady(1)) over what the last call left pays it on every call, as it pays
// for copying the not-ready list out (Ray's ray.wait builds a set of its refs each call).
func checkWait[R any](refs []R, handleOf func(R) *handle, o waitOpts) error {
	if o.timeoutSet && o.timeout < 0 {
		return fmt.Errorf("ray: Wait: Timeout(%v) must not be negative", o.timeout)
	}
	n := len(refs)
	if n == 0 {
		return nil
	}
	if o.k < 1 || o.k > n {
		return fmt.Errorf("ray: Wait: NumReady(%d) must be between 1 and the number of refs (%d)", o.k, n)
	}
	size := 8
	for size < 2*n {
		size <<= 1
	}
	var small [64]uint64
	var slots []uint64 // hash<<32 | index+1; 0: empty
	if size <= len(small) {
		slots = small[:size]
	} else {
		p, _ := waitSlots.Get().(*[]uint64)
		if p == nil || cap(*p) < size {
			p = new([]uint64)
			*p = make([]uint64, size)
		}
		slots = (*p)[:size]
		clear(slots)
		defer waitSlots.Put(p)
	}
	mask := uint32(size - 1)
	for i, r := range refs {
		h := handleOf(r)
		if h == nil {
			return fmt.Errorf("ray: Wait: refs[%d]: the zero ObjectRef refers to no object", i)
		}
		if h.err != nil {
			continue // a failed submission: no object, nothing to repeat
		}
		hash := h.id.Hash()
		for j := hash & mask; ; j = (j + 1) & mask {
			s := slots[j]
			if s == 0 {
				slots[j] = uint64(hash)<<32 | uint64(i+1)
				break
			}
			if uint32(s>>32) != hash {
				continue
			}
			if prev := int(uint32(s)) - 1; handleOf(refs[prev]).id == h.id {
				return fmt.Errorf("ray: Wait: refs[%d] and refs[%d] are the same object (%s): Wait requires unique refs", prev, i, h.id)
			}
		}
	}
	return nil
}

// waitSlots keeps checkWait's tables for long lists.
var waitSlots sync.Pool

// waitMask blocks in the runtime until o.k of the refs are ready (see core Wait).
func waitMask(tc *core.TaskContext, ctx context.Context, n int, at func(int) Ref, o waitOpts) ([]bool, error) {
	list := make([]ids.ObjectID, n)
	failed := make([]bool, n)
	hs := make([]*handle, n)
	for i := 0; i < n; i++ {
		h := at(i).ref()
		hs[i] = h
		if h.unusableIn(tc.Core) {
			failed[i] = true
			continue
		}
		list[i] = h.id
	}
	mask, err := tc.Wait(ctx, list, o.k, o.timeout, failed)
	runtime.KeepAlive(hs)
	return mask, err
}

// Cancel cancels the task that produces r: a task not yet running never runs; a running
// task's ctx is cancelled (Go cannot stop a goroutine, so the function must watch its ctx).
// Get of r then returns an error matching ErrCancelled.
//
// Cancel is recursive by default, as Ray's ray.cancel(recursive=True): when it cancels a
// running task, the tasks that task submitted and that have not finished are cancelled
// too, and theirs in turn, wherever they run (the process that ran the task owns them and
// cancels them): a queued or waiting child never runs, a running one has its ctx
// cancelled and gives its resources back when it returns; a task or actor call the
// cancelled task submits later (it runs on until its function returns) is cancelled
// before it runs. A child actor call made before the Cancel is
// cancelled if it was not sent to its actor yet, or, for an AtMostOnce actor, while it
// waits there behind earlier calls (as Cancel of it does).
//
// Cancel of an actor call: one not sent yet, or one waiting at an AtMostOnce actor behind
// earlier calls, never runs, and Get of it returns ErrCancelled at once (the actor answers
// a waiting one when the cancel reaches it, as Ray fails the ObjectRef of an actor task
// that has not started; the calls after it run in order). An actor that restarts before
// it reached the call does not run it either: the caller sends the cancel again, before
// the call, to the new instance. A running call is not interrupted and answers as usual,
// as in Ray. A call sent to an exactly-once actor (the
// default) cannot be taken back: it is in the actor's method log before it runs, and a
// restart replays the log; Cancel returns an error that matches ErrActorCallSent and says
// so. NonRecursive cancels the task alone. A task ends once its function returns; Cancel
// does not wait for that.
func Cancel(ctx context.Context, r Ref, opts ...CancelOption) error {
	tc, err := taskContext(ctx)
	if err != nil {
		return err
	}
	h := r.ref()
	if h == nil || h.err != nil {
		return nil
	}
	if h.core != tc.Core {
		return errors.New("ray: ObjectRef belongs to another ray runtime (another Init)")
	}
	var o cancelOpts
	for _, opt := range opts {
		opt(&o)
	}
	return tc.Core.CancelTask(h.id, !o.nonRecursive)
}
