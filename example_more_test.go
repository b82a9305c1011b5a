package ray_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/ray-go/ray"
)

// Session keeps its state in an unexported field: the codec cannot checkpoint it, and it
// does not implement ray.Checkpointer.
type Session struct{ hits int }

var (
	SessionClass = ray.Actor("example.Session", func() *Session { return &Session{} })
	SessionHit   = ray.Method0(SessionClass, "Hit", func(s *Session, _ context.Context) (int, error) { s.hits++; return s.hits, nil })
)

func ExampleUnboundedMethodLog() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Exactly-once (the default) needs a bounded method log, so a checkpointable state:
	// Session's is not, and the actor is refused.
	fmt.Println(SessionClass.Remote(ctx).Err() != nil)
	// UnboundedMethodLog keeps every call in the GCS for the actor's whole life instead.
	s := SessionClass.Remote(ctx, ray.UnboundedMethodLog())
	SessionHit.Remote(ctx, s)
	fmt.Println(ray.Get(ctx, SessionHit.Remote(ctx, s)))
	// Or give up exactly-once: AtMostOnce.
	m := SessionClass.Remote(ctx, ray.AtMostOnce())
	fmt.Println(ray.Get(ctx, SessionHit.Remote(ctx, m)))
	// Output:
	// true
	// 2 <nil>
	// 1 <nil>
}

func ExampleActorAlive() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	c := CounterClass.Remote(ctx)
	ray.Get(ctx, CounterGet.Remote(ctx, c)) // it answered: its constructor ran
	st, _ := ray.GetActorState(ctx, c)
	fmt.Println(st.Phase == ray.ActorAlive, st.Phase)
	// Output: true Alive
}

func ExampleActorDead() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	c := CounterClass.Remote(ctx, ray.MaxRestarts(5))
	ray.Get(ctx, CounterGet.Remote(ctx, c))
	ray.Kill(ctx, c, true) // no restart, whatever MaxRestarts says
	st, _ := ray.GetActorState(ctx, c)
	fmt.Println(st.Phase == ray.ActorDead, st.Phase, st.Detail != "")
	// Output: true Dead true
}

func ExampleErrCancelled() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	slow := Sleep.Remote(ctx, ray.V(time.Hour))
	after := Square.Remote(ctx, ray.V(3))
	ray.Cancel(ctx, slow)
	_, err = ray.Get(ctx, slow)
	fmt.Println(errors.Is(err, ray.ErrCancelled))
	fmt.Println(ray.Get(ctx, after)) // others are not affected
	// Output:
	// true
	// 9 <nil>
}

func ExampleErrEncode() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, err = ray.Put(ctx, make(chan int)) // a channel cannot be encoded
	fmt.Println(errors.Is(err, ray.ErrEncode))
	// Output: true
}

func ExampleErrInfeasible() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// No node has a GPU: the task fails at once rather than waiting for ever.
	_, err = ray.Get(ctx, Square.Options(ray.NumGPUs(1)).Remote(ctx, ray.V(2)))
	fmt.Println(errors.Is(err, ray.ErrInfeasible))
	_, err = ray.Get(ctx, Square.Options(ray.NumCPUs(3)).Remote(ctx, ray.V(2)))
	fmt.Println(errors.Is(err, ray.ErrInfeasible))
	// Output:
	// true
	// true
}

func ExampleErrObjectLost() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	r, _ := ray.Put(ctx, "gone soon")
	r.Release()
	_, err = ray.Get(ctx, r)
	fmt.Println(errors.Is(err, ray.ErrObjectLost))
	// Output: true
}

func ExampleErrObjectTooLarge() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2), ray.WithObjectStoreMemory(1<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, err = ray.Put(ctx, make([]byte, 2<<20)) // larger than the node's whole store
	fmt.Println(errors.Is(err, ray.ErrObjectTooLarge))
	// Output: true
}

func ExampleErrShutdown() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	ray.Shutdown(ctx)
	_, err = ray.Put(ctx, 1)
	fmt.Println(errors.Is(err, ray.ErrShutdown))
	// Output: true
}

func ExampleErrUnknownFunction() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, err = ray.Get(ctx, ray.Call[int](ctx, "example.missing", []any{1}))
	fmt.Println(errors.Is(err, ray.ErrUnknownFunction))
	// Output: true
}

// A task that fails and is retried leaves one record per attempt: TaskRetried for the
// attempts that were retried, TaskFailed (or TaskFinished) for the last.
func ExampleTaskRetried() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, _ = ray.Get(ctx, Divide.Options(ray.MaxRetries(2), ray.RetryExceptions(true)).Remote(ctx, ray.V(1), ray.V(0)))
	_, _ = ray.Get(ctx, Divide.Remote(ctx, ray.V(4), ray.V(2)))
	counts, err := ray.SummarizeTasks(ctx, ray.TaskFilter{})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range counts {
		fmt.Println(c.Function, c.State, c.Count)
	}
	retried, _, _ := ray.ListTasks(ctx, ray.TaskFilter{State: ray.TaskRetried})
	fmt.Println(retried[0].Attempt, retried[1].Attempt) // newest first
	// Output:
	// example.divide FAILED 1
	// example.divide FAILED_RETRIED 2
	// example.divide FINISHED 1
	// 1 0
}

func ExampleTaskCancelled() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	r := Sleep.Remote(ctx, ray.V(time.Hour))
	ray.Cancel(ctx, r)
	_, _ = ray.Get(ctx, r)
	tasks, _, _ := ray.ListTasks(ctx, ray.TaskFilter{Function: "example.sleep"})
	fmt.Println(tasks[0].State == ray.TaskCancelled, tasks[0].State)
	// Output: true CANCELLED
}

// savedDriver holds a driver's context where a task can reach it: a mistake, on purpose.
var savedDriver atomic.Value

// WaitsThroughDriver waits for a child task through the driver's context instead of its own
// ctx, and says whether that failed with ErrDriverContext.
var WaitsThroughDriver = ray.Task0("example.waitsThroughDriver", func(ctx context.Context) (bool, error) {
	driver := savedDriver.Load().(context.Context)
	_, err := ray.Get(driver, Sleep.Remote(ctx, ray.V(time.Second)))
	return errors.Is(err, ray.ErrDriverContext), nil
})

func ExampleErrDriverContext() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	savedDriver.Store(ctx)
	// Inside a task, Get and Wait take the task's own ctx: only that one lends the task's
	// CPU back while it waits. Waiting through a driver's context fails at once.
	fmt.Println(ray.Get(ctx, WaitsThroughDriver.Remote(ctx)))
	// Output: true <nil>
}

func ExampleObjectReady() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	ok := Square.Remote(ctx, ray.V(2))
	bad := Divide.Remote(ctx, ray.V(1), ray.V(0))
	_, _, _ = ray.WaitAny(ctx, []ray.Ref{ok, bad}, ray.NumReady(2))
	for _, r := range []ray.Ref{ok, bad} {
		objs, _, _ := ray.ListObjects(ctx, ray.ObjectFilter{ObjectID: r.ID()})
		fmt.Println(objs[0].State == ray.ObjectReady, objs[0].State == ray.ObjectFailed, objs[0].State)
	}
	// Output:
	// true false READY
	// false true FAILED
}

func ExampleTaskRunning() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, _ = ray.Get(ctx, Halve.Remote(ctx, ray.V(2)))
	_, _ = ray.Get(ctx, Halve.Remote(ctx, ray.V(1)))
	r := Sleep.Remote(ctx, ray.V(time.Hour))
	for { // until a worker has it
		running, _, _ := ray.ListTasks(ctx, ray.TaskFilter{State: ray.TaskRunning})
		if len(running) > 0 {
			fmt.Println(running[0].Function, running[0].State)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, state := range []string{ray.TaskFinished, ray.TaskFailed} {
		_, n, _ := ray.ListTasks(ctx, ray.TaskFilter{State: state})
		fmt.Println(state, n)
	}
	ray.Cancel(ctx, r)
	// Output:
	// example.sleep RUNNING
	// FINISHED 1
	// FAILED 1
}

// Released, an object whose task's result fed another task is freed, but the lineage
// record of that other task still refers to it: it can be made again if needed.
func ExampleObjectFreed() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	a := Square.Remote(ctx, ray.V(3))
	b := Square.Remote(ctx, a)
	fmt.Println(ray.Get(ctx, b))
	a.Release()
	// The owner frees a's value once b's task has let go of its argument too, which may
	// come a moment after b's result: look until it has.
	objs, _, _ := ray.ListObjects(ctx, ray.ObjectFilter{ObjectID: a.ID()})
	for i := 0; i < 500 && objs[0].State != ray.ObjectFreed; i++ {
		time.Sleep(10 * time.Millisecond)
		objs, _, _ = ray.ListObjects(ctx, ray.ObjectFilter{ObjectID: a.ID()})
	}
	fmt.Println(objs[0].State == ray.ObjectFreed, objs[0].State, objs[0].Size)
	// Output:
	// 81 <nil>
	// true FREED 0
}

func ExampleLineageReference() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	a := Square.Remote(ctx, ray.V(3))
	b := Square.Remote(ctx, a) // b's lineage refers to a
	_, _ = ray.Get(ctx, b)
	a.Release() // no handle left: only the lineage counts a (once b's task let go of it)
	objs, _, _ := ray.ListObjects(ctx, ray.ObjectFilter{RefType: ray.LineageReference})
	for i := 0; i < 500 && len(objs) == 0; i++ {
		time.Sleep(10 * time.Millisecond)
		objs, _, _ = ray.ListObjects(ctx, ray.ObjectFilter{RefType: ray.LineageReference})
	}
	fmt.Println(len(objs), objs[0].ObjectID == a.ID(), objs[0].RefType)
	// Output: 1 true LINEAGE_REFERENCE
}

func ExampleErrNoCredentials() {
	// Joining a secure cluster takes its join token (WithToken, RAY_GO_TOKEN or
	// RAY_GO_TOKEN_FILE) or GCS credential files; without them Init fails at once, and its
	// error says what to set.
	_, err := ray.Init(context.Background(), ray.WithAddress("127.0.0.1:1"))
	fmt.Println(errors.Is(err, ray.ErrNoCredentials))
	// Output: true
}

// A failed task's object holds its error: ObjectFailed.
func ExampleObjectFailed() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	bad := Divide.Remote(ctx, ray.V(1), ray.V(0))
	_, _ = ray.Get(ctx, bad)
	_, n, _ := ray.ListObjects(ctx, ray.ObjectFilter{State: ray.ObjectFailed})
	fmt.Println(n)
	// Output: 1
}

func ExampleTaskFinished() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, _ = ray.GetAll(ctx, []ray.ObjectRef[int]{Halve.Remote(ctx, ray.V(2)), Halve.Remote(ctx, ray.V(4))})
	_, n, _ := ray.ListTasks(ctx, ray.TaskFilter{State: ray.TaskFinished})
	fmt.Println(n)
	// Output: 2
}

func ExampleTaskFailed() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, _ = ray.Get(ctx, Halve.Remote(ctx, ray.V(5)))
	failed, _, _ := ray.ListTasks(ctx, ray.TaskFilter{State: ray.TaskFailed})
	fmt.Println(failed[0].Function, failed[0].ErrorType, failed[0].Error)
	// Output: example.halve APPLICATION 5 is odd
}

// A task waits in TaskPendingNode while no node has the resources it asks for free.
func ExampleTaskPendingNode() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// hog holds both CPUs; wait until it runs.
	hog := Sleep.Options(ray.NumCPUs(2)).Remote(ctx, ray.V(time.Hour))
	for {
		if _, n, _ := ray.ListTasks(ctx, ray.TaskFilter{State: ray.TaskRunning}); n > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	next := Square.Remote(ctx, ray.V(3))
	waiting, _, _ := ray.ListTasks(ctx, ray.TaskFilter{State: ray.TaskPendingNode})
	for i := 0; i < 500 && len(waiting) == 0; i++ { // a submission is recorded a moment later
		time.Sleep(10 * time.Millisecond)
		waiting, _, _ = ray.ListTasks(ctx, ray.TaskFilter{State: ray.TaskPendingNode})
	}
	fmt.Println(len(waiting), waiting[0].Function, waiting[0].State)
	ray.Cancel(ctx, hog) // the CPUs come back: next runs
	fmt.Println(ray.Get(ctx, next))
	// Output:
	// 1 example.square PENDING_NODE_ASSIGNMENT
	// 9 <nil>
}
