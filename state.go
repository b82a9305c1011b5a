package ray

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/taskstate"
)

// The state API for tasks (Ray's ray.util.state.list_tasks, get_task, summarize_tasks and
// ray.timeline): every process records the tasks and actor calls it submitted (one record
// per attempt that ended, plus the ones in flight), keeps them in memory (WithTaskEvents),
// and answers queries on demand; these functions ask every process of the job, through
// the GCS, and merge the answers. `rayctl list tasks`, `rayctl summary tasks` and `rayctl
// timeline` print the same.

// The states a TaskInfo can be in (Ray's names).
const (
	TaskPendingArgs = core.StatePendingArgs // waiting for its arguments
	TaskPendingNode = core.StatePendingNode // waiting for a node and a worker
	TaskRunning     = core.StateRunning     // pushed to a worker: running, or queued behind the task it runs
	TaskFinished    = core.StateFinished
	TaskFailed      = core.StateFailed
	TaskCancelled   = core.StateCancelled
	TaskRetried     = core.StateRetried // an attempt that failed and was retried
)

// TaskInfo is one attempt of a task or actor call. Times not known are zero. Started is
// the owner's estimate (when the result arrived, less how long the worker ran the body;
// of an attempt still running, or whose worker process died as it ran: when it was
// pushed to its worker).
type TaskInfo struct {
	TaskID                                           string
	Attempt                                          int
	Function                                         string // the task's registered name, or Class.Method for an actor call
	State                                            string // one of the Task* state constants
	Job                                              string
	ActorCall                                        bool
	Node                                             string // where it ran (an actor call: the node of the actor's incarnation that ran it)
	Worker                                           string // the worker grain, or the actor's ID
	ActorIncarnation                                 int    // an actor call's: the incarnation of its actor that ran it (1 first, one more per restart; 0 not sent yet)
	OwnerNode                                        string // the process (node ID) that submitted it
	Submitted, ArgsReady, Dispatched, Started, Ended time.Time
	ErrorType                                        string // the ErrorInfo kind of a failed attempt, e.g. APPLICATION
	Error                                            string // its message
}

// TaskFilter selects tasks: empty fields match everything.
type TaskFilter struct {
	// Job is the job whose tasks to list ("": the caller's own job; AllJobs: every job).
	Job      string
	AllJobs  bool
	State    string // one of the Task* state constants
	Function string
	Node     string // the node a task ran on (a prefix of 6 characters or more will do); an actor call's: its incarnation's node
	TaskID   string // a task ID or a prefix of it
	// Limit is how many to return, newest first (0: all).
	Limit int
}

// TaskCount is how many tasks of one function are in one state.
type TaskCount struct {
	Function string
	State    string
	Count    int
}

// ErrNoSuchTask is returned by GetTask for an ID no process of the job knows.
var ErrNoSuchTask = errors.New("ray: no such task")

// ErrPartialState matches (errors.Is) the *PartialStateError of a state API call that
// returned what the processes that answered know, without what some others know.
var ErrPartialState = errors.New("ray: partial state")

// PartialStateError is the error of a state API call (ListTasks, GetTask, SummarizeTasks,
// WriteTimeline, ListObjects, SummarizeObjects, Memory) some of whose processes did not answer in
// time (10 s, or the context's deadline), or could not be asked (a running job's driver
// or worker process whose lease lapsed: stopped, hung, cut off; `rayctl list nodes`
// shows such a driver UNREACHABLE): the call returned what the others answered,
// which lacks the records those processes hold (as Ray's state API warns of a "partial
// failure"). Branch on it with errors.As, or errors.Is(err, ErrPartialState), and use
// the results; asking again may find them answering. A process known to have exited (its
// agent recorded its exit, or this process's membership saw it go) is not asked and not
// waited for: its records went with it, and it is not named here.
type PartialStateError struct {
	// Missing names the processes (node IDs, as TaskInfo.Node and OwnerNode) that did
	// not answer or could not be asked, sorted.
	Missing []string
	// Answered is how many processes did.
	Answered int
}

func (e *PartialStateError) Error() string {
	return fmt.Sprintf("ray: partial results: the processes of %d node(s) did not answer in time or are unreachable, their records are missing (%d answered): %s",
		len(e.Missing), e.Answered, strings.Join(e.Missing, ", "))
}

// Is makes errors.Is(err, ErrPartialState) hold.
func (e *PartialStateError) Is(target error) bool { return target == ErrPartialState }

// ListTasks returns the tasks that match f, newest first, and how many matched in all
// (which may exceed f.Limit). When some processes of the job did not answer in time, it
// returns what the others answered with a *PartialStateError naming them.
func ListTasks(ctx context.Context, f TaskFilter) ([]TaskInfo, int, error) {
	rep, err := gatherTasks(ctx, f, core.TaskQuery{State: f.State, Function: f.Function, Node: f.Node, TaskID: f.TaskID, Limit: f.Limit})
	if rep == nil {
		return nil, 0, err
	}
	out := make([]TaskInfo, len(rep.Tasks))
	for i := range rep.Tasks {
		out[i] = taskInfo(&rep.Tasks[i])
	}
	return out, rep.Total, err
}

// GetTask returns every attempt known of task id (a prefix of 6 characters or more will
// do), the newest first; ErrNoSuchTask if there is none. When some processes did not
// answer in time, it returns the attempts the others know with a *PartialStateError (and
// the error of a task none of them knows matches both ErrNoSuchTask and ErrPartialState:
// a process that did not answer may know it).
func GetTask(ctx context.Context, id string) ([]TaskInfo, error) {
	if len(id) < 6 {
		return nil, fmt.Errorf("ray: GetTask: give at least 6 characters of the task ID, got %q", id)
	}
	tasks, _, err := ListTasks(ctx, TaskFilter{TaskID: strings.ToLower(id)})
	var partial *PartialStateError
	if err != nil && !errors.As(err, &partial) {
		return nil, err
	}
	if len(tasks) == 0 {
		if partial != nil {
			return nil, fmt.Errorf("%w: %s (%w)", ErrNoSuchTask, id, partial)
		}
		return nil, fmt.Errorf("%w: %s", ErrNoSuchTask, id)
	}
	return tasks, err
}

// SummarizeTasks counts the job's tasks by function and state (f's Job, AllJobs and
// filters apply; Limit does not). Counts without some processes' come with a
// *PartialStateError, as ListTasks.
func SummarizeTasks(ctx context.Context, f TaskFilter) ([]TaskCount, error) {
	rep, err := gatherTasks(ctx, f, core.TaskQuery{State: f.State, Function: f.Function, Node: f.Node, TaskID: f.TaskID, Limit: -1, Summary: true})
	if rep == nil {
		return nil, err
	}
	out := make([]TaskCount, len(rep.Summary))
	for i, c := range rep.Summary {
		out[i] = TaskCount{Function: c.Function, State: c.State, Count: c.Count}
	}
	return out, err
}

// WriteTimeline writes the job's tasks (f selects them; its Limit bounds how many) as a
// Chrome trace (JSON that Perfetto and chrome://tracing open): a track per worker, a span
// per task attempt that ran, an arrow from a task to each task that took its result as an
// argument. Ray's ray.timeline. When some processes did not answer in time, it writes
// the others' tasks and returns a *PartialStateError.
func WriteTimeline(ctx context.Context, w io.Writer, f TaskFilter) error {
	rep, err := gatherTasks(ctx, f, core.TaskQuery{State: f.State, Function: f.Function, Node: f.Node, TaskID: f.TaskID, Limit: f.Limit, Edges: true})
	if rep == nil {
		return err
	}
	if werr := taskstate.WriteTimeline(w, rep); werr != nil {
		return werr
	}
	return err
}

func gatherTasks(ctx context.Context, f TaskFilter, q core.TaskQuery) (*core.TaskReport, error) {
	n := nodeOf(ctx)
	if n == nil {
		return nil, errors.New("ray: the state API needs the context ray.Init returned")
	}
	job := f.Job
	if job == "" && !f.AllJobs {
		job = string(n.Core.Job())
	}
	if q.Limit < 0 {
		q.Limit = 1 // a summary: the counts are what is wanted
	}
	res, err := taskstate.Gather(ctx, n.GCS(), job, q, taskstate.Options{Local: n.Core, LocalNode: n.ID, Dead: n.KnownExited})
	if err != nil {
		return nil, rayErrorf("ray: %w", err)
	}
	return &res.TaskReport, partialError(res.Missing, res.Processes)
}

// partialError is the *PartialStateError of a gather that missed the answers of missing
// (nil when none).
func partialError(missing []string, answered int) error {
	if len(missing) == 0 {
		return nil
	}
	m := slices.Clone(missing)
	slices.Sort(m)
	return &PartialStateError{Missing: m, Answered: answered}
}

func taskInfo(e *core.TaskEvent) TaskInfo {
	t := func(ns int64) time.Time {
		if ns == 0 {
			return time.Time{}
		}
		return time.Unix(0, ns)
	}
	return TaskInfo{TaskID: e.TaskID, Attempt: e.Attempt, Function: e.Function, State: e.State, Job: e.Job, ActorCall: e.Actor,
		Node: e.Node, Worker: e.Worker, ActorIncarnation: e.Incarnation, OwnerNode: e.Owner, Submitted: t(e.Submitted), ArgsReady: t(e.Ready),
		Dispatched: t(e.Dispatched), Started: t(e.Started), Ended: t(e.Ended), ErrorType: e.ErrorKind, Error: e.Error}
}
