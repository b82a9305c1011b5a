package ray_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"runtime"
	"time"

	"github.com/ray-go/ray"
)

// Counter is a stateful actor. Its methods take the instance, a context and arguments.
type Counter struct{ N int }

func (c *Counter) Add(_ context.Context, by int) (int, error) { c.N += by; return c.N, nil }
func (c *Counter) Get(context.Context) (int, error)           { return c.N, nil }

// SaveCheckpoint and RestoreCheckpoint make Counter a ray.Checkpointer.
func (c *Counter) SaveCheckpoint(context.Context) ([]byte, error) { return json.Marshal(c) }
func (c *Counter) RestoreCheckpoint(_ context.Context, b []byte) error {
	return json.Unmarshal(b, c)
}

// Account's constructor takes arguments (values or refs) and may fail.
type Account struct {
	Owner   string
	Balance int
}

// Actor classes and their methods are package-level values registered under explicit names.
var (
	CounterClass = ray.Actor("example.Counter", func() *Counter { return &Counter{} })
	CounterAdd   = ray.Method1(CounterClass, "Add", (*Counter).Add)
	CounterGet   = ray.Method0(CounterClass, "Get", (*Counter).Get)

	AccountClass = ray.Actor2("example.Account", func(_ context.Context, owner string, opening int) (*Account, error) {
		if opening < 0 {
			return nil, errors.New("negative opening balance")
		}
		return &Account{Owner: owner, Balance: opening}, nil
	})
	AccountMove = ray.Method2(AccountClass, "Move", func(a *Account, _ context.Context, in, out int) (string, error) {
		a.Balance += in - out
		return fmt.Sprintf("%s: %d", a.Owner, a.Balance), nil
	})

	// AddFromTask calls an actor through a handle it was given.
	AddFromTask = ray.Task2("example.addFromTask", func(ctx context.Context, c ray.ActorHandle[Counter], by int) (int, error) {
		return ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(by)))
	})
)

func ExampleActor() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	c := CounterClass.Remote(ctx) // a handle, at once; the constructor runs in the cluster
	var last ray.ObjectRef[int]
	for i := 1; i <= 10; i++ {
		last = CounterAdd.Remote(ctx, c, ray.V(i)) // calls from one caller run in order
	}
	fmt.Println(ray.Get(ctx, last))
	// Output: 55 <nil>
}

func ExampleActor2() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	opening, _ := ray.Put(ctx, 100) // constructor arguments may be refs
	a := AccountClass.Remote(ctx, ray.V("ada"), opening)
	fmt.Println(ray.Get(ctx, AccountMove.Remote(ctx, a, ray.V(20), ray.V(5))))

	bad := AccountClass.Remote(ctx, ray.V("bob"), ray.V(-1))
	_, err = ray.Get(ctx, AccountMove.Remote(ctx, bad, ray.V(1), ray.V(0)))
	fmt.Println(errors.Is(err, ray.ErrActorDied))
	// Output:
	// ada: 115 <nil>
	// true
}

func ExampleActorHandle() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	c := CounterClass.Remote(ctx)
	// A handle is a value: tasks (and actors) that get it can call the actor.
	r1 := AddFromTask.Remote(ctx, ray.V(c), ray.V(2))
	fmt.Println(ray.Get(ctx, r1))
	fmt.Println(ray.Get(ctx, CounterGet.Remote(ctx, c)))
	// Output:
	// 2 <nil>
	// 2 <nil>
}

func ExampleActorHandle_lifetime() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	// A copy rebuilt from MarshalBinary names the actor without keeping it alive: here, to
	// watch it.
	var watch ray.ActorHandle[Counter]
	box, err := func() (ray.ObjectRef[[]ray.ActorHandle[Counter]], error) {
		c := CounterClass.Remote(ctx)
		fmt.Println(ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(1))))
		b, _ := c.MarshalBinary()
		watch.UnmarshalBinary(b)
		// A handle inside an object keeps the actor alive while the object lives.
		return ray.Put(ctx, []ray.ActorHandle[Counter]{c})
	}()
	if err != nil {
		log.Fatal(err)
	}
	// The program's own handle is gone; the object's is not.
	hs, _ := ray.Get(ctx, box)
	fmt.Println(ray.Get(ctx, CounterAdd.Remote(ctx, hs[0], ray.V(1))))

	// Once the last handle is gone (here: the object and the copy Get made), the actor ends.
	box.Release()
	hs = nil
	for i := 0; i < 500; i++ {
		runtime.GC() // dropped handles let go when the garbage collector finds them
		if st, _ := ray.GetActorState(ctx, watch); st.Phase == ray.ActorDead {
			fmt.Println(st.Phase, "-", st.Detail)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// 1 <nil>
	// 2 <nil>
	// Dead - out of scope: every handle to the actor is gone (Go drops a handle after its last use, not at the end of its scope: to keep an actor, keep a handle reachable, e.g. defer runtime.KeepAlive(h), or create it Detached)
}

func ExampleGetActor() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	c := CounterClass.Remote(ctx, ray.Name("hits"), ray.Namespace("web"))
	ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(1)))

	same, err := ray.GetActor(ctx, CounterClass, "hits", "web")
	fmt.Println(same.ID() == c.ID(), err)
	dup := CounterClass.Remote(ctx, ray.Name("hits"), ray.Namespace("web"))
	fmt.Println(errors.Is(dup.Err(), ray.ErrNameTaken))
	_, err = ray.GetActor(ctx, CounterClass, "misses", "web")
	fmt.Println(errors.Is(err, ray.ErrNoSuchActor))
	// Output:
	// true <nil>
	// true
	// true
}

func ExampleKill() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	// A logged (exactly-once, the default) actor comes back from a restart with its state:
	// its checkpoint, plus the calls logged after it, replayed.
	c := CounterClass.Remote(ctx, ray.MaxRestarts(1))
	ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(40)))
	if err := ray.Kill(ctx, c, false); err != nil { // restart allowed
		log.Fatal(err)
	}
	fmt.Println(ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(2))))
	st, _ := ray.GetActorState(ctx, c)
	fmt.Println(st.Phase, st.Restarts)

	// An at-most-once actor (Ray's default) starts afresh.
	m := CounterClass.Remote(ctx, ray.MaxRestarts(1), ray.AtMostOnce())
	ray.Get(ctx, CounterAdd.Remote(ctx, m, ray.V(40)))
	ray.Kill(ctx, m, false)
	fmt.Println(ray.Get(ctx, CounterAdd.Remote(ctx, m, ray.V(2))))

	// Kill with noRestart ends it: calls fail with ErrActorDied.
	ray.Kill(ctx, c, true)
	_, err = ray.Get(ctx, CounterGet.Remote(ctx, c))
	fmt.Println(errors.Is(err, ray.ErrActorDied))
	// Output:
	// 42 <nil>
	// Alive 1
	// 2 <nil>
	// true
}

func ExampleCheckpoint() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	// Counter implements ray.Checkpointer: a checkpoint every 100 calls (and on request)
	// bounds the method log, and a restart replays only what came after it.
	c := CounterClass.Remote(ctx, ray.CheckpointEvery(100), ray.MaxRestarts(-1))
	for i := 0; i < 250; i++ {
		CounterAdd.Remote(ctx, c, ray.V(1))
	}
	if err := ray.Checkpoint(ctx, c); err != nil {
		log.Fatal(err)
	}
	ray.Kill(ctx, c, false)
	fmt.Println(ray.Get(ctx, CounterGet.Remote(ctx, c)))
	// Output: 250 <nil>
}

var CounterPing = ray.Method1(CounterClass, "CounterPing", func(c *Counter, ctx context.Context, _ int) (int, error) {
	return 0, nil
})

func ExampleMaxConcurrency() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	// Up to 8 calls run at once on this actor (their order is then not kept).
	c := CounterClass.Remote(ctx, ray.MaxConcurrency(8), ray.AtMostOnce())
	refs := make([]ray.ObjectRef[int], 100)
	for i := range refs {
		refs[i] = CounterPing.Remote(ctx, c, ray.V(i))
	}
	_, err = ray.GetAll(ctx, refs)
	fmt.Println(err)
	// Output: <nil>
}
