package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/internal/pb"
	"github.com/ray-go/ray/tasks"
)

// DefaultInlineLimit is the largest result returned inline to its owner (DESIGN §4).
const DefaultInlineLimit = 100 << 10

// Env is what a worker needs from its node and process.
type Env struct {
	Node        ids.NodeID
	InlineLimit int
	// Store returns the node's store shard (resolved once by the caller).
	Store func() *actor.PID
	// Context builds the context a task runs with: it must carry the runtime so the task
	// can submit nested tasks and Get, and tell raylet when it blocks.
	Context func(parent context.Context, spec *pb.TaskSpec, raylet *actor.PID) context.Context
	// Fetch returns the bytes of an argument that lives in an object store.
	Fetch  func(ctx context.Context, arg *pb.Arg) ([]byte, error)
	Logger *slog.Logger
}

// Validate checks that every required field is set.
func (e *Env) Validate() error {
	switch {
	case e.Store == nil:
		return errors.New("worker: Env.Store is required")
	case e.Context == nil:
		return errors.New("worker: Env.Context is required")
	case e.Fetch == nil:
		return errors.New("worker: Env.Fetch is required")
	}
	return nil
}

// Props returns the props of a worker grain.
func Props(env Env) *actor.Props {
	if env.InlineLimit <= 0 {
		env.InlineLimit = DefaultInlineLimit
	}
	if env.Logger == nil {
		env.Logger = slog.Default()
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Worker{env: env, running: make(map[ids.TaskID]*run), results: make(map[string]*ownerBatch)}
	})
}

type run struct {
	cancel    context.CancelFunc
	cancelled bool
}

// finished is a local completion message from a task goroutine to its grain.
type finished struct {
	id     ids.TaskID
	owner  *pb.PID
	result *pb.TaskResult
}

type flush struct{}

type ownerBatch struct {
	pid     *actor.PID
	results []*pb.TaskResult
}

// Worker is the grain's actor; its fields are owned by its mailbox.
type Worker struct {
	env     Env
	base    context.Context
	stop    context.CancelFunc
	raylet  *actor.PID
	running map[ids.TaskID]*run
	done    [][]byte
	results map[string]*ownerBatch
	flushOn bool
}

// Receive handles one message.
func (w *Worker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		w.base, w.stop = context.WithCancel(context.Background())
	case *pb.TaskBatch:
		if s := ctx.Sender(); s != nil {
			w.raylet = s
		}
		for _, spec := range m.Tasks {
			w.start(ctx, spec)
		}
	case *finished:
		w.finish(ctx, m)
	case flush:
		w.flush(ctx)
	case *pb.CancelTask:
		id, err := ids.TaskIDFromBytes(m.TaskId)
		if err != nil {
			return
		}
		if r, ok := w.running[id]; ok {
			r.cancelled = true
			r.cancel()
		}
	case *actor.Stopping:
		if w.stop != nil {
			w.stop()
		}
	}
}

func (w *Worker) start(ctx actor.Context, spec *pb.TaskSpec) {
	id, err := ids.TaskIDFromBytes(spec.TaskId)
	if err != nil {
		w.env.Logger.Error("worker: dropping a task spec with a bad ID", "err", err)
		return
	}
	if _, dup := w.running[id]; dup {
		return // idempotent: a resent batch does not run a task twice
	}
	tctx, cancel := context.WithCancel(w.base)
	w.running[id] = &run{cancel: cancel}
	self, root, raylet := ctx.Self(), ctx.ActorSystem().Root, w.raylet
	go func() {
		res := w.execute(tctx, root, spec, raylet)
		cancel()
		root.Send(self, &finished{id: id, owner: spec.Owner, result: res})
	}()
}

func (w *Worker) finish(ctx actor.Context, m *finished) {
	r, ok := w.running[m.id]
	if !ok {
		return
	}
	delete(w.running, m.id)
	if r.cancelled {
		m.result = &pb.TaskResult{TaskId: m.result.TaskId, Attempt: m.result.Attempt, Error: &pb.ErrorInfo{
			Kind: pb.ErrorInfo_CANCELLED, TaskId: m.result.TaskId, Message: "task was cancelled", NodeId: string(w.env.Node),
			Function: functionOf(m.result),
		}}
	}
	w.done = append(w.done, m.id[:])
	if m.owner != nil {
		key := m.owner.Address + "/" + m.owner.Id
		b := w.results[key]
		if b == nil {
			b = &ownerBatch{pid: actor.NewPID(m.owner.Address, m.owner.Id)}
			w.results[key] = b
		}
		b.results = append(b.results, m.result)
	}
	if !w.flushOn {
		w.flushOn = true
		ctx.Send(ctx.Self(), flush{})
	}
}

func functionOf(r *pb.TaskResult) string {
	if r.Error != nil {
		return r.Error.Function
	}
	return ""
}

func (w *Worker) flush(ctx actor.Context) {
	w.flushOn = false
	// TaskDone goes first: an owner that retries a failed task must find its resources
	// returned (the raylet's mailbox gets this before any resubmission can be sent).
	if len(w.done) > 0 && w.raylet != nil {
		ctx.Send(w.raylet, &pb.TaskDone{TaskIds: w.done})
	}
	w.done = nil
	for key, b := range w.results {
		if len(b.results) == 1 {
			ctx.Send(b.pid, b.results[0])
		} else {
			ctx.Send(b.pid, &pb.ResultBatch{Results: b.results})
		}
		delete(w.results, key)
	}
}

// execute runs one task and returns its result; it never panics.
func (w *Worker) execute(ctx context.Context, root *actor.RootContext, spec *pb.TaskSpec, raylet *actor.PID) (res *pb.TaskResult) {
	res = &pb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt}
	fail := func(kind pb.ErrorInfo_Kind, msg, stack string) *pb.TaskResult {
		res.Data, res.InStore = nil, false
		res.Error = &pb.ErrorInfo{Kind: kind, Function: spec.Function, TaskId: spec.TaskId, Message: msg, Stack: stack, NodeId: string(w.env.Node)}
		return res
	}
	defer func() {
		if p := recover(); p != nil {
			res = fail(pb.ErrorInfo_PANIC, fmt.Sprintf("panic: %v", p), string(debug.Stack()))
		}
	}()
	fn, ok := tasks.Lookup(spec.Function)
	if !ok {
		return fail(pb.ErrorInfo_UNKNOWN_FUNCTION, (&tasks.UnknownFunctionError{Name: spec.Function}).Error(), "")
	}
	args := make([][]byte, len(spec.Args))
	for i, a := range spec.Args {
		if !a.IsRef || a.Data != nil {
			args[i] = a.Data
			continue
		}
		b, err := w.env.Fetch(ctx, a)
		if err != nil {
			return fail(pb.ErrorInfo_OBJECT_LOST, fmt.Sprintf("argument %d: %v", i+1, err), "")
		}
		args[i] = b
	}
	out, err := fn.Call(w.env.Context(ctx, spec, raylet), args)
	if err != nil {
		var te interface{ ErrorInfo() *pb.ErrorInfo }
		if errors.As(err, &te) && te.ErrorInfo() != nil && ctx.Err() == nil {
			// A nested task's error surfaced unchanged: keep its origin, as Ray does.
			return fail(pb.ErrorInfo_APPLICATION, err.Error(), te.ErrorInfo().Stack)
		}
		return fail(pb.ErrorInfo_APPLICATION, err.Error(), "")
	}
	res.Size = int64(len(out))
	if len(out) > w.env.InlineLimit {
		store := w.env.Store()
		if store == nil {
			return fail(pb.ErrorInfo_SYSTEM, "no object store shard on this node", "")
		}
		// Fire-and-forget is safe: the shard's mailbox is FIFO, and anyone who reads the
		// object learns of it from this result, which is sent after the put is enqueued.
		tid, _ := ids.TaskIDFromBytes(spec.TaskId)
		oid := ids.ReturnID(tid, 1)
		root.Send(store, &pb.PutObject{ObjectId: oid[:], Data: out, Owner: spec.Owner})
		res.InStore, res.NodeId = true, string(w.env.Node)
		return res
	}
	res.Data = out
	return res
}
