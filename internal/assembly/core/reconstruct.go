package core

import (
	"context"
	"errors"
	"time"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/netx"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects"
)

// Lineage reconstruction, owner side: an object this runtime owns whose bytes are lost (its
// node died, or its spill file is gone or corrupt) is recreated by running the task that
// made it again, with the same task and object IDs, after recreating its lost arguments
// first. The owner keeps the spec of every task whose lineage record the reference table
// holds (specs); the GCS copy is what outlives the owner. Objects made by Put have no
// task to run again: they stay lost.

// maxReconstructions bounds how often one Get recreates its object.
const maxReconstructions = 3

// lostHere reports whether a ready owned object's bytes are on a node that is gone.
func (c *Core) lostHere(v objects.Value) bool {
	return v.InStore && v.Node != "" && v.Node != c.cfg.Node && c.cfg.Cluster != nil && !c.cfg.Cluster.Alive(v.Node)
}

// argGone reports whether a task argument's bytes are gone: its node is gone in this
// runtime's view, or (the worker that failed to read it may have learned of the death
// first) nothing listens at that node's data address any more. It may dial: never call it
// on a shard's loop.
func (c *Core) argGone(v objects.Value) bool {
	if c.lostHere(v) {
		return true
	}
	if !v.InStore || v.Node == "" || v.Node == c.cfg.Node || c.cfg.Cluster == nil {
		return false
	}
	addr := c.cfg.Cluster.DataAddress(v.Node)
	return addr != "" && netx.Refused(addr, time.Second)
}

// reconstruct starts recreating id: it reports false when id cannot be recreated (not a
// task's return, or its lineage record is gone). Callable from any goroutine: the future
// is made pending at once (a Get that follows waits for the new value), and the task's
// shard runs it again, unless it is pending already (still running, or being recreated).
func (c *Core) reconstruct(id ids.ObjectID) bool {
	tid := id.Task()
	if id != ids.ReturnID(tid, 1) {
		return false // a Put, or not a return of ours
	}
	spec := c.refs.Spec(tid)
	if spec == nil {
		return false
	}
	old, ready, known := c.mem.Get(id)
	if !known {
		c.mem.Create(id)
	}
	if ready {
		c.mem.Reset(id)
	}
	if !ready {
		old = objects.Value{}
	}
	c.shardOf(tid).send(rerun{p: &pending{tid: tid, spec: spec, old: old}})
	return true
}

// rerun runs a task again for reconstruction (its shard's part of reconstruct). The
// first rerun of a task claims it (later ones, and reconstructions of the same object
// meanwhile, find it pending and do nothing); if its old copy is in a store, that copy is
// freed first, off the loop, and the same p comes back to start.
func (s *shard) rerun(p *pending) {
	c := s.c
	switch q, ok := s.tasks[p.tid]; {
	case ok && q != p:
		return // already being recreated (or still running)
	case !ok && p.freeing:
		return // cancelled while its old copy was freed
	case !ok:
		s.tasks[p.tid] = p
		if p.old.InStore {
			// The old copy (a corrupt spill file, say) goes first, so the new result is
			// stored in its place rather than taken for a duplicate of it; not on a node
			// that is gone, even if this runtime has not heard yet (argGone also finds a
			// node whose process refuses connections): a free sent there is never
			// answered. Both may wait, hence the goroutine.
			p.freeing = true
			old, id := p.old, ids.ReturnID(p.tid, 1)
			go func() {
				if !c.argGone(old) {
					if st := c.storeOf(old.Node); st != nil {
						_, _ = c.root.RequestFuture(st, &pb.FreeObjects{ObjectIds: [][]byte{id[:]}}, 5*time.Second).Result()
					}
				}
				s.send(rerun{p: p})
			}()
			return
		}
	case !p.freeing:
		return // started already
	}
	p.freeing = false
	spec := p.spec
	spec.Attempt++
	spec.MaxRetries++ // the lost object's run is not one of the task's own retries
	spec.ReplyTo = s.pidW
	var argRefs []ids.ObjectID
	for _, a := range spec.Args {
		if a.IsRef {
			if aid, err := ids.ObjectIDFromBytes(a.ObjectId); err == nil {
				argRefs = append(argRefs, aid)
			}
		}
	}
	p.argRefs = argRefs
	c.stats.Reconstructed.Add(1)
	c.mem.Reset(ids.ReturnID(p.tid, 1)) // a Get that read the old value meanwhile waits again
	c.holdArgs(argRefs)
	// Arguments whose bytes were on a dead node are recreated first (recursively), and so
	// are arguments whose values were freed while their lineage was kept (nothing else
	// needed them until now).
	for _, a := range argRefs {
		v, ready, known := c.mem.Get(a)
		switch {
		case known && ready && c.lostHere(v):
			c.reconstruct(a)
		case !known && c.refs.Spec(a.Task()) != nil && a == ids.ReturnID(a.Task(), 1):
			c.reconstruct(a)
		}
	}
	s.awaitArgs(p, argRefs)
}

// recoverLost is called when reading id failed with ErrObjectLost: it recreates id if it
// can and reports whether the caller should wait for it again.
func (c *Core) recoverLost(err error, id ids.ObjectID) bool {
	return errors.Is(err, ErrObjectLost) && c.reconstruct(id)
}

// getRecovering is bytesOf with reconstruction of lost owned objects.
func (tc *TaskContext) getRecovering(ctx context.Context, id ids.ObjectID, v objects.Value) ([]byte, error) {
	c := tc.Core
	for attempt := 0; ; attempt++ {
		if cur, ready, _ := c.mem.Get(id); ready {
			v = cur // recreated meanwhile, perhaps
		}
		if c.lostHere(v) && attempt < maxReconstructions && c.reconstruct(id) {
			var err error
			if v, err = tc.wait(ctx, id); err != nil {
				return nil, err
			}
			continue
		}
		b, err := c.bytesOf(ctx, id, v)
		if err == nil || attempt >= maxReconstructions {
			return b, err
		}
		if !c.recoverLost(err, id) && !(lostError(err) && c.awaitOrphaned(ctx, id)) {
			return b, err
		}
		if v, err = tc.wait(ctx, id); err != nil {
			return nil, err
		}
	}
}

// recoverArgs recreates the arguments of a task that failed because their bytes were on a
// node that is gone, and dispatches the task again once they are ready; when none was lost
// that way it is sent again as usual. Finding out may dial the argument's node: a goroutine
// does, and answers the shard with argsLost.
func (s *shard) recoverArgs(p *pending) {
	c := s.c
	p.dispatched = false
	args := p.argRefs
	go func() {
		var lost []ids.ObjectID
		for _, a := range args {
			if v, ready, known := c.mem.Get(a); known && ready && c.argGone(v) && c.reconstruct(a) {
				lost = append(lost, a)
			}
		}
		s.send(argsLost{p: p, lost: lost})
	}()
}

func (s *shard) argsLost(p *pending, lost []ids.ObjectID) {
	if s.tasks[p.tid] != p || p.dispatched {
		return
	}
	if len(lost) == 0 {
		p.dispatched = true
		s.place(p)
		return
	}
	s.awaitArgs(p, lost)
}
