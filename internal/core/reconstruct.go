package core

import (
	"context"
	"errors"
	"time"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/internal/netx"
	"github.com/ray-go/ray/internal/pb"
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

// keepSpec remembers a submitted task's spec for reconstruction.
func (c *Core) keepSpec(tid ids.TaskID, spec *pb.TaskSpec) {
	c.specMu.Lock()
	if c.specs == nil {
		c.specs = map[ids.TaskID]*pb.TaskSpec{}
	}
	c.specs[tid] = spec
	c.specMu.Unlock()
}

// hasSpec reports whether the spec of task tid is kept.
func (c *Core) hasSpec(tid ids.TaskID) bool {
	c.specMu.Lock()
	defer c.specMu.Unlock()
	return c.specs[tid] != nil
}

// dropSpecs forgets the specs of tasks whose lineage records were dropped.
func (c *Core) dropSpecs(tasks []ids.TaskID) {
	if len(tasks) == 0 {
		return
	}
	c.specMu.Lock()
	for _, t := range tasks {
		delete(c.specs, t)
	}
	c.specMu.Unlock()
}

// lostHere reports whether a ready owned object's bytes are on a node that is gone.
func (c *Core) lostHere(v objects.Value) bool {
	return v.InStore && v.Node != "" && v.Node != c.cfg.Node && c.cfg.Cluster != nil && !c.cfg.Cluster.Alive(v.Node)
}

// argGone reports whether a task argument's bytes are gone: its node is gone in this
// runtime's view, or (the worker that failed to read it may have learned of the death
// first) nothing listens at that node's data address any more.
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
// task's return, or its spec is no longer held).
func (c *Core) reconstruct(id ids.ObjectID) bool {
	tid := id.Task()
	if id != ids.ReturnID(tid, 1) {
		return false // a Put, or not a return of ours
	}
	c.specMu.Lock()
	spec := c.specs[tid]
	c.specMu.Unlock()
	if spec == nil {
		return false
	}
	c.mu.Lock()
	if _, running := c.tasks[tid]; running {
		c.mu.Unlock()
		return true // already being recreated (or still running)
	}
	spec.Attempt++
	spec.MaxRetries++ // the lost object's run is not one of the task's own retries
	var argRefs []ids.ObjectID
	for _, a := range spec.Args {
		if a.IsRef {
			if aid, err := ids.ObjectIDFromBytes(a.ObjectId); err == nil {
				argRefs = append(argRefs, aid)
			}
		}
	}
	p := &pending{spec: spec, argRefs: argRefs}
	c.tasks[tid] = p
	c.mu.Unlock()
	c.stats.Reconstructed.Add(1)
	// The old copy (a corrupt spill file, say) goes first, so the new result is stored in
	// its place rather than taken for a duplicate of it. Not on a node that is gone, even if
	// this runtime has not heard yet (argGone also finds a node whose process refuses
	// connections): a free sent there is never answered, and waiting for it held up this
	// runtime's results for 5 s (a chaos-suite round).
	if old, ready, _ := c.mem.Get(id); ready && old.InStore && !c.argGone(old) {
		if s := c.storeOf(old.Node); s != nil {
			_, _ = c.root.RequestFuture(s, &pb.FreeObjects{ObjectIds: [][]byte{id[:]}}, 5*time.Second).Result()
		}
	}
	c.mem.Reset(id)
	c.holdArgs(argRefs)
	// Arguments whose bytes were on a dead node are recreated first (recursively), and so
	// are arguments whose values were freed while their lineage was kept (nothing else
	// needed them until now).
	for _, a := range argRefs {
		v, ready, known := c.mem.Get(a)
		switch {
		case known && ready && c.lostHere(v):
			c.reconstruct(a)
		case !known && c.hasSpec(a.Task()) && a == ids.ReturnID(a.Task(), 1):
			c.mem.Create(a)
			c.reconstruct(a)
		}
	}
	p.waiting.Store(int32(len(argRefs)) + 1)
	for _, r := range argRefs {
		if !c.mem.OnReady(r, func(objects.Value) { c.depReady(tid, p) }) {
			c.depReady(tid, p)
		}
	}
	c.depReady(tid, p)
	return true
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
// node that is gone, and dispatches the task again once they are ready. It reports false
// when no argument was lost that way (the caller retries as usual).
func (c *Core) recoverArgs(tid ids.TaskID, p *pending) bool {
	var lost []ids.ObjectID
	for _, a := range p.argRefs {
		if v, ready, known := c.mem.Get(a); known && ready && c.argGone(v) && c.reconstruct(a) {
			lost = append(lost, a)
		}
	}
	if len(lost) == 0 {
		return false
	}
	c.mu.Lock()
	p.dispatched = false
	c.mu.Unlock()
	p.waiting.Store(int32(len(lost)) + 1)
	for _, a := range lost {
		if !c.mem.OnReady(a, func(objects.Value) { c.depReady(tid, p) }) {
			c.depReady(tid, p)
		}
	}
	c.depReady(tid, p)
	return true
}
