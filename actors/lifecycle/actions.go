package lifecycle

import (
	"fmt"
	"strconv"
)

// Action is an output of New and Step: something the I/O layer must do. The set is
// closed: only the types of this package implement it.
//
// The executor performs a list's actions in order. PublishState comes first in every
// list: it is the commit point of the transition, and when it fails (the actor table
// moved on: another writer won) the executor drops the rest of the list and steps again
// from the state it reads back.
type Action interface {
	isAction()
	fmt.Stringer
}

// PublishState: write State to the GCS actor table, with a revision check (fencing), so
// that handles, GetActor and the other nodes see it. Handles hold calls while the actor
// is Pending or Restarting, send them to State.Node once it is Alive, and fail them with
// State.Err() once it is Dead.
type PublishState struct {
	State State
}

// PlaceActor: ask the scheduler for a node for Incarnation (the resources come from the
// actor's spec). The scheduler answers with a Placed event, however long it takes.
type PlaceActor struct {
	Incarnation uint64
}

// CancelPlacement: withdraw the PlaceActor request of Incarnation. If the scheduler had
// already reserved a node for it, the scheduler returns the reservation itself: Step
// rejects the late Placed (the actor is dead), so nobody else will.
type CancelPlacement struct {
	Incarnation uint64
}

// StartInstance: activate the actor's grain for Incarnation on Node. If
// RestoreFromCheckpoint, load Checkpoint instead of running the constructor's state
// afresh; then, if ReplayFromSeq > 0, replay the method log from that sequence number on
// in order, answering no caller (their results are already in the log). Then report
// ConstructorSucceeded (or ConstructorFailed, or ProcessDied). ReplayFromSeq is 0 for
// at-most-once actors, which keep no log.
type StartInstance struct {
	Incarnation           uint64
	Node                  string
	RestoreFromCheckpoint bool
	Checkpoint            Checkpoint
	ReplayFromSeq         uint64
}

// StopInstance: stop the grain of Incarnation on Node if it still runs. It must stop
// before its resources are released and must not run another method; its later method
// log writes are refused by the log's incarnation fence.
type StopInstance struct {
	Incarnation uint64
	Node        string
}

// ReleaseResources: return the resources reserved for Incarnation on Node to that node's
// scheduler. Not emitted when the node died (its resources died with it).
type ReleaseResources struct {
	Incarnation uint64
	Node        string
}

// FailPendingCalls: fail every call queued for the actor or in flight to it with Err
// (errors.Is(Err, ErrActorDied)). Emitted once, on the transition to Dead; calls made
// later fail from the published Dead state.
type FailPendingCalls struct {
	Err *DiedError
}

// TruncateLog: delete the actor's method log entries with sequence numbers <= Through;
// a durable checkpoint covers them. Emitted after PublishState has recorded the
// checkpoint, never for at-most-once actors.
type TruncateLog struct {
	Through uint64
}

func (PublishState) isAction()     {}
func (PlaceActor) isAction()       {}
func (CancelPlacement) isAction()  {}
func (StartInstance) isAction()    {}
func (StopInstance) isAction()     {}
func (ReleaseResources) isAction() {}
func (FailPendingCalls) isAction() {}
func (TruncateLog) isAction()      {}

// String names the action only: the state it publishes is what Step returned.
func (PublishState) String() string { return "PublishState" }

func (a PlaceActor) String() string { return fmt.Sprintf("PlaceActor inc=%d", a.Incarnation) }

func (a CancelPlacement) String() string {
	return fmt.Sprintf("CancelPlacement inc=%d", a.Incarnation)
}

func (a StartInstance) String() string {
	s := fmt.Sprintf("StartInstance inc=%d node=%s restore=", a.Incarnation, orDash(a.Node))
	if a.RestoreFromCheckpoint {
		s += a.Checkpoint.String()
	} else {
		s += "-"
	}
	if a.ReplayFromSeq == 0 {
		return s + " replay=-"
	}
	return s + " replay-from=" + strconv.FormatUint(a.ReplayFromSeq, 10)
}

func (a StopInstance) String() string {
	return fmt.Sprintf("StopInstance inc=%d node=%s", a.Incarnation, orDash(a.Node))
}

func (a ReleaseResources) String() string {
	return fmt.Sprintf("ReleaseResources inc=%d node=%s", a.Incarnation, orDash(a.Node))
}

func (a FailPendingCalls) String() string {
	if a.Err == nil {
		return "FailPendingCalls"
	}
	return "FailPendingCalls err=" + strconv.Quote(a.Err.Error())
}

func (a TruncateLog) String() string { return fmt.Sprintf("TruncateLog through=%d", a.Through) }
