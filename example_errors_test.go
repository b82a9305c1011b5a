package ray_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ray-go/ray"
)

// Timer is an actor whose constructor takes a while: it waits for d.
type Timer struct{ D time.Duration }

var (
	TimerClass = ray.Actor1("example.Timer", func(ctx context.Context, d time.Duration) (*Timer, error) {
		select {
		case <-time.After(d):
			return &Timer{D: d}, nil
		case <-ctx.Done(): // killed meanwhile (or shut down): no call will reach it
			return &Timer{}, nil
		}
	})
	TimerGet = ray.Method0(TimerClass, "Get", func(t *Timer, _ context.Context) (time.Duration, error) { return t.D, nil })

	// TryMetadata attaches n bytes of metadata to its result and says whether that was taken.
	TryMetadata = ray.Task1("example.tryMetadata", func(ctx context.Context, n int) (bool, error) {
		return ray.SetResultMetadata(ctx, make([]byte, n)) == nil, nil
	})
)

func ExampleErrNotInitialized() {
	// A context that did not come from ray.Init (or from a running task) carries no runtime.
	_, err := ray.Put(context.Background(), 1)
	fmt.Println(errors.Is(err, ray.ErrNotInitialized))
	_, err = ray.Get(context.Background(), Square.Remote(context.Background(), ray.V(2)))
	fmt.Println(errors.Is(err, ray.ErrNotInitialized))
	// Output:
	// true
	// true
}

func ExampleErrActorDied() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	c := CounterClass.Remote(ctx)
	fmt.Println(ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(1))))
	if err := ray.Kill(ctx, c, true); err != nil { // no restart: dead for good
		log.Fatal(err)
	}
	_, err = ray.Get(ctx, CounterGet.Remote(ctx, c))
	fmt.Println(errors.Is(err, ray.ErrActorDied))
	st, _ := ray.GetActorState(ctx, c)
	fmt.Println(st.Phase)
	// Output:
	// 1 <nil>
	// true
	// Dead
}

func ExampleErrNameTaken() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	first := CounterClass.Remote(ctx, ray.Name("leader"))
	second := CounterClass.Remote(ctx, ray.Name("leader")) // the name is in use: not created
	fmt.Println(first.Err(), errors.Is(second.Err(), ray.ErrNameTaken))
	// Calls through the failed handle fail with its error.
	_, err = ray.Get(ctx, CounterGet.Remote(ctx, second))
	fmt.Println(errors.Is(err, ray.ErrNameTaken))
	// The same name in another namespace is another actor.
	other := CounterClass.Remote(ctx, ray.Name("leader"), ray.Namespace("other"))
	fmt.Println(other.Err())
	// Output:
	// <nil> true
	// true
	// <nil>
}

func ExampleErrNoSuchActor() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, err = ray.GetActor(ctx, CounterClass, "nobody")
	fmt.Println(errors.Is(err, ray.ErrNoSuchActor))
	// A dead actor's name is free: GetActor finds no live actor under it.
	c := CounterClass.Remote(ctx, ray.Name("gone"))
	ray.Kill(ctx, c, true)
	_, err = ray.GetActor(ctx, CounterClass, "gone")
	fmt.Println(errors.Is(err, ray.ErrNoSuchActor))
	// Output:
	// true
	// true
}

func ExampleErrNoSuchTask() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, err = ray.GetTask(ctx, "0123456789abcdef")
	fmt.Println(errors.Is(err, ray.ErrNoSuchTask))
	// Output: true
}

func ExampleActorState() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	c := CounterClass.Remote(ctx, ray.MaxRestarts(1))
	ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(1)))
	ray.Kill(ctx, c, false) // one restart
	ray.Get(ctx, CounterGet.Remote(ctx, c))
	st, err := ray.GetActorState(ctx, c)
	if err != nil {
		log.Fatal(err)
	}
	node, _ := ray.NodeID(ctx)
	switch st.Phase {
	case ray.ActorPending, ray.ActorRestarting:
		fmt.Println("not serving yet")
	case ray.ActorAlive:
		fmt.Println("alive:", st.Restarts, "restart, incarnation", st.Incarnation, "on this node:", st.Node == node)
	case ray.ActorDead:
		fmt.Println("dead:", st.Detail)
	}
	// Output: alive: 1 restart, incarnation 2 on this node: true
}

// An actor is pending until it has a node and its constructor has returned.
func ExampleActorPending() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	t := TimerClass.Remote(ctx, ray.V(time.Hour)) // its constructor waits an hour
	st, _ := ray.GetActorState(ctx, t)
	fmt.Println(st.Phase == ray.ActorPending, st.Phase)

	// Killed before its constructor returned: dead, and calls fail.
	if err := ray.Kill(ctx, t, true); err != nil {
		log.Fatal(err)
	}
	_, err = ray.Get(ctx, TimerGet.Remote(ctx, t))
	fmt.Println(errors.Is(err, ray.ErrActorDied))
	st, _ = ray.GetActorState(ctx, t)
	fmt.Println(st.Phase == ray.ActorDead)
	// Output:
	// true Pending
	// true
	// true
}

func ExampleAddressEnv() {
	// ray.Init(ctx) with no WithAddress joins the cluster that RAY_ADDRESS names, and
	// starts a local one when it is unset: the same program runs on a laptop and, with
	// RAY_ADDRESS=<head>:6379, as a cluster's driver.
	fmt.Println(ray.AddressEnv)
	// Output: RAY_ADDRESS
}

func ExampleMaxResultMetadata() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	fmt.Println(ray.MaxResultMetadata)
	fmt.Println(ray.Get(ctx, TryMetadata.Remote(ctx, ray.V(ray.MaxResultMetadata))))
	fmt.Println(ray.Get(ctx, TryMetadata.Remote(ctx, ray.V(ray.MaxResultMetadata+1)))) // refused
	// Output:
	// 65536
	// true <nil>
	// false <nil>
}
