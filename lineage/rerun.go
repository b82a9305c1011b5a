package lineage

import (
	"fmt"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// Held is what a shard holds for a task when it steps a RerunRequest of it.
type Held uint8

const (
	// HeldNone: no pending run: the task finished, never ran in this runtime (adopted), or
	// was cancelled.
	HeldNone Held = iota
	// HeldThis: the run this request claimed.
	HeldThis
	// HeldOther: another run: the first one, still going, or another request's.
	HeldOther
)

func (h Held) String() string {
	switch h {
	case HeldNone:
		return "none"
	case HeldThis:
		return "this"
	case HeldOther:
		return "other"
	}
	return fmt.Sprintf("Held(%d)", uint8(h))
}

// RerunRequest is one request to run a task again (a Rerun action), as the task's shard
// sees it from its arrival to the run's start. The shard keeps it with the pending run it
// registers and steps it on its loop, telling it what it holds for the task at that
// moment: that is how reconstructions of one object started at once from several
// goroutines (two Gets, an adoption, a dependent task) run the task once.
//
//	phase    event          held   next     actions
//	-------  -------------  -----  -------  ---------------------------------------
//	new      Arrived        none   freeing  Claim, FreeOld    (old copy in a store)
//	new      Arrived        none   started  Claim, Start      (otherwise)
//	new      Arrived        other  dropped  -                 (being recreated, or still running)
//	freeing  OldFreed       this   started  Start
//	freeing  OldFreed       none   dropped  -                 (cancelled while freeing)
//	freeing  OldFreed       other  dropped  -                 (cancelled, and claimed again since)
//
// Any other event changes nothing and asks for nothing (a duplicate delivery).
type RerunRequest struct {
	Task   ids.TaskID
	Object ids.ObjectID // the return to recreate (Rerun.Object; zero: the first)
	Old    Value        // the lost value; in a store, its copy is freed before the run
	phase  rerunPhase
}

type rerunPhase uint8

const (
	rerunNew rerunPhase = iota
	rerunFreeing
	rerunStarted
	rerunDropped
)

func (p rerunPhase) String() string {
	switch p {
	case rerunNew:
		return "new"
	case rerunFreeing:
		return "freeing"
	case rerunStarted:
		return "started"
	case rerunDropped:
		return "dropped"
	}
	return fmt.Sprintf("rerunPhase(%d)", uint8(p))
}

// NewRerunRequest is the request a Rerun action asks the shard to handle.
func NewRerunRequest(a Rerun) *RerunRequest {
	return &RerunRequest{Task: a.Task, Object: object(a.Task, a.Object), Old: a.Old}
}

// Started reports whether the request started the task's run.
func (r *RerunRequest) Started() bool { return r.phase == rerunStarted }

func (r *RerunRequest) String() string { return fmt.Sprintf("rerun %s %s", r.Task, r.phase) }

// Arrived steps r when it reaches the task's shard, which holds h for the task.
func (r *RerunRequest) Arrived(h Held) []Action {
	if r.phase != rerunNew || h == HeldThis {
		return nil
	}
	if h == HeldOther {
		// Being recreated already, or the task has not finished a run: that run's result
		// is what this request wanted.
		r.phase = rerunDropped
		return nil
	}
	acts := []Action{Claim{Task: r.Task}}
	if r.Old.InStore {
		// The old copy (a corrupt spill file, say) goes first, so that the new result is
		// stored in its place rather than taken for a duplicate of it.
		r.phase = rerunFreeing
		return append(acts, FreeOld{Object: object(r.Task, r.Object), Node: r.Old.Node})
	}
	r.phase = rerunStarted
	return append(acts, Start{Task: r.Task})
}

// OldFreed steps r when the old copy FreeOld named is freed (or found gone); the shard
// holds h for the task.
func (r *RerunRequest) OldFreed(h Held) []Action {
	if r.phase != rerunFreeing {
		return nil
	}
	if h != HeldThis {
		// Cancelled while its old copy was freed (and perhaps claimed by another request
		// since, which runs it).
		r.phase = rerunDropped
		return nil
	}
	r.phase = rerunStarted
	return []Action{Start{Task: r.Task}}
}

// Task is what the planner needs of a task's spec to run it again.
type Task struct {
	ID         ids.TaskID
	Attempt    int32
	MaxRetries int32
	// Object is the return the run recreates (RerunRequest.Object; zero: the first). A
	// task of several returns makes them all again; the others keep their values (their
	// owner keeps a value it still has rather than the new one).
	Object ids.ObjectID
	// ArgsLost: the value the run replaces is an OBJECT_LOST error (RerunRequest.Old): the
	// task's last attempt failed because an argument could not be read, before its
	// function ran. The run then uses none of its retries (it runs the function for the
	// first time; Ray's task would have waited for its argument instead of failing).
	ArgsLost bool
}

// ArgsLostValue reports whether old, the value a rerun replaces, is an attempt's failure
// on a lost argument (Task.ArgsLost).
func ArgsLostValue(old Value) bool { return old.Failed && old.Err == pb.ErrorInfo_OBJECT_LOST }

// Restart plans the run a Start asked for, of task t whose ref arguments (in the spec's
// order) are args: a new attempt, which counts against the task's retries as Ray counts
// a resubmission for lineage reconstruction (its max_retries bounds both); the return's
// future made pending again (a Get that read the old value meanwhile waits again); the
// arguments held; the arguments that are gone recreated first (recursively: each goes
// through Lost and its own task's shard); and the task dispatched once its arguments are
// ready, so that it runs after them.
//
// A task with no retries left (MaxRetries 0, or every retry used by failures and earlier
// reconstructions; -1 has no limit) does not run again: Restart answers NoRetries alone,
// and the object it was to recreate fails instead (Ray's
// ObjectReconstructionFailedMaxAttemptsExceededError). Its arguments are not touched.
// Except when its last attempt failed on a lost argument before its function ran
// (t.ArgsLost): then the run is the function's first, and gets one more retry, so that
// it uses none.
//
// An argument is recreated when its bytes are on a node that is gone, or when its value
// was freed while the lineage record of its task was kept (nothing needed it until now).
// Each is asked for once, however often the task takes it.
//
// The runtime takes the holds HoldArgs names before it reads the facts in args: a fact
// read first could be stale by the time of the hold (a ready value freed in between by
// its last other reference, which Restart then neither recreates nor finds held), and the
// task would run without that argument.
func Restart(t Task, args []Object) []Action {
	retries := t.MaxRetries
	switch {
	case t.ArgsLost && t.MaxRetries >= 0:
		retries++ // the function has not run: this run is not a retry
	case !t.RetriesLeft():
		return []Action{NoRetries{Task: t.ID, Object: object(t.ID, t.Object), Attempt: t.Attempt, MaxRetries: t.MaxRetries}}
	}
	argIDs := make([]ids.ObjectID, len(args))
	for i, a := range args {
		argIDs[i] = a.ID
	}
	acts := []Action{
		NewAttempt{Task: t.ID, Attempt: t.Attempt + 1, MaxRetries: retries},
		ResetFuture{Object: object(t.ID, t.Object)},
		HoldArgs{Task: t.ID, Args: argIDs},
	}
	for i, a := range args {
		gone := a.State == Ready && a.Value.InStore && a.Value.Gone
		freed := a.State == Unknown && a.Record && isReturn(a.ID)
		if (gone || freed) && !seenBefore(argIDs, i) {
			acts = append(acts, Reconstruct{Object: a.ID})
		}
	}
	return append(acts, AwaitArgs{Task: t.ID, Args: argIDs})
}

// RetriesLeft reports whether t may run again: its attempts so far (the first run is
// attempt 0; each retry and each reconstruction adds one) are fewer than MaxRetries, or
// MaxRetries is negative (no limit).
func (t Task) RetriesLeft() bool { return t.MaxRetries < 0 || t.Attempt < t.MaxRetries }

// ArgsLost plans the retry of a task whose attempt failed because an argument could not
// be read (OBJECT_LOST), before it is sent again: the arguments whose bytes are on a node
// that is gone are recreated (Reconstruct). args are the task's ref arguments; their Gone
// may come from dialing the node (the worker that failed to read an argument may have
// learned of its node's death before the owner did), so the I/O layer calls this off the
// shard's loop, and passes those of the Reconstructs that Lost accepted to
// ArgsRecreating.
func ArgsLost(args []Object) []Action {
	var acts []Action
	for i, a := range args {
		if a.State == Ready && a.Value.InStore && a.Value.Gone && !seenBeforeObj(args, i) {
			acts = append(acts, Reconstruct{Object: a.ID})
		}
	}
	return acts
}

// ArgsRecreating finishes ArgsLost: task waits for the arguments being recreated and
// runs after them; when none is, it is placed again as an ordinary retry.
func ArgsRecreating(task ids.TaskID, recreating []ids.ObjectID) Action {
	if len(recreating) == 0 {
		return Place{Task: task}
	}
	return AwaitArgs{Task: task, Args: recreating}
}

// seenBefore reports whether l[i] occurs in l[:i] (argument lists are short).
func seenBefore(l []ids.ObjectID, i int) bool {
	for _, id := range l[:i] {
		if id == l[i] {
			return true
		}
	}
	return false
}

func seenBeforeObj(l []Object, i int) bool {
	for _, o := range l[:i] {
		if o.ID == l[i].ID {
			return true
		}
	}
	return false
}
