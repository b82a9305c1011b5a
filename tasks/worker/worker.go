package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/slab"
	"github.com/ray-go/ray/objects"
	"github.com/ray-go/ray/tasks"
)

// DefaultInlineLimit is the largest result returned inline to its owner (DESIGN §4).
const DefaultInlineLimit = 100 << 10

// maxResultBatch bounds how many results a lease holds back for its owner.
const maxResultBatch = 64

// maxResultHold bounds how long a lease holds back a result: a lease carries several tasks
// only when their class is known to run short ones, but a longer task can still follow
// (the class's estimate lags), and the results of the tasks before it must not wait for it.
// Short tasks finish tens of results within this time, so batching still pays.
const maxResultHold = time.Millisecond

// DefaultSlowAfter is how long a lease's running task may run while others wait behind it on
// the lease before those are handed back to their owner (LeaseReturned, as when the task
// blocks): an owner pipelines tasks onto a lease by their class's measured run time
// (sched.Leases' depth, about a millisecond of work), and when a task runs far longer
// than that estimate (a class whose tasks got slower, a first long task after short
// ones), the tasks behind it would otherwise wait for it although other workers could
// run them; the owner asks for another lease for them instead.
const DefaultSlowAfter = 2 * time.Millisecond

// LogReadMin: a task or actor call that ran at least this long has the end of its output
// in its worker's log read at once (TaskResult.log_end); a shorter one followed by others
// shares the next read (see Worker.run, actors' runCall).
const LogReadMin = 50 * time.Microsecond

// Env is what a worker needs from its node and process.
type Env struct {
	Node        ids.NodeID
	InlineLimit int
	// StoreBytes is the node's object store budget: a larger result fails the task with
	// objects.ErrObjectTooLarge (objects.CheckFits; 0: no limit).
	StoreBytes int64
	// Store returns the node's store shard (resolved once by the caller).
	Store func() *actor.PID
	// Raylet returns the node's scheduler, which lends a blocked task's CPU out (nil: the
	// worker does not tell it).
	Raylet func() *actor.PID
	// Context builds the context a task runs with: it must carry the runtime so the task
	// can submit nested tasks and Get, and tell worker (TaskBlocked/TaskUnblocked) when it
	// blocks. It returns the task's own cancellation, own (a TaskCtx given Init(base)), and
	// ctx, which embeds own (one allocation for both, per task): ctx's Done, Err and
	// Deadline are own's, its values own's and the runtime's. It is called with the
	// lease's lock held (the task becomes current, cancellable, with it): it only builds.
	Context func(base context.Context, spec *pb.TaskSpec, worker *actor.PID) (own *TaskCtx, ctx context.Context)
	// Fetch returns the bytes of an argument that lives in an object store. The bytes of
	// one stored on another node (arg.node_id neither empty nor this worker's node) must be
	// the caller's alone, a buffer Fetch keeps no reference to: the task's decoding may
	// alias them (tasks.WithOwnedArgs); those of this node's store may be the store's own.
	Fetch func(ctx context.Context, arg *pb.Arg) ([]byte, error)
	// Nested (optional) returns the refs inside a task's return value (see Runner.Nested).
	Nested func(ctx context.Context) [][]byte
	// Cancelled (optional) is called, on the worker grain, when a CancelTask without
	// non_recursive cancels a running task's context: the runtime of this process, which
	// owns the tasks the task submitted, cancels those not finished (Ray's recursive
	// cancellation), and those it submits later. It is called before the task's context
	// is cancelled, and must not block.
	Cancelled func(task ids.TaskID)
	// Meta returns the metadata the task run with ctx attached to its result
	// (TaskResult.meta); nil: none.
	Meta func(ctx context.Context) []byte
	// SlowAfter is how long a running task may hold the tasks queued behind it on its lease
	// before they go back to their owner (0: DefaultSlowAfter; negative: never).
	SlowAfter time.Duration
	Logger    *slog.Logger
	// LogOffset (optional) returns where the process's log file ends now: read after a
	// task's body (see LogReadMin), it gives the task's TaskResult.log_end, and the next
	// task's log_start.
	LogOffset func() int64
	// LogAt (optional, with LogOffset) keeps where the log ended when it was last read (0:
	// not yet), shared by every lease and actor of the process (one log per process): a
	// lease's first task starts there without a read of its own.
	LogAt *atomic.Int64
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
	if env.SlowAfter == 0 {
		env.SlowAfter = DefaultSlowAfter
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Worker{env: env, leases: make(map[string]*lease), idle: make(chan *lease)}
	})
}

// lease is a lease's tasks on this worker: the grain appends pushed tasks, the lease's
// goroutine (one at a time, started by the push that finds none running) runs them in
// order. Its mutex guards the fields after it.
//
// What a run of the goroutine needs is made once per lease, not per run: a lease that
// runs one task at a time (a caller that waits for each) starts a goroutine per task.
type lease struct {
	id    string
	lid   []byte     // id, for the results
	owner *actor.PID // where results and handed-back tasks go
	root  *actor.RootContext
	self  *actor.PID // the worker grain
	// mkCtx is Env.Context.
	mkCtx func(base context.Context, spec *pb.TaskSpec, worker *actor.PID) (*TaskCtx, context.Context)
	// base is the lease's own context: each task's cancellable context derives from it, so
	// that registering and dropping it touch this lease's context, not one every lease on
	// the node shares. stop cancels it when the grain forgets the lease.
	base context.Context
	stop context.CancelFunc

	// results makes the lease's results; used by its goroutine only. They go to the owner
	// in batches of up to maxResultBatch and die together.
	results slab.Slab[pb.TaskResult]
	ids     slab.Slab[ids.TaskID] // the task IDs of those results (Runner.IDs)
	// out are the results held back for the owner (see run); the hold timer flushes too.
	out struct {
		mu      sync.Mutex
		results []*pb.TaskResult
		bytes   int // of results, estimated (pb.ResultBytes)
		hold    *time.Timer
	}

	mu        sync.Mutex
	queue     []*pb.TaskSpec // not started yet
	running   bool           // a goroutine runs the queue
	released  bool           // its scheduler took it back: forget it when the goroutine ends
	current   ids.TaskID
	cancel    *TaskCtx // the current task's own context (its cancellation)
	cancelled bool     // the current task was cancelled
	blocked   bool     // the current task waits in Get: pushes are handed back
	// seq numbers the tasks the lease started. While tasks are queued, the slow timer
	// ticks every slowAfter (slowOn); a tick that finds the task it was armed in (armed:
	// its seq) still running hands the queue back (handBackSlow). One timer reset per
	// slowAfter, not per task.
	seq       uint64
	armed     uint64
	slowOn    bool
	slow      *time.Timer
	slowAfter time.Duration // Env.SlowAfter; negative: never armed
}

// armSlow starts the slow timer if tasks are queued and it is not ticking (l.mu held).
func (l *lease) armSlow() {
	if l.slowOn || l.slowAfter <= 0 || len(l.queue) == 0 {
		return
	}
	l.slowOn, l.armed = true, l.seq
	l.slow.Reset(l.slowAfter)
}

func (w *Worker) newLease(id string, owner, self *actor.PID, root *actor.RootContext) *lease {
	l := &lease{id: id, lid: []byte(id), owner: owner, root: root, self: self, mkCtx: w.env.Context, results: slab.Slab[pb.TaskResult]{N: maxResultBatch},
		ids: slab.Slab[ids.TaskID]{N: maxResultBatch}}
	l.base, l.stop = context.WithCancel(w.base)
	l.out.hold = time.AfterFunc(time.Hour, l.flushHeld)
	l.out.hold.Stop()
	l.slow = time.AfterFunc(time.Hour, l.handBackSlow)
	l.slow.Stop()
	l.slowAfter = w.env.SlowAfter
	return l
}

// handBackSlow is the slow timer's: if the task it was armed for still runs, the tasks
// queued behind it go back to their owner (see DefaultSlowAfter), and later pushes to the lease
// are queued as before (the owner's policy closes a lease that handed tasks back).
func (l *lease) handBackSlow() {
	l.mu.Lock()
	l.slowOn = false
	if !l.running || len(l.queue) == 0 {
		l.mu.Unlock()
		return
	}
	if l.seq != l.armed || l.blocked {
		l.armSlow() // tasks are moving: look again in slowAfter
		l.mu.Unlock()
		return
	}
	rest := l.queue
	l.queue = nil
	l.mu.Unlock()
	returnTasks(l.root, l.owner, l.lid, rest)
}

// forget drops a lease whose goroutine does not run.
func (w *Worker) forget(l *lease) {
	delete(w.leases, l.id)
	l.stop()
	l.slow.Stop()
}

// flushLocked sends the results held back (l.out.mu held).
func (l *lease) flushLocked() {
	o := &l.out
	o.bytes = 0
	switch len(o.results) {
	case 0:
		return
	case 1:
		l.root.Send(l.owner, o.results[0])
		o.results[0] = nil
		o.results = o.results[:0] // the message does not hold the slice: reuse it
	default:
		l.root.Send(l.owner, &pb.ResultBatch{Results: o.results})
		o.results = nil
	}
}

// flushHeld is the hold timer's: the results held back go now.
func (l *lease) flushHeld() {
	l.out.mu.Lock()
	l.flushLocked()
	l.out.mu.Unlock()
}

// next pops the next task and makes it current; nil when the queue is empty (the
// goroutine then ends: running is false).
func (l *lease) next() (*pb.TaskSpec, *TaskCtx, context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		l.current, l.cancel, l.running = ids.TaskID{}, nil, false
		return nil, nil, nil
	}
	return l.popLocked()
}

// popLocked makes the first queued task current (l.mu held, the queue not empty) and
// returns it with its own context (its cancellation) and the context it runs with.
func (l *lease) popLocked() (*pb.TaskSpec, *TaskCtx, context.Context) {
	spec := l.queue[0]
	l.queue[0] = nil
	if len(l.queue) == 1 {
		l.queue = l.queue[:0] // keeps what is left of the array for the next push
	} else {
		l.queue = l.queue[1:]
	}
	own, ctx := l.mkCtx(l.base, spec, l.self)
	l.current, _ = ids.TaskIDFromBytes(spec.TaskId)
	l.cancel, l.cancelled, l.blocked = own, false, false
	l.seq++
	l.armSlow()
	return spec, own, ctx
}

// done ends the current task (its context is cancelled: what it started and left
// waiting on it stops) and, in the same critical section, makes the next queued task
// current, if any: tasks that run back to back take the lease's lock once each. Without
// a next one (nil), the task stays current until next, which ends the goroutine unless
// a push came meanwhile. cancelled: the task ended was cancelled.
func (l *lease) done() (cancelled bool, spec *pb.TaskSpec, own *TaskCtx, ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		l.cancel.cancel(context.Canceled) // no lock of its own unless the task asked for Done
	}
	cancelled = l.cancelled
	if len(l.queue) > 0 {
		spec, own, ctx = l.popLocked()
	}
	return cancelled, spec, own, ctx
}

// leaseIdle tells the grain a released lease's goroutine ended.
type leaseIdle struct{ l *lease }

// Worker is the grain's actor; its map is owned by its mailbox.
type Worker struct {
	env    Env
	base   context.Context
	stop   context.CancelCauseFunc
	leases map[string]*lease
	// idle hands a lease to run to a goroutine that ran one before and waits (runner).
	idle chan *lease
}

// Receive handles one message.
func (w *Worker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		w.base, w.stop = context.WithCancelCause(context.Background())
	case *pb.LeasePush:
		w.push(ctx, m)
	case *pb.LeaseRelease:
		// The lease's owner gave it back (or died): forget it once its goroutine ends.
		if l := w.leases[string(m.LeaseId)]; l != nil {
			l.mu.Lock()
			l.released = true
			idle := !l.running
			l.mu.Unlock()
			if idle {
				w.forget(l)
			}
		}
	case leaseIdle:
		m.l.mu.Lock()
		idle := !m.l.running
		m.l.mu.Unlock()
		if idle && w.leases[m.l.id] == m.l {
			w.forget(m.l)
		}
	case *pb.CancelTask:
		w.cancelTask(ctx, m)
	case *pb.TaskBlocked:
		w.blocked(ctx, m)
	case *pb.TaskUnblocked:
		if l := w.leaseRunning(m.TaskId); l != nil {
			l.mu.Lock()
			l.blocked = false
			l.mu.Unlock()
			if r := w.raylet(); r != nil {
				ctx.Send(r, &pb.TaskUnblocked{TaskId: m.TaskId, LeaseId: []byte(l.id)})
			}
		}
	case *actor.Stopping:
		if w.stop != nil {
			w.stop(errStopping)
		}
	}
}

func (w *Worker) raylet() *actor.PID {
	if w.env.Raylet == nil {
		return nil
	}
	return w.env.Raylet()
}

// push queues tasks on their lease and starts its goroutine if none runs. A lease whose
// running task is blocked hands them straight back.
func (w *Worker) push(ctx actor.Context, m *pb.LeasePush) {
	if len(m.LeaseId) == 0 || m.ReplyTo == nil {
		w.env.Logger.Error("worker: dropping a malformed lease push", "tasks", len(m.Tasks))
		return
	}
	l := w.leases[string(m.LeaseId)]
	if l == nil {
		l = w.newLease(string(m.LeaseId), actor.NewPID(m.ReplyTo.Address, m.ReplyTo.Id), ctx.Self(), ctx.ActorSystem().Root)
		w.leases[l.id] = l
	}
	l.mu.Lock()
	if l.blocked {
		l.mu.Unlock()
		returnTasks(ctx, l.owner, m.LeaseId, m.Tasks)
		return
	}
	l.queue = append(l.queue, m.Tasks...)
	start := !l.running
	if !start {
		l.armSlow() // queued behind a running task
	}
	l.running = true
	l.mu.Unlock()
	if start {
		select {
		case w.idle <- l: // a goroutine that ran a lease before runs it
		default:
			go w.runner(l, ctx.Self(), ctx.ActorSystem().Root)
		}
	}
}

// returnTasks hands unstarted tasks back to their owner, in messages of at most
// pb.BatchBytes.
func returnTasks(ctx actor.SenderContext, owner *actor.PID, lease []byte, specs []*pb.TaskSpec) {
	pb.Split(specs, pb.SpecBytes, pb.BatchBytes, func(run []*pb.TaskSpec) {
		ctx.Send(owner, &pb.LeaseReturned{LeaseId: lease, Tasks: run})
	})
}

// leaseRunning finds the lease whose current task is the given one.
func (w *Worker) leaseRunning(task []byte) *lease {
	id, err := ids.TaskIDFromBytes(task)
	if err != nil {
		return nil
	}
	for _, l := range w.leases {
		l.mu.Lock()
		cur := l.current
		l.mu.Unlock()
		if cur == id {
			return l
		}
	}
	return nil
}

// blocked: a lease's running task waits in Get. Its unstarted tasks go back to their owner
// (they must not wait for it) and the scheduler lends its CPU out.
func (w *Worker) blocked(ctx actor.Context, m *pb.TaskBlocked) {
	l := w.leaseRunning(m.TaskId)
	if l == nil {
		return
	}
	l.mu.Lock()
	l.blocked = true
	rest := l.queue
	l.queue = nil
	l.mu.Unlock()
	if len(rest) > 0 {
		returnTasks(ctx, l.owner, []byte(l.id), rest)
	}
	if r := w.raylet(); r != nil {
		ctx.Send(r, &pb.TaskBlocked{TaskId: m.TaskId, LeaseId: []byte(l.id)})
	}
}

func (w *Worker) cancelTask(ctx actor.Context, m *pb.CancelTask) {
	id, err := ids.TaskIDFromBytes(m.TaskId)
	if err != nil {
		return
	}
	for _, l := range w.leases {
		l.mu.Lock()
		if l.current == id && l.cancel != nil {
			if !m.NonRecursive && w.env.Cancelled != nil {
				// Before its context ends: a child the task submits once it sees that end is
				// one the runtime already refuses.
				w.env.Cancelled(id)
			}
			l.cancelled = true
			l.cancel.cancel(context.Canceled)
			l.mu.Unlock()
			return
		}
		for i, s := range l.queue {
			if string(s.TaskId) == string(m.TaskId) {
				l.queue = append(l.queue[:i:i], l.queue[i+1:]...)
				l.mu.Unlock()
				res := w.cancelled(s.TaskId, s.Attempt, s.Function)
				res.LeaseId = []byte(l.id)
				ctx.Send(l.owner, res)
				return
			}
		}
		l.mu.Unlock()
	}
}

// errStopping is the cause of a worker's contexts' end when the worker stops (its node
// stops: the worker process exits, its agent was stopped), not a Cancel.
var errStopping = errors.New("worker: stopping")

// stopped is the result of a task that failed while its worker stopped (res): its context
// ended under it, so its error (often context.Canceled) says nothing of why. It is a
// system error naming the node's end, which the owner retries elsewhere as it does a task
// whose node died (an application error is not retried: a task that honoured its ctx
// failed with "context canceled" when its node's agent was stopped).
func (w *Worker) stopped(spec *pb.TaskSpec, res *pb.TaskResult) *pb.TaskResult {
	out := Fail(spec, pb.ErrorInfo_SYSTEM, fmt.Sprintf("node %s stopped while the task ran there (its worker process is exiting: "+
		"its node agent was stopped, or the job ended); the task's own error: %s", w.env.Node, res.Error.Message), "", w.env.Node)
	out.LeaseId, out.RunNanos, out.LogStart, out.LogEnd = res.LeaseId, res.RunNanos, res.LogStart, res.LogEnd
	return out
}

func (w *Worker) cancelled(task []byte, attempt int32, fn string) *pb.TaskResult {
	task = bytes.Clone(task) // see ResultID
	return &pb.TaskResult{TaskId: task, Attempt: attempt, Error: &pb.ErrorInfo{
		Kind: pb.ErrorInfo_CANCELLED, TaskId: task, Function: fn, Message: "task was cancelled", NodeId: string(w.env.Node)}}
}

// runnerKeep is how long a goroutine that ran a lease's tasks waits for another lease to
// run before it ends. A lease that runs one task at a time (a caller that waits for each)
// would otherwise start a goroutine per task, each of which grows its stack anew while
// the task runs (runtime.copystack: 13-15% of all CPU in single_client_tasks_sync).
const runnerKeep = 100 * time.Millisecond

// runner runs l, then the leases the grain hands it (idle) until none came for runnerKeep
// or the grain stopped.
func (w *Worker) runner(l *lease, self *actor.PID, root *actor.RootContext) {
	var keep *time.Timer
	for {
		w.run(l, self, root)
		if keep == nil {
			keep = time.NewTimer(runnerKeep)
		} else {
			keep.Reset(runnerKeep)
		}
		select {
		case l = <-w.idle:
		case <-keep.C:
			return
		case <-w.base.Done():
			keep.Stop()
			return
		}
	}
}

// monoStart is the origin of the monotonic times a run takes (time.Since of it).
var monoStart = time.Now()

// run executes a lease's queued tasks one after another on this goroutine, sending their
// results to the lease's owner in batches: when the queue runs dry, every maxResultBatch
// results, and at most maxResultHold after a result while more tasks follow.
func (w *Worker) run(l *lease, self *actor.PID, root *actor.RootContext) {
	o := &l.out
	// Where the log ended after the task before (-1: not known yet; then the process's last
	// read, Env.LogAt): the next task's output starts there, so a task costs at most one
	// read of the log's end (the tasks here run back to back; what other goroutines write
	// in between counts as the next task's, as what they write while it runs does).
	logAt := int64(-1)
	// When the task before ended (-1: not known), the start of the next one when they run
	// back to back: one clock read per task. RunNanos is then the time from the end of the
	// task before to this one's end: the task's body plus the lease's bookkeeping between
	// them (done, the result's batching: tens of ns); not a log read or a send of results,
	// after which the clock is read again (see LogReadMin, maxResultBatch).
	var last time.Duration = -1
	spec, own, tctx := l.next()
	for spec != nil {
		if w.env.LogOffset != nil && logAt < 0 {
			if w.env.LogAt != nil {
				logAt = w.env.LogAt.Load()
			}
			if logAt <= 0 {
				logAt = w.env.LogOffset()
			}
		}
		start := last
		if start < 0 {
			start = time.Since(monoStart) // one clock read (time.Now reads two)
		}
		res := w.execute(own, tctx, root, spec, &l.results, &l.ids)
		end := time.Since(monoStart)
		res.RunNanos = int64(end - start)
		res.LeaseId = l.lid
		last = end
		cancelled, nspec, nown, nctx := l.done()
		more := nspec != nil
		if w.env.LogOffset != nil {
			res.LogStart = logAt
			// The end is read after a task that ran LogReadMin or more, and after the last
			// of a run; a shorter task followed by others leaves its end unknown (0:
			// `rayctl logs task` shows the process's log then), so back-to-back tiny tasks
			// pay no system call each (one costs ~1.8 us here, as much as such a task).
			if res.RunNanos >= int64(LogReadMin) || !more {
				end := w.env.LogOffset()
				res.LogEnd = end
				logAt = end
				if w.env.LogAt != nil {
					w.env.LogAt.Store(end)
				}
				last = -1 // the read is not the next task's time
			}
		}
		if cancelled {
			res = w.cancelled(spec.TaskId, spec.Attempt, spec.Function)
			res.LeaseId = l.lid
		} else if res.Error != nil && context.Cause(w.base) == errStopping {
			res = w.stopped(spec, res)
		}
		o.mu.Lock()
		o.results = append(o.results, res)
		o.bytes += pb.ResultBytes(res)
		if len(o.results) == 1 && more {
			o.hold.Reset(maxResultHold) // the next task may be long: do not wait for it
		}
		// A batch is one message: bounded in count and in bytes (pb.BatchBytes).
		if !more || len(o.results) >= maxResultBatch || o.bytes >= pb.BatchBytes {
			o.hold.Stop()
			l.flushLocked()
			last = -1 // nor is the send
		}
		o.mu.Unlock()
		spec, own, tctx = nspec, nown, nctx
		if spec == nil { // the results went (!more): a push may have come since done
			spec, own, tctx = l.next()
		}
	}
	o.mu.Lock()
	o.hold.Stop()
	l.flushLocked()
	o.mu.Unlock()
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if released {
		root.Send(self, leaseIdle{l: l}) // released while it ran: the grain forgets it now
	}
}

// execute runs one task and returns its result; it never panics.
func (w *Worker) execute(own *TaskCtx, ctx context.Context, root *actor.RootContext, spec *pb.TaskSpec, results *slab.Slab[pb.TaskResult], tids *slab.Slab[ids.TaskID]) *pb.TaskResult {
	fn, ok := tasks.Lookup(spec.Function)
	if !ok {
		return Fail(spec, pb.ErrorInfo_UNKNOWN_FUNCTION, (&tasks.UnknownFunctionError{Name: spec.Function, Node: string(w.env.Node)}).Error(), "", w.env.Node)
	}
	if n := fn.NumReturns(); n != pb.NumReturns(spec.NumReturns) {
		return Fail(spec, pb.ErrorInfo_SYSTEM, fmt.Sprintf("remote function %q returns %d values here (-1: a generator), but the task asks for %d "+
			"(is the worker running another build of the program?)", spec.Function, n, pb.NumReturns(spec.NumReturns)), "", w.env.Node)
	}
	r := Runner{Node: w.env.Node, InlineLimit: w.env.InlineLimit, StoreBytes: w.env.StoreBytes, Store: w.env.Store, Fetch: w.env.Fetch, Root: root, Nested: w.env.Nested, Meta: w.env.Meta,
		Results: results, IDs: tids}
	return r.Run(own, ctx, spec, fn.Call)
}

// Runner runs one task body and turns its outcome into a TaskResult: arguments fetched
// from the store, panics recovered, errors given their wire form, large results put in
// the node's store shard. Worker grains and actor grains share it.
type Runner struct {
	Node        ids.NodeID
	InlineLimit int
	StoreBytes  int64 // a larger result fails (objects.CheckFits); 0: no limit
	Store       func() *actor.PID
	Fetch       func(ctx context.Context, arg *pb.Arg) ([]byte, error)
	// Recover (optional) is given an argument of spec that Fetch could not read, with
	// Fetch's error: it may recreate the argument's object and return its bytes, or
	// return the error to fail the call with. An actor's runner sets it: an actor call
	// cannot be retried as a task is (its caller's next calls are ordered after it, and
	// an exactly-once actor logs it), so it waits for its lost argument to be recreated.
	Recover func(ctx context.Context, spec *pb.TaskSpec, arg *pb.Arg, err error) ([]byte, error)
	Root    *actor.RootContext
	// Nested returns the refs inside the return value of the task run with ctx, already
	// registered for the task's owner (TaskResult.nested); nil: none.
	Nested func(ctx context.Context) [][]byte
	// Meta returns the metadata the task run with ctx attached to its result
	// (TaskResult.meta); nil: none.
	Meta func(ctx context.Context) []byte
	// LogOffset and LogAt (optional; as Env's): its caller (an actor's executor) uses them
	// for a call's TaskResult.log_start and log_end. Run does not.
	LogOffset func() int64
	LogAt     *atomic.Int64
	// Results, if set, makes the results of tasks that succeed, several per allocation
	// (they go to their owner in batches and die together). It belongs to the goroutine
	// that calls Run.
	Results *slab.Slab[pb.TaskResult]
	// IDs, if set, holds the task IDs of those results (ResultID), several per
	// allocation; it belongs to the goroutine that calls Run.
	IDs *slab.Slab[ids.TaskID]
}

// ResultID is the task ID for spec's result: a copy (in a value of tids, if not nil). A
// result never points into its spec. The spec of a task or actor call submitted in this
// process is part of its owner's record of it (internal/assembly/core's pending, about
// 640 bytes with the owner's entry of its return), and results live on after their task:
// an actor keeps each until its caller acknowledges it, a slab keeps a batch together. A
// result that pointed into its spec kept every such record alive with it: after a burst
// of actor calls, released and collected, all of them still were, until later calls
// brought the acknowledgements.
func ResultID(spec *pb.TaskSpec, tids *slab.Slab[ids.TaskID]) []byte {
	if tids == nil || len(spec.TaskId) != ids.TaskIDLen {
		return bytes.Clone(spec.TaskId)
	}
	id := tids.New()
	copy(id[:], spec.TaskId)
	return id[:]
}

// Causes returns the kinds of the failures err carries (ErrorInfo.causes), for the error a
// task's function returned: the user API (the root package) sets it at initialisation, as
// it owns the sentinel errors that name them and the error type of failed tasks; nil (in
// tests of this package): none.
var Causes func(err error) []pb.ErrorInfo_Kind

// TypedError returns the registered error type inside err and its encoding
// (ErrorInfo.error_type and error_data), for the error a task's function returned: the user
// API (the root package) sets it at initialisation, as it owns the registry of error types
// (ray.RegisterError); nil (in tests of this package), or "" returned: none.
var TypedError func(err error) (name string, data []byte)

// Fail builds the failed result of spec.
func Fail(spec *pb.TaskSpec, kind pb.ErrorInfo_Kind, msg, stack string, node ids.NodeID) *pb.TaskResult {
	tid := ResultID(spec, nil)
	return &pb.TaskResult{TaskId: tid, Attempt: spec.Attempt, Error: &pb.ErrorInfo{
		Kind: kind, Function: spec.Function, TaskId: tid, Message: msg, Stack: stack, NodeId: string(node)}}
}

// admitTimeout bounds the wait for the store to admit a large result while it spills
// (after it, the result is reported anyway: the store holds it, over budget).
const admitTimeout = 5 * time.Minute

// Run calls body with spec's arguments. ctx is the task's own context (its cancellation);
// callCtx, derived from it, is what body receives. Run never panics.
func (r *Runner) Run(ctx, callCtx context.Context, spec *pb.TaskSpec, body tasks.Func) (res *pb.TaskResult) {
	fail := func(kind pb.ErrorInfo_Kind, msg, stack string) *pb.TaskResult {
		return Fail(spec, kind, msg, stack, r.Node)
	}
	defer func() {
		if p := recover(); p != nil {
			res = fail(pb.ErrorInfo_PANIC, fmt.Sprintf("panic: %v", p), string(debug.Stack()))
		}
	}()
	args := make([][]byte, len(spec.Args))
	var owned uint64 // arguments read from another node into buffers of their own
	for i, a := range spec.Args {
		if !a.IsRef || a.Data != nil {
			args[i] = a.Data
			continue
		}
		b, err := r.Fetch(ctx, a)
		if err != nil && r.Recover != nil {
			b, err = r.Recover(ctx, spec, a, err)
		}
		if err != nil {
			return fail(pb.ErrorInfo_OBJECT_LOST, fmt.Sprintf("argument %d: %v", i+1, err), "")
		}
		args[i] = b
		if i < 64 && len(b) >= tasks.OwnedArgMin && a.NodeId != "" && ids.NodeID(a.NodeId) != r.Node {
			owned |= 1 << uint(i)
		}
	}
	out, err := body(tasks.WithOwnedArgs(callCtx, owned), args)
	if err != nil {
		stack := ""
		var te interface{ ErrorInfo() *pb.ErrorInfo }
		if errors.As(err, &te) && te.ErrorInfo() != nil && ctx.Err() == nil {
			// A nested task's error surfaced unchanged: keep its origin, as Ray does.
			stack = te.ErrorInfo().Stack
		}
		res := fail(pb.ErrorInfo_APPLICATION, err.Error(), stack)
		if Causes != nil {
			res.Error.Causes = Causes(err)
		}
		if TypedError != nil {
			res.Error.ErrorType, res.Error.ErrorData = TypedError(err)
		}
		return res
	}
	if spec.NumReturns > 1 {
		return r.returns(callCtx, spec, out)
	}
	if r.Results != nil {
		res = r.Results.New()
	} else {
		res = &pb.TaskResult{}
	}
	res.TaskId, res.Attempt, res.Size = ResultID(spec, r.IDs), spec.Attempt, int64(len(out))
	if r.Nested != nil {
		res.Nested = r.Nested(callCtx)
	}
	if r.Meta != nil {
		res.Meta = r.Meta(callCtx)
	}
	limit := r.InlineLimit
	if limit <= 0 {
		limit = DefaultInlineLimit
	}
	if len(out) > limit {
		if f := r.store(spec, 1, out); f != nil {
			return f
		}
		res.InStore, res.NodeId = true, string(r.Node)
		return res
	}
	res.Data = out
	return res
}

// store puts return index of spec, out, into the node's store shard; it returns the failed
// result if it cannot.
func (r *Runner) store(spec *pb.TaskSpec, index uint32, out []byte) *pb.TaskResult {
	if err := objects.CheckFits(int64(len(out)), r.StoreBytes); err != nil {
		// Not retried: the same task gives the same size (as Ray fails a task whose
		// return does not fit its store with ObjectStoreFullError).
		return Fail(spec, pb.ErrorInfo_OBJECT_TOO_LARGE, "its result is refused: "+err.Error(), "", r.Node)
	}
	store := r.Store()
	if store == nil {
		return Fail(spec, pb.ErrorInfo_SYSTEM, "no object store shard on this node", "", r.Node)
	}
	// Wait for the store to admit it: over budget, it answers once spilling caught up,
	// so tasks cannot outrun the disk (backpressure). Anyone who reads the object
	// learns of it from this result, sent after the put.
	tid, _ := ids.TaskIDFromBytes(spec.TaskId)
	oid := ids.ReturnID(tid, index)
	got, err := ask.Request(r.Root, store, &pb.PutObject{ObjectId: oid[:], Data: out, Owner: spec.Owner}, admitTimeout)
	if ack, ok := got.(*pb.PutObjectAck); err == nil && ok && ack.Error != "" {
		return Fail(spec, pb.ErrorInfo_SYSTEM, "the object store refused the result: "+ack.Error, "", r.Node)
	}
	return nil
}

// returns turns the output of a task of several returns (a pb.Returns message) into its
// result: every return inline, or in the node's store when it is over the inline limit
// or the returns inline together would exceed pb.InlineArgsTotal (largest first).
func (r *Runner) returns(callCtx context.Context, spec *pb.TaskSpec, out []byte) *pb.TaskResult {
	var rs pb.Returns
	if err := proto.Unmarshal(out, &rs); err != nil {
		return Fail(spec, pb.ErrorInfo_SYSTEM, "the task's returns do not decode: "+err.Error(), "", r.Node)
	}
	if len(rs.Values) != int(spec.NumReturns) {
		return Fail(spec, pb.ErrorInfo_SYSTEM, fmt.Sprintf("the task gave %d returns, want %d", len(rs.Values), spec.NumReturns), "", r.Node)
	}
	limit := r.InlineLimit
	if limit <= 0 {
		limit = DefaultInlineLimit
	}
	toStore := make([]bool, len(rs.Values))
	total := 0
	for i, v := range rs.Values {
		v.Size = int64(len(v.Data))
		if toStore[i] = len(v.Data) > limit; !toStore[i] {
			total += len(v.Data)
		}
	}
	for total > pb.InlineArgsTotal { // too much together: the largest of the rest go too
		big := -1
		for j, v := range rs.Values {
			if !toStore[j] && (big < 0 || len(v.Data) > len(rs.Values[big].Data)) {
				big = j
			}
		}
		toStore[big] = true
		total -= len(rs.Values[big].Data)
	}
	for i, v := range rs.Values {
		if !toStore[i] {
			continue
		}
		if f := r.store(spec, uint32(i+1), v.Data); f != nil {
			return f
		}
		v.Data, v.InStore, v.NodeId = nil, true, string(r.Node)
	}
	res := &pb.TaskResult{TaskId: ResultID(spec, r.IDs), Attempt: spec.Attempt, Returns: rs.Values}
	if r.Meta != nil {
		res.Meta = r.Meta(callCtx)
	}
	return res
}
