package core

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/spin"
	"github.com/ray-go/ray/objects"
	"github.com/ray-go/ray/tasks/worker"
)

// ObjectError is an object whose producing task failed (or never ran). The root package
// turns Info into *ray.TaskError or a sentinel.
type ObjectError struct {
	Object ids.ObjectID
	Info   *pb.ErrorInfo
}

func (e *ObjectError) Error() string {
	return fmt.Sprintf("object %s: %s: %s", e.Object, e.Info.Function, e.Info.Message)
}

// ErrorInfo exposes the wire form (used by workers to keep a nested error's origin).
func (e *ObjectError) ErrorInfo() *pb.ErrorInfo { return e.Info }

// admitTimeout bounds the wait for the store to admit a put while it spills.
const admitTimeout = 5 * time.Minute

// fetchTimeout bounds one read from a store shard when ctx has no deadline.
const fetchTimeout = time.Minute

// Get returns the encoded value of id, waiting until it is ready or ctx is done. In a task,
// waiting lends the task's CPU back to its node.
func (tc *TaskContext) Get(ctx context.Context, id ids.ObjectID) ([]byte, error) {
	return tc.GetIn(ctx, id, nil)
}

// GetIn is Get for a caller that holds the object's entry (as Submit returns it; nil:
// unknown), through which it finds the object without a lookup.
func (tc *TaskContext) GetIn(ctx context.Context, id ids.ObjectID, e *objects.Entry) ([]byte, error) {
	b, _, err := tc.GetInOwned(ctx, id, e)
	return b, err
}

// GetInOwned is GetIn that also reports whether the bytes are the caller's alone: read
// from another node's store into a buffer nothing else holds (a caller may then decode
// them without copying, codec.UnmarshalOwned). Inline values and this node's store's bytes
// are shared: not owned.
func (tc *TaskContext) GetInOwned(ctx context.Context, id ids.ObjectID, e *objects.Entry) ([]byte, bool, error) {
	c := tc.Core
	v, ready, known := c.mem.GetIn(id, e)
	if !known {
		return nil, false, fmt.Errorf("%w: %s (it was released, or is owned by another process)", ErrUnknownObject, id)
	}
	if !ready {
		var err error
		if v, err = tc.wait(ctx, id, e); err != nil {
			return nil, false, err
		}
	}
	return tc.getRecovering(ctx, id, v)
}

// spinRecv polls ch for a moment before the caller blocks on it (spin.Recv): a result
// that comes within spin.For() is taken without the P going idle and being woken. One of
// the task's goroutines polls at a time, while the task's waits are short (tc.waits,
// which the blocked waits update) and none of its goroutines is blocked in a wait
// (tc.blockedWaits); the others, and a poll that found nothing, block.
func spinRecv[T any](tc *TaskContext, ch <-chan T) (T, bool) {
	if !tc.waits.Polls() || tc.blockedWaits.Load() > 0 || !tc.spinning.CompareAndSwap(false, true) {
		var zero T
		return zero, false
	}
	v, ok := spin.RecvAlone(ch, &tc.blockedWaits)
	tc.spinning.Store(false)
	return v, ok
}

// releasedWhileWaiting is the error of a wait whose object's entry went away under it
// (another goroutine released its ref): lost to this wait, as to a Get after the release
// (ErrObjectLost).
func releasedWhileWaiting(id ids.ObjectID) error {
	return fmt.Errorf("%w: %s: its ref was released while this waited for it", ErrObjectLost, id)
}

func (tc *TaskContext) wait(ctx context.Context, id ids.ObjectID, e *objects.Entry) (objects.Value, error) {
	c := tc.Core
	var check *time.Timer
	blocked := false
	defer func() {
		if blocked {
			putCheck(check)
			tc.endBlocked()
		}
	}()
	for {
		ch := c.mem.ReadyIn(id, e)
		if ch == nil {
			return objects.Value{}, releasedWhileWaiting(id)
		}
		select {
		case <-ch:
		default:
			if _, ok := spinRecv(tc, ch); ok {
				break
			}
			if !blocked {
				check = tc.driverCheck()
				tc.beginBlocked()
				blocked = true
			}
			start := spin.Start()
		wait:
			for {
				select {
				case <-ch:
					break wait
				case <-checkC(check):
					if err := tc.mayWait(); err != nil {
						return objects.Value{}, err
					}
					putCheck(check)
					check = nil
				case <-ctx.Done():
					return objects.Value{}, fmt.Errorf("ray: waiting for object %s: %w", id, ctx.Err())
				case <-c.closed:
					return objects.Value{}, ErrShutdown
				case <-c.lost.ch:
					return objects.Value{}, fmt.Errorf("ray: waiting for object %s: %w", id, c.lost.err)
				}
			}
			tc.waits.BlockedSince(start)
		}
		v, ready, known := c.mem.GetIn(id, e)
		switch {
		case ready:
			return v, nil
		case !known:
			return objects.Value{}, releasedWhileWaiting(id)
		}
		// Set, then made pending again before this read (MemoryStore.Reset: its value was
		// lost and is being recreated): wait for the new value.
	}
}

// driverCheckAfter is how long a wait through a driver's context runs before mayWait
// checks who waits: a task waiting there would wait forever (its CPU held), so a late
// check still catches it, and the driver's own short waits (every Get of a synchronous
// loop) never pay for the walk of the stack, which took 40% of CPU when asked each time.
const driverCheckAfter = 20 * time.Millisecond

// driverCheck returns the timer after which a wait through tc checks mayWait: nil for a
// task's context, which needs no check. putCheck gives it back.
func (tc *TaskContext) driverCheck() *time.Timer {
	if tc.Spec != nil {
		return nil
	}
	if t, _ := checkTimers.Get().(*time.Timer); t != nil {
		t.Reset(driverCheckAfter)
		return t
	}
	return time.NewTimer(driverCheckAfter)
}

// checkTimers are stopped driverCheck timers for reuse: a driver's synchronous loop waits
// once per Get, and a timer made and dropped each time cost an allocation per wait. (Since
// Go 1.23 a stopped timer's channel holds no stale value, so Reset needs no drain.)
var checkTimers sync.Pool

// putCheck stops t (nil: none) and keeps it for the next wait.
func putCheck(t *time.Timer) {
	if t != nil {
		t.Stop()
		checkTimers.Put(t)
	}
}

// checkC is t's channel, nil (never ready) for no timer.
func checkC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

// mayWait says whether tc may wait: not when tc is a driver's and the caller is a task's
// function, which would wait holding its CPU (ErrDriverContext). It walks the caller's
// stack, so a wait asks it only once it has lasted driverCheckAfter.
func (tc *TaskContext) mayWait() error {
	if tc.Spec == nil && worker.OnTaskGoroutine() {
		return ErrDriverContext
	}
	return nil
}

// beginBlocked counts one of the task's goroutines blocked in a wait; the first tells the
// task's worker, which lends the task's CPU out. endBlocked uncounts it; the last tells the
// worker the task runs again. A task's goroutines wait at once (the README asks that they
// wait through its ctx), so the worker hears of the first wait and of the end of the last
// only: it heard of each, and the end of any took the CPU back while the others still
// waited (their tasks then waited for a CPU the waiting task held: a deadlock). Under
// blockMu, so that the messages reach the worker in the order of the count's changes. A
// driver's waits only count (no worker to tell, no lock).
func (tc *TaskContext) beginBlocked() {
	if tc.Worker == nil || tc.Spec == nil {
		tc.blockedWaits.Add(1)
		return
	}
	tc.blockMu.Lock()
	if tc.blockedWaits.Add(1) == 1 {
		tc.Core.root.Send(tc.Worker, &pb.TaskBlocked{TaskId: tc.Spec.TaskId})
	}
	tc.blockMu.Unlock()
}

func (tc *TaskContext) endBlocked() {
	if tc.Worker == nil || tc.Spec == nil {
		tc.blockedWaits.Add(-1)
		return
	}
	tc.blockMu.Lock()
	if tc.blockedWaits.Add(-1) == 0 {
		tc.Core.root.Send(tc.Worker, &pb.TaskUnblocked{TaskId: tc.Spec.TaskId})
	}
	tc.blockMu.Unlock()
}

func (c *Core) bytesOf(ctx context.Context, id ids.ObjectID, v objects.Value) ([]byte, error) {
	if v.Err != nil {
		return nil, &ObjectError{Object: id, Info: v.Err}
	}
	if !v.InStore {
		return v.Data, nil
	}
	return c.fetch(ctx, id, v.Node, v.Size)
}

// fetch reads an object's bytes from the store shard holding them: this node's, or
// another node's by pulling it in chunks (package objects/transfer).
func (c *Core) fetch(ctx context.Context, id ids.ObjectID, node ids.NodeID, size int64) ([]byte, error) {
	remote := node != "" && node != c.cfg.Node
	if remote && c.cfg.Cluster == nil {
		return nil, fmt.Errorf("ray: object %s lives on node %s, and this runtime is not in a cluster", id, node)
	}
	s := c.storeOf(node)
	if s == nil {
		return nil, fmt.Errorf("%w: %s: no object store on node %s (the node is gone)", ErrObjectLost, id, node)
	}
	timeout := fetchTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return nil, fmt.Errorf("ray: reading object %s: %w", id, context.DeadlineExceeded)
		}
	}
	if remote {
		// Bytes on their way in are accounted while they come (InFlightBytes).
		c.addInFlight(size)
		defer c.addInFlight(-size)
		return c.pull(ctx, s, id, node, size)
	}
	res, err := ask.Request(c.root, s, &pb.GetObject{ObjectId: id[:]}, timeout)
	if err != nil {
		return nil, fmt.Errorf("ray: reading object %s from node %s: %w", id, node, err)
	}
	reply, ok := res.(*pb.GetObjectReply)
	if ok && reply.Error != "" {
		return nil, fmt.Errorf("%w: %s", ErrObjectLost, reply.Error)
	}
	if !ok || !reply.Found {
		return nil, fmt.Errorf("%w: %s is not in the store of node %s", ErrObjectLost, id, node)
	}
	return reply.Data, nil
}

// FetchArg reads a task argument that lives in a store (the worker's Env.Fetch).
func (c *Core) FetchArg(ctx context.Context, a *pb.Arg) ([]byte, error) {
	id, err := ids.ObjectIDFromBytes(a.ObjectId)
	if err != nil {
		return nil, err
	}
	return c.fetch(ctx, id, ids.NodeID(a.NodeId), a.Size)
}

// Put stores an encoded value as a new object owned by this process and returns its ID;
// the caller holds one reference (see Submit).
func (tc *TaskContext) Put(data []byte) (ids.ObjectID, error) { return tc.PutNested(data, nil) }

// PutNested is Put of a value holding the refs nested: they live while the new object does.
func (tc *TaskContext) PutNested(data []byte, nested []Nested) (ids.ObjectID, error) {
	return tc.putNested(data, nested, false)
}

// putNested is PutNested that, with toStore, puts even a small value into the object
// store (a task argument moved out of its spec must not be inlined back into it).
func (tc *TaskContext) putNested(data []byte, nested []Nested, toStore bool) (ids.ObjectID, error) {
	c := tc.Core
	id := ids.PutID(tc.idSeed(), tc.puts.Add(1))
	if c.sites != nil {
		c.sites.note(id)
	}
	select {
	case <-c.closed:
		return id, ErrShutdown
	default:
	}
	if err := objects.CheckFits(int64(len(data)), c.cfg.StoreBytes); err != nil {
		return id, err
	}
	v := objects.Value{Data: data, Size: int64(len(data))}
	if len(data) > c.cfg.InlineLimit || toStore {
		s := c.cfg.Store()
		if s == nil {
			return id, fmt.Errorf("ray: no object store shard on node %s", c.cfg.Node)
		}
		// Wait for the store to admit it: over its budget, the store answers once spilling
		// has caught up, so a producer cannot outrun the disk (backpressure).
		oid := id // a copy for the message, so that a small Put's id stays on the stack
		res, err := ask.Request(c.root, s, &pb.PutObject{ObjectId: oid[:], Data: data, Owner: c.ownerW}, admitTimeout)
		if ack, ok := res.(*pb.PutObjectAck); err == nil && ok && ack.Error != "" {
			return id, fmt.Errorf("ray: the object store refused object %s: %s", id, ack.Error)
		} else if err != nil {
			c.cfg.Logger.Warn("ray: the object store did not admit an object in time; going on (it holds it, over budget)", "object", id, "err", err)
		}
		v = objects.Value{InStore: true, Node: c.cfg.Node, Size: int64(len(data))}
	}
	c.refs.AddLocal(id)
	c.pin(id, nested)
	c.mem.Set(id, v)
	return id, nil
}

// moveToStore puts the value of an object this process holds in memory into this node's
// store and records that it lives there (storeRefArgs). An object already in a store, or
// not ready, is left as it is.
func (c *Core) moveToStore(id ids.ObjectID) error {
	v, ready, _ := c.mem.Get(id)
	if !ready || v.InStore || v.Err != nil {
		return nil
	}
	select {
	case <-c.closed:
		return ErrShutdown
	default:
	}
	s := c.cfg.Store()
	if s == nil {
		return fmt.Errorf("ray: no object store shard on node %s", c.cfg.Node)
	}
	res, err := ask.Request(c.root, s, &pb.PutObject{ObjectId: id[:], Data: v.Data, Owner: c.ownerW}, admitTimeout)
	if ack, ok := res.(*pb.PutObjectAck); err == nil && ok && ack.Error != "" {
		return fmt.Errorf("ray: the object store refused object %s: %s", id, ack.Error)
	} else if err != nil {
		c.cfg.Logger.Warn("ray: the object store did not admit an object in time; going on (it holds it, over budget)", "object", id, "err", err)
	}
	stored := objects.Value{InStore: true, Node: c.cfg.Node, Size: int64(len(v.Data)), Meta: v.Meta}
	if !c.mem.Replace(id, stored) {
		// Freed meanwhile: the store's copy goes too.
		c.root.Send(s, &pb.FreeObjects{ObjectIds: [][]byte{id[:]}})
	}
	return nil
}

// Ready reports whether id is ready (false for unknown objects, and for a result the
// loss of the cluster failed: it never came, see Wait).
func (c *Core) Ready(id ids.ObjectID) bool {
	v, ready, _ := c.mem.Get(id)
	return ready && (v.Err == nil || !lostValue(v))
}

// Wait waits until k of list are ready, the timeout passes (timeout < 0: no timeout) or
// ctx is done, and reports which are ready: at most k, the first ready ones in list
// order (Ray's ray.wait). Entries marked in failed, and unknown objects, count as ready
// (their Get fails at once).
//
// In a runtime that lost its cluster (Lose), or once it does, Wait does not block: what
// was ready stays ready (its value or its own error came before the loss), and nothing
// else will be (a result the loss failed is not ready: it never came). It reports the
// ready ones, at most k, and fails with the loss's error when there are fewer than k:
// the wait can never be met, and a timeout would only delay the news.
func (tc *TaskContext) Wait(ctx context.Context, list []ids.ObjectID, k int, timeout time.Duration, failed []bool) ([]bool, error) {
	c := tc.Core
	if c.Lost() != nil {
		return c.waitLost(list, k, failed)
	}
	ready := make([]bool, len(list))
	n := 0
	for i, id := range list {
		if n == k {
			return ready, nil
		}
		if failed != nil && failed[i] {
			ready[i] = true
			n++
			continue
		}
		if _, r, known := c.mem.Get(id); r || !known {
			ready[i] = true
			n++
		}
	}
	if n >= k || timeout == 0 {
		return ready, nil
	}
	notify := make(chan int, len(list))
	var cancels []func()
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	for i, id := range list {
		if !ready[i] && (failed == nil || !failed[i]) {
			i := i
			cancel, ok := c.mem.OnReadyCancel(id, func(v objects.Value) {
				if lostValue(v) {
					notify <- -1 // the loss failed it (Lose): waitLost says what is ready
					return
				}
				notify <- i
			})
			if !ok {
				notify <- i
			}
			cancels = append(cancels, cancel)
		}
	}
	// A poll only when the timeout (if any) outlasts it.
	for n < k && (timeout < 0 || timeout >= spin.For()) {
		i, ok := spinRecv(tc, notify)
		if !ok {
			break
		}
		if i < 0 {
			return c.waitLost(list, k, failed)
		}
		if !ready[i] {
			ready[i] = true
			n++
		}
	}
	if n >= k {
		return ready, nil
	}
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	check := tc.driverCheck()
	defer putCheck(check)
	tc.beginBlocked()
	defer tc.endBlocked()
	start := spin.Start()
	for n < k {
		select {
		case i := <-notify:
			if i < 0 {
				return c.waitLost(list, k, failed)
			}
			if !ready[i] {
				ready[i] = true
				n++
			}
		case <-checkC(check):
			if err := tc.mayWait(); err != nil {
				return ready, err
			}
			check = nil
		case <-expire:
			return ready, nil
		case <-ctx.Done():
			return ready, fmt.Errorf("ray: wait: %w", ctx.Err())
		case <-c.closed:
			return ready, ErrShutdown
		case <-c.lost.ch:
			return c.waitLost(list, k, failed)
		}
	}
	tc.waits.BlockedSince(start)
	return ready, nil
}

// waitLost is Wait in a runtime that lost its cluster: the first k of list that are ready
// (as Wait counts them, but not a result the loss failed), and the loss's error when there
// are fewer than k.
func (c *Core) waitLost(list []ids.ObjectID, k int, failed []bool) ([]bool, error) {
	ready := make([]bool, len(list))
	n := 0
	for i, id := range list {
		if n == k {
			break
		}
		if failed != nil && failed[i] {
			ready[i] = true
			n++
			continue
		}
		if v, r, known := c.mem.Get(id); !known || r && !lostValue(v) {
			ready[i] = true
			n++
		}
	}
	if n < k {
		return ready, fmt.Errorf("ray: wait: %d of the %d objects asked for are ready, and no other will be: %w", n, k, c.lost.err)
	}
	return ready, nil
}
