package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/netx"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/lineage"
	"github.com/ray-go/ray/objects"
)

// Lineage reconstruction, owner side: an object this runtime owns whose bytes are lost (its
// node died, or its spill file is gone or corrupt) is recreated by running the task that
// made it again, with the same task and object IDs, after recreating its lost arguments
// first. The owner keeps the spec of every task whose lineage record the reference table
// holds (specs); the GCS copy is what outlives the owner. Objects made by Put have no
// task to run again: they stay lost.
//
// What to do is decided by package lineage's planner (whether an object can be recreated,
// which tasks run again and in what order, how often a Get tries, what a dead owner's
// objects become); this file reads the facts it decides from (the memory store, the
// reference table, the cluster view, a dial) and carries out its actions (futures,
// messages to the shards, frees, reads, waits). Facts are read where an action asks for
// them, so a plan that recurses through lost arguments sees what the earlier actions did.

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

// valueOf is the planner's view of a ready value; gone says whether its node is gone.
func valueOf(v objects.Value, gone func(objects.Value) bool) lineage.Value {
	lv := lineage.Value{InStore: v.InStore, Node: v.Node}
	if v.Err != nil {
		lv.Failed, lv.Err = true, v.Err.Kind
	}
	lv.Gone = v.InStore && gone(v)
	return lv
}

// objectOf is the planner's view of id from its memory store entry and whether the
// lineage record of its task is held.
func objectOf(id ids.ObjectID, v objects.Value, ready, known, record bool, gone func(objects.Value) bool) lineage.Object {
	o := lineage.Object{ID: id, Record: record}
	switch {
	case ready:
		o.State, o.Value = lineage.Ready, valueOf(v, gone)
	case known:
		o.State = lineage.Pending
	}
	return o
}

// object reads what this runtime's tables say about id now, for the planner.
func (c *Core) object(id ids.ObjectID) lineage.Object { return c.objectGone(id, c.lostHere) }

// objectGone is object with gone deciding whether a value's bytes are gone.
func (c *Core) objectGone(id ids.ObjectID, gone func(objects.Value) bool) lineage.Object {
	record := c.refs.Spec(id.Task()) != nil
	v, ready, known := c.mem.Get(id)
	return objectOf(id, v, ready, known, record, gone)
}

// reconstruct starts recreating id, as lineage.Lost plans it: it reports false when id
// cannot be recreated (not a task's return, or its lineage record is gone). Callable from
// any goroutine: the future is made pending at once (a Get that follows waits for the new
// value), and the task's shard runs it again, unless it is pending already (still
// running, or being recreated).
func (c *Core) reconstruct(id ids.ObjectID) bool {
	tid := id.Task()
	spec := c.refs.Spec(tid)
	v, ready, known := c.mem.Get(id)
	acts, err := lineage.Lost(objectOf(id, v, ready, known, spec != nil, c.lostHere))
	if err != nil {
		return false
	}
	for _, a := range acts {
		switch a := a.(type) {
		case lineage.CreateFuture:
			c.mem.Create(a.Object)
		case lineage.ResetFuture:
			c.mem.Reset(a.Object)
		case lineage.Rerun:
			p := &pending{tid: tid, spec: spec, rerun: lineage.NewRerunRequest(a)}
			c.shardOf(tid).send(rerun{p: p})
		}
	}
	return true
}

// held is what the shard holds for p's task, for its rerun request.
func (s *shard) held(p *pending) lineage.Held {
	switch q, ok := s.tasks[p.tid]; {
	case !ok:
		return lineage.HeldNone
	case q == p:
		return lineage.HeldThis
	}
	return lineage.HeldOther
}

// rerun steps p's rerun request (the shard's part of reconstruct): on its arrival, and
// (freed) once its old copy was freed.
func (s *shard) rerun(p *pending, freed bool) {
	var acts []lineage.Action
	if freed {
		acts = p.rerun.OldFreed(s.held(p))
	} else {
		acts = p.rerun.Arrived(s.held(p))
	}
	for _, a := range acts {
		switch a := a.(type) {
		case lineage.Claim:
			s.tasks[p.tid] = p
		case lineage.FreeOld:
			s.freeOld(p, a)
		case lineage.Start:
			s.restart(p)
		}
	}
}

// freeOld frees the old copy of a rerun's object, then steps the rerun again. Not on a
// node that is gone, even if this runtime has not heard yet (argGone also finds a node
// whose process refuses connections): a free sent there is never answered. Both may
// wait, hence the goroutine.
func (s *shard) freeOld(p *pending, a lineage.FreeOld) {
	c := s.c
	old := objects.Value{InStore: true, Node: a.Node}
	go func() {
		if !c.argGone(old) {
			if st := c.storeOf(a.Node); st != nil {
				_, _ = ask.Request(c.root, st, &pb.FreeObjects{ObjectIds: [][]byte{a.Object[:]}}, 5*time.Second)
			}
		}
		s.send(oldFreed{p: p})
	}()
}

// restart runs a claimed task again, as lineage.Restart plans it from its spec and its
// arguments as they are now.
func (s *shard) restart(p *pending) {
	c := s.c
	spec := p.spec
	// Its ref arguments, and the objects its lineage record holds besides (the owned refs
	// inside its by-value arguments: lineageArgs).
	var argIDs []ids.ObjectID
	seen := map[ids.ObjectID]bool{}
	for _, a := range spec.Args {
		if a.IsRef {
			if aid, err := ids.ObjectIDFromBytes(a.ObjectId); err == nil && !seen[aid] {
				seen[aid] = true
				argIDs = append(argIDs, aid)
			}
		}
	}
	for _, aid := range c.refs.Args(p.tid) {
		if !seen[aid] {
			seen[aid] = true
			argIDs = append(argIDs, aid)
		}
	}
	// The run holds its arguments (HoldArgs) before their facts are read: an argument
	// found ready must stay so. Read first, a value could be freed between the read and
	// the hold (its last other reference dropped: a decoded handle's cleanup, a release),
	// and the task would run without it, neither held nor recreated ("object is unknown
	// to this process"). A free decided before the hold and carried out after it keeps
	// the value (MemoryStore.RemoveFreedIn).
	c.holdArgs(argIDs)
	args := make([]lineage.Object, len(argIDs))
	for i, aid := range argIDs {
		args[i] = c.object(aid)
	}
	if afterArgFacts != nil {
		afterArgFacts()
	}
	t := lineage.Task{ID: p.tid, Attempt: spec.Attempt, MaxRetries: spec.MaxRetries}
	if p.rerun != nil {
		t.Object, t.ArgsLost = p.rerun.Object, lineage.ArgsLostValue(p.rerun.Old)
	}
	acts := lineage.Restart(t, args)
	for _, a := range acts {
		switch a := a.(type) {
		case lineage.NewAttempt:
			spec.Attempt, spec.MaxRetries = a.Attempt, a.MaxRetries
			spec.ReplyTo = s.pidW
			c.stats.Reconstructed.Add(1)
		case lineage.ResetFuture:
			c.mem.Reset(a.Object)
		case lineage.HoldArgs:
			p.argRefs = a.Args // held above
		case lineage.Reconstruct:
			c.reconstruct(a.Object)
		case lineage.AwaitArgs:
			s.awaitArgs(p, a.Args)
		case lineage.NoRetries:
			p.argRefs = argIDs // held above: completing the run gives them back
			s.complete(p, &pb.TaskResult{TaskId: p.tid[:], Attempt: spec.Attempt, Error: c.noRetriesError(p, a)})
		}
	}
}

// noRetriesError is the error of an object whose task may not run again to recreate it
// (lineage.NoRetries): which object was lost and where, that its task has no retries left
// and why that bounds reconstruction, and what to do. It matches ErrObjectLost (a cause,
// OBJECT_LOST), as Ray's ObjectReconstructionFailedMaxAttemptsExceededError is an
// ObjectLostError; its kind is SYSTEM, which the recovery of lost objects does not take
// for a loss to recreate again (a Get returns it at once), and the task's other returns
// keep their values (completeReturns keeps a value a return still has).
func (c *Core) noRetriesError(p *pending, a lineage.NoRetries) *pb.ErrorInfo {
	where := ""
	if old := p.rerun.Old; old.InStore && old.Node != "" {
		if cl := c.cfg.Cluster; cl != nil && !cl.Alive(old.Node) {
			where = fmt.Sprintf(" with node %s, which held its only copy and is gone", old.Node)
		} else {
			where = fmt.Sprintf(" from the object store of node %s", old.Node)
		}
	}
	runs := "it ran once"
	if a.Attempt > 0 {
		runs = fmt.Sprintf("it ran %d times (retries and earlier reconstructions)", a.Attempt+1)
	}
	return &pb.ErrorInfo{Kind: pb.ErrorInfo_SYSTEM, Function: p.spec.Function, TaskId: p.tid[:], NodeId: string(c.cfg.Node),
		Causes: []pb.ErrorInfo_Kind{pb.ErrorInfo_OBJECT_LOST},
		Message: fmt.Sprintf("object %s was lost%s, and its task may not run again to recreate it: %s, and its MaxRetries is %d "+
			"(a run that recreates a lost object counts as one of the task's retries, as in Ray). "+
			"If running the task again is safe, give it MaxRetries(n) with n > 0, or -1 for no limit; "+
			"if it must not run twice (side effects), keep what it returns where a node's death cannot lose it "+
			"(return a small value, or write the result out)", a.Object, where, runs, a.MaxRetries)}
}

// RerunFailed separates, in the error of a rerun that could not be placed
// (rerunUnplaceable), what was lost from why the rerun failed: placement's error follows it.
const RerunFailed = ", and recreating it by running the task again failed: "

// rerunUnplaceable makes info, the error of a rerun that cannot be placed (no node can run
// the task any more: the only node with its resources, or the node of its hard affinity, is
// the one that died with the object; its placement group is gone), say so: which object
// was lost and where, and that recreating it failed because of info's own message. It also
// matches ErrObjectLost then (a cause, OBJECT_LOST), as Ray's ObjectReconstructionFailedError
// is an ObjectLostError; its kind stays what placement said (INFEASIBLE, ...), which the
// recovery of lost objects does not take for a loss to recreate again.
func (c *Core) rerunUnplaceable(p *pending, info *pb.ErrorInfo) {
	obj := p.rerun.Object
	if obj.IsZero() {
		obj = ids.ReturnID(p.tid, 1)
	}
	where := ""
	if old := p.rerun.Old; old.InStore && old.Node != "" {
		if cl := c.cfg.Cluster; cl != nil && !cl.Alive(old.Node) {
			where = fmt.Sprintf(" with node %s, which held its only copy and is gone", old.Node)
		} else {
			where = fmt.Sprintf(" from the object store of node %s", old.Node)
		}
	}
	info.Message = fmt.Sprintf("object %s was lost%s%s%s", obj, where, RerunFailed, info.Message)
	if !slices.Contains(info.Causes, pb.ErrorInfo_OBJECT_LOST) {
		info.Causes = append(info.Causes, pb.ErrorInfo_OBJECT_LOST)
		slices.Sort(info.Causes)
	}
}

// afterArgFacts, when set (by tests), runs in restart once the arguments' facts are read:
// where a release racing with the rerun lands at the worst moment.
var afterArgFacts func()

// readFailure classifies a failed read for the planner.
func readFailure(err error) lineage.Failure {
	switch {
	case errors.Is(err, ErrObjectLost):
		return lineage.FailBytesLost
	case lostError(err):
		return lineage.FailValueLost
	}
	return lineage.FailOther
}

// getRecovering is bytesOf with the recovery of lost objects: recreating them, or
// waiting for their adoption, as the Get's lineage.Get decides. It returns the error of
// the last read when the Get gives up.
func (tc *TaskContext) getRecovering(ctx context.Context, id ids.ObjectID, v objects.Value) ([]byte, bool, error) {
	c := tc.Core
	g := lineage.Get{Object: id}
	var (
		b     []byte
		err   error
		owner *pb.PID // a borrowed object's owner, as the first failed read found it
	)
	act := g.Seen(objectOf(id, v, true, true, false, c.lostHere))
	for {
		switch a := act.(type) {
		case lineage.Read:
			if b, err = c.bytesOf(ctx, id, v); err == nil {
				// Read from another node (fetch: a buffer of its own), or shared.
				return b, v.Err == nil && v.InStore && v.Node != "" && v.Node != c.cfg.Node, nil
			}
			if e, ok := c.borrows.Get(id); owner == nil && ok {
				owner = e.Owner // the adoption of a dead owner's objects may drop the borrow
			}
			act = g.ReadFailed(readFailure(err))
			continue
		case lineage.Reconstruct:
			// An object of this runtime's is recreated here; a borrowed one by its owner,
			// asked again for its value (reresolve).
			if !c.reconstruct(a.Object) && !c.reresolve(a.Object, v) {
				act = g.Refused()
				continue
			}
		case lineage.AwaitAdoption:
			owned, ok := c.awaitOrphaned(ctx, id)
			switch {
			case !ok:
				act = g.Refused()
				continue
			case owned:
				act = g.AdoptionsDone(c.object(id))
				continue
			}
		case lineage.Wait:
		case lineage.GiveUp:
			return b, false, c.gaveUp(id, v, owner, err)
		}
		// A recovery is under way (or done): wait for the value and look again.
		if v, err = tc.wait(ctx, id, nil); err != nil {
			return nil, false, err
		}
		if cur, ready, _ := c.mem.Get(id); ready {
			v = cur // recreated again meanwhile, perhaps
		}
		act = g.Seen(objectOf(id, v, true, true, false, c.lostHere))
	}
}

// gaveUp is the error of a Get that gave up on id after reading v failed with err (owner:
// a borrowed object's owner, nil if it was not borrowed). When id's value has become an
// error since (the adoption of a dead owner's objects failed it while the read was under
// way: a Put, which nothing makes again), that error is the Get's, as for a Get started
// now: it says why the object is lost, where the read's says only that the bytes were not
// there. Otherwise ownerDiedRead.
func (c *Core) gaveUp(id ids.ObjectID, v objects.Value, owner *pb.PID, err error) error {
	if cur, ready, _ := c.mem.Get(id); ready && cur.Err != nil && v.Err == nil {
		return &ObjectError{Object: id, Info: cur.Err}
	}
	return c.ownerDiedRead(id, owner, err)
}

// ownerDiedRead is the error of a Get that gave up on a borrowed object (owner: its owner,
// nil if it was not borrowed) whose bytes could not be read, when the owner has exited: the
// owner's death is why (it would have made the object again, or adopted it), and the
// error says so, as a borrow of a dead owner does (an ObjectError OBJECT_LOST with
// OwnerDiedText: ray.ErrOwnerDied), with the read's own error after it. Any other error is
// returned as it is.
func (c *Core) ownerDiedRead(id ids.ObjectID, owner *pb.PID, err error) error {
	if owner == nil || !errors.Is(err, ErrObjectLost) || c.isSelf(owner) || !c.ownerExitedOrRefuses(owner.GetAddress()) {
		return err
	}
	return &ObjectError{Object: id, Info: &pb.ErrorInfo{Kind: pb.ErrorInfo_OBJECT_LOST,
		Message: fmt.Sprintf("object %s is lost: %s (reading its bytes: %v)", id, ownerExitedWhy(owner), err)}}
}

// recoverArgs recreates the arguments of a task that failed because their bytes were on a
// node that is gone (lineage.ArgsLost), and dispatches the task again once they are ready;
// when none was lost that way it is sent again as usual. Finding out may dial the
// argument's node: a goroutine does, and answers the shard with argsLost.
func (s *shard) recoverArgs(p *pending) {
	c := s.c
	p.dispatched = false
	args := p.argRefs
	go func() {
		facts := make([]lineage.Object, len(args))
		for i, a := range args {
			v, ready, known := c.mem.Get(a)
			facts[i] = objectOf(a, v, ready, known, false, c.argGone)
		}
		var lost []ids.ObjectID
		for _, a := range lineage.ArgsLost(facts) {
			if r, ok := a.(lineage.Reconstruct); ok && c.reconstruct(r.Object) {
				lost = append(lost, r.Object)
			}
		}
		s.send(argsLost{p: p, lost: lost})
	}()
}

func (s *shard) argsLost(p *pending, lost []ids.ObjectID) {
	if s.tasks[p.tid] != p || p.dispatched {
		return
	}
	switch a := lineage.ArgsRecreating(p.tid, lost).(type) {
	case lineage.Place:
		p.dispatched = true
		s.place(p)
	case lineage.AwaitArgs:
		s.awaitArgs(p, a.Args)
	}
}
