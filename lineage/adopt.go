package lineage

import (
	"fmt"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// Adoption plans the adoption of the objects a runtime borrowed from an owner that died
// (Ray fails here, ray-project/ray#40731). The borrower becomes their owner (the I/O layer
// turns its borrows into owned references before it starts), keeps what it already has (a
// value it resolved, or bytes on a node that lives) and recreates the rest from the
// lineage the dead owner recorded in the GCS: their tasks run again with the same IDs and
// the adopter as their owner, lost arguments first. An object that cannot be recreated
// fails with an OBJECT_LOST error saying why: made by Put; no lineage record in the GCS
// (records are written a little after submission, so a task submitted just before the
// owner died may have none); the lineage unreadable, a record corrupt or naming a bad
// argument; or its task could not be started again. An argument owned by a third process
// is not adopted: the task waits for it like any borrowed argument.
//
// The I/O layer calls Adopt for each object borrowed from the dead owner, and carries out
// the actions in order, which come back here: ReadLineage (the GCS is read once per
// adoption, and only if some object needs it) with LineageRead, Recreate with the
// arguments' facts, the Reconstruct of an adopted task with Reconstructed, and Adopt
// (an argument the adopter did not know) with Adopt. One Adoption is used by one
// goroutine.
type Adoption struct {
	// Node is the dead owner's node: a copy in its store is taken for lost.
	Node ids.NodeID
	// Recreated and Lost count the objects whose tasks were started again and the objects
	// failed.
	Recreated, Lost int

	read    bool
	recs    map[string][]byte
	readErr error
}

// NewAdoption starts the adoption of the objects of the owner on node, which died.
func NewAdoption(node ids.NodeID) *Adoption { return &Adoption{Node: node} }

// LineageRead hands the adoption the dead owner's lineage records (task ID bytes ->
// encoded pb.TaskSpec), or the error reading them failed with.
func (a *Adoption) LineageRead(recs map[string][]byte, err error) {
	a.read, a.recs, a.readErr = true, recs, err
}

// needsRecovery reports whether an adopted object's value must be recreated.
func (a *Adoption) needsRecovery(v Value) bool {
	if v.Failed {
		return v.Err == pb.ErrorInfo_OBJECT_LOST
	}
	return v.InStore && (v.Node == a.Node || v.Gone)
}

// Adopt plans o, owned by the adopter now: nothing to do if its value is known and its
// bytes live; a Put object fails (FailObject: nothing can make it again, whether its
// value was lost or never resolved); nothing more for a task's return whose task is
// adopted already (o.Record: an argument of two adopted objects, being recreated);
// otherwise its task runs again from its record (Recreate), or it fails (FailObject). A
// future is made for an object the adopter does not know, first, so that Gets wait for
// the outcome.
func (a *Adoption) Adopt(o Object) []Action {
	if o.State == Ready && !a.needsRecovery(o.Value) {
		return nil
	}
	var acts []Action
	if o.State == Unknown {
		acts = append(acts, CreateFuture{Object: o.ID})
	}
	if !isReturn(o.ID) {
		// Before Record, which for a Put object names the task that put it (a task the
		// adopter may hold the record of: it submitted the task, whose worker put the
		// object and returned its ref), not a recreation of the object under way.
		return append(acts, a.fail(o.ID, ReasonPut, ""))
	}
	if o.Record {
		return acts
	}
	tid := o.ID.Task()
	if !a.read {
		// Read once, when the first object needs it; then this object is adopted again.
		return append(acts, ReadLineage{Node: a.Node})
	}
	if a.readErr != nil {
		return append(acts, a.fail(o.ID, ReasonLineageUnreadable, a.readErr.Error()))
	}
	rec := a.recs[string(tid[:])]
	if rec == nil {
		return append(acts, a.fail(o.ID, ReasonNoRecord, ""))
	}
	// DecodeSpec checks what recreating relies on: the record is the task's own and its
	// reference arguments name valid objects.
	spec, args, err := DecodeSpec(tid, rec)
	if err != nil {
		return append(acts, a.fail(o.ID, ReasonRecordCorrupt, err.Error()))
	}
	return append(acts, Recreate{Object: o.ID, Spec: spec, Args: args})
}

// Recreate plans what Recreate r asked for, args being the facts of r.Args (in order):
// arguments the adopter does not know get pending futures first, so that the task waits
// for them and holds them before they are recovered; then the adopter takes the task
// over (its record held, which also lets a Get that found the object lost start it);
// then the object is recreated; then the arguments it did not know are adopted in turn.
func (a *Adoption) Recreate(r Recreate, args []Object) []Action {
	var acts []Action
	var missing []ids.ObjectID
	for i, arg := range args {
		if arg.State == Unknown && !seenBeforeObj(args, i) {
			acts = append(acts, CreateFuture{Object: arg.ID})
			missing = append(missing, arg.ID)
		}
	}
	acts = append(acts, AdoptTask{Task: r.Object.Task(), Spec: r.Spec, Args: r.Args}, Reconstruct{Object: r.Object})
	for _, id := range missing {
		acts = append(acts, Adopt{Object: id})
	}
	return acts
}

// Reconstructed reports whether Lost accepted the Reconstruct of an adopted task's object
// (it refuses only if the record was dropped meanwhile).
func (a *Adoption) Reconstructed(id ids.ObjectID, started bool) []Action {
	if started {
		a.Recreated++
		return nil
	}
	return []Action{a.fail(id, ReasonNotStarted, "")}
}

// OwnerDied is in the message of every object lost because its owner died and it could
// not be adopted ("object ID is lost: its owner died ..."): ray.ErrOwnerDied matches the
// errors whose message has it (core.OwnerDiedText).
const OwnerDied = "is lost: its owner died"

// fail counts id lost and says why, in the words a Get of it returns.
func (a *Adoption) fail(id ids.ObjectID, r Reason, detail string) FailObject {
	a.Lost++
	var why string
	switch r {
	case ReasonPut:
		// No task failed: the object's maker, its owner, is gone; say which and what to do.
		return FailObject{Object: id, Task: id.Task(), Message: fmt.Sprintf("object %s %s (node %s, the driver or worker process "+
			"that created it with Put), and an object made by Put cannot be made again: keep its owner running while other "+
			"processes use it, or return the value from a task instead (a task's result is made again from its lineage)", id, OwnerDied, a.Node)}
	case ReasonLineageUnreadable:
		why = "its lineage could not be read: " + detail
	case ReasonNoRecord:
		why = "left no lineage record of the task that made it (submitted just before the owner died, written while the GCS was at its space quota and not yet again, or lineage is off)"
	case ReasonRecordCorrupt:
		why = "its lineage record cannot be used: " + detail
	default: // ReasonNotStarted
		why = "its task could not be started again"
	}
	return FailObject{Object: id, Task: id.Task(), Message: fmt.Sprintf("object %s %s (node %s) and %s", id, OwnerDied, a.Node, why)}
}
