package ray

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// Sentinel errors, to branch on with errors.Is.
var (
	// ErrNotInitialized: the context does not come from Init (or from a running task).
	ErrNotInitialized = errors.New("ray: context carries no runtime; use the context returned by ray.Init, or the one a task receives")
	// ErrShutdown: the runtime was shut down.
	ErrShutdown = core.ErrShutdown
	// ErrUnknownFunction: no remote function of that name is registered in this program.
	ErrUnknownFunction = errors.New("ray: unknown remote function")
	// ErrInfeasible: no node of the cluster can ever satisfy the task's resources.
	ErrInfeasible = sched.ErrInfeasible
	// ErrObjectLost: an object's value is gone (released, or its bytes cannot be found).
	ErrObjectLost = core.ErrObjectLost
	// ErrCancelled: the task was cancelled with Cancel.
	ErrCancelled = errors.New("ray: task cancelled")
	// ErrObjectTooLarge: a value is larger than the whole object store of its node, whether
	// Put or a task returns it (a *TaskError matches it then). See the README's "Object
	// sizes".
	ErrObjectTooLarge = core.ErrObjectTooLarge
	// ErrNoCredentials: Init was to join a secure cluster without credentials (a join
	// token, or GCS credential files), or the cluster refused them.
	ErrNoCredentials = errors.New("ray: no valid credentials for the cluster")
	// ErrDriverContext: a task called Get or Wait, and had to wait, through a driver's
	// context (the one Init returned, saved somewhere the task reaches) instead of the ctx
	// the task function received. Only a task's own ctx lends its CPU back while it waits;
	// without that, tasks waiting on every CPU of a node would deadlock it. Pass the task's
	// ctx (or one derived from it) to Get and Wait inside tasks.
	ErrDriverContext = core.ErrDriverContext
	// ErrEncode: a value cannot be encoded to be sent to a task or stored.
	ErrEncode = errors.New("ray: cannot encode value")
	// ErrGCSFull: the GCS (etcd) is at its space quota, so something that had to be
	// written there was not. A call to an exactly-once actor that could not be logged
	// fails with a *TaskError that matches it (the call did not run; the actor lives on
	// and takes calls again once the GCS has space), and so does an actor whose record
	// could not be written (it also matches ErrActorDied: it was never created), and any
	// API error that wraps the store's refusal (a named actor's Remote, a placement group,
	// Kill). The error's message says what to do: free GCS space (end actors and jobs no
	// longer needed; give an exactly-once actor a Checkpointer or make it AtMostOnce) or
	// raise the quota. See the README's "Long-running clusters".
	ErrGCSFull = gcs.ErrNoSpace
	// ErrClusterLost: a driver's cluster is gone: its GCS has not answered for longer than
	// the driver waits (60 s after the driver's lease lapsed, RAY_GCS_RECONNECT_TIMEOUT; as
	// Ray's gcs_rpc_server_reconnect_timeout_s), because the head was stopped or is
	// unreachable. From then on every pending and later Get and Remote of the driver fails
	// with an error that matches it (a *TaskError for a task's or actor call's result; an
	// actor call's does not match ErrActorDied, the actor may live on) and says where the
	// GCS was and what to do. What was ready stays ready: Get reads it, Wait returns it, and
	// Wait fails with it only when fewer than NumReady refs are ready (see Wait).
	// A shorter outage (a head restarted on its session dir) fails nothing. See the
	// README's "Fault tolerance".
	ErrClusterLost = core.ErrClusterLost
)

// TaskError is a task that failed: its function returned an error, panicked, or the
// runtime could not run it. Get returns it for the task's result and for every task that
// depended on that result.
type TaskError struct {
	Function string // the remote function's registered name
	TaskID   string
	Message  string // the remote error's text (or the panic value)
	Stack    string // the remote stack for panics
	Node     string // the node it ran on
	Panic    bool
	kind     pb.ErrorInfo_Kind
}

func (e *TaskError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ray: task %s (%s) failed", e.Function, shortID(e.TaskID))
	if e.Panic {
		b.WriteString(" with a panic")
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// Is lets errors.Is match ErrCancelled, ErrObjectLost, ErrActorDied, ErrObjectTooLarge,
// ErrPlacementGroupRemoved, ErrGCSFull and ErrClusterLost (the task's own failure), and
// ErrInfeasible and ErrUnknownFunction through nesting: a task that returned, unchanged or
// wrapped with %w, the error of a task it submitted that could not be placed or named no
// registered function, at any depth (as Ray's RayTaskError keeps its cause). The other
// sentinels match only the failure of the task whose result was asked for: a nested
// task's *TaskError returned by its parent keeps its text and stack, not its kind.
func (e *TaskError) Is(target error) bool {
	switch target {
	case ErrInfeasible, ErrUnknownFunction:
		// The task's function returned the error Get gave it: the wire form keeps its
		// text, which begins with the sentinel's (fromInfo), wherever it was wrapped.
		return e.kind == pb.ErrorInfo_APPLICATION && strings.Contains(e.Message, target.Error()+": ")
	case ErrClusterLost:
		// The runtime failed the task or call itself (a system error; or an actor that
		// could not be created, which died of it): the wire form has no kind of its own
		// for it.
		return (e.kind == pb.ErrorInfo_SYSTEM || e.kind == pb.ErrorInfo_ACTOR_DIED) &&
			strings.Contains(e.Message, ErrClusterLost.Error())
	case ErrGCSFull:
		// An actor whose record could not be written died of it: the wire form has one
		// kind (ACTOR_DIED), and the store's refusal is in its message.
		return e.kind == pb.ErrorInfo_GCS_FULL ||
			(e.kind == pb.ErrorInfo_ACTOR_DIED && strings.Contains(e.Message, gcs.ErrNoSpace.Error()))
	case ErrObjectTooLarge:
		return e.kind == pb.ErrorInfo_OBJECT_TOO_LARGE
	case ErrPlacementGroupRemoved:
		return e.kind == pb.ErrorInfo_PLACEMENT_GROUP_REMOVED
	case ErrCancelled:
		return e.kind == pb.ErrorInfo_CANCELLED
	case ErrObjectLost:
		return e.kind == pb.ErrorInfo_OBJECT_LOST
	case ErrActorDied:
		return e.kind == pb.ErrorInfo_ACTOR_DIED
	}
	return false
}

// ErrorInfo returns the wire form, so a task that returns this error unchanged keeps its
// origin.
func (e *TaskError) ErrorInfo() *pb.ErrorInfo {
	id, _ := ids.ParseTaskID(e.TaskID)
	return &pb.ErrorInfo{Kind: e.kind, Function: e.Function, TaskId: id[:], Message: e.Message, Stack: e.Stack, NodeId: e.Node}
}

func shortID(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// infeasibleHint ends the error of a task or actor that asks for more of a resource than
// any node has: what to do about it.
const infeasibleHint = " (no node of the cluster has that much: ask for less, or add a node that has it: " +
	"rayctl start --num-cpus, --num-gpus or --resources; for the local cluster of ray.Init, WithNumCPUs, WithNumGPUs or WithResources)"

// fromInfo turns the wire form of a failure into the error users see.
func fromInfo(info *pb.ErrorInfo) error {
	switch info.Kind {
	case pb.ErrorInfo_INFEASIBLE:
		// The message of a placement's error says "sched: infeasible" already.
		msg, cut := strings.CutPrefix(info.Message, ErrInfeasible.Error()+": ")
		hint := ""
		// The advice is about a task's own resources; a placement group's error says
		// what its group needs instead.
		if (cut || strings.HasPrefix(msg, "task requires")) && !strings.Contains(msg, "placement group") {
			hint = infeasibleHint
		}
		return fmt.Errorf("%w: %s: %s%s", ErrInfeasible, info.Function, msg, hint)
	case pb.ErrorInfo_UNKNOWN_FUNCTION:
		return fmt.Errorf("%w: %s", ErrUnknownFunction, info.Message)
	}
	tid, _ := ids.TaskIDFromBytes(info.TaskId)
	return &TaskError{
		Function: info.Function, TaskID: tid.String(), Message: info.Message, Stack: info.Stack,
		Node: info.NodeId, Panic: info.Kind == pb.ErrorInfo_PANIC, kind: info.Kind,
	}
}

// convert maps runtime errors to the public ones.
func convert(err error) error {
	if err == nil {
		return nil
	}
	var oe *core.ObjectError
	if errors.As(err, &oe) {
		return fromInfo(oe.Info)
	}
	var se *core.SubmitError
	if errors.As(err, &se) {
		return fromInfo(se.Info)
	}
	return err
}
