package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects"
)

// Streaming generators (Ray's num_returns="streaming"). A generator task yields items one
// by one; item i is its return ReturnID(task, i), an object like any other once its owner
// has it. The path:
//   - SubmitGenerator submits the task (TaskSpec.num_returns = pb.StreamingReturns) and
//     registers its Generator, the owner's side of the stream, before the task can run.
//   - The task's yield (TaskContext.Yield) puts a large item in its node's store, then
//     sends a pb.GeneratorItem to the task's shard as a request and waits for its ack; the
//     task goes on once it has it. So items arrive in order, each once per attempt, and all
//     of them before the task's result.
//   - The shard (onItem) makes the item ready and counts the Generator's reference to it
//     (the first item's was counted at submission, as any task's return), then hands it to
//     the Generator, and acks. With backpressure (a window of n) the ack says wait while n
//     items are unconsumed: the task then asks again with a pb.GeneratorWait, whose ack
//     Next sends when the consumer catches up, and lends its CPU back meanwhile (so
//     the tasks a lease queued behind it go elsewhere, as behind a task blocked in Get).
//   - Next hands the consumer the next item (its reference goes with it: the ObjectRef's
//     handle holds it), waits for one, or reports the end: ErrGeneratorDone after the
//     last item, or the task's error after the items it yielded before failing.
//   - Close (or the collection of the API's generator) gives back the references to the
//     items not consumed, lets a producer held by backpressure go on, and cancels the task
//     if it still runs.
//
// Retries: an attempt that failed for a system reason (its worker or node died) is run
// again, as any task is, and its items are matched by index: the owner keeps the items it
// has (the new attempt's copies of them are dropped) and takes the ones after. That is
// Ray's behaviour, and it is right for a generator that yields the same items in the same
// order when run again; one that does not should be called with MaxRetries(0), and then
// the stream ends with the attempt's error after the items it yielded.
//
// Lineage: items are a task's returns, and the task's lineage record lives while any of
// them does (objects.RefTable.AddReturns, per item). A lost item is recreated by running
// the generator again (lineage.Rerun for that item): the run's items take the futures
// that were made pending (the lost ones) and are dropped otherwise; an item the run does
// not yield again fails with an error saying so.

// ErrGeneratorDone is what Next returns after a generator's last item.
var ErrGeneratorDone = errors.New("ray: generator done")

// ErrGeneratorClosed is what Next returns after Close.
var ErrGeneratorClosed = errors.New("ray: generator closed")

// yieldResend is how long a yield waits for an answer before it asks again (the owner
// answers a duplicate as the first; a GeneratorWait parked by backpressure is answered
// by its latest request).
const yieldResend = 10 * time.Second

// Generator is the owner's side of one streaming generator task: the items that arrived
// and are not consumed yet (it holds a reference to each), the consumer's position, the
// stream's end, and the acks that backpressure holds back. The task's shard writes to it
// as items arrive; consumers read it through Next, from any goroutine. A leaf structure:
// its mutex guards its fields only.
type Generator struct {
	c       *Core
	tid     ids.TaskID
	window  uint32 // backpressure: at most window items unconsumed (0: no limit)
	wake    chan struct{}
	done    chan struct{} // closed at the end of the stream, or at Close (endOnce)
	endOnce sync.Once

	mu         sync.Mutex
	received   uint32 // items 1..received arrived
	next       uint32 // items 1..next handed out
	ended      bool
	err        *pb.ErrorInfo // the task's error, for the Next after its last item
	closed     bool
	holdsFirst bool // the reference to item 1 counted at submission, not handed out yet
	parked     []parkedAck
}

// parkedAck is the ack of a GeneratorWait held back by backpressure.
type parkedAck struct {
	index uint32
	to    *actor.PID
}

// SubmitGenerator submits a call of a streaming generator with a backpressure window of
// window items (0: none) and returns its Generator. A failed submission ends the stream
// with its error (the first Next returns it).
func (c *Core) SubmitGenerator(tc *TaskContext, call Call, window int) (*Generator, error) {
	call.NumReturns = pb.StreamingReturns
	g := &Generator{c: c, window: uint32(max(window, 0)), wake: make(chan struct{}, 1), done: make(chan struct{}), holdsFirst: true}
	p, err := c.submitG(tc, call, g)
	if err != nil {
		var info *pb.ErrorInfo
		var se *SubmitError
		if errors.As(err, &se) {
			info = se.Info
		} else {
			info = &pb.ErrorInfo{Kind: pb.ErrorInfo_SYSTEM, Function: call.Function, TaskId: p.tid[:], Message: err.Error()}
		}
		c.gens.Delete(p.tid)
		g.finish(info)
	}
	return g, err
}

// register is submit's part for a generator: it must be found before the task can yield.
func (g *Generator) register(tid ids.TaskID) {
	g.tid = tid
	g.c.gens.Store(tid, g)
}

// Core is the runtime the generator belongs to.
func (g *Generator) Core() *Core { return g.c }

// Task is the generator's task.
func (g *Generator) Task() ids.TaskID { return g.tid }

func (g *Generator) notify() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// Next returns the ID of the next item, whose reference passes to the caller (it gives it
// back with ReleaseOwned); it waits for the item while the task runs. After the last item
// it returns ErrGeneratorDone, or an *ObjectError with the task's error if the task failed;
// after Close, ErrGeneratorClosed. Inside a task (tc a task's context) the wait lends the
// task's CPU back, as Get does. Safe for concurrent use: each item goes to one caller.
func (g *Generator) Next(ctx context.Context, tc *TaskContext) (ids.ObjectID, error) {
	blocked := false
	defer func() {
		if blocked {
			tc.endBlocked()
		}
	}()
	for {
		g.mu.Lock()
		switch {
		case g.closed:
			g.mu.Unlock()
			return ids.ObjectID{}, ErrGeneratorClosed
		case g.next < g.received:
			g.next++
			id := ids.ReturnID(g.tid, g.next)
			if g.next == 1 {
				g.holdsFirst = false
			}
			acks := g.releasable()
			more := g.next < g.received
			g.mu.Unlock()
			g.sendAcks(acks)
			if more {
				g.notify() // another consumer may be waiting
			}
			return id, nil
		case g.ended:
			err := g.err
			next := g.next + 1
			g.mu.Unlock()
			if err != nil {
				return ids.ObjectID{}, &ObjectError{Object: ids.ReturnID(g.tid, next), Info: err}
			}
			return ids.ObjectID{}, ErrGeneratorDone
		}
		g.mu.Unlock()
		if !blocked {
			// As Get: a task that waits through a driver's ctx cannot lend its CPU back,
			// and the producer may need it.
			if err := tc.mayWait(); err != nil {
				return ids.ObjectID{}, err
			}
			blocked = true
			tc.beginBlocked()
		}
		select {
		case <-g.wake:
		case <-g.done:
		case <-ctx.Done():
			return ids.ObjectID{}, fmt.Errorf("ray: waiting for the next item of generator %s: %w", g.tid, ctx.Err())
		case <-g.c.closed:
			return ids.ObjectID{}, ErrShutdown
		case <-g.c.lost.ch:
			return ids.ObjectID{}, fmt.Errorf("ray: waiting for the next item of generator %s: %w", g.tid, g.c.lost.err)
		}
	}
}

// releasable takes the parked acks the consumer's position now allows (g.mu held).
func (g *Generator) releasable() []parkedAck {
	if len(g.parked) == 0 {
		return nil
	}
	var out []parkedAck
	kept := g.parked[:0]
	for _, a := range g.parked {
		if a.index <= g.next+g.window {
			out = append(out, a)
		} else {
			kept = append(kept, a)
		}
	}
	g.parked = kept
	return out
}

func (g *Generator) sendAcks(acks []parkedAck) {
	for _, a := range acks {
		g.c.root.Send(a.to, &pb.GeneratorItemAck{Index: a.index})
	}
}

// Close ends the consumer's interest in the stream: the items not consumed are given back,
// a producer held by backpressure goes on, and the task is cancelled if it still runs
// (its later items are dropped as they come). Next then returns ErrGeneratorClosed.
func (g *Generator) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	from, to := g.next+1, g.received
	first := g.holdsFirst
	g.holdsFirst = false
	acks := g.parked
	g.parked = nil
	ended := g.ended
	g.mu.Unlock()
	g.endOnce.Do(func() { close(g.done) })
	g.sendAcks(acks)
	for i := from; i <= to; i++ {
		g.c.ReleaseOwned(ids.ReturnID(g.tid, i), nil, true)
	}
	if first && to == 0 {
		g.c.ReleaseOwned(ids.ReturnID(g.tid, 1), nil, true)
	}
	if !ended {
		_ = g.c.Cancel(ids.ReturnID(g.tid, 1))
	}
}

// finish ends the stream (the task's result came, with err nil or its error).
func (g *Generator) finish(err *pb.ErrorInfo) {
	g.mu.Lock()
	if g.ended {
		g.mu.Unlock()
		return
	}
	g.ended, g.err = true, err
	// Nothing more comes: the reference to a first item that never came goes.
	first := g.holdsFirst && g.received == 0
	if first {
		g.holdsFirst = false
	}
	acks := g.parked
	g.parked = nil
	g.mu.Unlock()
	g.sendAcks(acks)
	if first {
		g.c.ReleaseOwned(ids.ReturnID(g.tid, 1), nil, false)
	}
	g.endOnce.Do(func() { close(g.done) })
}

// onItem handles an item a generator task yielded (the shard's loop): see the top of this
// file. It answers the yield with an ack, at once or (backpressure) when Next allows.
func (s *shard) onItem(ctx actor.Context, m *pb.GeneratorItem) {
	c := s.c
	ack := func() {
		if ctx.Sender() != nil {
			ctx.Respond(&pb.GeneratorItemAck{Index: m.Index})
		}
	}
	tid, err := ids.TaskIDFromBytes(m.TaskId)
	p, ok := s.tasks[tid]
	if err != nil || !ok || m.Attempt != p.spec.Attempt || m.Value == nil || m.Index == 0 || p.spec.NumReturns != pb.StreamingReturns {
		ack() // stale (a past attempt, a finished task): let it run to its end, which is ignored
		return
	}
	id := ids.ReturnID(tid, m.Index)
	rv := m.Value
	v := objects.Value{Data: rv.Data, InStore: rv.InStore, Node: ids.NodeID(rv.NodeId), Size: rv.Size}
	var nested []Nested
	if len(rv.Nested) > 0 {
		if nested, err = ParseNested(rv.Nested); err != nil {
			c.cfg.Logger.Warn("ray: a generator's item holds corrupt refs", "task", tid, "item", m.Index, "err", err)
		}
	}
	g := c.generator(tid)
	if g == nil {
		// A rerun (lineage reconstruction of an item): the items made pending again take
		// the new values, and so do those lost as well (retakeLost); the others keep theirs.
		if _, ready, known := c.mem.Get(id); known && (!ready || c.retakeLost(id)) {
			c.mem.Set(id, v)
			if nested != nil {
				c.pinAdopted(id, nested)
			}
		} else {
			c.dropCopy(tid, id, v, nested)
		}
		ack()
		return
	}
	g.mu.Lock()
	fresh := m.Index == g.received+1 && !g.closed
	g.mu.Unlock()
	if !fresh {
		// A duplicate (a resend, or a retried attempt's item the stream has), a gap (not
		// sent by this protocol), or an item after Close: dropped.
		c.dropCopy(tid, id, v, nested)
		s.ackItem(ctx, g, m.Index)
		return
	}
	// The reference the Generator holds (the first item's was counted at submission), the
	// value, and the refs inside it, before the consumer can see the item.
	if m.Index > 1 {
		c.refs.AddReturn(tid, int(m.Index))
	}
	c.mem.Set(id, v)
	if nested != nil {
		c.pinAdopted(id, nested)
	}
	g.mu.Lock()
	closed := g.closed
	if !closed {
		g.received = m.Index
	}
	g.mu.Unlock()
	if closed { // closed meanwhile: Close gave back the items before this one
		c.ReleaseOwned(id, nil, true)
	} else {
		g.notify()
	}
	s.ackItem(ctx, g, m.Index)
}

// generator returns the Generator of task tid (nil: none runs).
func (c *Core) generator(tid ids.TaskID) *Generator {
	gi, _ := c.gens.Load(tid)
	g, _ := gi.(*Generator)
	return g
}

// mustWait says whether the task yielding item index must wait for its consumer (g.mu
// held).
func (g *Generator) mustWait(index uint32) bool {
	return !g.closed && !g.ended && g.window > 0 && index > g.next+g.window
}

// ackItem answers item index: go on, or wait (GeneratorWait) while the window is full.
func (s *shard) ackItem(ctx actor.Context, g *Generator, index uint32) {
	if ctx.Sender() == nil {
		return
	}
	g.mu.Lock()
	wait := g.mustWait(index)
	g.mu.Unlock()
	ctx.Respond(&pb.GeneratorItemAck{Index: index, Wait: wait})
}

// onWait answers a generator task waiting to go on after item m.Index: at once if it may,
// else when Next lets it (the ack is parked).
func (s *shard) onWait(ctx actor.Context, m *pb.GeneratorWait) {
	to := ctx.Sender()
	if to == nil {
		return
	}
	tid, _ := ids.TaskIDFromBytes(m.TaskId)
	if g := s.c.generator(tid); g != nil {
		g.mu.Lock()
		if g.mustWait(m.Index) {
			for i := range g.parked {
				if g.parked[i].index == m.Index { // asked again: the new request waits instead
					g.parked[i].to = to
					g.mu.Unlock()
					return
				}
			}
			g.parked = append(g.parked, parkedAck{index: m.Index, to: to})
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
	}
	ctx.Respond(&pb.GeneratorItemAck{Index: m.Index})
}

// completeGenerator is complete for a streaming generator task (the shard's loop; p is
// registered no more): the stream ends, with the task's error if it failed.
func (s *shard) completeGenerator(p *pending, r *pb.TaskResult) {
	c := s.c
	tid := p.tid
	c.free(c.refs.RemoveLocalAll(c.unborrowArgs(p.argRefs)))
	g := c.generator(tid)
	c.gens.Delete(tid)
	var received uint32
	if g != nil {
		g.mu.Lock()
		received = g.received
		g.mu.Unlock()
	} else if p.rerun != nil {
		received = p.rerun.Object.Index() // a rerun: the item it was for
	}
	// Items made pending again (recreated: lineage) that this run did not yield again.
	for i := uint32(1); i <= received; i++ {
		id := ids.ReturnID(tid, i)
		if _, ready, known := c.mem.Get(id); known && !ready {
			info := r.Error
			if info == nil {
				info = &pb.ErrorInfo{Kind: pb.ErrorInfo_OBJECT_LOST, Function: p.spec.Function, TaskId: tid[:], NodeId: string(c.cfg.Node),
					Message: fmt.Sprintf("item %d of the generator was lost, and the generator did not yield it again when run to recreate it", i)}
			}
			c.mem.Set(id, objects.Value{Err: info})
		}
	}
	if g != nil {
		g.finish(r.Error)
	}
	if p.pinned {
		c.unpin(argsKey(ids.ReturnID(tid, 1)))
	}
}

// Yield sends item index (from 1, in order) of the running generator task: data, the
// item's encoded value, with the refs inside it already registered for the task's owner
// (Escape). A large item goes to the node's store first. It returns once the owner has the
// item and its backpressure window lets the task go on, or with ctx's error.
func (tc *TaskContext) Yield(ctx context.Context, index uint32, data []byte, nested [][]byte) error {
	spec := tc.Spec
	if spec == nil || spec.NumReturns != pb.StreamingReturns || spec.ReplyTo == nil {
		return errors.New("ray: yield outside a generator task")
	}
	c := tc.Core
	tid, err := ids.TaskIDFromBytes(spec.TaskId)
	if err != nil {
		return err
	}
	v := &pb.ReturnValue{Data: data, Size: int64(len(data)), Nested: nested}
	if len(data) > c.cfg.InlineLimit {
		if err := objects.CheckFits(int64(len(data)), c.cfg.StoreBytes); err != nil {
			return fmt.Errorf("ray: item %d: %w", index, err)
		}
		st := c.cfg.Store()
		if st == nil {
			return fmt.Errorf("ray: item %d: no object store shard on this node", index)
		}
		id := ids.ReturnID(tid, index)
		got, err := ask.Request(c.root, st, &pb.PutObject{ObjectId: id[:], Data: data, Owner: spec.Owner}, storeAdmitTimeout)
		if err != nil {
			return fmt.Errorf("ray: item %d: the object store did not answer: %w", index, err)
		}
		if ack, ok := got.(*pb.PutObjectAck); ok && ack.Error != "" {
			return fmt.Errorf("ray: item %d: the object store refused it: %s", index, ack.Error)
		}
		v.Data, v.InStore, v.NodeId = nil, true, string(c.cfg.Node)
	}
	to := actor.NewPID(spec.ReplyTo.Address, spec.ReplyTo.Id)
	ack, err := tc.ask(ctx, to, &pb.GeneratorItem{TaskId: spec.TaskId, Attempt: spec.Attempt, Index: index, Value: v})
	if err != nil || !ack.Wait {
		return err
	}
	// Backpressure: the owner has the item, and the task waits for its consumer, lending
	// its CPU back meanwhile.
	tc.beginBlocked()
	defer tc.endBlocked()
	_, err = tc.ask(ctx, to, &pb.GeneratorWait{TaskId: spec.TaskId, Attempt: spec.Attempt, Index: index})
	return err
}

// ask sends msg (a GeneratorItem or GeneratorWait) to the task's owner as a request until
// it is answered, or ctx is done.
func (tc *TaskContext) ask(ctx context.Context, to *actor.PID, msg any) (*pb.GeneratorItemAck, error) {
	c := tc.Core
	type answer struct {
		res any
		err error
	}
	for {
		call := ask.Start(c.root, to, msg)
		ch := make(chan answer, 1)
		go func() { // ends within yieldResend
			res, err := call.Wait(context.Background(), yieldResend)
			ch <- answer{res, err}
		}()
		select {
		case a := <-ch:
			if ack, ok := a.res.(*pb.GeneratorItemAck); ok && a.err == nil {
				return ack, nil
			}
			// No answer in time: the owner may have missed it (or is slow): again.
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, ErrShutdown
		}
	}
}

// storeAdmitTimeout bounds the wait for the store to admit a large item while it spills
// (as tasks/worker's admitTimeout for results).
const storeAdmitTimeout = 5 * time.Minute
