package lineage

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// State is how far the owner's future for an object is.
type State uint8

const (
	// Unknown: the owner has no future for the object (never made here, or freed).
	Unknown State = iota
	// Pending: the future waits for a value.
	Pending
	// Ready: the future holds a value (Object.Value).
	Ready
)

func (s State) String() string {
	switch s {
	case Unknown:
		return "unknown"
	case Pending:
		return "pending"
	case Ready:
		return "ready"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Object is what the owner's tables say about one object at the moment the I/O layer
// asks the planner about it: the memory store (State, Value), the reference table
// (Record) and the cluster view (Value.Gone). The planner never reads those tables
// itself; what it needs to know comes in here, and a decision that needs fresher facts
// (an argument's, after other actions ran) says so with an action the I/O layer answers
// by asking again (Reconstruct, Adopt, Start, Recreate).
type Object struct {
	ID    ids.ObjectID
	State State
	Value Value // when Ready
	// Record: the owner holds the lineage record (the spec) of ID.Task(). Only a task's
	// return can be recreated from it; for a Put object it names the putting task.
	Record bool
}

// Value is where a ready object's value is.
type Value struct {
	// Failed: the value is an error of kind Err.
	Failed bool
	Err    pb.ErrorInfo_Kind
	// InStore: the bytes are in the object store of Node (else they are inline, in the
	// owner's memory store).
	InStore bool
	Node    ids.NodeID
	// Gone: InStore, and Node is gone as far as the I/O layer knows (its cluster view, or
	// a refused connection where it may dial).
	Gone bool
}

// lost reports whether the value says the object's bytes or value are gone: an
// object-lost error, or bytes on a node that is gone.
func (v Value) lost() bool {
	if v.Failed {
		return v.Err == pb.ErrorInfo_OBJECT_LOST
	}
	return v.InStore && v.Gone
}

func (v Value) String() string {
	switch {
	case v.Failed:
		return "err=" + v.Err.String()
	case !v.InStore:
		return "inline"
	case v.Gone:
		return "store@" + string(v.Node) + "(gone)"
	}
	return "store@" + string(v.Node)
}

func (o Object) String() string {
	var b strings.Builder
	b.WriteString(o.ID.String())
	b.WriteString(": ")
	b.WriteString(o.State.String())
	if o.State == Ready {
		b.WriteString(" " + o.Value.String())
	}
	if o.Record {
		b.WriteString(" record")
	}
	return b.String()
}

// isReturn reports whether id is one of what its task returns (the only kind of object a
// task can make again: ReturnID(task, i) for i from 1); the rest are Puts.
func isReturn(id ids.ObjectID) bool { return !id.IsPut() && id.Index() >= 1 }

// ErrNotReconstructible matches every *Error: an object that cannot be recreated.
var ErrNotReconstructible = errors.New("lineage: object cannot be reconstructed")

// Reason says why an object cannot be recreated, or why a Get gave up on it.
type Reason uint8

const (
	// ReasonPut: the object was made by Put, so no task can make it again.
	ReasonPut Reason = iota + 1
	// ReasonNoRecord: the lineage record of the object's task is gone: the owner released
	// it, or (adoption) the dead owner never wrote it to the GCS.
	ReasonNoRecord
	// ReasonLineageUnreadable: the dead owner's lineage could not be read from the GCS.
	ReasonLineageUnreadable
	// ReasonRecordCorrupt: the record cannot be used (DecodeSpec): it does not decode, is
	// another task's, or names an argument that is not an object ID.
	ReasonRecordCorrupt
	// ReasonNotStarted: the adopted task could not be started again.
	ReasonNotStarted
	// ReasonBudget: a Get recreated the object MaxReconstructions times and it is still
	// lost.
	ReasonBudget
	// ReasonNotLost: a Get's read failed for a reason other than a loss (the task's own
	// error, a timeout): there is nothing to recreate.
	ReasonNotLost
	// ReasonUnrecoverable: a Get found the object lost and neither recreating it nor
	// waiting for its adoption was possible.
	ReasonUnrecoverable
)

func (r Reason) String() string {
	switch r {
	case ReasonPut:
		return "put"
	case ReasonNoRecord:
		return "no-record"
	case ReasonLineageUnreadable:
		return "lineage-unreadable"
	case ReasonRecordCorrupt:
		return "record-corrupt"
	case ReasonNotStarted:
		return "not-started"
	case ReasonBudget:
		return "budget"
	case ReasonNotLost:
		return "not-lost"
	case ReasonUnrecoverable:
		return "unrecoverable"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Error is an object that cannot be recreated, and why.
type Error struct {
	Object ids.ObjectID
	Reason Reason
	Detail string // the underlying error's text, if any
}

func (e *Error) Error() string {
	s := fmt.Sprintf("lineage: object %s cannot be reconstructed: %s", e.Object, e.Reason)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is makes errors.Is(err, ErrNotReconstructible) true.
func (e *Error) Is(target error) bool { return target == ErrNotReconstructible }

// Lost plans the recreation of o, an object of the owner's whose value is lost (its bytes
// are on a node that is gone, or unreadable) or needed again (an argument whose value was
// freed while its lineage was kept). The actions make its future wait for the new value
// (CreateFuture if unknown, ResetFuture if ready) and hand its task to its shard to run
// again (Rerun; the shard decides with its RerunRequest whether it does).
// Lost refuses, with an *Error, an object made by Put (ReasonPut) and one whose task's
// lineage record the owner no longer holds (ReasonNoRecord); then there are no actions.
//
// Lost is what the I/O layer calls whenever an action says Reconstruct, with the
// object's facts read at that moment.
func Lost(o Object) ([]Action, error) {
	if !isReturn(o.ID) {
		return nil, &Error{Object: o.ID, Reason: ReasonPut}
	}
	if !o.Record {
		return nil, &Error{Object: o.ID, Reason: ReasonNoRecord}
	}
	var acts []Action
	var old Value
	switch o.State {
	case Unknown:
		acts = append(acts, CreateFuture{Object: o.ID})
	case Ready:
		// A Get that follows waits for the new value; the old one is what the shard frees
		// first if it is in a store.
		acts = append(acts, ResetFuture{Object: o.ID})
		old = o.Value
	}
	return append(acts, Rerun{Task: o.ID.Task(), Object: o.ID, Old: old}), nil
}
