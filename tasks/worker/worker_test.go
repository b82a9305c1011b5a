package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
)

var (
	orderMu sync.Mutex
	order   []string
	gate    = make(chan struct{})
	// waitStarted hears of each wt.wait task that starts.
	waitStarted = make(chan struct{}, 1)
)

func init() {
	reg := func(name string, f tasks.Func) {
		if err := tasks.Register(&tasks.Function{Name: name, Call: f}); err != nil {
			panic(err)
		}
	}
	reg("wt.echo", func(_ context.Context, args [][]byte) ([]byte, error) {
		orderMu.Lock()
		order = append(order, string(args[0]))
		orderMu.Unlock()
		return args[0], nil
	})
	reg("wt.fail", func(context.Context, [][]byte) ([]byte, error) { return nil, errors.New("no good") })
	reg("wt.panic", func(context.Context, [][]byte) ([]byte, error) { panic("oh no") })
	reg("wt.big", func(context.Context, [][]byte) ([]byte, error) { return make([]byte, DefaultInlineLimit+1), nil })
	// wt.where says whether OnTaskGoroutine is true in the task's function ("t"), and in a
	// goroutine the task started ("g").
	reg("wt.where", func(context.Context, [][]byte) ([]byte, error) {
		out := []byte{'-', '-'}
		if OnTaskGoroutine() {
			out[0] = 't'
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if OnTaskGoroutine() {
				out[1] = 'g'
			}
		}()
		<-done
		return out, nil
	})
	reg("wt.wait", func(ctx context.Context, _ [][]byte) ([]byte, error) {
		select {
		case waitStarted <- struct{}{}:
		default:
		}
		select {
		case <-gate:
			return []byte("opened"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

type harness struct {
	t       *testing.T
	sys     *actor.ActorSystem
	worker  *actor.PID
	owner   *actor.PID
	raylet  *actor.PID
	results chan *pb.TaskResult
	toRay   chan any
	puts    chan *pb.PutObject
	root    ids.TaskID
	n       uint64
}

func newHarness(t *testing.T, opts ...func(*Env)) *harness {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &harness{t: t, sys: actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet })),
		results: make(chan *pb.TaskResult, 64), toRay: make(chan any, 64), puts: make(chan *pb.PutObject, 8), root: ids.NewRootTaskID()}
	t.Cleanup(h.sys.Shutdown)
	h.owner = h.sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *pb.TaskResult:
			h.results <- m
		case *pb.ResultBatch:
			for _, r := range m.Results {
				h.results <- r
			}
		case *pb.LeaseReturned:
			h.toRay <- m
		}
	}))
	h.raylet = h.sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *pb.TaskBlocked, *pb.TaskUnblocked:
			h.toRay <- m
		}
	}))
	store := h.sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*pb.PutObject); ok {
			h.puts <- m
			if c.Sender() != nil {
				c.Respond(&pb.PutObjectAck{ObjectId: m.ObjectId}) // admitted
			}
		}
	}))
	env := Env{Node: "n1", Logger: quiet,
		Store:  func() *actor.PID { return store },
		Raylet: func() *actor.PID { return h.raylet },
		Context: func(base context.Context, _ *pb.TaskSpec, _ *actor.PID) (*TaskCtx, context.Context) {
			c := new(TaskCtx)
			c.Init(base)
			return c, c
		},
		Fetch: func(_ context.Context, a *pb.Arg) ([]byte, error) {
			return nil, errors.New("object is gone")
		},
	}
	for _, o := range opts {
		o(&env)
	}
	if err := env.Validate(); err != nil {
		t.Fatal(err)
	}
	h.worker = h.sys.Root.Spawn(Props(env))
	return h
}

func (h *harness) spec(fn string, args ...*pb.Arg) *pb.TaskSpec {
	h.n++
	tid := ids.ChildTaskID(h.root, h.n)
	return &pb.TaskSpec{TaskId: tid[:], Function: fn, Args: args, Owner: &pb.PID{Address: h.owner.Address, Id: h.owner.Id}}
}

// lease pushes specs to the worker under a new lease and returns the push.
func (h *harness) lease(specs ...*pb.TaskSpec) *pb.LeasePush {
	l := &pb.LeasePush{LeaseId: append([]byte("lease-"), specs[0].TaskId...), Tasks: specs, ReplyTo: &pb.PID{Address: h.owner.Address, Id: h.owner.Id}}
	h.sys.Root.Send(h.worker, l)
	return l
}

func (h *harness) result() *pb.TaskResult {
	h.t.Helper()
	select {
	case r := <-h.results:
		return r
	case <-time.After(5 * time.Second):
		h.t.Fatal("no result")
		return nil
	}
}

func (h *harness) fromWorker() any {
	h.t.Helper()
	select {
	case m := <-h.toRay:
		return m
	case <-time.After(5 * time.Second):
		h.t.Fatal("nothing reached the raylet")
		return nil
	}
}

func data(s string) *pb.Arg { return &pb.Arg{Data: []byte(s)} }

func TestLeaseRunsTasksInOrder(t *testing.T) {
	// SlowAfter never: with the default 2 ms, a loaded machine that runs "a" for longer
	// hands "b" back to its owner (TestSlowTaskHandsBackTheQueue), and it never runs here.
	h := newHarness(t, func(e *Env) { e.SlowAfter = -1 })
	orderMu.Lock()
	order = nil
	orderMu.Unlock()
	l := h.lease(h.spec("wt.echo", data("a")), h.spec("wt.echo", data("b")))
	h.sys.Root.Send(h.worker, &pb.LeasePush{LeaseId: l.LeaseId, Tasks: []*pb.TaskSpec{h.spec("wt.echo", data("c"))}, ReplyTo: l.ReplyTo})
	var got []string
	for i := 0; i < 3; i++ {
		r := h.result()
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		if string(r.LeaseId) != string(l.LeaseId) || r.RunNanos <= 0 {
			t.Fatalf("result of lease %q run for %d ns; want the push's lease and a run time", r.LeaseId, r.RunNanos)
		}
		got = append(got, string(r.Data))
	}
	orderMu.Lock()
	defer orderMu.Unlock()
	if strings.Join(got, "") != "abc" || strings.Join(order, "") != "abc" {
		t.Fatalf("results %v, execution order %v; want a b c", got, order)
	}
}

// TestUnknownFunctionSaysTheWorkerProcessLacksIt: a task whose function this worker
// process does not have (its submitter does: the driver registered it after ray.Init,
// which worker processes never get past) fails saying so, naming the node, and that
// remote functions are to be registered at package level; not "is registered in this
// program", which the driver that did register it takes for a lie.
func TestUnknownFunctionSaysTheWorkerProcessLacksIt(t *testing.T) {
	h := newHarness(t)
	h.lease(h.spec("wt.late"))
	r := h.result()
	if r.Error == nil || r.Error.Kind != pb.ErrorInfo_UNKNOWN_FUNCTION {
		t.Fatalf("%v, want UNKNOWN_FUNCTION", r.Error)
	}
	for _, want := range []string{`"wt.late"`, "worker process on node n1", "ray.Init", "package level"} {
		if !strings.Contains(r.Error.Message, want) {
			t.Errorf("%q does not say %q", r.Error.Message, want)
		}
	}
	if strings.Contains(r.Error.Message, "in this program") {
		t.Errorf("%q says the function is not registered in this program", r.Error.Message)
	}
}

func TestFailuresAreAnswered(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		spec *pb.TaskSpec
		kind pb.ErrorInfo_Kind
		text string
	}{
		{h.spec("wt.fail"), pb.ErrorInfo_APPLICATION, "no good"},
		{h.spec("wt.panic"), pb.ErrorInfo_PANIC, "oh no"},
		{h.spec("wt.missing"), pb.ErrorInfo_UNKNOWN_FUNCTION, "wt.missing"},
		{h.spec("wt.echo", &pb.Arg{IsRef: true, ObjectId: make([]byte, ids.ObjectIDLen)}), pb.ErrorInfo_OBJECT_LOST, "object is gone"},
	}
	for _, tc := range tests {
		h.lease(tc.spec)
		r := h.result()
		if r.Error == nil || r.Error.Kind != tc.kind || !strings.Contains(r.Error.Message, tc.text) || r.Error.Function != tc.spec.Function {
			t.Errorf("%s: %v, want %v mentioning %q", tc.spec.Function, r.Error, tc.kind, tc.text)
		}
		if tc.kind == pb.ErrorInfo_PANIC && !strings.Contains(r.Error.Stack, "worker_test.go") {
			t.Errorf("panic stack does not show the panicking function:\n%s", r.Error.Stack)
		}
	}
}

func TestLargeResultGoesToTheStore(t *testing.T) {
	h := newHarness(t)
	s := h.spec("wt.big")
	h.lease(s)
	r := h.result()
	if !r.InStore || r.NodeId != "n1" || r.Data != nil || r.Size != DefaultInlineLimit+1 {
		t.Fatalf("result %+v, want a store location", r)
	}
	put := <-h.puts
	tid, _ := ids.TaskIDFromBytes(s.TaskId)
	if oid := ids.ReturnID(tid, 1); string(put.ObjectId) != string(oid[:]) || len(put.Data) != DefaultInlineLimit+1 {
		t.Fatalf("put %x (%d bytes)", put.ObjectId, len(put.Data))
	}
}

// TestResultLargerThanTheStore: a result larger than the node's whole object store fails
// the task with OBJECT_TOO_LARGE (not retried by its owner) and is not sent to the store:
// the same rule as a Put's (objects.CheckFits).
func TestResultLargerThanTheStore(t *testing.T) {
	h := newHarness(t, func(e *Env) { e.StoreBytes = DefaultInlineLimit })
	h.lease(h.spec("wt.big"))
	r := h.result()
	if r.Error == nil || r.Error.Kind != pb.ErrorInfo_OBJECT_TOO_LARGE || !strings.Contains(r.Error.Message, "WithObjectStoreMemory") || r.InStore {
		t.Fatalf("result %+v, want OBJECT_TOO_LARGE", r)
	}
	select {
	case p := <-h.puts:
		t.Fatalf("the result was sent to the store (%d bytes)", len(p.Data))
	default:
	}
}

func TestCancelAndBlock(t *testing.T) {
	h := newHarness(t, func(e *Env) { e.SlowAfter = -1 }) // the queue stays while the first task runs
	running, queued, last := h.spec("wt.wait"), h.spec("wt.echo", data("q")), h.spec("wt.echo", data("z"))
	l := h.lease(running, queued, last)
	select { // the first task runs
	case <-waitStarted:
	case <-time.After(5 * time.Second):
		t.Fatal("the first task did not start")
	}
	// Cancelling an unstarted task drops it at once.
	h.sys.Root.Send(h.worker, &pb.CancelTask{TaskId: queued.TaskId})
	if r := h.result(); string(r.TaskId) != string(queued.TaskId) || r.Error == nil || r.Error.Kind != pb.ErrorInfo_CANCELLED {
		t.Fatalf("cancelled unstarted task: %v", r)
	}
	// The running task blocks: the rest of the lease goes back to its owner, and the
	// raylet hears which lease lends its CPU.
	h.sys.Root.Send(h.worker, &pb.TaskBlocked{TaskId: running.TaskId})
	var ret *pb.LeaseReturned
	var blocked *pb.TaskBlocked
	for ret == nil || blocked == nil {
		switch m := h.fromWorker().(type) {
		case *pb.LeaseReturned:
			ret = m
		case *pb.TaskBlocked:
			blocked = m
		}
	}
	if len(ret.Tasks) != 1 || string(ret.Tasks[0].TaskId) != string(last.TaskId) || string(ret.LeaseId) != string(l.LeaseId) {
		t.Fatalf("lease return: %v", ret)
	}
	if string(blocked.LeaseId) != string(l.LeaseId) {
		t.Fatalf("blocked notice: %v", blocked)
	}
	// A push to the blocked lease is handed straight back.
	extra := h.spec("wt.echo", data("x"))
	h.sys.Root.Send(h.worker, &pb.LeasePush{LeaseId: l.LeaseId, Tasks: []*pb.TaskSpec{extra}, ReplyTo: l.ReplyTo})
	if r, ok := h.fromWorker().(*pb.LeaseReturned); !ok || len(r.Tasks) != 1 || string(r.Tasks[0].TaskId) != string(extra.TaskId) {
		t.Fatalf("push to a blocked lease: %v", r)
	}
	// Cancelling the running task cancels its context.
	h.sys.Root.Send(h.worker, &pb.CancelTask{TaskId: running.TaskId})
	if r := h.result(); string(r.TaskId) != string(running.TaskId) || r.Error == nil || r.Error.Kind != pb.ErrorInfo_CANCELLED {
		t.Fatalf("cancelled running task: %v", r)
	}
}

// slowGate is the gate of the current run of TestResultNotHeldBehindALongTask (-count=N).
var slowGate atomic.Pointer[chan struct{}]

func init() {
	if err := tasks.Register(&tasks.Function{Name: "wt.slow", Call: func(ctx context.Context, _ [][]byte) ([]byte, error) {
		select {
		case <-*slowGate.Load():
			return []byte("slow"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}); err != nil {
		panic(err)
	}
}

// TestResultNotHeldBehindALongTask: a lease of short tasks holds their results back to send
// them together, but not while a long task after them runs.
func TestResultNotHeldBehindALongTask(t *testing.T) {
	// SlowAfter never: with the default 2 ms, a loaded machine that runs the quick task
	// for longer hands the slow one back to its owner and it never runs here (this failed
	// once under -race -count=3 at a load average of 15).
	h := newHarness(t, func(e *Env) { e.SlowAfter = -1 })
	gate := make(chan struct{})
	slowGate.Store(&gate)
	h.lease(h.spec("wt.echo", data("quick")), h.spec("wt.slow"))
	select {
	case r := <-h.results:
		if r.Error != nil || string(r.Data) != "quick" {
			t.Fatalf("first result: %v", r)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the first task's result was held back while the next task of its lease ran")
	}
	close(gate)
	if r := h.result(); r.Error != nil || string(r.Data) != "slow" {
		t.Fatalf("second result: %v", r)
	}
}

// TestOnTaskGoroutine: true in a task's function, false in a goroutine it starts and
// outside tasks.
func TestOnTaskGoroutine(t *testing.T) {
	if OnTaskGoroutine() {
		t.Fatal("OnTaskGoroutine in a test's goroutine")
	}
	h := newHarness(t)
	h.lease(h.spec("wt.where"))
	if r := h.result(); r.Error != nil || string(r.Data) != "t-" {
		t.Fatalf("result %q, %v; want \"t-\" (the task's goroutine, not one it started)", r.Data, r.Error)
	}
}

// slowGate2 is the gate of the current run of TestSlowTaskHandsBackTheQueue (-count=N).
var slowGate2 atomic.Pointer[chan struct{}]

func init() {
	if err := tasks.Register(&tasks.Function{Name: "wt.slow2", Call: func(ctx context.Context, _ [][]byte) ([]byte, error) {
		select {
		case <-*slowGate2.Load():
			return []byte("slow"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}); err != nil {
		panic(err)
	}
}

// TestSlowTaskHandsBackTheQueue: tasks queued behind a task that runs longer than
// SlowAfter go back to their owner (another worker can run them), and a push to the lease
// after that queues and runs as before.
func TestSlowTaskHandsBackTheQueue(t *testing.T) {
	h := newHarness(t, func(e *Env) { e.SlowAfter = 20 * time.Millisecond })
	gate := make(chan struct{})
	slowGate2.Store(&gate)
	slow, a, b := h.spec("wt.slow2"), h.spec("wt.echo", data("a")), h.spec("wt.echo", data("b"))
	l := h.lease(slow, a, b)
	ret, ok := h.fromWorker().(*pb.LeaseReturned)
	if !ok || len(ret.Tasks) != 2 || string(ret.Tasks[0].TaskId) != string(a.TaskId) || string(ret.Tasks[1].TaskId) != string(b.TaskId) ||
		string(ret.LeaseId) != string(l.LeaseId) {
		t.Fatalf("handed back: %v", ret)
	}
	close(gate)
	if r := h.result(); string(r.TaskId) != string(slow.TaskId) || string(r.Data) != "slow" {
		t.Fatalf("the slow task's result: %v", r)
	}
	// The lease still runs what is pushed to it.
	c := h.spec("wt.echo", data("c"))
	h.sys.Root.Send(h.worker, &pb.LeasePush{LeaseId: l.LeaseId, Tasks: []*pb.TaskSpec{c}, ReplyTo: l.ReplyTo})
	if r := h.result(); string(r.TaskId) != string(c.TaskId) || string(r.Data) != "c" {
		t.Fatalf("a push after the hand-back: %v", r)
	}
}

// leftWaiting hears of the goroutine a wt.leave task left waiting on its context: the
// context's error once it ended.
var leftWaiting = make(chan error, 1)

func init() {
	reg := func(name string, f tasks.Func) {
		if err := tasks.Register(&tasks.Function{Name: name, Call: f}); err != nil {
			panic(err)
		}
	}
	reg("wt.leave", func(ctx context.Context, _ [][]byte) ([]byte, error) {
		go func() {
			<-ctx.Done()
			leftWaiting <- ctx.Err()
		}()
		return []byte("left"), nil
	})
	reg("wt.ctxerr", func(ctx context.Context, _ [][]byte) ([]byte, error) {
		if err := ctx.Err(); err != nil {
			return []byte(err.Error()), nil
		}
		return []byte("live"), nil
	})
}

// TestTaskContextEndsWithItsTask: tasks run back to back on a lease (one lock for the end
// of one and the start of the next): the context of each ends when it returns, and what
// it left waiting on it hears so; the next task's context is its own, live.
func TestTaskContextEndsWithItsTask(t *testing.T) {
	h := newHarness(t, func(e *Env) { e.SlowAfter = -1 })
	h.lease(h.spec("wt.ctxerr"), h.spec("wt.leave"), h.spec("wt.ctxerr"), h.spec("wt.ctxerr"))
	want := []string{"live", "left", "live", "live"}
	for i, w := range want {
		if r := h.result(); r.Error != nil || string(r.Data) != w || r.RunNanos <= 0 {
			t.Fatalf("result %d: %v (data %q, run %d ns); want %q and a run time", i, r.Error, r.Data, r.RunNanos, w)
		}
	}
	select {
	case err := <-leftWaiting:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the task's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the context of a task that returned never ended")
	}
}

// TestLeasesOneAtATime: tasks pushed one at a time, each after the result of the one
// before (the goroutine that ran a lease's queue waits for the next push, of its lease or
// another's: runner), on two leases and after a release, all run, on a task goroutine.
func TestLeasesOneAtATime(t *testing.T) {
	h := newHarness(t)
	a := h.lease(h.spec("wt.where"))
	var b *pb.LeasePush
	for i := range 6 {
		if r := h.result(); r.Error != nil || string(r.Data) != "t-" {
			t.Fatalf("task %d: %v %q; want it run on its task goroutine", i, r.Error, r.Data)
		}
		switch i {
		case 0:
			b = h.lease(h.spec("wt.where"))
		case 1, 3:
			h.sys.Root.Send(h.worker, &pb.LeasePush{LeaseId: a.LeaseId, Tasks: []*pb.TaskSpec{h.spec("wt.where")}, ReplyTo: a.ReplyTo})
		case 2:
			h.sys.Root.Send(h.worker, &pb.LeaseRelease{LeaseId: b.LeaseId})
			h.lease(h.spec("wt.where")) // a new lease after the release
		case 4:
			h.sys.Root.Send(h.worker, &pb.LeasePush{LeaseId: b.LeaseId, Tasks: []*pb.TaskSpec{h.spec("wt.where")}, ReplyTo: b.ReplyTo})
		}
	}
}

// TestStoppedWorkerFailsTasksAsSystemErrors: a task that honours its ctx and ends because
// its worker stops (its node's agent was stopped) fails with a system error naming the
// node's end, which its owner retries elsewhere; it failed with its own "context
// canceled", an application error that is not retried.
func TestStoppedWorkerFailsTasksAsSystemErrors(t *testing.T) {
	h := newHarness(t)
	spec := h.spec("wt.wait")
	h.lease(spec)
	select {
	case <-waitStarted:
	case <-time.After(5 * time.Second):
		t.Fatal("the task did not start")
	}
	h.sys.Root.Stop(h.worker)
	r := h.result()
	if string(r.TaskId) != string(spec.TaskId) || r.Error == nil || r.Error.Kind != pb.ErrorInfo_SYSTEM ||
		!strings.Contains(r.Error.Message, "node n1 stopped while the task ran") || !strings.Contains(r.Error.Message, "context canceled") {
		t.Fatalf("task of a stopped worker: %v", r)
	}
}
