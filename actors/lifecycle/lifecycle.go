package lifecycle

import (
	"fmt"
	"strconv"
	"strings"
)

// Phase is where an actor is in its life. The zero value is invalid, so a State that was
// never built by New is caught by Step.
type Phase uint8

const (
	// Pending: created, waiting for a node (Node empty) or for its first instance's
	// constructor (Node set).
	Pending Phase = iota + 1
	// Alive: an instance is serving calls on Node.
	Alive
	// Restarting: an instance failed and a restart is under way; waiting for a node (Node
	// empty) or for the new instance to restore, replay and construct (Node set).
	Restarting
	// Dead: terminal. Every call fails with ErrActorDied; every event is rejected.
	Dead
)

func (p Phase) String() string {
	switch p {
	case Pending:
		return "Pending"
	case Alive:
		return "Alive"
	case Restarting:
		return "Restarting"
	case Dead:
		return "Dead"
	}
	return "Phase(" + strconv.Itoa(int(p)) + ")"
}

// RayName is Ray's name of the phase (rpc::ActorTableData's state), as the state API and
// metrics show it: PENDING_CREATION, ALIVE, RESTARTING, DEAD.
func (p Phase) RayName() string {
	switch p {
	case Pending:
		return "PENDING_CREATION"
	case Alive:
		return "ALIVE"
	case Restarting:
		return "RESTARTING"
	case Dead:
		return "DEAD"
	}
	return p.String()
}

// Cause says why an actor is dead. CauseNone while it is not.
type Cause uint8

const (
	CauseNone Cause = iota
	// CauseConstructorFailed: the last instance's constructor returned an error or
	// panicked (final whatever the restart budget), or starting it failed otherwise (its
	// arguments, checkpoint restore or log replay) and no restart was left.
	CauseConstructorFailed
	// CauseProcessDied: the last instance's process or grain died and no restart was left.
	CauseProcessDied
	// CauseHostDied: the node hosting the last instance died and no restart was left.
	CauseHostDied
	// CauseKilled: Kill with NoRestart, or Kill without it when no restart was left.
	CauseKilled
	// CauseOwnerDied: the owner of a non-detached actor died.
	CauseOwnerDied
	// CauseUnschedulable: the scheduler found no node that can ever host the actor.
	CauseUnschedulable
	// CauseOutOfScope: every handle to a non-detached actor was gone (OutOfScope).
	CauseOutOfScope
)

// LastCause is the highest Cause: a record with a higher one is corrupt.
const LastCause = CauseOutOfScope

func (c Cause) String() string {
	switch c {
	case CauseNone:
		return "None"
	case CauseConstructorFailed:
		return "ConstructorFailed"
	case CauseProcessDied:
		return "ProcessDied"
	case CauseHostDied:
		return "HostDied"
	case CauseKilled:
		return "Killed"
	case CauseOwnerDied:
		return "OwnerDied"
	case CauseUnschedulable:
		return "Unschedulable"
	case CauseOutOfScope:
		return "OutOfScope"
	}
	return "Cause(" + strconv.Itoa(int(c)) + ")"
}

// Infinite is the MaxRestarts value that allows any number of restarts.
const Infinite = -1

// Config is what an actor's creation fixes for its whole life.
type Config struct {
	// ActorID names the actor (its hex ID); it only appears in errors and logs here.
	ActorID string
	// MaxRestarts is how many times the actor may be restarted after a failure: 0 never,
	// Infinite (-1) without limit.
	MaxRestarts int
	// Detached actors outlive their owner; others die with it.
	Detached bool
	// AtMostOnce actors keep no method log: a restart restores the last checkpoint (if
	// any) and does not replay (StartInstance.ReplayFromSeq is 0), and checkpoints do not
	// truncate a log.
	AtMostOnce bool
}

// Validate reports a Config that New would reject.
func (c Config) Validate() error {
	if c.ActorID == "" {
		return fmt.Errorf("%w: empty actor ID", ErrInvalidConfig)
	}
	if c.MaxRestarts < Infinite {
		return fmt.Errorf("%w: actor %s: MaxRestarts %d (want >= 0, or -1 for infinite)", ErrInvalidConfig, c.ActorID, c.MaxRestarts)
	}
	return nil
}

// Checkpoint names the newest durable snapshot of an actor's state: Seq is the position in
// the actor's method log it covers (the state after every logged call with a sequence
// number <= Seq), Ref the object holding it. The zero value means no checkpoint.
type Checkpoint struct {
	Seq uint64
	Ref string
}

// IsZero reports whether there is no checkpoint.
func (c Checkpoint) IsZero() bool { return c == Checkpoint{} }

func (c Checkpoint) String() string {
	if c.IsZero() {
		return "-"
	}
	if c.Ref == "" {
		return strconv.FormatUint(c.Seq, 10)
	}
	return strconv.FormatUint(c.Seq, 10) + "@" + c.Ref
}

// State is one actor's lifecycle: a plain value (no pointers, no slices), so copying it is
// a snapshot, it can be stored in the GCS actor table as is and compared with ==.
type State struct {
	Config
	Phase Phase
	// Incarnation numbers the instance attempts: 1 for the first, +1 on every restart. It
	// never decreases. Events tagged with an older incarnation are ignored (fencing).
	Incarnation uint64
	// Restarts counts the restarts used so far (never above MaxRestarts unless Infinite).
	Restarts int
	// Node is where the current incarnation runs or is being started; empty while it waits
	// for placement, and once the actor is dead.
	Node string
	// OwnerDead records that the owner died (only a detached actor survives that).
	OwnerDead bool
	// Checkpoint is the newest checkpoint recorded (kept across restarts).
	Checkpoint Checkpoint
	// Cause says why the actor died; set only in Dead. Detail says why it died, or
	// while Restarting why it restarts (the failure that used a restart: "host N died;
	// restarting (restart 1 of 3)"); empty otherwise.
	Cause  Cause
	Detail string
	// Waiting says why the current incarnation is not started yet, while Pending or
	// Restarting: no alive node has the resources it asks for (Node empty), or its node
	// has them but they are in use (Node set). Empty when it is not known to wait; a
	// placement, a start and a failure clear it.
	Waiting string
}

// Why is what a user is told of the state: Detail (why it died, or why it restarts),
// and while it is not started yet, why it waits.
func (s State) Why() string {
	switch {
	case s.Waiting == "":
		return s.Detail
	case s.Detail == "":
		return s.Waiting
	}
	return s.Detail + "; " + s.Waiting
}

// RestartsLeft is how many restarts remain, or Infinite.
func (s State) RestartsLeft() int {
	if s.MaxRestarts == Infinite {
		return Infinite
	}
	return s.MaxRestarts - s.Restarts
}

// canRestart reports whether one more restart is allowed.
func (s State) canRestart() bool {
	return s.MaxRestarts == Infinite || s.Restarts < s.MaxRestarts
}

// Err is nil unless the actor is dead; then it is the *DiedError every call fails with
// (errors.Is(err, ErrActorDied)).
func (s State) Err() error {
	if s.Phase != Dead {
		return nil
	}
	return s.diedError()
}

func (s State) diedError() *DiedError {
	return &DiedError{ActorID: s.ActorID, Cause: s.Cause, Detail: s.Detail, Incarnation: s.Incarnation, Restarts: s.Restarts}
}

// Validate checks that s is a state Step can start from: what New and Step produce always
// is; a state decoded from storage may not be.
func (s State) Validate() error {
	if err := s.Config.Validate(); err != nil {
		return fmt.Errorf("%w (%w)", ErrInvalidState, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: actor %s: %s", ErrInvalidState, s.ActorID, fmt.Sprintf(format, args...))
	}
	switch {
	case s.Phase < Pending || s.Phase > Dead:
		return bad("unknown phase %d", s.Phase)
	case s.Incarnation == 0:
		return bad("incarnation 0")
	case s.Restarts < 0 || (s.MaxRestarts != Infinite && s.Restarts > s.MaxRestarts):
		return bad("%d restarts used of %d", s.Restarts, s.MaxRestarts)
	case s.Incarnation != uint64(s.Restarts)+1:
		return bad("incarnation %d after %d restarts", s.Incarnation, s.Restarts)
	case s.Phase == Alive && s.Node == "":
		return bad("alive on no node")
	case s.Phase == Dead && (s.Node != "" || s.Cause == CauseNone):
		return bad("dead with node %q and cause %v", s.Node, s.Cause)
	case s.Phase != Dead && s.Cause != CauseNone:
		return bad("cause %v while %v", s.Cause, s.Phase)
	case s.Phase != Dead && s.Phase != Restarting && s.Detail != "":
		return bad("detail %q while %v", s.Detail, s.Phase)
	case s.Phase != Pending && s.Phase != Restarting && s.Waiting != "":
		return bad("waiting %q while %v", s.Waiting, s.Phase)
	case s.OwnerDead && !s.Detached && s.Phase != Dead:
		return bad("non-detached actor outlives its owner")
	}
	return nil
}

// String is one line, the form the scenario scripts expect.
func (s State) String() string {
	var b strings.Builder
	b.WriteString(s.Phase.String())
	fmt.Fprintf(&b, " inc=%d node=%s restarts=%d/", s.Incarnation, orDash(s.Node), s.Restarts)
	if s.MaxRestarts == Infinite {
		b.WriteString("inf")
	} else {
		b.WriteString(strconv.Itoa(s.MaxRestarts))
	}
	fmt.Fprintf(&b, " ckpt=%s", s.Checkpoint)
	if s.OwnerDead {
		b.WriteString(" owner=dead")
	} else {
		b.WriteString(" owner=alive")
	}
	if s.Detached {
		b.WriteString(" detached")
	}
	if s.AtMostOnce {
		b.WriteString(" at-most-once")
	}
	if s.Phase == Dead {
		fmt.Fprintf(&b, " cause=%v detail=%q", s.Cause, s.Detail)
	} else if s.Detail != "" {
		fmt.Fprintf(&b, " detail=%q", s.Detail)
	}
	if s.Waiting != "" {
		fmt.Fprintf(&b, " waiting=%q", s.Waiting)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// New validates cfg and returns the state of a freshly created actor, Pending with
// incarnation 1, and the actions that start it: publish it, then ask for a node.
func New(cfg Config) (State, []Action, error) {
	if err := cfg.Validate(); err != nil {
		return State{}, nil, err
	}
	s := State{Config: cfg, Phase: Pending, Incarnation: 1}
	return s, []Action{PublishState{State: s}, PlaceActor{Incarnation: 1}}, nil
}

// Step applies one event to s and returns the next state and the actions the caller must
// carry out, in order. It is deterministic and does not modify s.
//
//   - A transition returns the new state and at least one action, PublishState first.
//   - An event that changes nothing (stale incarnation, duplicate, Kill without NoRestart
//     while no instance exists, ...) returns s unchanged, no actions and a nil error.
//   - An event that is not allowed returns s unchanged, no actions and a *TransitionError:
//     errors.Is(err, ErrInvalidTransition), and also errors.Is(err, ErrTerminal) when the
//     actor is already dead.
//
// The transitions are tabled in the package documentation.
func Step(s State, e Event) (State, []Action, error) {
	if err := s.Validate(); err != nil {
		return s, nil, err
	}
	if e == nil {
		return s, nil, s.reject(e, "nil event")
	}
	if s.Phase == Dead {
		return s, nil, &TransitionError{ActorID: s.ActorID, From: s.Phase, Event: e, Reason: "the actor is dead"}
	}
	switch e := e.(type) {
	case Placed:
		return s.placed(e)
	case PlacementFailed:
		return s.placementFailed(e)
	case Waiting:
		return s.waiting(e)
	case ConstructorSucceeded:
		return s.constructorSucceeded(e)
	case ConstructorFailed:
		return s.constructorFailed(e)
	case ProcessDied:
		return s.processDied(e)
	case HostDied:
		return s.hostDied(e)
	case Kill:
		return s.kill(e)
	case OwnerDied:
		return s.ownerDied(e)
	case OutOfScope:
		return s.outOfScope(e)
	case CheckpointTaken:
		return s.checkpointTaken(e)
	}
	return s, nil, s.reject(e, fmt.Sprintf("unknown event type %T", e))
}

func (s State) reject(e Event, reason string) error {
	return &TransitionError{ActorID: s.ActorID, From: s.Phase, Event: e, Reason: reason}
}

// fence classifies an event's incarnation against the current one: stale means older
// (ignore the event); an error means no such incarnation was ever issued; neither means
// it is the current one.
func (s State) fence(e Event, inc uint64) (stale bool, err error) {
	switch {
	case inc == 0:
		return false, s.reject(e, "incarnation 0 is never issued")
	case inc > s.Incarnation:
		return false, s.reject(e, fmt.Sprintf("incarnation %d is ahead of the current %d", inc, s.Incarnation))
	}
	return inc < s.Incarnation, nil
}

// MayFailPlacement reports whether a PlacementFailed would be taken: only an actor being
// created (Pending, waiting for a node) can be found unplaceable (a restarting one too when
// the one node it may run on is gone: PlacementFailed.NodeGone). A restarting actor
// whose fitting nodes are gone (cut off for a while, say) waits for one to come back.
func (s State) MayFailPlacement() bool { return s.Phase == Pending && s.Node == "" }

// starting reports whether the current incarnation is placed but not yet alive.
func (s State) starting() bool {
	return (s.Phase == Pending || s.Phase == Restarting) && s.Node != ""
}

func (s State) placed(e Placed) (State, []Action, error) {
	if stale, err := s.fence(e, e.Incarnation); err != nil || stale {
		return s, nil, err
	}
	if e.Node == "" {
		return s, nil, s.reject(e, "empty node")
	}
	if s.Node != "" {
		if s.Node == e.Node {
			return s, nil, nil // duplicate delivery
		}
		return s, nil, s.reject(e, fmt.Sprintf("incarnation %d is already placed on %s", s.Incarnation, s.Node))
	}
	// Pending or Restarting, waiting for a node.
	n := s
	n.Node = e.Node
	n.Waiting = "" // it waited for a node; what it waits for on the node its start tells
	start := StartInstance{
		Incarnation:           n.Incarnation,
		Node:                  n.Node,
		RestoreFromCheckpoint: !n.Checkpoint.IsZero(),
		Checkpoint:            n.Checkpoint,
	}
	if !n.AtMostOnce {
		start.ReplayFromSeq = n.Checkpoint.Seq + 1
	}
	return n, []Action{PublishState{State: n}, start}, nil
}

func (s State) placementFailed(e PlacementFailed) (State, []Action, error) {
	if stale, err := s.fence(e, e.Incarnation); err != nil || stale {
		return s, nil, err
	}
	if s.Node != "" {
		return s, nil, s.reject(e, fmt.Sprintf("incarnation %d is already placed on %s", s.Incarnation, s.Node))
	}
	if s.Phase != Pending && !(e.NodeGone && s.Phase == Restarting) {
		return s, nil, s.reject(e, "a restarting actor waits for a node that fits it (only its creation decides that it cannot be placed, or its only node being gone)")
	}
	// No restart: the same request would fail the same way. The scheduler reserved
	// nothing, so there is nothing to cancel or release.
	n := s.die(CauseUnschedulable, "cannot be placed: "+e.Message)
	return n, []Action{PublishState{State: n}, FailPendingCalls{Err: n.diedError()}}, nil
}

func (s State) waiting(e Waiting) (State, []Action, error) {
	if stale, err := s.fence(e, e.Incarnation); err != nil || stale {
		return s, nil, err
	}
	if (s.Phase != Pending && s.Phase != Restarting) || e.Node != s.Node || e.Reason == s.Waiting {
		// Started, or placed elsewhere (or no longer placed) since: the report is late.
		return s, nil, nil
	}
	n := s
	n.Waiting = e.Reason
	return n, []Action{PublishState{State: n}}, nil
}

func (s State) constructorSucceeded(e ConstructorSucceeded) (State, []Action, error) {
	if stale, err := s.fence(e, e.Incarnation); err != nil || stale {
		return s, nil, err
	}
	switch {
	case s.Phase == Alive:
		return s, nil, nil // duplicate delivery
	case !s.starting():
		return s, nil, s.reject(e, "no instance was started (not placed yet)")
	}
	n := s
	n.Phase = Alive
	n.Detail = "" // why it restarted: history now
	n.Waiting = ""
	return n, []Action{PublishState{State: n}}, nil
}

func (s State) constructorFailed(e ConstructorFailed) (State, []Action, error) {
	if stale, err := s.fence(e, e.Incarnation); err != nil || stale {
		return s, nil, err
	}
	switch {
	case s.Phase == Alive:
		return s, nil, s.reject(e, "the constructor already succeeded")
	case !s.starting():
		return s, nil, s.reject(e, "no instance was started (not placed yet)")
	}
	if e.Raised {
		// The constructor's own error: a new instance would run the same constructor on
		// the same arguments, so no restart is used (Ray marks such an actor dead at once).
		n := s.die(CauseConstructorFailed, "constructor failed: "+e.Message+" (an error the constructor raises is final: not restarted)")
		return n, s.dieActions(n, false, true), nil
	}
	return s.fail(CauseConstructorFailed, "constructor failed: "+e.Message, false, true)
}

func (s State) processDied(e ProcessDied) (State, []Action, error) {
	if stale, err := s.fence(e, e.Incarnation); err != nil || stale {
		return s, nil, err
	}
	if s.Node == "" {
		return s, nil, s.reject(e, "no instance was started (not placed yet)")
	}
	detail := "process died on " + s.Node
	if e.Message != "" {
		detail += ": " + e.Message
	}
	return s.fail(CauseProcessDied, detail, false, true)
}

func (s State) hostDied(e HostDied) (State, []Action, error) {
	if e.Node == "" {
		return s, nil, s.reject(e, "empty node")
	}
	if e.Node != s.Node {
		return s, nil, nil // not our node (or an earlier incarnation's): nothing to do
	}
	return s.fail(CauseHostDied, "host "+s.Node+" died", false, false)
}

func (s State) kill(e Kill) (State, []Action, error) {
	if e.NoRestart {
		detail := "killed with no_restart"
		if e.Reason != "" {
			detail += ": " + e.Reason
		}
		n := s.die(CauseKilled, detail)
		return n, s.dieActions(n, true, true), nil
	}
	if s.Node == "" {
		return s, nil, nil // no instance to kill; the pending start goes on
	}
	return s.fail(CauseKilled, "killed", true, true)
}

func (s State) ownerDied(e OwnerDied) (State, []Action, error) {
	if s.Detached {
		if s.OwnerDead {
			return s, nil, nil
		}
		n := s
		n.OwnerDead = true
		return n, []Action{PublishState{State: n}}, nil
	}
	n := s.die(CauseOwnerDied, "owner died")
	n.OwnerDead = true
	return n, s.dieActions(n, true, true), nil
}

// OutOfScopeDetail is the Detail of an actor that died of OutOfScope. Its creator still
// ran (else the cause is OwnerDied), so it says how Go loses a handle a program meant to
// keep: Go drops a variable after its last use, not at the end of its scope.
const OutOfScopeDetail = "out of scope: every handle to the actor is gone (Go drops a handle after its last use, " +
	"not at the end of its scope: to keep an actor, keep a handle reachable, e.g. defer runtime.KeepAlive(h), or create it Detached)"

func (s State) outOfScope(e OutOfScope) (State, []Action, error) {
	if s.Detached {
		return s, nil, s.reject(e, "a detached actor is never collected")
	}
	n := s.die(CauseOutOfScope, OutOfScopeDetail)
	return n, s.dieActions(n, true, true), nil
}

func (s State) checkpointTaken(e CheckpointTaken) (State, []Action, error) {
	if stale, err := s.fence(e, e.Incarnation); err != nil || stale {
		return s, nil, err
	}
	switch {
	case s.Phase != Alive:
		return s, nil, s.reject(e, "only an alive instance takes checkpoints")
	case e.Seq == 0:
		return s, nil, s.reject(e, "checkpoint at sequence 0")
	case e.Seq <= s.Checkpoint.Seq:
		return s, nil, nil // duplicate, or overtaken by a newer checkpoint
	}
	n := s
	n.Checkpoint = Checkpoint{Seq: e.Seq, Ref: e.Ref}
	acts := []Action{PublishState{State: n}}
	if !n.AtMostOnce {
		acts = append(acts, TruncateLog{Through: e.Seq})
	}
	return n, acts, nil
}

// fail handles a failure of the current incarnation: restart if the budget allows,
// otherwise die with cause. stop says the instance may still be running (it must be
// stopped); release says its node is alive (its resources must be returned). Neither
// applies while the incarnation waits for placement.
func (s State) fail(cause Cause, detail string, stop, release bool) (State, []Action, error) {
	if !s.canRestart() {
		detail += fmt.Sprintf(" (no restart left: %d of %d used)", s.Restarts, s.MaxRestarts)
		n := s.die(cause, detail)
		return n, s.dieActions(n, stop, release), nil
	}
	n := s
	n.Phase = Restarting
	n.Restarts++
	n.Incarnation++
	n.Node = ""
	n.Waiting = ""
	if n.MaxRestarts == Infinite {
		n.Detail = fmt.Sprintf("%s; restarting (restart %d, no limit)", detail, n.Restarts)
	} else {
		n.Detail = fmt.Sprintf("%s; restarting (restart %d of %d)", detail, n.Restarts, n.MaxRestarts)
	}
	acts := []Action{PublishState{State: n}}
	acts = append(acts, s.teardown(stop, release)...)
	acts = append(acts, PlaceActor{Incarnation: n.Incarnation})
	return n, acts, nil
}

// teardown is what to do with the current incarnation when it ends.
func (s State) teardown(stop, release bool) []Action {
	if s.Node == "" {
		return []Action{CancelPlacement{Incarnation: s.Incarnation}}
	}
	var acts []Action
	if stop {
		acts = append(acts, StopInstance{Incarnation: s.Incarnation, Node: s.Node})
	}
	if release {
		acts = append(acts, ReleaseResources{Incarnation: s.Incarnation, Node: s.Node})
	}
	return acts
}

func (s State) die(cause Cause, detail string) State {
	n := s
	n.Phase = Dead
	n.Node = ""
	n.Cause = cause
	n.Detail = detail
	n.Waiting = ""
	return n
}

// dieActions: publish the dead state (new calls fail at once from then on), end the
// current incarnation, then fail the calls that were queued or in flight.
func (s State) dieActions(n State, stop, release bool) []Action {
	acts := []Action{PublishState{State: n}}
	acts = append(acts, s.teardown(stop, release)...)
	return append(acts, FailPendingCalls{Err: n.diedError()})
}
