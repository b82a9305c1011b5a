package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects"
)

// Orphans: objects this runtime borrows whose owner died (Ray fails here,
// ray-project/ray#40731). The borrower adopts them: it becomes their owner, keeps what it
// already has (a value it resolved, or bytes on a node that lives), and recreates the rest
// from the lineage the dead owner recorded in the GCS, running the producing tasks again
// with the same IDs and itself as their owner, lost arguments first. Objects the dead owner
// made with Put have no task to run again and read as lost, as do tasks whose lineage
// record had not reached the GCS yet (records are written in batches a few milliseconds
// after submission) and arguments owned by a third process.

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
	a := &adoption{c: c, node: node}
	for id := range counts {
		a.recover(id)
	}
	c.cfg.Logger.Info("ray: adopted the objects of an owner that died", "owner", address, "node", node,
		"objects", len(counts), "recreating", a.recreated, "lost", a.lost)
}

// adoption is one dead owner's objects being adopted.
type adoption struct {
	c         *Core
	node      ids.NodeID
	recs      map[string][]byte
	readErr   error
	read      bool
	recreated int
	lost      int
}

func (a *adoption) lineage() (map[string][]byte, error) {
	if !a.read {
		a.read = true
		if a.c.cfg.OrphanLineage == nil {
			a.readErr = errors.New("this runtime cannot read lineage from the GCS")
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), orphanLineageTimeout)
			a.recs, a.readErr = a.c.cfg.OrphanLineage(ctx, a.node)
			cancel()
		}
	}
	return a.recs, a.readErr
}

// needsRecovery reports whether an adopted object's value must be recreated.
func (a *adoption) needsRecovery(v objects.Value) bool {
	if v.Err != nil {
		return v.Err.Kind == pb.ErrorInfo_OBJECT_LOST
	}
	return v.InStore && (v.Node == a.node || a.c.lostHere(v))
}

// recover makes id, now owned here, whole again: nothing to do if its value is known and
// its bytes live; else its task runs again (its missing arguments recovered first).
func (a *adoption) recover(id ids.ObjectID) {
	c := a.c
	v, ready, known := c.mem.Get(id)
	if known && ready && !a.needsRecovery(v) {
		return
	}
	if !known {
		c.mem.Create(id)
	}
	tid := id.Task()
	if c.refs.Spec(tid) != nil {
		return // adopted already (an argument of two objects), and being recreated
	}
	fail := func(why string) {
		a.lost++
		c.mem.Reset(id)
		c.mem.Set(id, objects.Value{Err: &pb.ErrorInfo{Kind: pb.ErrorInfo_OBJECT_LOST, TaskId: tid[:],
			Message: fmt.Sprintf("object %s is lost: its owner died and %s", id, why)}})
	}
	if id != ids.ReturnID(tid, 1) {
		fail("it was made by Put, so no task can make it again")
		return
	}
	recs, err := a.lineage()
	if err != nil {
		fail(fmt.Sprintf("its lineage could not be read: %v", err))
		return
	}
	rec := recs[string(tid[:])]
	if rec == nil {
		fail("left no lineage record of the task that made it (submitted just before the owner died, or lineage is off)")
		return
	}
	spec := &pb.TaskSpec{}
	if err := proto.Unmarshal(rec, spec); err != nil {
		fail(fmt.Sprintf("its lineage record is corrupt: %v", err))
		return
	}
	spec.Owner = c.ownerW
	var args []ids.ObjectID
	for _, arg := range spec.Args {
		if !arg.IsRef {
			continue
		}
		aid, err := ids.ObjectIDFromBytes(arg.ObjectId)
		if err != nil {
			fail(fmt.Sprintf("its lineage record names a bad argument: %v", err))
			return
		}
		args = append(args, aid)
	}
	// Arguments unknown here are created pending first, so that the task waits for them
	// and holds them (reconstruct takes its references) before they are recovered; only
	// then is the spec kept, which lets a Get that found id lost start it too.
	var missing []ids.ObjectID
	for _, aid := range args {
		if _, _, known := c.mem.Get(aid); !known {
			c.mem.Create(aid)
			missing = append(missing, aid)
		}
	}
	// The lineage record keeps the arguments known here while the object may need them.
	c.refs.AddTask(tid, args, spec)
	if c.cfg.Lineage != nil {
		// Written at once, so that this runtime's own borrowers can adopt it in turn.
		c.refs.Record(tid, func(spec *pb.TaskSpec) { _ = c.cfg.Lineage.Record(spec) })
	}
	if c.reconstruct(id) {
		a.recreated++
	} else {
		fail("its task could not be started again")
	}
	for _, aid := range missing {
		a.recover(aid)
	}
}

// awaitOrphaned is called when a Get found id lost. If id is borrowed, it waits (at most
// orphanWait) for the membership to report its owner dead, which adopts it, and reports
// whether it was adopted and is being recreated; if id is owned here now, it recreates it.
func (c *Core) awaitOrphaned(ctx context.Context, id ids.ObjectID) bool {
	e, _ := c.borrows.Get(id)
	o := &c.orphans
	t := time.NewTimer(orphanWait)
	defer t.Stop()
	if e == nil {
		// Owned here, perhaps adopted just now: let adoptions under way finish first.
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
				return false
			case <-ctx.Done():
				return false
			}
		}
		if v, ready, known := c.mem.Get(id); known && (!ready || !lostValue(c, v)) {
			return true // being recreated, or recreated already: the caller reads it again
		}
		return c.reconstruct(id)
	}
	for {
		o.mu.Lock()
		done := o.dead[e.Owner.GetAddress()]
		o.mu.Unlock()
		if done != nil {
			select {
			case <-done:
				return !c.borrowed(id)
			case <-ctx.Done():
				return false
			}
		}
		select {
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lostValue reports whether an object's value says its bytes are gone: an object-lost
// error, or bytes on a node that is gone.
func lostValue(c *Core, v objects.Value) bool {
	if v.Err != nil {
		return v.Err.Kind == pb.ErrorInfo_OBJECT_LOST
	}
	return c.lostHere(v)
}

// lostError reports whether err says an object's bytes or value are lost.
func lostError(err error) bool {
	var oe *ObjectError
	return errors.Is(err, ErrObjectLost) || errors.As(err, &oe) && oe.Info.GetKind() == pb.ErrorInfo_OBJECT_LOST
}
