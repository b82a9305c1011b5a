package ray_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sort"
	"time"

	"github.com/ray-go/ray"
)

// Remote functions are package-level values registered under explicit names.
var (
	Square = ray.Task1("example.square", func(_ context.Context, x int) (int, error) {
		return x * x, nil
	})
	Hello = ray.Task0("example.hello", func(context.Context) (string, error) {
		return "hello", nil
	})
	Describe = ray.Task4("example.describe", func(_ context.Context, name string, age int, score float64, tags []string) (string, error) {
		return fmt.Sprintf("%s (%d): %.1f %v", name, age, score, tags), nil
	})
	Divide = ray.Task2("example.divide", func(_ context.Context, a, b int) (int, error) {
		if b == 0 {
			return 0, errors.New("division by zero")
		}
		return a / b, nil
	})
	Sleep = ray.Task1("example.sleep", func(ctx context.Context, d time.Duration) (time.Duration, error) {
		select {
		case <-time.After(d):
			return d, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
	// Tree is a nested task: it submits tasks with the ctx it was given.
	Tree = ray.Task1("example.tree", func(ctx context.Context, n int) (int, error) {
		refs := []ray.ObjectRef[int]{Square.Remote(ctx, ray.V(n)), Square.Remote(ctx, ray.V(n+1))}
		vals, err := ray.GetAll(ctx, refs)
		if err != nil {
			return 0, err
		}
		return vals[0] + vals[1], nil
	})
)

func Example() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	r := Square.Remote(ctx, ray.V(4)) // a future, at once
	s := Square.Remote(ctx, r)        // refs are arguments; the task gets the value
	v, err := ray.Get(ctx, s)
	fmt.Println(v, err)
	// Output: 256 <nil>
}

func ExampleInit() {
	// No address: a whole single-node cluster in this process (embedded etcd included).
	ctx, err := ray.Init(context.Background(),
		ray.WithNumCPUs(2),
		ray.WithNumGPUs(0),
		ray.WithResources(map[string]float64{"accel": 1}),
		ray.WithObjectStoreMemory(256<<20),
		ray.WithLogger(nil), // nil: warnings to stderr
	)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := ray.Shutdown(ctx); err != nil {
			log.Print(err)
		}
	}()
	v, _ := ray.Get(ctx, Hello.Remote(ctx))
	fmt.Println(v)
	// Output: hello
}

func ExampleTask4() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	v, _ := ray.Get(ctx, Describe.Remote(ctx, ray.V("ada"), ray.V(36), ray.V(9.5), ray.V([]string{"math"})))
	fmt.Println(v)
	// Output: ada (36): 9.5 [math]
}

func ExampleFunc1_Options() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2), ray.WithResources(map[string]float64{"accel": 1}))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Ray's .options(): resources and retries for these calls only.
	heavy := Square.Options(ray.NumCPUs(2), ray.Resources(map[string]float64{"accel": 1}), ray.MaxRetries(5), ray.RetryExceptions(true))
	v, _ := ray.Get(ctx, heavy.Remote(ctx, ray.V(9)))
	fmt.Println(heavy.Name(), v)

	// A request no node can satisfy fails at once, never hangs.
	_, err = ray.Get(ctx, Square.Options(ray.NumGPUs(1)).Remote(ctx, ray.V(1)))
	fmt.Println(errors.Is(err, ray.ErrInfeasible))
	// Output:
	// example.square 81
	// true
}

func ExampleGetAll() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	refs := make([]ray.ObjectRef[int], 5)
	for i := range refs {
		refs[i] = Tree.Remote(ctx, ray.V(i)) // nested tasks
	}
	vals, err := ray.GetAll(ctx, refs)
	fmt.Println(vals, err)
	// Output: [1 5 13 25 41] <nil>
}

func ExamplePut() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	ref, err := ray.Put(ctx, 7) // stored once, passed by reference
	if err != nil {
		log.Fatal(err)
	}
	v, _ := ray.Get(ctx, Square.Remote(ctx, ref))
	fmt.Println(v)
	ref.Release() // free now rather than when the ref is garbage-collected
	// Output: 49
}

func ExampleWait() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	refs := []ray.ObjectRef[time.Duration]{
		Sleep.Options(ray.NumCPUs(0)).Remote(ctx, ray.V(time.Minute)),
		Sleep.Options(ray.NumCPUs(0)).Remote(ctx, ray.V(time.Millisecond)),
	}
	ready, notReady, err := ray.Wait(ctx, refs, ray.NumReady(1), ray.Timeout(10*time.Second))
	fmt.Println(len(ready), len(notReady), err, ready[0] == refs[1])
	for _, r := range notReady {
		ray.Cancel(ctx, r)
	}
	// Output: 1 1 <nil> true
}

func ExampleWaitAny() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	refs := []ray.Ref{Square.Remote(ctx, ray.V(2)), Hello.Remote(ctx)} // mixed types
	ready, _, err := ray.WaitAny(ctx, refs, ray.NumReady(2))
	fmt.Println(len(ready), err)
	// Output: 2 <nil>
}

func ExampleCancel() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	r := Sleep.Remote(ctx, ray.V(time.Hour))
	if err := ray.Cancel(ctx, r); err != nil {
		log.Fatal(err)
	}
	_, err = ray.Get(ctx, r)
	fmt.Println(errors.Is(err, ray.ErrCancelled))
	// Output: true
}

func ExampleCall() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Call a remote function by its registered name, with untyped arguments.
	v, err := ray.Get(ctx, ray.Call[int](ctx, "example.divide", []any{10, 3}))
	fmt.Println(v, err)
	_, err = ray.Get(ctx, ray.Call[int](ctx, "example.nope", nil))
	fmt.Println(errors.Is(err, ray.ErrUnknownFunction))
	// Output:
	// 3 <nil>
	// true
}

func ExampleTaskError() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	q := Divide.Remote(ctx, ray.V(1), ray.V(0))
	// The error travels through tasks that depend on the failed one.
	_, err = ray.Get(ctx, Square.Remote(ctx, q))
	var te *ray.TaskError
	if errors.As(err, &te) {
		fmt.Println(te.Function, te.Message)
	}
	// Output: example.divide division by zero
}

func ExampleObjectRef_ID() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	a := Square.Remote(ctx, ray.V(1))
	b := a // a copy refers to the same object
	ids := []string{a.ID(), b.ID()}
	sort.Strings(ids)
	fmt.Println(len(ids[0]), ids[0] == ids[1])
	// Output: 40 true
}

func ExampleMemory() {
	ctx, err := ray.Init(context.Background(), ray.WithObjectStoreMemory(64<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	big, _ := ray.Put(ctx, make([]int64, 1<<20)) // 8 MiB: kept in the node's object store
	defer big.Release()
	rep, err := ray.Memory(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	n := rep.Nodes[0]
	fmt.Println(n.Objects, n.Budget>>20, n.Largest[0].ID == big.ID(), n.Largest[0].Spilled)
	// Output: 1 64 true false
}
