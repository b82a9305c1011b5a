package core

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ray-go/ray/actors"
	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects"
)

// Actor lifetimes (Ray's actor garbage collection): a non-detached actor ends when every
// handle to it is gone, wherever the handles were.
//
// The runtime that creates a non-detached actor (its owner) also makes a small object,
// the actor's handle object ids.ActorHandleID(actor), in its own tables, and counts it
// like any object it owns: each handle in the creating program holds one local reference
// (given back when the handle is garbage-collected, as an ObjectRef's), and an encoded
// handle carries the object as a nested ref, so the borrowing protocol (borrow.go) counts
// handles inside Put objects, task and call arguments in flight, task returns, and other
// processes that decoded one. A handle from GetActor holds it too (LookupActor gives its
// owner).
//
// Every caller of the actor (one per shard of a process: actor.go) holds the object as
// well while it has unfinished calls: taken when its first unfinished call is submitted,
// given back when its last one finishes (or fails). So when the owner's count reaches
// zero no handle is left anywhere and no call to the actor is waiting for an answer:
// the owner then ends the actor at once (lifecycle.OutOfScope, through the actor table,
// so every process sees it Dead with cause OutOfScope), and the calls already made have
// all completed. This costs nothing per call that a busy caller pays: the hold is taken
// and given back at the edges of a caller's bursts, with the caller's lock already held.
//
// When the owner itself dies, its count dies with it: the actor then ends with its owner
// (lifecycle.OwnerDied, stepped by the actor manager's leader on the membership's news,
// actors.Manager.OwnerGone). A runtime that knows the owner died (ProcessGone) answers a
// lookup of such an actor by name with that death at once (LookupActor), and a handle
// decoded with a dead owner does not wait for the dead owner's answer (Hold).
//
// A detached actor has no handle object: it lives until it is killed. Neither does a
// handle that was encoded without one (an old encoding, or a handle of a detached actor):
// it keeps working and does not count.

// maxEnders bounds the goroutines that end actors gone out of scope at once.
const maxEnders = 8

// enders is the queue of actors gone out of scope, ended in the background (each needs
// a GCS write, which a release, often on a shard's loop or a finalizer, must not wait for).
type enders struct {
	mu      sync.Mutex
	queue   []ids.ActorID
	running int
	closed  bool
	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

// newHandleObject makes the handle object of actor id, which this runtime owns, with one
// local reference: the creator's handle.
func (c *Core) newHandleObject(id ids.ActorID) {
	hid := ids.ActorHandleID(id)
	c.refs.AddLocal(hid)
	data := append([]byte(nil), id[:]...)
	c.mem.Set(hid, objects.Value{Data: data, Size: int64(len(data))})
}

// holdHandle takes one reference to the handle object of actor id, owned by owner, for a
// caller with unfinished calls, without blocking (the caller's lock is held). The
// submitting handle holds the object meanwhile, so it is known here: a local reference
// when this runtime owns it, else one more hold of its borrow. It reports false when this
// runtime has no borrow to add to (a handle that was never bound here): then the caller
// registers one with Hold, after unlocking.
func (c *Core) holdHandle(id ids.ActorID, owner *pb.PID) bool {
	hid := ids.ActorHandleID(id)
	if c.isSelf(owner) {
		c.refs.AddLocal(hid)
		return true
	}
	return c.borrows.More(hid)
}

// releaseHandle gives back what holdHandle took.
func (c *Core) releaseHandle(id ids.ActorID) { c.ReleaseRef(ids.ActorHandleID(id), false) }

// idleLocked reports, for a caller that holds the handle object, whether it has no
// unfinished call left; then it no longer holds it, and the caller gives it back
// (releaseHandle) after unlocking ac.mu.
func (ac *actorCaller) idleLocked() bool {
	if !ac.held || ac.calls.Unfinished() > 0 {
		return false
	}
	ac.held = false
	return true
}

// outOfScope ends actor id, whose handle object this runtime owned and has just freed.
func (c *Core) outOfScope(id ids.ActorID) {
	if c.cfg.Actors == nil {
		return
	}
	e := &c.enders
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.queue = append(e.queue, id)
	start := e.running < maxEnders
	if start {
		e.running++
		e.wg.Add(1)
	}
	e.mu.Unlock()
	if start {
		go c.endActors()
	}
}

// endActors ends the actors queued by outOfScope until the queue is empty.
func (c *Core) endActors() {
	e := &c.enders
	defer e.wg.Done()
	for {
		e.mu.Lock()
		if len(e.queue) == 0 || e.closed {
			e.running--
			e.mu.Unlock()
			return
		}
		id := e.queue[0]
		e.queue = e.queue[1:]
		e.mu.Unlock()
		c.endActor(e.ctx, id)
	}
}

// endActorTimeout bounds the steps of one actor's end.
const endActorTimeout = 30 * time.Second

// endActor steps actor id to Dead (lifecycle.OutOfScope) in the actor table.
func (c *Core) endActor(ctx context.Context, id ids.ActorID) {
	ctx, cancel := context.WithTimeout(ctx, endActorTimeout)
	defer cancel()
	if st, ok := c.actorStates.Load(id); ok {
		if created := st.(*actorState).created; created != nil { // a record still being written
			select {
			case <-created:
			case <-ctx.Done():
				return
			}
		}
	}
	after, _, _, err := c.cfg.Actors.Table.Step(ctx, id.String(), lifecycle.OutOfScope{})
	switch {
	case err == nil:
		c.ActorChanged(after) // this process's callers fail later calls at once
	case errors.Is(err, lifecycle.ErrInvalidTransition), errors.Is(err, actors.ErrNoSuchActor):
		// Dead already (killed, or its creation failed), or never recorded.
	case ctx.Err() != nil:
	default:
		c.cfg.Logger.Warn("ray: cannot end an actor whose handles are all gone", "actor", id, "err", err)
	}
}

// closeEnders stops ending actors (Close): the queued ones are left as they are.
func (c *Core) closeEnders() {
	e := &c.enders
	e.mu.Lock()
	e.closed = true
	e.queue = nil
	e.mu.Unlock()
	e.cancel()
	e.wg.Wait()
}
