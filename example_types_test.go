package ray_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"sort"
	"sync"
	"time"

	"github.com/ray-go/ray"
)

// Tally keeps its state in unexported fields behind a mutex, which the codec cannot
// encode: to be an exactly-once actor (the default) it implements ray.Checkpointer.
type Tally struct {
	mu     sync.Mutex
	counts map[string]int
}

// The compiler checks that *Tally is a ray.Checkpointer.
var _ ray.Checkpointer = (*Tally)(nil)

// SaveCheckpoint returns the state to keep.
func (t *Tally) SaveCheckpoint(context.Context) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return json.Marshal(t.counts)
}

// RestoreCheckpoint takes back what SaveCheckpoint returned, in a new instance.
func (t *Tally) RestoreCheckpoint(_ context.Context, b []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return json.Unmarshal(b, &t.counts)
}

// Count adds one to word's count and returns it.
func (t *Tally) Count(_ context.Context, word string) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts[word]++
	return t.counts[word], nil
}

var (
	TallyClass = ray.Actor("example.Tally", func() *Tally { return &Tally{counts: map[string]int{}} })
	TallyCount = ray.Method1(TallyClass, "Count", (*Tally).Count)
)

// A type with unexported state implements ray.Checkpointer to be an exactly-once actor
// (the default): a restart restores the newest checkpoint and replays the calls logged
// after it.
func ExampleCheckpointer() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	t := TallyClass.Remote(ctx, ray.MaxRestarts(1), ray.CheckpointEvery(2))
	for _, w := range []string{"a", "b", "a"} {
		TallyCount.Remote(ctx, t, ray.V(w))
	}
	ray.Get(ctx, TallyCount.Remote(ctx, t, ray.V("b")))
	if err := ray.Kill(ctx, t, false); err != nil { // a restart: the state comes back
		log.Fatal(err)
	}
	fmt.Println(ray.Get(ctx, TallyCount.Remote(ctx, t, ray.V("a"))))
	// Output: 3 <nil>
}

func ExampleActorClass0() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// CounterClass = ray.Actor("example.Counter", func() *Counter { ... }): ActorClass0,
	// a class whose constructor takes no arguments (ray.Actor0's takes a ctx and may fail).
	var class *ray.ActorClass0[Counter] = CounterClass
	c := class.Remote(ctx)
	fmt.Println(class.Name(), c.Class(), c.Err())
	fmt.Println(ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(3))))
	// Output:
	// example.Counter example.Counter <nil>
	// 3 <nil>
}

func ExampleActorClass0_Remote() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Remote returns a handle at once; options say how the actor lives.
	a := CounterClass.Remote(ctx, ray.Name("a"), ray.MaxRestarts(2))
	b := CounterClass.Remote(ctx, ray.AtMostOnce(), ray.MaxConcurrency(4))
	CounterAdd.Remote(ctx, a, ray.V(1))
	x, _ := ray.Get(ctx, CounterGet.Remote(ctx, a)) // calls from one caller run in order
	// b runs up to 4 calls at once, in any order: wait for each result that matters.
	y, _ := ray.Get(ctx, CounterAdd.Remote(ctx, b, ray.V(10)))
	fmt.Println(x, y, a.ID() != b.ID())
	// Output: 1 10 true
}

func ExampleActorClass1() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// LogbookClass = ray.Actor1("example.Logbook", func(ctx, title string) (*Logbook, error)):
	// its constructor's argument is a value or a ref.
	var class *ray.ActorClass1[Logbook, string] = LogbookClass
	title, _ := ray.Put(ctx, "deck")
	book := class.Remote(ctx, title)
	fmt.Println(class.Name(), book.Class())
	fmt.Println(ray.Get(ctx, LogbookWrite.Remote(ctx, book, ray.V("ada"), ray.V("saw"), ray.V(2))))
	// Output:
	// example.Logbook example.Logbook
	// 1 <nil>
}

func ExampleActorClass2() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// AccountClass = ray.Actor2("example.Account", func(ctx, owner string, opening int) (*Account, error)).
	var class *ray.ActorClass2[Account, string, int] = AccountClass
	opening := Square.Remote(ctx, ray.V(10)) // a task's result as a constructor argument
	a := class.Remote(ctx, ray.V("eve"), opening, ray.Name("eve"))
	fmt.Println(class.Name(), a.Class())
	fmt.Println(ray.Get(ctx, AccountMove.Remote(ctx, a, ray.V(0), ray.V(30))))
	// Output:
	// example.Account example.Account
	// eve: 70 <nil>
}

func ExampleActorMethod0() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// CounterGet = ray.Method0(CounterClass, "Get", (*Counter).Get)
	var get *ray.ActorMethod0[Counter, int] = CounterGet
	c := CounterClass.Remote(ctx)
	CounterAdd.Remote(ctx, c, ray.V(5))
	fmt.Println(get.Name())
	fmt.Println(ray.Get(ctx, get.Remote(ctx, c)))
	// Output:
	// example.Counter.Get
	// 5 <nil>
}

func ExampleActorMethod1() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// CounterAdd = ray.Method1(CounterClass, "Add", (*Counter).Add)
	var add *ray.ActorMethod1[Counter, int, int] = CounterAdd
	c := CounterClass.Remote(ctx)
	add.Remote(ctx, c, ray.V(2))
	by := Square.Remote(ctx, ray.V(3)) // a ref as the argument
	fmt.Println(add.Name())
	fmt.Println(ray.Get(ctx, add.Remote(ctx, c, by)))
	// Output:
	// example.Counter.Add
	// 11 <nil>
}

func ExampleActorMethod2() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// AccountMove = ray.Method2(AccountClass, "Move", func(a *Account, ctx, in, out int) (string, error))
	var move *ray.ActorMethod2[Account, int, int, string] = AccountMove
	a := AccountClass.Remote(ctx, ray.V("bob"), ray.V(50))
	fmt.Println(move.Name())
	fmt.Println(ray.Get(ctx, move.Remote(ctx, a, ray.V(25), ray.V(5))))
	// Output:
	// example.Account.Move
	// bob: 70 <nil>
}

func ExampleActorMethod3() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// LogbookWrite = ray.Method3(LogbookClass, "Write", (*Logbook).Write)
	var write *ray.ActorMethod3[Logbook, string, string, int, int] = LogbookWrite
	book := LogbookClass.Remote(ctx, ray.V("bridge"))
	write.Remote(ctx, book, ray.V("ada"), ray.V("saw"), ray.V(1))
	fmt.Println(write.Name())
	fmt.Println(ray.Get(ctx, write.Remote(ctx, book, ray.V("bob"), ray.V("heard"), ray.V(2))))
	// Output:
	// example.Logbook.Write
	// 2 <nil>
}

// Shelf is an actor whose method takes four arguments.
type Shelf struct{ Rows [][]string }

var (
	ShelfClass = ray.Actor("example.Shelf", func() *Shelf { return &Shelf{} })
	// ShelfPut places n copies of item at row, from column col on, and returns the row.
	ShelfPut = ray.Method4(ShelfClass, "Put", func(s *Shelf, _ context.Context, row, col, n int, item string) ([]string, error) {
		for len(s.Rows) <= row {
			s.Rows = append(s.Rows, nil)
		}
		for len(s.Rows[row]) < col+n {
			s.Rows[row] = append(s.Rows[row], "-")
		}
		for i := col; i < col+n; i++ {
			s.Rows[row][i] = item
		}
		return s.Rows[row], nil
	})
)

func ExampleActorMethod4() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	var put *ray.ActorMethod4[Shelf, int, int, int, string, []string] = ShelfPut
	s := ShelfClass.Remote(ctx)
	put.Remote(ctx, s, ray.V(0), ray.V(1), ray.V(2), ray.V("jam"))
	fmt.Println(put.Name())
	fmt.Println(ray.Get(ctx, put.Remote(ctx, s, ray.V(0), ray.V(0), ray.V(1), ray.V("tea"))))
	// Output:
	// example.Shelf.Put
	// [tea jam jam] <nil>
}

func ExampleFunc0() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Hello = ray.Task0("example.hello", func(ctx) (string, error))
	var hello *ray.Func0[string] = Hello
	light := hello.Options(ray.NumCPUs(0.25))
	fmt.Println(light.Name())
	fmt.Println(ray.Get(ctx, light.Remote(ctx)))
	// Output:
	// example.hello
	// hello <nil>
}

func ExampleFunc2() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Divide = ray.Task2("example.divide", func(ctx, a, b int) (int, error))
	var div *ray.Func2[int, int, int] = Divide
	q := div.Remote(ctx, ray.V(100), ray.V(7))
	fmt.Println(div.Name())
	fmt.Println(ray.Get(ctx, div.Remote(ctx, q, ray.V(2)))) // refs and values mix
	// Output:
	// example.divide
	// 7 <nil>
}

func ExampleFunc3() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Add3 = ray.Task3("example.add3", func(ctx, a, b, c int) (int, error))
	var add *ray.Func3[int, int, int, int] = Add3
	patient := add.Options(ray.MaxRetries(3))
	fmt.Println(patient.Name())
	fmt.Println(ray.Get(ctx, patient.Remote(ctx, ray.V(1), ray.V(2), ray.V(3))))
	// Output:
	// example.add3
	// 6 <nil>
}

func ExampleFunc4() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Describe = ray.Task4("example.describe", func(ctx, name string, age int, score float64, tags []string) (string, error))
	var describe *ray.Func4[string, int, float64, []string, string] = Describe
	tags, _ := ray.Put(ctx, []string{"chess", "go"})
	fmt.Println(describe.Name())
	fmt.Println(ray.Get(ctx, describe.Options(ray.NumCPUs(1)).Remote(ctx, ray.V("bob"), ray.V(41), ray.V(7.25), tags)))
	// Output:
	// example.describe
	// bob (41): 7.2 [chess go] <nil>
}

func ExampleArg() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// An Arg[int] is a value (ray.V) or an ObjectRef[int], from a task or from Put.
	put, _ := ray.Put(ctx, 3)
	args := []ray.Arg[int]{ray.V(1), Square.Remote(ctx, ray.V(2)), put}
	refs := make([]ray.ObjectRef[int], len(args))
	for i, a := range args {
		refs[i] = Square.Remote(ctx, a)
	}
	fmt.Println(ray.GetAll(ctx, refs))
	// Output: [1 16 9] <nil>
}

// counterNamed finds a named actor of any class of Counter, whatever its constructor takes.
func counterNamed(ctx context.Context, class ray.Class[Counter], name string) (int, error) {
	h, err := ray.GetActor(ctx, class, name)
	if err != nil {
		return 0, err
	}
	return ray.Get(ctx, CounterGet.Remote(ctx, h))
}

func ExampleClass() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// ActorClass0, ActorClass1 and ActorClass2 are all a Class[T]: GetActor and MethodN take one.
	c := CounterClass.Remote(ctx, ray.Name("visits"))
	CounterAdd.Remote(ctx, c, ray.V(7))
	var class ray.Class[Counter] = CounterClass
	fmt.Println(counterNamed(ctx, class, "visits"))
	// Output: 7 <nil>
}

func ExampleRef() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// A Ref is an ObjectRef of any type: for WaitAny and Cancel.
	sq, hello := Square.Remote(ctx, ray.V(2)), Hello.Remote(ctx)
	slow := Sleep.Options(ray.NumCPUs(0)).Remote(ctx, ray.V(time.Hour))
	refs := []ray.Ref{slow, sq, hello}
	ready, notReady, err := ray.WaitAny(ctx, refs, ray.NumReady(2), ray.Timeout(time.Minute))
	fmt.Println(len(ready), len(notReady), err, notReady[0].ID() == slow.ID())
	for _, r := range notReady {
		ray.Cancel(ctx, r)
	}
	// Output: 2 1 <nil> true
}

func ExampleTaskOption() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Task options apply to calls of remote functions (Options) and to actors (Remote of a
	// class); build them as a slice when they depend on the program's settings.
	opts := []ray.TaskOption{ray.NumCPUs(1), ray.MaxRetries(2)}
	if retryAll := true; retryAll {
		opts = append(opts, ray.RetryExceptions(true))
	}
	fmt.Println(ray.Get(ctx, Square.Options(opts...).Remote(ctx, ray.V(12))))

	actorOpts := []ray.TaskOption{ray.Name("ops"), ray.Namespace("tools"), ray.MaxRestarts(1)}
	c := CounterClass.Remote(ctx, actorOpts...)
	_, err = ray.GetActor(ctx, CounterClass, "ops", "tools")
	fmt.Println(c.Err(), err)
	// Output:
	// 144 <nil>
	// <nil> <nil>
}

func ExampleInitOption() {
	// Init options as a slice, built from the program's settings.
	cpus, accel := 2.0, true
	opts := []ray.InitOption{ray.WithNumCPUs(cpus), ray.WithTaskEvents(1000)}
	if accel {
		opts = append(opts, ray.WithResources(map[string]float64{"accel": 1}))
	}
	ctx, err := ray.Init(context.Background(), opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	total, _ := ray.ClusterResources(ctx)
	keys := make([]string, 0, len(total))
	for k := range total {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Println(k, total[k])
	}
	// Output:
	// CPU 2
	// accel 1
}

func ExampleWaitOption() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	refs := make([]ray.ObjectRef[int], 4)
	for i := range refs {
		refs[i] = Square.Remote(ctx, ray.V(i))
	}
	// Wait for all of them, for a minute at most.
	opts := []ray.WaitOption{ray.NumReady(len(refs)), ray.Timeout(time.Minute)}
	ready, notReady, err := ray.Wait(ctx, refs, opts...)
	fmt.Println(len(ready), len(notReady), err)
	// Output: 4 0 <nil>
}
