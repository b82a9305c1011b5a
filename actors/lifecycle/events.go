package lifecycle

import (
	"fmt"
	"strconv"
)

// Event is an input to Step: something that happened to the actor, reported by the I/O
// layer. The set is closed: only the types of this package implement it.
//
// Events about one instance carry its Incarnation; Step ignores those of an older
// incarnation (they describe an instance that was already replaced) and rejects those of
// a newer one (no such instance was ever started).
type Event interface {
	isEvent()
	fmt.Stringer
}

// Placed: the scheduler picked Node for the incarnation (in reply to PlaceActor) and
// reserved the actor's resources there.
type Placed struct {
	Incarnation uint64
	Node        string
}

// PlacementFailed: the scheduler gave up on the incarnation's PlaceActor request: no
// node of the cluster can ever satisfy the actor's resources (sched.ErrInfeasible), or its
// node-affinity node is gone. Message is the scheduler's error text. Only an actor being
// created takes it, unless NodeGone: the one node the actor may run on (hard node
// affinity) is gone, and node IDs are never reused, so a restart cannot be placed either.
type PlacementFailed struct {
	Incarnation uint64
	Message     string
	NodeGone    bool
}

// Waiting: the incarnation cannot start yet, for Reason (shown to users as the state's
// reason). Node is where the incarnation is placed ("" while no node is picked: no alive
// node has the resources it asks for), so a report about an earlier placement is
// ignored. Only a Pending or Restarting actor waits; the report is ignored otherwise.
// An empty Reason says it no longer waits.
type Waiting struct {
	Incarnation uint64
	Node        string
	Reason      string
}

// ConstructorSucceeded: the incarnation is ready to serve. For a restart this is sent
// after the checkpoint was restored and the method log replayed, not just after the
// constructor returned.
type ConstructorSucceeded struct {
	Incarnation uint64
}

// ConstructorFailed: the incarnation could not be started: its constructor returned an
// error or panicked (Raised), or starting it failed otherwise (its class is not
// registered there, its arguments or checkpoint could not be read, replaying its log
// failed). Message is the error text. A Raised failure is the actor's own: the actor dies
// at once whatever its restart budget (Ray: "the actor died because of an error raised in
// its creation task"); any other uses a restart like a crash.
type ConstructorFailed struct {
	Incarnation uint64
	Message     string
	Raised      bool
}

// ProcessDied: the incarnation's grain or worker process died (crash, panic outside a
// method, stopped grain) while its node lives on. Message says how, if known.
type ProcessDied struct {
	Incarnation uint64
	Message     string
}

// HostDied: a node left the cluster. It concerns the actor only when Node is where its
// current incarnation runs or is being started. Node IDs are never reused, so a node
// dies at most once.
type HostDied struct {
	Node string
}

// Kill: ray.Kill(handle, noRestart). With NoRestart the actor dies whatever its restart
// budget; without, the running (or starting) instance is stopped and the actor restarts
// if its budget allows, as after a crash.
type Kill struct {
	NoRestart bool
	// Reason, when set, says who killed the actor and why (the Detail of the dead
	// record then reads "killed with no_restart: " and it): a removed placement group
	// ends its actors with it.
	Reason string
}

// OwnerDied: the actor's owner (the driver or worker that created it) died. A
// non-detached actor dies with it; a detached one only records it.
type OwnerDied struct{}

// OutOfScope: every handle to a non-detached actor is gone (Ray's actor garbage
// collection): its owner's count of handles (in its program, in objects, in task and call
// arguments, in other processes, and the calls still unanswered) reached zero. No call
// is pending by then, so the actor dies at once and for good, whatever its restart
// budget. A detached actor is never collected: the event is refused for it.
type OutOfScope struct{}

// CheckpointTaken: the alive incarnation stored a checkpoint durably as object Ref,
// covering its method log through sequence number Seq.
type CheckpointTaken struct {
	Incarnation uint64
	Seq         uint64
	Ref         string
}

func (Placed) isEvent()               {}
func (PlacementFailed) isEvent()      {}
func (Waiting) isEvent()              {}
func (ConstructorSucceeded) isEvent() {}
func (ConstructorFailed) isEvent()    {}
func (ProcessDied) isEvent()          {}
func (HostDied) isEvent()             {}
func (Kill) isEvent()                 {}
func (OwnerDied) isEvent()            {}
func (OutOfScope) isEvent()           {}
func (CheckpointTaken) isEvent()      {}

func (e Placed) String() string {
	return fmt.Sprintf("Placed inc=%d node=%s", e.Incarnation, orDash(e.Node))
}

func (e PlacementFailed) String() string {
	s := fmt.Sprintf("PlacementFailed inc=%d msg=%s", e.Incarnation, strconv.Quote(e.Message))
	if e.NodeGone {
		s += " node-gone"
	}
	return s
}

func (e Waiting) String() string {
	return fmt.Sprintf("Waiting inc=%d node=%s reason=%s", e.Incarnation, orDash(e.Node), strconv.Quote(e.Reason))
}

func (e ConstructorSucceeded) String() string {
	return fmt.Sprintf("ConstructorSucceeded inc=%d", e.Incarnation)
}

func (e ConstructorFailed) String() string {
	s := fmt.Sprintf("ConstructorFailed inc=%d msg=%s", e.Incarnation, strconv.Quote(e.Message))
	if e.Raised {
		s += " raised"
	}
	return s
}

func (e ProcessDied) String() string {
	return fmt.Sprintf("ProcessDied inc=%d msg=%s", e.Incarnation, strconv.Quote(e.Message))
}

func (e HostDied) String() string { return "HostDied node=" + orDash(e.Node) }

func (e Kill) String() string { return "Kill no-restart=" + strconv.FormatBool(e.NoRestart) }

func (OwnerDied) String() string { return "OwnerDied" }

func (OutOfScope) String() string { return "OutOfScope" }

func (e CheckpointTaken) String() string {
	return fmt.Sprintf("CheckpointTaken inc=%d seq=%d ref=%s", e.Incarnation, e.Seq, orDash(e.Ref))
}
