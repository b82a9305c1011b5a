package core

import (
	"fmt"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects"
)

// Tasks of several returns (Ray's num_returns=n). Such a task's returns are the objects
// ReturnID(task, 1) to ReturnID(task, n), each an object of its own: held, passed, read and
// freed on its own. The path of an ordinary task is unchanged but for where a second
// return's bookkeeping goes:
//   - Submit makes a future for each (the first in the pending, as for every task; the
//     others, and their count in the spec, only for such a task, so the pending of an
//     ordinary one is no larger) and counts the caller's reference to each;
//     the task's lineage record stays in the first return's entry, and every other return
//     holds that entry by a lineage reference (objects.RefTable.AddReturns), so the record
//     lives while any return might have to be recreated.
//   - The worker answers with every return in TaskResult.returns, each inline or in its
//     node's store like a single result (tasks/worker); completeReturns makes each ready
//     (or every one failed, with the task's error), and pins the refs nested in each to
//     that return.
//   - A lost return is recreated as any return is (lineage.Lost): the task runs again for
//     it (lineage.Rerun.Object), its future is the one made pending, and the returns that
//     kept their values keep them (the memory store keeps a ready value: the rerun's copy of
//     them is dropped, and freed from its store if it landed elsewhere).

// SubmitReturns is Submit for a function of call.NumReturns (at least 2) returns: the IDs
// of its returns, in order, and their entries in this owner's table (nil but the first's:
// the others are found by ID). The caller holds one reference to each, which it gives
// back with ReleaseOwned. A failed submission fails every return with the same error.
func (c *Core) SubmitReturns(tc *TaskContext, call Call) ([]ids.ObjectID, []*objects.Entry, error) {
	n := int(max(call.NumReturns, 1))
	p, err := c.submit(tc, call)
	out := make([]ids.ObjectID, n)
	entries := make([]*objects.Entry, n)
	for i := range out {
		out[i] = ids.ReturnID(p.tid, uint32(i+1))
	}
	entries[0] = &p.ret
	return out, entries, err
}

// createReturns makes the futures of p's returns after the first, and notes their number
// in its spec.
func (c *Core) createReturns(p *pending, n int32) {
	p.spec.NumReturns = n
	for i := int32(2); i <= n; i++ {
		c.mem.Create(ids.ReturnID(p.tid, uint32(i)))
	}
}

// failTask fails the submission of p (every return of it) with err.
func (c *Core) failTask(p *pending, fn string, kind pb.ErrorInfo_Kind, err error) error {
	err = c.failSubmit(ids.ReturnID(p.tid, 1), p.tid, fn, kind, err)
	info := err.(*SubmitError).Info
	if n := p.spec.NumReturns; n > 1 {
		for i := int32(2); i <= n; i++ {
			id := ids.ReturnID(p.tid, uint32(i))
			c.refs.AddLocal(id)
			c.mem.Set(id, objects.Value{Err: info})
		}
	}
	c.submitFailure(p, fn, info) // the state API shows it FAILED, as a task that fails later
	return err
}

// returnsMismatch is the error of a call whose count of returns is not its function's.
func returnsMismatch(fn string, has, asked int32) error {
	what := func(n int32) string {
		if n == pb.StreamingReturns {
			return "a stream of values (a generator)"
		}
		if n == 1 {
			return "1 value"
		}
		return fmt.Sprintf("%d values", n)
	}
	return fmt.Errorf("remote function %q returns %s, but was called for %s (call a function of several returns "+
		"or a generator through the value its registration returned: ray.Call is for functions of one return)", fn, what(has), what(pb.NumReturns(asked)))
}

// completeReturns is complete for a task of several returns (the shard's loop; p is
// registered no more): every return ready, with its value or the task's error.
func (s *shard) completeReturns(p *pending, r *pb.TaskResult) {
	c := s.c
	tid := p.tid
	n := int(p.spec.NumReturns)
	if r.Error == nil && len(r.Returns) != n {
		r = &pb.TaskResult{TaskId: tid[:], Attempt: r.Attempt, Error: &pb.ErrorInfo{Kind: pb.ErrorInfo_SYSTEM,
			Function: p.spec.Function, TaskId: tid[:], NodeId: r.NodeId,
			Message: fmt.Sprintf("the worker answered with %d returns, want %d (is it running another build of the program?)", len(r.Returns), n)}}
	}
	owned := c.unborrowArgs(p.argRefs)
	for i := 0; i < n; i++ {
		id := ids.ReturnID(tid, uint32(i+1))
		v := objects.Value{Err: r.Error}
		var nested []Nested
		if r.Error == nil {
			rv := r.Returns[i]
			v = objects.Value{Data: rv.Data, InStore: rv.InStore, Node: ids.NodeID(rv.NodeId), Size: rv.Size, Meta: r.Meta}
			if len(rv.Nested) > 0 {
				var err error
				if nested, err = ParseNested(rv.Nested); err != nil {
					c.cfg.Logger.Warn("ray: a task's result holds corrupt refs", "task", tid, "return", i+1, "err", err)
				}
			}
		}
		made := c.mem.Set(id, v)
		if !made && r.Error == nil && c.retakeLost(id) {
			made = c.mem.Set(id, v)
		}
		if !made {
			// A rerun (lineage reconstruction of another return) found this one still
			// holding its value, which it keeps: the new copy goes.
			c.dropCopy(tid, id, v, nested)
		} else if nested != nil {
			c.pinAdopted(id, nested)
		}
		var args []ids.ObjectID
		if i == 0 {
			args = owned
		}
		unreferenced, released := c.refs.Completed(id, args)
		if unreferenced && made {
			released.AddValue(id) // every handle to it was dropped while the task ran
		}
		c.free(released)
	}
	if p.pinned {
		c.unpin(argsKey(ids.ReturnID(tid, 1)))
	}
}

// retakeLost makes return id, which still holds a value when its task ran again to
// recreate another of its returns, pending again if that value is lost too (its bytes on
// a node that is gone), so that it takes the run's new value: else each lost return of
// the task would run it once more, and use one of its retries (MaxRetries bounds
// reconstruction), for what one run made. It reports whether it did.
func (c *Core) retakeLost(id ids.ObjectID) bool {
	kept, ready, _ := c.mem.Get(id)
	return ready && kept.Err == nil && c.lostHere(kept) && c.mem.Reset(id)
}

// dropCopy lets go of a return's value that a rerun made again when the return still had
// its own: the refs registered for this runtime inside it, and its copy in a store other
// than the one that holds the kept value.
func (c *Core) dropCopy(tid ids.TaskID, id ids.ObjectID, v objects.Value, nested []Nested) {
	if nested != nil {
		// Pinned under a key no object has (a Put's counter starts at 1), then unpinned:
		// what pinAdopted takes, unpin gives back.
		key := ids.PutID(tid, 0)
		c.pinAdopted(key, nested)
		c.unpin(key)
	}
	if !v.InStore {
		return
	}
	if kept, ready, _ := c.mem.Get(id); ready && kept.InStore && kept.Node == v.Node {
		return // the same store: the put was taken for a duplicate of the kept copy
	}
	node := v.Node
	if node == "" {
		node = c.cfg.Node
	}
	if st := c.storeOf(node); st != nil {
		c.root.Send(st, &pb.FreeObjects{ObjectIds: [][]byte{id[:]}})
	}
}
