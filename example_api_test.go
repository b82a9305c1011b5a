package ray_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/ray-go/ray"
)

// More remote functions and actor classes for the examples of this file.
var (
	Add3 = ray.Task3("example.add3", func(_ context.Context, a, b, c int) (int, error) { return a + b + c, nil })
	// Where tells on which node, in which task and with which resources it ran.
	Where = ray.Task0("example.whereTask", func(ctx context.Context) (ray.RuntimeContext, error) {
		return ray.GetRuntimeContext(ctx)
	})
	// FreeCPUs says how many CPUs of the cluster are free while it runs.
	FreeCPUs = ray.Task0("example.freeCPUs", func(ctx context.Context) (float64, error) {
		avail, err := ray.AvailableResources(ctx)
		return avail["CPU"], err
	})
	// Tagged attaches metadata to its result, which the owner reads without the value.
	Tagged = ray.Task1("example.tagged", func(ctx context.Context, n int) ([]int, error) {
		if err := ray.SetResultMetadata(ctx, []byte(fmt.Sprintf("rows=%d", n))); err != nil {
			return nil, err
		}
		return make([]int, n), nil
	})

	// Logbook's constructor takes a context and an argument, and may fail.
	LogbookClass = ray.Actor1("example.Logbook", func(_ context.Context, title string) (*Logbook, error) {
		if title == "" {
			return nil, errors.New("a logbook needs a title")
		}
		return &Logbook{Title: title}, nil
	})
	LogbookWrite = ray.Method3(LogbookClass, "Write", (*Logbook).Write)
	// Clock's constructor takes only a context.
	ClockClass = ray.Actor0("example.Clock", func(context.Context) (*Clock, error) { return &Clock{}, nil })
	ClockTick  = ray.Method0(ClockClass, "Tick", func(c *Clock, _ context.Context) (int, error) { c.T++; return c.T, nil })
)

// Logbook is an actor made by a constructor with an argument.
type Logbook struct {
	Title string
	Lines []string
}

// Write appends a line made of three arguments and returns how many lines there are.
func (l *Logbook) Write(_ context.Context, who string, what string, n int) (int, error) {
	l.Lines = append(l.Lines, fmt.Sprintf("%s %s %d", who, what, n))
	return len(l.Lines), nil
}

// Clock is an actor made by a constructor with no argument.
type Clock struct{ T int }

func ExampleGet() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	v, err := ray.Get(ctx, Square.Remote(ctx, ray.V(7))) // waits for the task
	fmt.Println(v, err)

	// Get honours ctx's deadline.
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err = ray.Get(short, Sleep.Remote(ctx, ray.V(time.Minute)))
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// 49 <nil>
	// true
}

func ExampleShutdown() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ray.Shutdown(ctx)) // stops the runtime and removes what Init created
	fmt.Println(ray.Shutdown(ctx)) // again: the first result
	_, err = ray.Get(ctx, Square.Remote(ctx, ray.V(2)))
	fmt.Println(errors.Is(err, ray.ErrShutdown))
	// Output:
	// <nil>
	// <nil>
	// true
}

func ExampleTask0() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	fmt.Println(ray.Get(ctx, Hello.Remote(ctx))) // Hello = ray.Task0("example.hello", ...)
	// Output: hello <nil>
}

func ExampleTask2() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	fmt.Println(ray.Get(ctx, Divide.Remote(ctx, ray.V(84), ray.V(2)))) // Divide = ray.Task2("example.divide", ...)
	_, err = ray.Get(ctx, Divide.Remote(ctx, ray.V(1), ray.V(0)))
	var te *ray.TaskError
	fmt.Println(errors.As(err, &te), te.Message)
	// Output:
	// 42 <nil>
	// true division by zero
}

func ExampleTask3() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	a := Square.Remote(ctx, ray.V(3))
	fmt.Println(ray.Get(ctx, Add3.Remote(ctx, a, ray.V(10), a))) // refs and values mix
	// Output: 28 <nil>
}

func ExampleV() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// An argument is a value (ray.V) or a ref to one of the same type.
	var arg ray.Arg[int] = ray.V(5)
	r := Square.Remote(ctx, arg)
	fmt.Println(ray.Get(ctx, Square.Remote(ctx, r)))
	// Output: 625 <nil>
}

func ExampleClusterResources() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2), ray.WithResources(map[string]float64{"accel": 1}))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	total, err := ray.ClusterResources(ctx)
	fmt.Println(total["CPU"], total["accel"], err)
	// Output: 2 1 <nil>
}

func ExampleAvailableResources() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Inside a task holding both CPUs, none is available.
	fmt.Println(ray.Get(ctx, FreeCPUs.Options(ray.NumCPUs(2)).Remote(ctx)))
	// Output: 0 <nil>
}

func ExampleGetRuntimeContext() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	driver, _ := ray.GetRuntimeContext(ctx)
	task, _ := ray.Get(ctx, Where.Options(ray.NumCPUs(0.5)).Remote(ctx))
	fmt.Println(driver.TaskID == "", task.TaskID != "", task.JobID == driver.JobID, task.NodeID == driver.NodeID, task.Resources)
	// Output: true true true true map[CPU:0.5]
}

func ExampleNodeID() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	here, _ := ray.NodeID(ctx)
	nodes, _ := ray.Nodes(ctx)
	fmt.Println(len(nodes), nodes[0].ID == here)
	// Output: 1 true
}

func ExampleSetResultMetadata() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	r := Tagged.Remote(ctx, ray.V(1000))
	if _, _, err := ray.Wait(ctx, []ray.ObjectRef[[]int]{r}); err != nil {
		log.Fatal(err)
	}
	info, err := ray.RefInfo(ctx, r) // without fetching the value
	fmt.Println(info.Ready, string(info.Metadata), err)
	// Outside a task there is no result to attach it to.
	fmt.Println(ray.SetResultMetadata(ctx, []byte("x")) != nil)
	// Output:
	// true rows=1000 <nil>
	// true
}

func ExampleRefInfo() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	small := Square.Remote(ctx, ray.V(3))
	big, err := ray.Put(ctx, make([]byte, 1<<20)) // over 100 KiB: in the node's object store
	if err != nil {
		log.Fatal(err)
	}
	ray.Get(ctx, small)
	s, _ := ray.RefInfo(ctx, small)
	b, _ := ray.RefInfo(ctx, big)
	fmt.Println(s.Ready, s.NodeID == "", b.Ready, b.NodeID != "", b.Size >= 1<<20)
	// Output: true true true true true
}

func ExampleStats() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	ray.Get(ctx, Square.Remote(ctx, ray.V(2)))
	st, err := ray.Stats(ctx)
	fmt.Println(st.TasksRetried, st.ObjectsReconstructed, st.MessagesHandled > 0, err)
	// Output: 0 0 true <nil>
}

func ExampleObjectRef_Release() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	r, _ := ray.Put(ctx, []float64{1, 2, 3})
	v, _ := ray.Get(ctx, r)
	r.Release() // the object goes now, not when the garbage collector finds r
	_, err = ray.Get(ctx, r)
	fmt.Println(v, errors.Is(err, ray.ErrObjectLost))
	// Output: [1 2 3] true
}

func ExampleActor0() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	c := ClockClass.Remote(ctx)
	ClockTick.Remote(ctx, c)
	fmt.Println(ray.Get(ctx, ClockTick.Remote(ctx, c)))
	// Output: 2 <nil>
}

func ExampleActor1() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	book := LogbookClass.Remote(ctx, ray.V("ship"))
	fmt.Println(ray.Get(ctx, LogbookWrite.Remote(ctx, book, ray.V("ada"), ray.V("saw"), ray.V(3))))
	// A constructor that fails: every call fails with ErrActorDied.
	none := LogbookClass.Remote(ctx, ray.V(""))
	_, err = ray.Get(ctx, LogbookWrite.Remote(ctx, none, ray.V("x"), ray.V("y"), ray.V(0)))
	fmt.Println(errors.Is(err, ray.ErrActorDied))
	// Output:
	// 1 <nil>
	// true
}

func ExampleMethod3() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	book := LogbookClass.Remote(ctx, ray.V("log"))
	n := Square.Remote(ctx, ray.V(4))                                                               // a ref as an argument
	LogbookWrite.Remote(ctx, book, ray.V("bob"), ray.V("counted"), n)                               // runs first
	fmt.Println(ray.Get(ctx, LogbookWrite.Remote(ctx, book, ray.V("eve"), ray.V("saw"), ray.V(1)))) // calls of one caller keep their order
	// Output: 2 <nil>
}

func ExampleGetActorState() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	c := CounterClass.Remote(ctx)
	ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(1))) // it serves calls: alive
	st, err := ray.GetActorState(ctx, c)
	fmt.Println(st.Phase == ray.ActorAlive, st.Restarts, st.Incarnation, err)
	// Output: true 0 1 <nil>
}

// Task options: what a call of a remote function needs and how it is retried. They apply
// to the calls of the copy Options returns.
func ExampleNumCPUs() {
	heavy := Square.Options(ray.NumCPUs(4)) // held while the task runs (default 1; 0 is allowed)
	fmt.Println(heavy.Name())
	// Output: example.square
}

func ExampleNumGPUs() {
	onGPU := Square.Options(ray.NumGPUs(1)) // only nodes with a GPU (ray.WithNumGPUs) run it
	fmt.Println(onGPU.Name())
	// Output: example.square
}

func ExampleResources() {
	// Custom resources match only nodes that declare them (ray.WithResources, or
	// rayctl start --resources '{"accel": 1}').
	accel := Square.Options(ray.Resources(map[string]float64{"accel": 0.5}))
	fmt.Println(accel.Name())
	// Output: example.square
}

func ExampleMaxRetries() {
	// System failures (a node that died) are retried up to 5 times; application errors
	// only with RetryExceptions(true).
	patient := Divide.Options(ray.MaxRetries(5), ray.RetryExceptions(true))
	fmt.Println(patient.Name())
	// Output: example.divide
}

func ExampleRetryExceptions() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Division by zero fails every time: with RetryExceptions it runs 1 + 2 times, then
	// Get returns the last error.
	_, err = ray.Get(ctx, Divide.Options(ray.MaxRetries(2), ray.RetryExceptions(true)).Remote(ctx, ray.V(1), ray.V(0)))
	var te *ray.TaskError
	fmt.Println(errors.As(err, &te), te.Message)
	// Output: true division by zero
}

// Wait options: how many refs to wait for, and for how long.
func ExampleNumReady() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	refs := []ray.ObjectRef[time.Duration]{Sleep.Remote(ctx, ray.V(time.Duration(0))), Sleep.Remote(ctx, ray.V(time.Hour))}
	ready, notReady, err := ray.Wait(ctx, refs, ray.NumReady(1), ray.Timeout(time.Minute))
	fmt.Println(len(ready), len(notReady), err)
	ray.Cancel(ctx, refs[1])
	// Output: 1 1 <nil>
}

func ExampleTimeout() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	slow := Sleep.Remote(ctx, ray.V(time.Hour))
	// After the timeout Wait returns what is ready, with no error.
	ready, notReady, err := ray.Wait(ctx, []ray.ObjectRef[time.Duration]{slow}, ray.Timeout(20*time.Millisecond))
	fmt.Println(len(ready), len(notReady), err)
	ray.Cancel(ctx, slow)
	// Output: 0 1 <nil>
}

// Actor options, given to Class.Remote (compiled, not run: see ExampleGetActor and
// ExampleKill for runs).
func ExampleName() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// A named actor in a namespace, found by name and namespace from any job of the cluster.
	CounterClass.Remote(ctx, ray.Name("hits"), ray.Namespace("web"))
	again, err := ray.GetActor(ctx, CounterClass, "hits", "web")
	fmt.Println(ray.Get(ctx, CounterAdd.Remote(ctx, again, ray.V(1))))
}

// A job's namespace: named actors are named in it unless Namespace says otherwise, and
// GetActor looks there. Without WithNamespace (or RAY_GO_JOB_NAMESPACE) a job gets an
// anonymous namespace of its own.
func ExampleWithNamespace() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2), ray.WithNamespace("web"))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	rc, _ := ray.GetRuntimeContext(ctx)
	c := CounterClass.Remote(ctx, ray.Name("hits"))
	byName, err1 := ray.GetActor(ctx, CounterClass, "hits")
	byNamespace, err2 := ray.GetActor(ctx, CounterClass, "hits", "web")
	fmt.Println(rc.Namespace, byName.ID() == c.ID(), byNamespace.ID() == c.ID(), err1, err2)
	// Output: web true true <nil> <nil>
}

func ExampleNamespace() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// The same name in two namespaces is two actors.
	CounterClass.Remote(ctx, ray.Name("c"), ray.Namespace("a"))
	CounterClass.Remote(ctx, ray.Name("c"), ray.Namespace("b"))
}

func ExampleDetached() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// A detached actor outlives the driver that made it (in a cluster); end it with Kill.
	h := CounterClass.Remote(ctx, ray.Name("registry"), ray.Detached())
	defer ray.Kill(ctx, h, true)
}

func ExampleMaxRestarts() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Restarted up to 3 times when its node dies (-1: always), from its last checkpoint
	// (every 100 calls) and its method log; calls in flight at a restart are resent.
	CounterClass.Remote(ctx, ray.MaxRestarts(3), ray.CheckpointEvery(100))
}

func ExampleMaxTaskRetries() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// At-most-once delivery (no method log, as Ray's default); calls in flight at a
	// restart are retried twice instead of failing.
	CounterClass.Remote(ctx, ray.AtMostOnce(), ray.MaxRestarts(1), ray.MaxTaskRetries(2))
}

func ExampleAtMostOnce() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Faster calls, no method log: a restart loses the state since the last checkpoint.
	c := CounterClass.Remote(ctx, ray.AtMostOnce())
	fmt.Println(ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(1))))
}

func ExampleCheckpointEvery() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Counter implements ray.Checkpointer: a snapshot every 10 calls bounds the replay of
	// the method log after a restart.
	CounterClass.Remote(ctx, ray.CheckpointEvery(10), ray.MaxRestarts(-1))
}

// Init options (compiled, not run: ExampleInit runs most of them).
func ExampleWithNumCPUs() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(8), ray.WithNumGPUs(1))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
}

func ExampleWithNumGPUs() {
	ctx, err := ray.Init(context.Background(), ray.WithNumGPUs(2)) // tasks with NumGPUs run here
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
}

func ExampleWithResources() {
	ctx, err := ray.Init(context.Background(), ray.WithResources(map[string]float64{"accel": 2, "disk": 1}))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
}

func ExampleWithObjectStoreMemory() {
	// Past 512 MiB of large objects the least recently used spill to disk.
	ctx, err := ray.Init(context.Background(), ray.WithObjectStoreMemory(512<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
}

func ExampleWithLogger() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, err := ray.Init(context.Background(), ray.WithLogger(logger))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
}

func ExampleWithDir() {
	// etcd's data and the spill files go here, and stay after Shutdown.
	ctx, err := ray.Init(context.Background(), ray.WithDir("/var/lib/myapp/ray"))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
}

func ExampleWithoutLineage() {
	// For a benchmark of what lineage costs: lost objects cannot be recreated.
	ctx, err := ray.Init(context.Background(), ray.WithoutLineage())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
}

func ExampleWithAddress() {
	// A driver of the cluster whose head runs at 10.0.0.5 (RAY_ADDRESS does the same).
	ctx, err := ray.Init(context.Background(), ray.WithAddress("10.0.0.5:6379"), ray.WithToken(os.Getenv("MY_RAY_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
}

func ExampleWithInsecure() {
	// A throw-away cluster started with rayctl start --head --insecure.
	ctx, err := ray.Init(context.Background(), ray.WithAddress("127.0.0.1:6379"), ray.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
}

// An actor's state carries its history: each phase it entered, with the time, the
// incarnation and the node. Here it is created, serves, is killed with a restart allowed,
// and serves again as its second incarnation.
func ExampleActorTransition() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	c := CounterClass.Remote(ctx, ray.MaxRestarts(1))
	ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(1)))
	if err := ray.Kill(ctx, c, false); err != nil {
		log.Fatal(err)
	}
	ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(1))) // served by the restarted instance
	st, _ := ray.GetActorState(ctx, c)
	for _, t := range st.History {
		fmt.Println(t.Phase, t.Incarnation, t.Node != "")
	}
	// Output:
	// Pending 1 false
	// Pending 1 true
	// Alive 1 true
	// Restarting 2 false
	// Restarting 2 true
	// Alive 2 true
}
