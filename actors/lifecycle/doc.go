// Package lifecycle is the pure state machine of one actor's life: created (Pending),
// serving (Alive), coming back after a failure (Restarting), gone for good (Dead). It
// decides when an actor restarts, on which incarnation, from which checkpoint and log
// position, and when it dies and why; it does nothing itself.
//
// It is a pure core (DESIGN.md §5, §8): it imports only the standard library, starts no
// goroutines, does no I/O and reads no clock. Step is a deterministic function from a
// State and an Event to the next State and a list of Actions; the I/O layer feeds it
// events and carries out the actions. The behaviour is specified by the scenario
// scripts in testdata (see TestScenarios for their format), table tests and a fuzz test.
//
// # Role in the actors design
//
// Package actors is the runtime around this core. An actor is a grain whose identity is
// its actor ID, placed by the leader node's actors.Manager and recorded in the GCS actor
// table (DESIGN §2, §5). The State is what that table records for the actor: it lives in
// etcd, so it survives the death of any process, and it is written with a revision
// check (actors.Table.Step), so two runtimes stepping the same actor at once cannot both
// win: the loser reads the table and steps again.
//
// Events come from:
//
//   - the actor's grain, about its own instance: ConstructorSucceeded (after restore and
//     replay on a restart), ConstructorFailed, CheckpointTaken;
//   - the leader's Manager: Placed and PlacementFailed (its answer to a placing state),
//     Waiting while no alive node fits a restarting actor (the grain reports Waiting
//     too, while its node's resources are in use),
//     HostDied (a node hosting an actor left the membership), OwnerDied (the process that
//     created a non-detached actor died: actors.Manager.OwnerGone);
//   - ray.Kill (Kill), a runtime that stops (OwnerDied for the actors it created), and
//     the owner's reference count of a non-detached actor's handles reaching zero
//     (OutOfScope: Ray's actor garbage collection).
//
// ProcessDied is not emitted yet: a grain does not die without its node (user panics
// are recovered and fail one call); it is for worker processes (cluster mode).
//
// The actions are carried out as follows. PublishState is the step's own write.
// PlaceActor and StartInstance: the leader's Manager sees the placing (or starting)
// state in the table and places (or activates) the actor. StopInstance: the placement
// key changes or goes, and the node's identity lookup stops the grain. ReleaseResources:
// a stopping grain gives its resources back to its raylet (a dead node's go with it).
// FailPendingCalls: callers see the Dead state through their watch and fail their
// pending calls. TruncateLog: committed in the same transaction as CheckpointTaken.
//
// # States
//
// A Pending or Restarting actor is either placing (Node empty: waiting for the
// scheduler) or starting (Node set: StartInstance was issued, waiting for the instance
// to report). Below, P and R are Pending and Restarting, cur is the current
// incarnation, node the current Node, ckpt the newest checkpoint.
//
// # Transitions
//
//	from           event                       when             to                          actions
//	-------------  --------------------------  ---------------  --------------------------  ---------------------------------------
//	(none)         New(cfg)                    cfg valid        P placing, incarnation 1    Publish, PlaceActor{1}
//	P|R placing    Placed{cur, N}              N != ""          same phase, starting on N   Publish, StartInstance{cur, N} (1)
//	P placing      PlacementFailed{cur}                         Dead, Unschedulable         Publish, FailPendingCalls
//	P|R            Waiting{cur, node, W}       W != Waiting     same, Waiting = W           Publish
//	P|R starting   ConstructorSucceeded{cur}                    Alive                       Publish
//	a failure (2)                              restart left     R placing, cur+1            Publish, teardown (2), PlaceActor{cur+1}
//	a failure (2)                              no restart left  Dead, the failure's cause   Publish, teardown (2), FailPendingCalls
//	not Dead       Kill{NoRestart: true}                        Dead, Killed                Publish, teardown (3), FailPendingCalls
//	not Dead       OwnerDied                   not detached     Dead, OwnerDied             Publish, teardown (3), FailPendingCalls
//	not Dead       OwnerDied                   detached, first  same, OwnerDead             Publish
//	not Dead       OutOfScope                  not detached     Dead, OutOfScope            Publish, teardown (3), FailPendingCalls
//	Alive          CheckpointTaken{cur, S, R}  S > ckpt.Seq     Alive, ckpt = S@R           Publish, TruncateLog{S} (4)
//
// A restart adds one to both Restarts and the incarnation.
//
// (1) StartInstance restores ckpt if there is one, and replays the method log from
// ckpt.Seq+1 (from 1 without a checkpoint; no replay for at-most-once actors).
//
// (2) The failures of the current incarnation, where they are accepted, the Cause they
// give if the actor dies of them, and how the failed incarnation is torn down:
//
//	event                   accepted in            cause              teardown
//	----------------------  ---------------------  -----------------  --------------------------------------------
//	ConstructorFailed{cur}  P|R starting           ConstructorFailed  ReleaseResources{cur, node}
//	  Raised: the constructor's own error or panic: Dead at once, whatever the budget (5)
//	ProcessDied{cur}        P|R starting, Alive    ProcessDied        ReleaseResources{cur, node}
//	HostDied{node}          P|R starting, Alive    HostDied           none: the node and its resources are gone
//	Kill{NoRestart: false}  P|R starting, Alive    Killed             StopInstance{cur, node}, ReleaseResources{cur, node}
//
// (3) Placing: CancelPlacement{cur}. Starting or Alive: StopInstance{cur, node},
// ReleaseResources{cur, node}.
//
// (4) No TruncateLog for at-most-once actors, which keep no log.
//
// (5) ConstructorFailed{cur, Raised} never restarts: Dead, ConstructorFailed, with
// ReleaseResources{cur, node} and FailPendingCalls, the detail saying it is final.
//
// Ignored (state unchanged, no actions, nil error), because duplicates and late reports
// are normal in a system that resends:
//
//   - any event tagged with an incarnation older than cur (fencing, below);
//   - Placed{cur, N} when already placed on N; ConstructorSucceeded{cur} when Alive;
//   - HostDied of a node that is not the current incarnation's (including while placing);
//   - Kill{NoRestart: false} while placing: there is no instance to kill, the start goes on;
//   - OwnerDied for a detached actor that already knows;
//   - CheckpointTaken{cur, S} with S <= ckpt.Seq (a duplicate, or overtaken by a newer one);
//   - Waiting{cur, N} when Alive, or when N is not the current Node (a late report).
//
// Refused (state unchanged, no actions, a *TransitionError matching
// ErrInvalidTransition): every event once Dead (also matching ErrTerminal); an
// incarnation of 0 or newer than cur (never issued); Placed on an empty node or on a
// second node; PlacementFailed once placed, or while Restarting; ConstructorSucceeded, ConstructorFailed or
// ProcessDied while placing; ConstructorFailed when Alive; HostDied of an empty node;
// CheckpointTaken when not Alive or at sequence 0; OutOfScope for a detached actor; a
// nil event. A State that New and
// Step cannot produce is refused with ErrInvalidState.
//
// # Restarts and incarnations
//
// MaxRestarts bounds how many times the actor is brought back after a failure (0
// never, Infinite always). Every failure of the current incarnation uses one: a process
// or host death, a start that failed (its arguments or checkpoint could not be read, its
// log not replayed), and Kill without NoRestart, whether the instance was alive or still
// starting. An error the constructor itself raises (ConstructorFailed.Raised: it returned
// an error or panicked) is not a failure a restart can cure: as in Ray ("the actor died
// because of an error raised in its creation task") the actor dies at once with it as
// the cause, whatever restarts are left; a host that dies while the constructor runs
// uses a restart as any host death does. A failure when no restart is left kills the actor with that
// failure as its Cause, and Detail says the budget was used up. While Restarting,
// Detail says which failure used a restart and which restart it is ("host n1 died;
// restarting (restart 1 of 2)"), until the new instance is Alive. A placement failure
// never restarts: the same request would fail the same way. It is decided only when
// the actor is created (Pending): a restarting actor whose fitting nodes are gone waits
// for one to come back (Ray keeps such an actor pending too), because the node that
// left may only be cut off for a while; PlacementFailed is refused while Restarting.
//
// The incarnation numbers instance attempts: 1 at creation, +1 on every restart, never
// decreasing, so Incarnation == Restarts+1 always. It is the fencing token of the
// actor: events about an instance carry its incarnation and are ignored once a newer
// one exists (a late ProcessDied of the previous instance must not restart the new
// one), and the runtime tags method log writes and grain activations with it, so an old
// instance that is still running somewhere (a brief double activation during a
// topology change, DESIGN §5) can neither write the log nor be mistaken for the
// current one. Node IDs are never reused, which is why HostDied needs no incarnation.
//
// # Checkpoints, replay and the rule they rely on
//
// A logged (exactly-once) actor writes each call to the GCS method log before running
// it, with the result reference after. A checkpoint is a snapshot of the actor's state
// after log position Seq, stored as an object; CheckpointTaken records it, and only then
// is the log through Seq truncated. A restarted instance is told (StartInstance) to
// restore the newest checkpoint, or construct afresh if there is none, and to replay the
// log from Seq+1 in log order without answering anyone (every logged call's answer is
// already in the log, and a retried call is answered from there); only then does it
// report ConstructorSucceeded and serve new calls. At-most-once actors (AtMostOnce) keep
// no log: they restore the checkpoint if there is one and replay nothing.
//
// Replay is correct only if every method is deterministic given the actor's state and
// the call's arguments: the same calls applied in the same order to the same starting
// state must produce the same state. When a method breaks the rule (it reads the clock
// or an unseeded random source, iterates a map where order matters, or reads a
// mutable outside service), replay rebuilds a different state from the one the callers
// saw: the answers already given stay as they were (they come from the log), but later
// calls run against the diverged state, and nothing in this package can notice. Side
// effects outside the actor (a write to another service) happen again on replay:
// exactly-once covers the actor's state and its answers, not the outside world. To stay
// safe, pass time and randomness in as arguments or keep a seeded source in the state,
// checkpoint often (replay starts later), or opt out with AtMostOnce.
//
// # What callers are promised
//
// A call through a handle either completes (for a logged actor, with its effect
// applied exactly once) or fails with an error matching ErrActorDied; it never waits on
// a dead actor. Every way of dying emits FailPendingCalls, exactly once, with the
// *DiedError that says why, after PublishState has made the death visible, so calls
// made later fail at once from the published state (State.Err). While the actor is
// Pending or Restarting calls wait for it, and every such state has an exit that some
// component is bound to report: the scheduler answers a new actor's PlaceActor with
// Placed or PlacementFailed (so an actor no node can host dies instead of waiting
// forever), and a restart's with Placed once a node that fits is alive (until then the
// actor waits, like any call to it; Kill ends the wait), and a
// started instance either reports its constructor's outcome or dies, which its grain's
// watcher or the membership reports. Kill with NoRestart and, for a non-detached actor,
// the owner's death and the loss of its last handle end it from any state. A caller's context bounds the wait as well.
//
// There are no timers here; should the runtime want restart back-off or placement
// deadlines, time will come in as events.
package lifecycle
