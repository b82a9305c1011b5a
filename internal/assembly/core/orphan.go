package core

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/lineage"
	"github.com/ray-go/ray/objects"
)

// Orphans: objects this runtime borrows whose owner died (Ray fails here,
// ray-project/ray#40731). The borrower adopts them: it becomes their owner, keeps what it
// already has (a value it resolved, or bytes on a node that lives and serves its own job:
// another job's worker processes end with that job, adoptedObject), and recreates the rest
// from the lineage the dead owner recorded in the GCS, running the producing tasks again
// with the same IDs and itself as their owner, lost arguments first. Objects the dead owner
// made with Put have no task to run again and read as lost, as do tasks whose lineage
// record had not reached the GCS yet (records are written in batches a few milliseconds
// after submission) and arguments owned by a third process.
//
// lineage.Adoption decides what becomes of each object; this file turns the borrows into
// owned references, reads the facts and the dead owner's lineage it decides from, carries
// out its actions, and lets Gets that found an object lost wait for the adoption.

// OrphanLineage reads the lineage records (task ID bytes -> encoded pb.TaskSpec) that the
// runtime of node wrote to the GCS.
type OrphanLineage func(ctx context.Context, node ids.NodeID) (map[string][]byte, error)

// orphanWait bounds how long a Get whose object is lost waits for the membership to say
// that the object's owner died (then the object is adopted and recreated) before it
// reports the loss.
const orphanWait = 10 * time.Second

// orphanLineageTimeout bounds reading a dead owner's lineage from the GCS.
const orphanLineageTimeout = 30 * time.Second

type orphanState struct {
	mu   sync.Mutex
	dead map[string]chan struct{} // owner address -> closed once its borrows were adopted
	// gone: the addresses of processes known dead for good (ProcessGone), until a process
	// registers at the address again (ProcessBack).
	gone map[string]struct{}
	// exited: the addresses whose process the membership found exited (ProcessExited:
	// nothing listens there any more), and when, until a process is reached there again
	// (ProcessBack) or exitedKeep passed (a probe answers then).
	exited map[string]time.Time
}

// ProcessGone records that the process at address died for good (the membership's
// MemberGone, not a broken connection): lookups of the actors it owned and refs it owns
// are answered without asking it (ownerGone), and this node's raylet gives back the
// bundles of the placement groups it created (pgOwnerGone).
func (c *Core) ProcessGone(address string) {
	o := &c.orphans
	o.mu.Lock()
	if o.gone == nil {
		o.gone = map[string]struct{}{}
	}
	o.gone[address] = struct{}{}
	o.mu.Unlock()
	c.pgOwnerGone(address) // pg.go: the bundles of its groups on this node go back
}

// ProcessExited records that the membership found the process at address exited: its
// address refused connections once it became unreachable (MemberDown), or it went for good
// (MemberGone). A borrow of a ref it owns fails at once (Hold) without probing the address.
func (c *Core) ProcessExited(address string) {
	o := &c.orphans
	now := time.Now()
	o.mu.Lock()
	if o.exited == nil {
		o.exited = map[string]time.Time{}
	}
	for a, at := range o.exited {
		if now.Sub(at) > exitedKeep {
			delete(o.exited, a)
		}
	}
	o.exited[address] = now
	o.mu.Unlock()
}

// exitedKeep bounds how long ProcessExited is remembered: the set stays small in a
// cluster whose processes come and go, and an owner forgotten is probed instead.
const exitedKeep = 10 * time.Minute

// ProcessBack forgets ProcessGone and ProcessExited for address: a process joined (or was
// reached) at that address again (a new process may reuse a dead one's port).
func (c *Core) ProcessBack(address string) {
	o := &c.orphans
	o.mu.Lock()
	delete(o.gone, address)
	delete(o.exited, address)
	o.mu.Unlock()
}

// ownerGone reports whether the process at address is known dead for good (ProcessGone).
func (c *Core) ownerGone(address string) bool {
	o := &c.orphans
	o.mu.Lock()
	_, dead := o.gone[address]
	o.mu.Unlock()
	return dead
}

// ownerExited reports whether the membership found the process at address exited
// (ProcessExited).
func (c *Core) ownerExited(address string) bool {
	o := &c.orphans
	o.mu.Lock()
	at, exited := o.exited[address]
	o.mu.Unlock()
	return exited && time.Since(at) <= exitedKeep
}

// OwnerGone adopts the objects this runtime borrows from the runtime at address (on node
// node), which died: called on the membership's unreachable or left event. It is
// idempotent per address.
func (c *Core) OwnerGone(address string, node ids.NodeID) {
	o := &c.orphans
	o.mu.Lock()
	if o.dead == nil {
		o.dead = map[string]chan struct{}{}
	}
	done, seen := o.dead[address]
	if !seen {
		done = make(chan struct{})
		o.dead[address] = done
	}
	o.mu.Unlock()
	if seen {
		return
	}
	defer close(done)
	counts := c.borrows.EndBorrowsFrom(address)
	if len(counts) == 0 {
		return
	}
	for id, n := range counts {
		for range n {
			c.refs.AddLocal(id) // the handles' borrows become owned references
		}
	}
	a := &adoption{c: c, plan: lineage.NewAdoption(node)}
	for id := range counts {
		a.adopt(id)
	}
	c.cfg.Logger.Info("ray: adopted the objects of an owner that died", "owner", address, "node", node,
		"objects", len(counts), "recreating", a.plan.Recreated, "lost", a.plan.Lost)
}

// adoption carries out one dead owner's lineage.Adoption.
type adoption struct {
	c    *Core
	plan *lineage.Adoption
}

// adopt adopts id, now owned here, as the plan says from its facts now.
func (a *adoption) adopt(id ids.ObjectID) { a.run(id, a.plan.Adopt(a.c.adoptedObject(id))) }

// adoptedObject is object for an adoption: bytes on a node of another job count as gone
// too. Objects borrowed across jobs live on the owner's job's worker processes, which end
// with that job (its driver died): kept there, they would be lost a few seconds later with
// no lineage left to recreate them (the adopter did not take over their tasks).
func (c *Core) adoptedObject(id ids.ObjectID) lineage.Object {
	return c.objectGone(id, func(v objects.Value) bool { return c.lostHere(v) || c.otherJob(v) })
}

// otherJob reports whether v's bytes are on a worker process of another job.
func (c *Core) otherJob(v objects.Value) bool {
	if !v.InStore || v.Node == "" || v.Node == c.cfg.Node || c.cfg.Cluster == nil {
		return false
	}
	j := c.cfg.Cluster.JobOf(v.Node)
	return j != "" && j != string(c.cfg.Job)
}

// run carries out the actions the plan gave for id.
func (a *adoption) run(id ids.ObjectID, acts []lineage.Action) {
	c := a.c
	for _, act := range acts {
		switch x := act.(type) {
		case lineage.CreateFuture:
			c.mem.Create(x.Object)
		case lineage.FailObject:
			c.mem.Reset(x.Object)
			c.mem.Set(x.Object, objects.Value{Err: &pb.ErrorInfo{Kind: pb.ErrorInfo_OBJECT_LOST, TaskId: x.Task[:], Message: x.Message}})
		case lineage.ReadLineage:
			a.plan.LineageRead(a.readLineage(x.Node))
			a.adopt(id)
		case lineage.Recreate:
			args := make([]lineage.Object, len(x.Args))
			for i, aid := range x.Args {
				args[i] = c.adoptedObject(aid)
			}
			a.run(id, a.plan.Recreate(x, args))
		case lineage.AdoptTask:
			x.Spec.Owner = c.ownerW
			// The lineage record keeps the arguments known here while the object may need
			// them.
			c.refs.AddTask(x.Task, x.Args, x.Spec)
			if c.cfg.Lineage != nil {
				// Written at once, so that this runtime's own borrowers can adopt it in turn.
				c.refs.Record(x.Task, func(spec *pb.TaskSpec) { _ = c.cfg.Lineage.Record(spec) })
			}
		case lineage.Reconstruct:
			a.run(x.Object, a.plan.Reconstructed(x.Object, c.reconstruct(x.Object)))
		case lineage.Adopt:
			a.adopt(x.Object)
		}
	}
}

// readLineage reads the dead owner's lineage records from the GCS.
func (a *adoption) readLineage(node ids.NodeID) (map[string][]byte, error) {
	if a.c.cfg.OrphanLineage == nil {
		return nil, errors.New("this runtime cannot read lineage from the GCS")
	}
	ctx, cancel := context.WithTimeout(context.Background(), orphanLineageTimeout)
	defer cancel()
	return a.c.cfg.OrphanLineage(ctx, node)
}

// awaitOrphaned is called when a Get found id lost (lineage.AwaitAdoption). If id is
// borrowed, it waits (at most orphanWait) for the membership to report its owner dead,
// which adopts it, and reports whether it was adopted (ok; the Get waits for it). If id is
// owned here (perhaps adopted just now), it lets the adoptions under way finish and reports
// owned: what the Get does then is lineage.Get.AdoptionsDone's to decide.
func (c *Core) awaitOrphaned(ctx context.Context, id ids.ObjectID) (owned, ok bool) {
	e, _ := c.borrows.Get(id)
	o := &c.orphans
	t := time.NewTimer(orphanWait)
	defer t.Stop()
	if e == nil {
		o.mu.Lock()
		var running []chan struct{}
		for _, done := range o.dead {
			running = append(running, done)
		}
		o.mu.Unlock()
		for _, done := range running {
			select {
			case <-done:
			case <-t.C:
				return true, false
			case <-ctx.Done():
				return true, false
			}
		}
		return true, true
	}
	for {
		o.mu.Lock()
		done := o.dead[e.Owner.GetAddress()]
		o.mu.Unlock()
		if done != nil {
			select {
			case <-done:
				return false, !c.borrowed(id)
			case <-ctx.Done():
				return false, false
			}
		}
		select {
		case <-t.C:
			return false, false
		case <-ctx.Done():
			return false, false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lostError reports whether err says an object's bytes or value are lost.
func lostError(err error) bool {
	var oe *ObjectError
	return errors.Is(err, ErrObjectLost) || errors.As(err, &oe) && oe.Info.GetKind() == pb.ErrorInfo_OBJECT_LOST
}
