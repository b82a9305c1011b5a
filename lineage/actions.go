package lineage

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// Action is an output of the planner: something the I/O layer must do. The set is
// closed: only the types of this package implement it. The I/O layer carries out a
// list's actions in order; some of them ask it to come back to the planner with facts
// read at that moment (Reconstruct, Start, Adopt, Recreate, ReadLineage), which is how a
// plan recurses through lost arguments without the planner reading the owner's tables.
type Action interface {
	isAction()
	fmt.Stringer
}

// CreateFuture: make a pending future for Object, which the owner does not know, so that
// Gets and dependent tasks wait for the value about to be made.
type CreateFuture struct{ Object ids.ObjectID }

// ResetFuture: make Object's ready future pending again: its value is stale, and later
// Gets wait for the new one.
type ResetFuture struct{ Object ids.ObjectID }

// Rerun: hand Task to its shard, to be run again, as the request NewRerunRequest makes
// (Old is its old value). The shard decides with it, from what it holds for the task,
// whether the task runs again at all (a reconstruction under way, or a run not finished,
// makes the request a no-op).
type Rerun struct {
	Task ids.TaskID
	// Object is the return of Task to recreate (zero: its first, ReturnID(Task, 1)); a
	// task of several returns runs once for all of them.
	Object ids.ObjectID
	Old    Value // the lost value, if the object was ready: its copy in a store is freed first
}

// object is the return a rerun recreates (see Rerun.Object).
func object(t ids.TaskID, o ids.ObjectID) ids.ObjectID {
	if o.IsZero() {
		return ids.ReturnID(t, 1)
	}
	return o
}

// Claim: register the request as the task's pending run in its shard (a second request
// for the task finds it there and does nothing).
type Claim struct{ Task ids.TaskID }

// FreeOld: free the old copy of Object in the store of Node, so that the new result is
// stored in its place rather than taken for a duplicate of it, then step the request with
// OldFreed. Not on a node that is gone (found by dialing if need be: a free sent there is
// never answered), so this runs off the shard's loop.
type FreeOld struct {
	Object ids.ObjectID
	Node   ids.NodeID
}

// Start: run the claimed task again now: plan the run with Restart, from the task's spec
// and its arguments' facts read at this moment.
type Start struct{ Task ids.TaskID }

// NewAttempt: the task's next run is attempt Attempt, with MaxRetries as its retry
// budget (the task's own: a reconstruction uses one of its retries): the spec sent is
// changed so, replies come to the shard, and the run counts as one reconstruction.
type NewAttempt struct {
	Task       ids.TaskID
	Attempt    int32
	MaxRetries int32
}

// NoRetries: the claimed Task may not run again to recreate Object: its attempts so far
// (Attempt: the first run is 0, each retry or reconstruction adds one) used up its
// MaxRetries. The run ends at once, without running the task: Object (pending again since
// Lost) becomes an error that says so, and matches ErrObjectLost; the task's other
// returns keep the values they have. Ray fails such an object with
// ObjectReconstructionFailedMaxAttemptsExceededError.
type NoRetries struct {
	Task       ids.TaskID
	Object     ids.ObjectID
	Attempt    int32
	MaxRetries int32
}

// HoldArgs: the run holds references to its ref arguments Args (released when it
// completes), so they live while it waits for them.
type HoldArgs struct {
	Task ids.TaskID
	Args []ids.ObjectID
}

// Reconstruct: recreate Object: plan it with Lost from its facts read now (for a Get,
// Adoption or a task's arguments, Lost's refusal is reported back to that machine).
type Reconstruct struct{ Object ids.ObjectID }

// AwaitArgs: dispatch Task once each of Args the owner has a pending future for is
// ready (an argument being recreated is waited for; the task runs after it).
type AwaitArgs struct {
	Task ids.TaskID
	Args []ids.ObjectID
}

// Place: send Task again as a retry (none of its arguments needed recreating).
type Place struct{ Task ids.TaskID }

// The actions of a Get concern its own object, so they do not name it; they carry no
// more than a byte either, so that returning one allocates nothing (every Get of a ready
// value asks its Get for a Read).

// Read: read the Get's value: its bytes from the store holding them, or inline. A failed
// read goes to Get.ReadFailed.
type Read struct{}

// AwaitAdoption: the Get's value is lost, and its owner may have died: wait (bounded) for
// the membership to report it and for the adoption of its objects to finish. A borrowed
// object that was adopted (owned here now) is waited for and read again (Get.Seen); an
// owned one goes to Get.AdoptionsDone; a wait that ends otherwise goes to Get.Refused.
type AwaitAdoption struct{}

// Wait: wait for the Get's value (it is being recreated, or was) and read it again
// (Get.Seen).
type Wait struct{}

// GiveUp: the Get ends with the error its last read gave.
type GiveUp struct{ Reason Reason }

// ReadLineage: read the lineage records the runtime of Node (the dead owner) wrote to the
// GCS, hand them to Adoption.LineageRead, and Adopt the object being adopted again.
type ReadLineage struct{ Node ids.NodeID }

// FailObject: Object cannot be recreated: its future becomes ready (reset first if it
// was) with an OBJECT_LOST error of Task carrying Message, which every Get of it returns.
type FailObject struct {
	Object  ids.ObjectID
	Task    ids.TaskID
	Message string
}

// Recreate: the adopted Object's task can run again from its record (Spec, with the
// dead owner as its owner, and its ref arguments Args): plan it with Adoption.Recreate
// from the arguments' facts read at this moment.
type Recreate struct {
	Object ids.ObjectID
	Spec   *pb.TaskSpec
	Args   []ids.ObjectID
}

// AdoptTask: the owner takes Task over: Spec, with the owner as its owner, becomes the
// task's lineage record (holding Args, once per occurrence), written to the GCS at once
// so that the owner's own borrowers can adopt it in turn.
type AdoptTask struct {
	Task ids.TaskID
	Spec *pb.TaskSpec
	Args []ids.ObjectID
}

// Adopt: adopt Object too (an argument of an adopted task that the owner did not know):
// plan it with Adoption.Adopt from its facts read now.
type Adopt struct{ Object ids.ObjectID }

func (CreateFuture) isAction()  {}
func (ResetFuture) isAction()   {}
func (Rerun) isAction()         {}
func (Claim) isAction()         {}
func (FreeOld) isAction()       {}
func (Start) isAction()         {}
func (NewAttempt) isAction()    {}
func (NoRetries) isAction()     {}
func (HoldArgs) isAction()      {}
func (Reconstruct) isAction()   {}
func (AwaitArgs) isAction()     {}
func (Place) isAction()         {}
func (Read) isAction()          {}
func (AwaitAdoption) isAction() {}
func (Wait) isAction()          {}
func (GiveUp) isAction()        {}
func (ReadLineage) isAction()   {}
func (FailObject) isAction()    {}
func (Recreate) isAction()      {}
func (AdoptTask) isAction()     {}
func (Adopt) isAction()         {}

func (a CreateFuture) String() string { return "CreateFuture " + a.Object.String() }
func (a ResetFuture) String() string  { return "ResetFuture " + a.Object.String() }
func (a Claim) String() string        { return "Claim " + a.Task.String() }
func (a FreeOld) String() string      { return "FreeOld " + a.Object.String() + " on " + string(a.Node) }
func (a Start) String() string        { return "Start " + a.Task.String() }
func (a HoldArgs) String() string     { return "HoldArgs " + a.Task.String() + " args=" + idList(a.Args) }
func (a Reconstruct) String() string  { return "Reconstruct " + a.Object.String() }
func (a AwaitArgs) String() string    { return "AwaitArgs " + a.Task.String() + " on " + idList(a.Args) }
func (a Place) String() string        { return "Place " + a.Task.String() }
func (Read) String() string           { return "Read" }
func (AwaitAdoption) String() string  { return "AwaitAdoption" }
func (Wait) String() string           { return "Wait" }
func (a ReadLineage) String() string  { return "ReadLineage " + string(a.Node) }
func (a Recreate) String() string     { return "Recreate " + a.Object.String() + " args=" + idList(a.Args) }
func (a AdoptTask) String() string    { return "AdoptTask " + a.Task.String() + " args=" + idList(a.Args) }
func (a Adopt) String() string        { return "Adopt " + a.Object.String() }

func (a Rerun) String() string {
	s := "Rerun " + a.Task.String()
	if !a.Object.IsZero() && a.Object.Index() != 1 {
		s += " for=" + a.Object.String()
	}
	if a.Old.InStore {
		s += " old=" + a.Old.String()
	}
	return s
}

func (a GiveUp) String() string { return "GiveUp reason=" + a.Reason.String() }

func (a NewAttempt) String() string {
	return fmt.Sprintf("NewAttempt %s attempt=%d max-retries=%d", a.Task, a.Attempt, a.MaxRetries)
}

func (a NoRetries) String() string {
	return fmt.Sprintf("NoRetries %s for=%s attempt=%d max-retries=%d", a.Task, a.Object, a.Attempt, a.MaxRetries)
}

func (a FailObject) String() string {
	return "FailObject " + a.Object.String() + " msg=" + strconv.Quote(a.Message)
}

func idList(l []ids.ObjectID) string {
	if len(l) == 0 {
		return "-"
	}
	s := make([]string, len(l))
	for i, id := range l {
		s[i] = id.String()
	}
	return strings.Join(s, ",")
}
