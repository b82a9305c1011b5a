package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/spin"
	"github.com/ray-go/ray/tasks/worker"
)

// TaskContext is carried in the context.Context of a driver and of every running task:
// the runtime, the current task (parent of what it submits) and its counters.
type TaskContext struct {
	Core *Core
	Task ids.TaskID
	// seed is what the IDs of the tasks and objects this task creates derive from: Task,
	// or for a retry ids.AttemptTaskID(Task, attempt) (zero: Task).
	seed ids.TaskID
	// Worker is the worker grain running this task (nil in a driver): Get tells it when
	// the task blocks so its CPU can be lent out.
	Worker *actor.PID
	// Spec is the running task's spec (nil in a driver).
	Spec *pb.TaskSpec
	// Actor is the ID (hex) of the actor whose method or constructor runs ("" otherwise).
	Actor string
	// ActorResources are the resources that actor holds (its calls' specs have none).
	ActorResources []*pb.ResourceQty
	// Nested are the refs inside the task's return value, registered for its owner
	// (RefPayloads, for TaskResult.nested; set by the task's goroutine before it returns).
	Nested [][]byte
	// Meta is what the task attached to its result (ray.SetResultMetadata).
	Meta []byte

	children atomic.Uint64
	puts     atomic.Uint32
	// spinning is set while one of the task's goroutines polls for what it waits for
	// (spinRecv): the others block at once. waits says whether the task's waits are short
	// enough to poll for.
	spinning atomic.Bool
	waits    spin.Policy
	// blockedWaits counts the task's goroutines blocked in a Get or Wait: with any, none
	// polls (spin.RecvAlone).
	blockedWaits atomic.Int32
	blockMu      sync.Mutex // orders the worker's TaskBlocked and TaskUnblocked (beginBlocked)
}

type ctxKey struct{}

// ErrDriverContext: a task waited (Get, Wait) through a driver's context instead of its own.
// Only the task's own context lends the task's CPU back while it waits; a task that holds
// its CPU while it waits can deadlock the node (every CPU held by waiting tasks, none left
// for what they wait for).
var ErrDriverContext = errors.New("ray: a task waited through the driver's context (the one ray.Init returned), " +
	"which cannot lend the task's CPU back while it waits and can deadlock the node: " +
	"use the ctx the task function received (or one derived from it)")

// WithTask returns ctx carrying tc.
func WithTask(ctx context.Context, tc *TaskContext) context.Context {
	return context.WithValue(ctx, ctxKey{}, tc)
}

// FromContext returns the TaskContext carried by ctx.
func FromContext(ctx context.Context) (*TaskContext, bool) {
	tc, ok := ctx.Value(ctxKey{}).(*TaskContext)
	return tc, ok && tc != nil
}

// NewDriver returns the TaskContext of a driver: a root task with a random ID.
func (c *Core) NewDriver() *TaskContext {
	return &TaskContext{Core: c, Task: ids.NewRootTaskID()}
}

// NestedOf returns the refs the task of ctx returned (see TaskContext.Nested).
func NestedOf(ctx context.Context) [][]byte {
	if tc, ok := FromContext(ctx); ok {
		return tc.Nested
	}
	return nil
}

// MetaOf returns the metadata the task of ctx attached to its result (see TaskContext.Meta).
func MetaOf(ctx context.Context) []byte {
	if tc, ok := FromContext(ctx); ok {
		return tc.Meta
	}
	return nil
}

// taskCtx is the context a task or an actor call runs with: parent carrying its
// TaskContext, as WithTask makes, in one allocation instead of two (every task and call
// pays for it).
type taskCtx struct {
	context.Context // the parent
	tc              TaskContext
}

func (t *taskCtx) Value(key any) any {
	if _, ok := key.(ctxKey); ok {
		return &t.tc
	}
	return t.Context.Value(key)
}

func (t *taskCtx) String() string {
	return fmt.Sprintf("%v.WithValue(ray task %s)", t.Context, t.tc.Task)
}

// workerCtx is the context a task runs with on a worker: the task's own context (its
// cancellation: done when the task is cancelled or returns, or its lease ends) carrying
// its TaskContext, both in one allocation (every task pays for it).
type workerCtx struct {
	worker.TaskCtx // Deadline, Done, Err
	tc             TaskContext
}

func (t *workerCtx) Value(key any) any {
	if _, ok := key.(ctxKey); ok {
		return &t.tc
	}
	return t.TaskCtx.Value(key)
}

func (t *workerCtx) String() string {
	return fmt.Sprintf("%v.WithValue(ray task %s)", &t.TaskCtx, t.tc.Task)
}

// TaskContextFor builds the context a worker runs spec with under parent (its lease's
// context), and the task's own context within it, whose cancellation ends both (see
// worker.Env.Context).
func (c *Core) TaskContextFor(parent context.Context, spec *pb.TaskSpec, grain *actor.PID) (*worker.TaskCtx, context.Context) {
	tid, _ := ids.TaskIDFromBytes(spec.TaskId)
	t := &workerCtx{}
	t.TaskCtx.Init(parent)
	t.tc.Core, t.tc.Task, t.tc.seed, t.tc.Worker, t.tc.Spec = c, tid, ids.AttemptTaskID(tid, spec.Attempt), grain, spec
	return &t.TaskCtx, t
}

// ActorCallContext builds the context an actor method (or constructor) runs with on an
// instance of the given incarnation of actor actorID (hex). A later incarnation replaying a logged call creates
// tasks and objects with IDs of its own: the first run's children may still be queued or
// running for the dead instance's runtime, and a scheduler would drop the replay's as
// their duplicates.
// resources are what the actor holds (GetRuntimeContext reports them).
func (c *Core) ActorCallContext(parent context.Context, spec *pb.TaskSpec, actorID string, incarnation uint64, resources []*pb.ResourceQty) context.Context {
	tid, _ := ids.TaskIDFromBytes(spec.TaskId)
	seed := ids.AttemptTaskID(tid, spec.Attempt)
	if incarnation > 1 {
		seed = ids.AttemptTaskID(seed, int32(incarnation-1))
	}
	t := &taskCtx{Context: parent}
	t.tc.Core, t.tc.Task, t.tc.seed, t.tc.Spec, t.tc.Actor, t.tc.ActorResources = c, tid, seed, spec, actorID, resources
	return t
}

// idSeed is what the IDs of the tasks and objects tc's task creates derive from.
func (tc *TaskContext) idSeed() ids.TaskID {
	if tc.seed == (ids.TaskID{}) {
		return tc.Task
	}
	return tc.seed
}
