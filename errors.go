package ray

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
	"github.com/ray-go/ray/tasks/worker"
)

// Sentinel errors, to branch on with errors.Is.
var (
	// ErrNotInitialized: the context does not come from Init (or from a running task).
	ErrNotInitialized = errors.New("ray: context carries no runtime; use the context returned by ray.Init, or the one a task receives")
	// ErrShutdown: the runtime was shut down.
	ErrShutdown = core.ErrShutdown
	// ErrUnknownFunction: no remote function of that name is registered in this program.
	ErrUnknownFunction = errors.New("ray: unknown remote function")
	// ErrInfeasible: no node of the cluster can ever satisfy the task's resources. A task
	// that only a node not reachable for now could run (one that has just started and that
	// the submitting process's membership has not seen yet, one whose connection broke, or a
	// machine just started whose worker process for the job is starting) waits for it
	// instead, and fails with ErrInfeasible once that node is known dead.
	ErrInfeasible = sched.ErrInfeasible
	// ErrObjectLost: an object's value is gone (released, or its bytes cannot be found).
	// An object lost with its node whose task cannot run again on any node (lineage
	// reconstruction found it infeasible) fails with a *TaskError that matches it and
	// ErrInfeasible, and says which object was lost with which node and why.
	ErrObjectLost = core.ErrObjectLost
	// ErrOwnerDied: an object is lost because its owner died: the driver or worker process
	// that created it (with Put, or by submitting its task) exited, and the object could
	// not be made again (an object made by Put never can; a task's result can from its
	// lineage, and fails so only when that did not work). Errors that match it match
	// ErrObjectLost too (Ray's OwnerDiedError, an ObjectLostError), and say which object,
	// which owner and what to do: keep the owner running while others use its objects, or
	// return the value from a task.
	ErrOwnerDied = errors.New("ray: the object's owner died")
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
	// ErrEncode: a value cannot be encoded to be sent to a task or stored. Init fails with
	// it when a registered remote function, actor constructor or method has an argument or
	// result type that cannot be (a channel, an unexported field that holds data, ...;
	// see objects/codec), naming each; a value passed as any is checked when it is sent.
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
	// ErrActorCallSent: Cancel of an actor call already sent that cannot be taken back:
	// one sent to an exactly-once actor (it is in the actor's method log, which a restart
	// replays). The error's message says so. A call to an AtMostOnce actor is taken back
	// while it waits there, also while the actor restarts. See Cancel.
	ErrActorCallSent = core.ErrActorCallSent
)

// TaskError is a task that failed: its function returned an error, panicked, or the
// runtime could not run it. Get returns it for the task's result and for every task that
// depended on that result.
//
// The error the function returned crosses the process boundary as its text (Message),
// unless its type is registered with RegisterError: then the error itself comes back too,
// fields included, and errors.As(err, &myErr) finds it (Unwrap returns it), however deep
// in the function's error it was and through tasks that returned it again.
type TaskError struct {
	Function string // the remote function's registered name
	TaskID   string
	Message  string // the remote error's text (for a panic: "panic: " and the panic value)
	Stack    string // the remote stack for panics
	Node     string // the node it ran on
	Panic    bool
	kind     pb.ErrorInfo_Kind
	causes   []pb.ErrorInfo_Kind // what the error its function returned carried (ErrorInfo.causes)
	// cause is the registered error (RegisterError) its function returned, rebuilt from
	// errType and errData (ErrorInfo.error_type and error_data); nil for none.
	cause   error
	errType string
	errData []byte
}

// Unwrap returns the error the task's function returned (or the one inside it, at any
// depth), rebuilt in this process, when its type is registered with RegisterError: so
// errors.As(err, &myErr) finds it, with its fields. nil for an error of a type not
// registered, which reaches the caller as Message only.
func (e *TaskError) Unwrap() error { return e.cause }

func (e *TaskError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ray: task %s (%s) failed", e.Function, shortID(e.TaskID))
	msg := e.Message
	if e.Panic {
		b.WriteString(" with a panic")
		// The worker records a panic as "panic: <value>"; "with a panic" says it already.
		msg = strings.TrimPrefix(msg, "panic: ")
	}
	b.WriteString(": ")
	b.WriteString(msg)
	return b.String()
}

// sentinelKinds are the sentinel errors a task's failure can match, each with the kind of
// failure that is it (ErrorInfo.kind, or only ErrorInfo.causes for CLUSTER_LOST), in the
// kinds' order.
var sentinelKinds = []struct {
	err  error
	kind pb.ErrorInfo_Kind
}{
	{ErrCancelled, pb.ErrorInfo_CANCELLED},
	{ErrInfeasible, pb.ErrorInfo_INFEASIBLE},
	{ErrUnknownFunction, pb.ErrorInfo_UNKNOWN_FUNCTION},
	{ErrObjectLost, pb.ErrorInfo_OBJECT_LOST},
	{ErrActorDied, pb.ErrorInfo_ACTOR_DIED},
	{ErrObjectTooLarge, pb.ErrorInfo_OBJECT_TOO_LARGE},
	{ErrPlacementGroupRemoved, pb.ErrorInfo_PLACEMENT_GROUP_REMOVED},
	{ErrGCSFull, pb.ErrorInfo_GCS_FULL},
	{ErrClusterLost, pb.ErrorInfo_CLUSTER_LOST},
}

// causesOf returns the kinds of the sentinels err matches: what a task whose function
// returned err fails with besides its own APPLICATION kind (ErrorInfo.causes). A *TaskError
// inside err (a nested task's failure that Get gave the function) matches its own kind and
// causes, so they carry on at any depth; so does a sentinel the runtime returned (a
// released object's ErrObjectLost, ...), wrapped with %w or errors.Join or not at all.
func causesOf(err error) []pb.ErrorInfo_Kind {
	var ks []pb.ErrorInfo_Kind
	for _, s := range sentinelKinds {
		if errors.Is(err, s.err) {
			ks = append(ks, s.kind)
		}
	}
	return ks
}

// The workers of this process encode the errors task functions return with their causes.
func init() { worker.Causes = causesOf }

// Is lets errors.Is match ErrCancelled, ErrInfeasible, ErrUnknownFunction, ErrObjectLost
// (and ErrOwnerDied when the object was lost with its owner), ErrActorDied,
// ErrObjectTooLarge, ErrPlacementGroupRemoved, ErrGCSFull and ErrClusterLost: the task's
// own failure, and, through nesting, the failure of a task or
// actor call it waited for whose error its function returned, unchanged or wrapped with %w,
// at any depth (as Ray's RayTaskError keeps its cause), and any of these sentinels its
// function returned (a released object's ErrObjectLost, ...). The nested failure's own text
// and stack are in Message (and Stack).
func (e *TaskError) Is(target error) bool {
	if target == ErrOwnerDied {
		return (e.kind == pb.ErrorInfo_OBJECT_LOST || slices.Contains(e.causes, pb.ErrorInfo_OBJECT_LOST)) && ownerDied(e.Message)
	}
	for _, s := range sentinelKinds {
		if s.err != target {
			continue
		}
		if e.kind == s.kind || slices.Contains(e.causes, s.kind) {
			return true
		}
		switch target {
		case ErrClusterLost:
			// The runtime failed the task or call itself (a system error; or an actor
			// that could not be created, which died of it): its kind is SYSTEM or
			// ACTOR_DIED, and the loss is in its message.
			return (e.kind == pb.ErrorInfo_SYSTEM || e.kind == pb.ErrorInfo_ACTOR_DIED) &&
				strings.Contains(e.Message, ErrClusterLost.Error())
		case ErrGCSFull:
			// An actor whose record could not be written died of it: the wire form has
			// one kind (ACTOR_DIED), and the store's refusal is in its message.
			return e.kind == pb.ErrorInfo_ACTOR_DIED && strings.Contains(e.Message, gcs.ErrNoSpace.Error())
		}
		return false
	}
	return false
}

// ErrorInfo returns the wire form, so a task that returns this error unchanged keeps its
// origin.
func (e *TaskError) ErrorInfo() *pb.ErrorInfo {
	id, _ := ids.ParseTaskID(e.TaskID)
	return &pb.ErrorInfo{Kind: e.kind, Function: e.Function, TaskId: id[:], Message: e.Message, Stack: e.Stack, NodeId: e.Node,
		Causes: slices.Clone(e.causes), ErrorType: e.errType, ErrorData: e.errData}
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

// affinityHint ends the error of a task whose hard NodeAffinity names a node that is dead
// or unknown: where the IDs it takes come from.
const affinityHint = " (NodeAffinity takes the ID of one of this job's nodes, its worker process on a machine: " +
	"ray.Nodes(ctx).Alive() lists them, ray.NodeID(ctx) in a task gives its own, and `rayctl list workers` shows them as worker_id; " +
	"or a machine's agent ID, as `rayctl list nodes` and Node.AgentID show it. NodeAffinity(id, true) runs the task on another node when that one cannot)"

// fromInfo turns the wire form of a failure into the error users see.
func fromInfo(info *pb.ErrorInfo) error {
	switch info.Kind {
	case pb.ErrorInfo_INFEASIBLE:
		return infeasibleError(info)
	case pb.ErrorInfo_UNKNOWN_FUNCTION:
		return fmt.Errorf("%w: %s", ErrUnknownFunction, info.Message)
	}
	if info.Kind == pb.ErrorInfo_OBJECT_LOST && info.Function == "" && (len(info.TaskId) == 0 || ownerDied(info.Message)) {
		// An object no task made (a Put, or a ref borrowed from another process) is lost,
		// or one whose owner died (no task failed: its owner is gone): there is no task
		// to name.
		return &objectLostError{msg: info.Message, ownerDied: ownerDied(info.Message)}
	}
	tid, _ := ids.TaskIDFromBytes(info.TaskId)
	te := &TaskError{
		Function: info.Function, TaskID: tid.String(), Message: info.Message, Stack: info.Stack,
		Node: info.NodeId, Panic: info.Kind == pb.ErrorInfo_PANIC, kind: info.Kind, causes: info.Causes,
		errType: info.ErrorType, errData: info.ErrorData,
	}
	cause, err := decodeTypedError(info)
	if err != nil {
		// The type came back as text only: say why, rather than leave errors.As to fail
		// without a word.
		te.Message += " (" + err.Error() + ")"
	}
	te.cause = cause
	return te
}

// infeasibleError is the error of a task that no node can run: ErrInfeasible, its function
// and placement's reason, with what to do. Placement's reason is an *InfeasibleError that
// says "sched: infeasible" already, or a hard node affinity's ErrAffinityUnavailable,
// whose "sched: node affinity: node unavailable" is said once, as "hard node affinity".
// A rerun of lineage reconstruction that could not be placed (its error carries
// OBJECT_LOST as a cause, core.RerunFailed in its message) is a *TaskError that says which
// object was lost with which node and why recreating it failed, and matches both
// ErrObjectLost and ErrInfeasible (Ray's ObjectReconstructionFailedError).
func infeasibleError(info *pb.ErrorInfo) error {
	lost := slices.Contains(info.Causes, pb.ErrorInfo_OBJECT_LOST)
	head, msg := "", info.Message
	if lost {
		if h, m, ok := strings.Cut(msg, core.RerunFailed); ok {
			head, msg = h+core.RerunFailed, m
		}
	}
	msg, cut := strings.CutPrefix(msg, ErrInfeasible.Error()+": ")
	hint := ""
	if m, ok := strings.CutPrefix(msg, sched.ErrAffinityUnavailable.Error()+": "); ok {
		msg, hint = "hard node affinity: node "+m, affinityHint
	} else if (cut || strings.HasPrefix(msg, "task requires")) && !strings.Contains(msg, "placement group") {
		// The advice is about a task's own resources; a placement group's error says
		// what its group needs instead.
		hint = infeasibleHint
	}
	if lost {
		tid, _ := ids.TaskIDFromBytes(info.TaskId)
		return &TaskError{Function: info.Function, TaskID: tid.String(), Message: head + "infeasible: " + msg + hint,
			Node: info.NodeId, kind: info.Kind, causes: info.Causes}
	}
	return fmt.Errorf("%w: %s: %s%s", ErrInfeasible, info.Function, msg, hint)
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

// objectLostError is the loss of an object that no task made (a Put object, or a ref
// borrowed from a process that has exited), or of one whose owner died. It matches
// ErrObjectLost, and ErrOwnerDied when its owner died.
type objectLostError struct {
	msg       string
	ownerDied bool
}

func (e *objectLostError) Error() string { return "ray: " + e.msg }

func (e *objectLostError) Is(target error) bool {
	return target == ErrObjectLost || (target == ErrOwnerDied && e.ownerDied)
}

// ownerDied reports whether an OBJECT_LOST error's message says the object was lost with
// its owner (the runtime's words for that all carry core.OwnerDiedText).
func ownerDied(msg string) bool { return strings.Contains(msg, core.OwnerDiedText) }

// rayErrorf is fmt.Errorf for this package's errors, which start "ray: ", wrapping
// another (%w): when that one starts "ray: " too (ErrNoCredentials, ErrEncode, another
// of this package's errors), the message says it once, not "ray: Init: ray: no valid
// credentials ...". errors.Is and errors.As see the wrapped errors as fmt.Errorf's.
func rayErrorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	msg := err.Error()
	if !strings.Contains(msg, ": ray: ") {
		return err
	}
	return &onePrefixError{msg: strings.ReplaceAll(msg, ": ray: ", ": "), err: err}
}

// onePrefixError is err with its message msg.
type onePrefixError struct {
	msg string
	err error
}

func (e *onePrefixError) Error() string { return e.msg }
func (e *onePrefixError) Unwrap() error { return e.err }
