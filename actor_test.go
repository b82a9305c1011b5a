package ray

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// account is a test actor with state that every call changes, so that a call run twice
// or out of order shows in the results.
type account struct {
	owner   string
	balance int64
	history []int64
}

func (a *account) Deposit(_ context.Context, n int64) (int64, error) {
	a.balance += n
	a.history = append(a.history, n)
	return a.balance, nil
}

func (a *account) Withdraw(_ context.Context, n int64) (int64, error) {
	if n > a.balance {
		return a.balance, fmt.Errorf("insufficient funds: %d < %d", a.balance, n)
	}
	a.balance -= n
	return a.balance, nil
}

func (a *account) Balance(context.Context) (int64, error) { return a.balance, nil }
func (a *account) Owner(context.Context) (string, error)  { return a.owner, nil }
func (a *account) Boom(context.Context) (int, error)      { panic("actor kaboom") }
func (a *account) History(context.Context) ([]int64, error) {
	return append([]int64(nil), a.history...), nil
}

// Transfer4 exercises a four-argument method.
func (a *account) Transfer4(_ context.Context, x, y, z int64, memo string) (string, error) {
	a.balance += x + y + z
	return fmt.Sprintf("%s:%d", memo, a.balance), nil
}

// SaveCheckpoint / RestoreCheckpoint make account a Checkpointer.
func (a *account) SaveCheckpoint(context.Context) ([]byte, error) {
	b := binary.AppendVarint(nil, a.balance)
	b = binary.AppendUvarint(b, uint64(len(a.history)))
	for _, h := range a.history {
		b = binary.AppendVarint(b, h)
	}
	return append(b, a.owner...), nil
}

func (a *account) RestoreCheckpoint(_ context.Context, b []byte) error {
	v, n := binary.Varint(b)
	a.balance, b = v, b[n:]
	k, n := binary.Uvarint(b)
	b = b[n:]
	a.history = a.history[:0]
	for range k {
		h, n := binary.Varint(b)
		a.history, b = append(a.history, h), b[n:]
	}
	a.owner = string(b)
	return nil
}

var (
	accountClass = Actor1("test.Account", func(_ context.Context, owner string) (*account, error) {
		if owner == "" {
			return nil, errors.New("an account needs an owner")
		}
		return &account{owner: owner}, nil
	})
	deposit   = Method1(accountClass, "Deposit", (*account).Deposit)
	withdraw  = Method1(accountClass, "Withdraw", (*account).Withdraw)
	balance   = Method0(accountClass, "Balance", (*account).Balance)
	ownerOf   = Method0(accountClass, "Owner", (*account).Owner)
	boomM     = Method0(accountClass, "Boom", (*account).Boom)
	history   = Method0(accountClass, "History", (*account).History)
	transfer4 = Method4(accountClass, "Transfer4", (*account).Transfer4)

	// callDeposit is a task that calls an actor through a handle it was given.
	callDeposit = Task2("test.callDeposit", func(ctx context.Context, h ActorHandle[account], n int64) (int64, error) {
		return Get(ctx, deposit.Remote(ctx, h, V(n)))
	})
	// handleBox carries a handle inside a value.
	depositViaBox = Task1("test.depositViaBox", func(ctx context.Context, b handleBox) (int64, error) {
		return Get(ctx, deposit.Remote(ctx, b.H, V(b.N)))
	})
)

type handleBox struct {
	H ActorHandle[account]
	N int64
}

func bothModes(t *testing.T, f func(t *testing.T, opts ...TaskOption)) {
	t.Run("exactly-once", func(t *testing.T) { f(t) })
	t.Run("at-most-once", func(t *testing.T) { f(t, AtMostOnce()) })
}

func TestActorBasics(t *testing.T) {
	bothModes(t, func(t *testing.T, opts ...TaskOption) {
		ctx := timeout(t)
		h := accountClass.Remote(ctx, V("alice"), opts...)
		if h.Err() != nil {
			t.Fatal(h.Err())
		}
		if got := mustGet(t, ctx, ownerOf.Remote(ctx, h)); got != "alice" {
			t.Fatalf("owner = %q", got)
		}
		// Pipelined calls run in order: each result is the running balance.
		var refs []ObjectRef[int64]
		for i := 1; i <= 200; i++ {
			refs = append(refs, deposit.Remote(ctx, h, V(int64(i))))
		}
		vals, err := GetAll(ctx, refs)
		if err != nil {
			t.Fatal(err)
		}
		var want int64
		for i, v := range vals {
			want += int64(i + 1)
			if v != want {
				t.Fatalf("call %d returned %d, want %d (calls ran out of order or twice)", i+1, v, want)
			}
		}
		if got := mustGet(t, ctx, transfer4.Remote(ctx, h, V[int64](1), V[int64](2), V[int64](3), V("memo"))); got != fmt.Sprintf("memo:%d", want+6) {
			t.Fatalf("Transfer4 = %q", got)
		}
	})
}

func TestActorErrorsFailOneCall(t *testing.T) {
	ctx := timeout(t)
	h := accountClass.Remote(ctx, V("bob"))
	mustGet(t, ctx, deposit.Remote(ctx, h, V[int64](10)))
	_, err := Get(ctx, withdraw.Remote(ctx, h, V[int64](100)))
	var te *TaskError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "insufficient funds") || te.Function != "test.Account.Withdraw" {
		t.Fatalf("Withdraw error = %v", err)
	}
	_, err = Get(ctx, boomM.Remote(ctx, h))
	if !errors.As(err, &te) || !te.Panic || !strings.Contains(te.Message, "actor kaboom") {
		t.Fatalf("Boom error = %v", err)
	}
	// The actor lives on with its state.
	if got := mustGet(t, ctx, balance.Remote(ctx, h)); got != 10 {
		t.Fatalf("balance after failed calls = %d, want 10", got)
	}
}

func TestActorArgumentRefsKeepOrder(t *testing.T) {
	ctx := timeout(t)
	h := accountClass.Remote(ctx, V("carol"))
	// The first call waits on a slow ref; the second has a plain value. The second must
	// not overtake the first.
	first := deposit.Remote(ctx, h, sleepThen.Remote(ctx, V[int64](50), V[int64](100)))
	second := deposit.Remote(ctx, h, V[int64](1))
	if a, b := mustGet(t, ctx, first), mustGet(t, ctx, second); a != 100 || b != 101 {
		t.Fatalf("results %d, %d: want 100, 101 (the call with a ref argument was overtaken)", a, b)
	}
}

var sleepThen = Task2("test.sleepThen", func(_ context.Context, ms, v int64) (int64, error) {
	time.Sleep(time.Duration(ms) * time.Millisecond)
	return v, nil
})

func TestActorHandlePassing(t *testing.T) {
	ctx := timeout(t)
	h := accountClass.Remote(ctx, V("dave"))
	if got := mustGet(t, ctx, callDeposit.Remote(ctx, V(h), V[int64](5))); got != 5 {
		t.Fatalf("deposit through a task = %d", got)
	}
	if got := mustGet(t, ctx, depositViaBox.Remote(ctx, V(handleBox{H: h, N: 7}))); got != 12 {
		t.Fatalf("deposit through a handle in a value = %d", got)
	}
	// A handle put in the object store and read back still works.
	ref, err := Put(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	h2 := mustGet(t, ctx, ref)
	if h2.ID() != h.ID() {
		t.Fatalf("handle round trip: %s != %s", h2.ID(), h.ID())
	}
	if got := mustGet(t, ctx, balance.Remote(ctx, h2)); got != 12 {
		t.Fatalf("balance = %d", got)
	}
}

func TestNamedActors(t *testing.T) {
	ctx := timeout(t)
	h := accountClass.Remote(ctx, V("erin"), Name("erin"), Namespace("bank"))
	if h.Err() != nil {
		t.Fatal(h.Err())
	}
	mustGet(t, ctx, deposit.Remote(ctx, h, V[int64](3)))
	got, err := GetActor(ctx, accountClass, "erin", "bank")
	if err != nil || got.ID() != h.ID() {
		t.Fatalf("GetActor = %v, %v", got, err)
	}
	if _, err := GetActor(ctx, accountClass, "erin"); !errors.Is(err, ErrNoSuchActor) {
		t.Fatalf("GetActor in the default namespace: %v, want ErrNoSuchActor", err)
	}
	dup := accountClass.Remote(ctx, V("erin2"), Name("erin"), Namespace("bank"))
	if !errors.Is(dup.Err(), ErrNameTaken) {
		t.Fatalf("second actor under the same name: %v, want ErrNameTaken", dup.Err())
	}
	// The creation's error says the actor was not created, the name, the namespace and
	// which actor holds it; a call through the handle says it was not made, and why.
	for _, want := range []string{"actor test.Account could not be created", `"erin" in namespace "bank"`, "held by actor " + h.ID()} {
		if !strings.Contains(dup.Err().Error(), want) {
			t.Errorf("creation error %q does not say %q", dup.Err(), want)
		}
	}
	_, err = Get(ctx, deposit.Remote(ctx, dup, V[int64](1)))
	if !errors.Is(err, ErrNameTaken) || !strings.Contains(err.Error(), "no call made: actor test.Account could not be created") ||
		strings.Count(err.Error(), "ray: ") != 1 {
		t.Errorf("call through the handle whose creation failed: %v", err)
	}
	if err := Kill(ctx, h, true); err != nil {
		t.Fatal(err)
	}
	// The name is free again once the actor is dead.
	eventually.True(t, 5*time.Second, "name freed", func() bool {
		_, err := GetActor(ctx, accountClass, "erin", "bank")
		return errors.Is(err, ErrNoSuchActor)
	})
}

func TestActorKill(t *testing.T) {
	bothModes(t, func(t *testing.T, opts ...TaskOption) {
		ctx := timeout(t)
		h := accountClass.Remote(ctx, V("frank"), opts...)
		mustGet(t, ctx, deposit.Remote(ctx, h, V[int64](1)))
		if err := Kill(ctx, h, true); err != nil {
			t.Fatal(err)
		}
		eventually.True(t, 5*time.Second, "calls fail with ErrActorDied", func() bool {
			_, err := Get(ctx, balance.Remote(ctx, h))
			return errors.Is(err, ErrActorDied)
		})
		st, err := GetActorState(ctx, h)
		if err != nil || st.Phase != ActorDead {
			t.Fatalf("state = %+v, %v", st, err)
		}
	})
}

func TestActorRestartKeepsStateWhenLogged(t *testing.T) {
	ctx := timeout(t)
	h := accountClass.Remote(ctx, V("gina"), MaxRestarts(2))
	for i := 1; i <= 10; i++ {
		deposit.Remote(ctx, h, V(int64(i)))
	}
	if got := mustGet(t, ctx, balance.Remote(ctx, h)); got != 55 {
		t.Fatalf("balance = %d", got)
	}
	if err := Kill(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	// Calls made while it restarts wait for it; state comes back from the log.
	if got := mustGet(t, ctx, deposit.Remote(ctx, h, V[int64](45))); got != 100 {
		t.Fatalf("balance after restart = %d, want 100", got)
	}
	st, err := GetActorState(ctx, h)
	if err != nil || st.Restarts != 1 || st.Phase != ActorAlive {
		t.Fatalf("state = %+v, %v", st, err)
	}
}

func TestActorRestartAtMostOnceLosesState(t *testing.T) {
	ctx := timeout(t)
	h := accountClass.Remote(ctx, V("hank"), MaxRestarts(1), AtMostOnce())
	mustGet(t, ctx, deposit.Remote(ctx, h, V[int64](7)))
	if err := Kill(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, ctx, deposit.Remote(ctx, h, V[int64](1))); got != 1 {
		t.Fatalf("balance after an at-most-once restart = %d, want 1 (fresh state)", got)
	}
	// No restart left: the next kill is final.
	if err := Kill(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "dead after its last restart", func() bool {
		_, err := Get(ctx, balance.Remote(ctx, h))
		return errors.Is(err, ErrActorDied)
	})
}

func TestActorCheckpointAndRestore(t *testing.T) {
	ctx := timeout(t)
	h := accountClass.Remote(ctx, V("ivy"), MaxRestarts(3), CheckpointEvery(25))
	var last ObjectRef[int64]
	for i := 1; i <= 100; i++ {
		last = deposit.Remote(ctx, h, V(int64(i)))
	}
	if got := mustGet(t, ctx, last); got != 5050 {
		t.Fatalf("balance = %d", got)
	}
	if err := Checkpoint(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := Kill(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	hist := mustGet(t, ctx, history.Remote(ctx, h))
	if len(hist) != 100 || hist[0] != 1 || hist[99] != 100 {
		t.Fatalf("history after restore: %d entries", len(hist))
	}
	if got := mustGet(t, ctx, balance.Remote(ctx, h)); got != 5050 {
		t.Fatalf("balance after restore = %d", got)
	}
}

func TestActorConstructorFailure(t *testing.T) {
	ctx := timeout(t)
	h := accountClass.Remote(ctx, V(""))
	_, err := Get(ctx, balance.Remote(ctx, h))
	if !errors.Is(err, ErrActorDied) || !strings.Contains(err.Error(), "needs an owner") {
		t.Fatalf("call on an actor whose constructor failed: %v", err)
	}
}

// failingCtor counts its runs under its argument and fails each (an error, or a panic).
var failingCtor = Actor1("test.FailingCtor", func(_ context.Context, key string) (*account, error) {
	n := countCall(key)
	if strings.HasPrefix(key, "panic") {
		panic(fmt.Sprintf("ctor panics (run %d)", n))
	}
	return nil, fmt.Errorf("ctor says no (run %d)", n)
})

var failingCtorBalance = Method0(failingCtor, "Balance", (*account).Balance)

// TestActorConstructorErrorIsFinal: a constructor that returns an error or panics ends
// the actor at once, restarts left or not (Ray: "the actor died because of an error
// raised in its creation task"): it runs once, and the death detail and the calls' errors
// give its error.
func TestActorConstructorErrorIsFinal(t *testing.T) {
	for _, key := range []string{"ctor-final-error", "panic-ctor-final"} {
		t.Run(key, func(t *testing.T) {
			ctx := timeout(t)
			h := failingCtor.Remote(ctx, V(key), MaxRestarts(3))
			_, err := Get(ctx, failingCtorBalance.Remote(ctx, h))
			if !errors.Is(err, ErrActorDied) || !strings.Contains(err.Error(), "run 1") || !strings.Contains(err.Error(), "final") {
				t.Fatalf("call on an actor whose constructor failed: %v", err)
			}
			st, err := GetActorState(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if st.Phase != "Dead" || st.Restarts != 0 || !strings.Contains(st.Detail, "run 1") {
				t.Fatalf("state after a constructor error: %+v", st)
			}
			if n := counter(calls, key).Load(); n != 1 {
				t.Fatalf("the constructor ran %d times, want 1", n)
			}
		})
	}
}

func TestActorConcurrency(t *testing.T) {
	ctx := timeout(t)
	h := gateClass.Remote(ctx, MaxConcurrency(4), UnboundedMethodLog())
	// Four calls wait for each other: only possible if they run at once.
	var refs []ObjectRef[int]
	for range 4 {
		refs = append(refs, rendezvous.Remote(ctx, h, V(4)))
	}
	if _, err := GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
}

type gate struct {
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

var (
	gateClass  = Actor("test.Gate", func() *gate { return &gate{all: make(chan struct{})} })
	rendezvous = Method1(gateClass, "Rendezvous", func(g *gate, ctx context.Context, n int) (int, error) {
		g.mu.Lock()
		g.arrived++
		if g.arrived == n {
			close(g.all)
		}
		g.mu.Unlock()
		select {
		case <-g.all:
			return n, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Second):
			return 0, errors.New("calls did not run concurrently")
		}
	})
)

func TestActorBadInput(t *testing.T) {
	ctx := timeout(t)
	var zero ActorHandle[account]
	if _, err := Get(ctx, balance.Remote(ctx, zero)); err == nil {
		t.Fatal("call through the zero handle succeeded")
	}
	if h := accountClass.Remote(ctx, V("x"), NumCPUs(1000)); !errors.Is(h.Err(), ErrInfeasible) {
		t.Fatalf("actor needing 1000 CPUs: %v, want ErrInfeasible", h.Err())
	}
	if h := accountClass.Remote(ctx, V("x"), Detached()); h.Err() == nil {
		t.Fatal("a detached actor without a name was accepted")
	}
	if _, err := GetActor(ctx, accountClass, "nobody"); !errors.Is(err, ErrNoSuchActor) || !strings.Contains(err.Error(), `"nobody"`) || !strings.Contains(err.Error(), "rayctl list actors") {
		t.Fatalf("GetActor(nobody) = %v, want ErrNoSuchActor naming it and saying where to look", err)
	}
	if h := accountClass.Remote(context.Background(), V("x")); !errors.Is(h.Err(), ErrNotInitialized) {
		t.Fatalf("Remote without Init: %v", h.Err())
	}
}

var accelTask = Task0("test.accelTask", func(context.Context) (int, error) { return 1, nil }).Options(NumCPUs(0), Resources(map[string]float64{"accel": 1}))

func TestActorHoldsItsResources(t *testing.T) {
	ctx := timeout(t)
	// The node has one "accel"; an actor that asks for it keeps it while it lives.
	h := accountClass.Remote(ctx, V("kim"), Resources(map[string]float64{"accel": 1}))
	mustGet(t, ctx, deposit.Remote(ctx, h, V[int64](1)))
	r := accelTask.Remote(ctx)
	ready, _, err := Wait(ctx, []ObjectRef[int]{r}, Timeout(300*time.Millisecond))
	if err != nil || len(ready) != 0 {
		t.Fatalf("a task needing the actor's resource ran while the actor held it (ready %d, %v)", len(ready), err)
	}
	if err := Kill(ctx, h, true); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, ctx, r); got != 1 {
		t.Fatalf("task result %d", got)
	}
	// An actor without resources holds none.
	h2 := accountClass.Remote(ctx, V("lee"))
	mustGet(t, ctx, deposit.Remote(ctx, h2, V[int64](1)))
	if got := mustGet(t, ctx, accelTask.Remote(ctx)); got != 1 {
		t.Fatalf("task result %d", got)
	}
}

// clock breaks the determinism rule on purpose: its result depends on a process-wide
// counter, not on its state and arguments.
type clock struct{ last int64 }

var (
	ticks      atomic.Int64
	clockClass = Actor("test.Clock", func() *clock { return &clock{} })
	clockTick  = Method0(clockClass, "Tick", func(c *clock, _ context.Context) (int64, error) {
		c.last = ticks.Add(1)
		return c.last, nil
	})
)

func TestActorReplayDetectsNondeterminism(t *testing.T) {
	ctx := timeout(t)
	stats := nodeOf(ctx).ActorStats
	before := stats.Divergent.Load()
	h := clockClass.Remote(ctx, MaxRestarts(1), UnboundedMethodLog())
	for range 5 {
		mustGet(t, ctx, clockTick.Remote(ctx, h))
	}
	if err := Kill(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	mustGet(t, ctx, clockTick.Remote(ctx, h)) // after the restart and its replay
	// A result's digest is written with the next group commit, so the last call before
	// the kill has none: 4 of the 5 replayed calls can be checked.
	if got := stats.Divergent.Load() - before; got < 4 {
		t.Fatalf("replay of 5 nondeterministic calls reported %d divergent results, want at least 4", got)
	}
}

func TestCancelActorCall(t *testing.T) {
	ctx := timeout(t)
	h := accountClass.Remote(ctx, V("mo"))
	slowArg := sleepThen.Remote(ctx, V[int64](300), V[int64](5))
	waiting := deposit.Remote(ctx, h, slowArg) // waits for its argument
	after := deposit.Remote(ctx, h, V[int64](1))
	if err := Cancel(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(ctx, waiting); !errors.Is(err, ErrCancelled) {
		t.Fatalf("cancelled call: %v, want ErrCancelled", err)
	}
	// The call after it is not held up by the cancelled one, and runs once.
	if got := mustGet(t, ctx, after); got != 1 {
		t.Fatalf("call after a cancelled one returned %d, want 1", got)
	}
	// A call already sent cannot be taken back.
	sent := deposit.Remote(ctx, h, V[int64](1))
	mustGet(t, ctx, sent)
	if err := Cancel(ctx, sent); err != nil {
		t.Fatalf("cancel of a finished call: %v", err)
	}
	// The argument's task ran on: the test ends with it, leaving the node's CPUs free.
	if got := mustGet(t, ctx, slowArg); got != 5 {
		t.Fatalf("the cancelled call's argument: %d, want 5", got)
	}
}

type napper struct{ naps int }

// napping receives a value when a Nap call starts, so tests know a call is running.
var napping = make(chan struct{}, 16)

var (
	napperClass = Actor("test.Napper", func() *napper { return &napper{} })
	nap         = Method1(napperClass, "Nap", func(n *napper, ctx context.Context, d time.Duration) (int, error) {
		if d > 0 {
			select {
			case napping <- struct{}{}:
			default:
			}
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		n.naps++
		return n.naps, nil
	})
)

// TestExactlyOnceInFlightCall: a call running when its actor restarts is not answered by
// the stopped instance (its context was cancelled); the new instance replays it from the
// log and answers.
func TestExactlyOnceInFlightCall(t *testing.T) {
	ctx := timeout(t)
	h := napperClass.Remote(ctx, MaxRestarts(1), UnboundedMethodLog())
	drain(napping)
	inFlight := nap.Remote(ctx, h, V(200*time.Millisecond))
	waitFor(t, napping) // logged and running
	if err := Kill(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	if got, err := Get(ctx, inFlight); err != nil || got != 1 {
		t.Fatalf("in-flight call of an exactly-once actor: %d, %v; want 1", got, err)
	}
	if got := mustGet(t, ctx, nap.Remote(ctx, h, V(time.Duration(0)))); got != 2 {
		t.Fatalf("next call: %d, want 2 (the in-flight call took effect once)", got)
	}
}

// TestAtMostOnceInFlightCalls: an at-most-once actor's calls in flight when it restarts
// fail with ErrActorDied, or are resent with MaxTaskRetries (and run on the new instance);
// with MaxTaskRetries(-1) after every restart (here three in a row while the call runs).
func TestAtMostOnceInFlightCalls(t *testing.T) {
	for _, retries := range []int{0, 1, -1} {
		t.Run(fmt.Sprintf("MaxTaskRetries(%d)", retries), func(t *testing.T) {
			ctx := timeout(t)
			h := napperClass.Remote(ctx, AtMostOnce(), MaxRestarts(-1), MaxTaskRetries(retries))
			mustGet(t, ctx, nap.Remote(ctx, h, V(time.Duration(0))))
			drain(napping)
			inFlight := nap.Remote(ctx, h, V(time.Second))
			kills := 1
			if retries < 0 {
				kills = 3
			}
			for range kills {
				waitFor(t, napping) // it is running (again, on the new instance)
				if err := Kill(ctx, h, false); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Get(ctx, inFlight)
			switch {
			case retries == 0 && !errors.Is(err, ErrActorDied):
				t.Fatalf("in-flight call without retries: %d, %v; want ErrActorDied", got, err)
			case retries != 0 && (err != nil || got != 1):
				t.Fatalf("in-flight call with retries (%d restarts): %d, %v; want 1 (run once on the last instance)", kills, got, err)
			}
		})
	}
}

// TestActorOptionsRefused: actor options out of range fail the creation with an error
// that names the option, as Ray raises ValueError (MaxConcurrency below 1, counts below
// -1, counts the actor record cannot hold).
func TestActorOptionsRefused(t *testing.T) {
	ctx := timeout(t)
	tests := []struct {
		opt  TaskOption
		text string
	}{
		{MaxConcurrency(0), "MaxConcurrency(0)"},
		{MaxConcurrency(-2), "MaxConcurrency(-2)"},
		{MaxTaskRetries(-2), "MaxTaskRetries(-2)"},
		{MaxRestarts(-5), "MaxRestarts(-5)"},
		{MaxTaskRetries(math.MaxInt32 + 1), "MaxTaskRetries"},
		{CheckpointEvery(-1), "CheckpointEvery(-1)"},
	}
	for _, tc := range tests {
		h := napperClass.Remote(ctx, AtMostOnce(), tc.opt)
		if err := h.Err(); err == nil || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: creation error %v, want one naming it", tc.text, err)
		}
	}
	// The limits themselves are accepted.
	h := napperClass.Remote(ctx, AtMostOnce(), MaxConcurrency(1), MaxTaskRetries(-1), MaxRestarts(-1))
	if got := mustGet(t, ctx, nap.Remote(ctx, h, V(time.Duration(0)))); got != 1 {
		t.Fatalf("call: %d, want 1", got)
	}
}

type holder struct{ data []int64 }

var (
	holderClass = Actor1("test.Holder", func(_ context.Context, data []int64) (*holder, error) { return &holder{data: data}, nil })
	holderSum   = Method0(holderClass, "Sum", func(h *holder, _ context.Context) (int64, error) {
		var s int64
		for _, x := range h.data {
			s += x
		}
		return s, nil
	})
)

// TestActorLargeConstructorArgument: a constructor argument far larger than a GCS record
// (8 MiB) reaches the actor, also after a restart.
func TestActorLargeConstructorArgument(t *testing.T) {
	ctx := timeout(t)
	data := make([]int64, 1<<20)
	var want int64
	for i := range data {
		data[i] = int64(i)
		want += int64(i)
	}
	ref, err := Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	h := holderClass.Remote(ctx, ref, MaxRestarts(1), UnboundedMethodLog())
	if got := mustGet(t, ctx, holderSum.Remote(ctx, h)); got != want {
		t.Fatalf("sum = %d, want %d", got, want)
	}
	ref.Release() // the runtime keeps it for the actor's restarts
	if err := Kill(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, ctx, holderSum.Remote(ctx, h)); got != want {
		t.Fatalf("sum after a restart = %d, want %d", got, want)
	}
}

// TestActorConstructorArgumentsOfAnySize: a constructor argument passed as a Put released
// right after Remote (the creation, in the background, used to drop its own reference at
// once and lose it), and one of 4 MiB by value (the actor record used to hold it inline,
// and the GCS refused the write): both reach the constructor, and a restart reads them
// again.
func TestActorConstructorArgumentsOfAnySize(t *testing.T) {
	ctx := timeout(t)
	data := make([]int64, 1<<19) // 4 MiB
	var want int64
	for i := range data {
		data[i] = int64(i % 1000)
		want += int64(i % 1000)
	}
	ref, err := Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	byRef := holderClass.Remote(ctx, ref, MaxRestarts(1), UnboundedMethodLog())
	ref.Release()
	byValue := holderClass.Remote(ctx, V(data), MaxRestarts(1), UnboundedMethodLog())
	for name, h := range map[string]ActorHandle[holder]{"released Put": byRef, "4 MiB by value": byValue} {
		if got := mustGet(t, ctx, holderSum.Remote(ctx, h)); got != want {
			t.Fatalf("%s: sum = %d, want %d", name, got, want)
		}
		if err := Kill(ctx, h, false); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, ctx, holderSum.Remote(ctx, h)); got != want {
			t.Fatalf("%s: sum after a restart = %d, want %d", name, got, want)
		}
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func waitFor(t *testing.T, c chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for the call to start")
	}
}

// TestActorLogHoleAfterCrash: an instance that dies with group commits in flight can
// leave a hole in its method log (a batch that never landed while a later one did). The
// next instance must replay only up to the hole and drop what follows: the calls after
// it never ran and their callers resend them. Replaying past the hole would move the
// caller's position past the lost calls, which then are never answered (a chaos-suite
// defect). The hole is made here by writing a batch after a gap into the live log.
func TestActorLogHoleAfterCrash(t *testing.T) {
	ctx := timeout(t)
	h := accountClass.Remote(ctx, V("pat"), MaxRestarts(1))
	for i := 1; i <= 5; i++ {
		deposit.Remote(ctx, h, V(int64(i)))
	}
	if got := mustGet(t, ctx, balance.Remote(ctx, h)); got != 15 {
		t.Fatalf("balance = %d", got)
	}
	store := nodeOf(ctx).GCS()
	kvs, _, err := store.List(ctx, gcs.ActorLogActorPrefix(h.ID()))
	if err != nil || len(kvs) == 0 {
		t.Fatalf("method log: %d keys, %v", len(kvs), err)
	}
	var first, last *pb.ActorLogEntry
	var lastBatch uint64
	for _, kv := range kvs {
		b := &pb.ActorLogBatch{}
		if err := proto.Unmarshal(kv.Value, b); err != nil {
			t.Fatal(err)
		}
		lastBatch = max(lastBatch, b.Batch)
		for _, e := range b.Entries {
			if first == nil || e.Index < first.Index {
				first = e
			}
			if last == nil || e.Index > last.Index {
				last = e
			}
		}
	}
	// An orphan: a copy of the first deposit two indexes and two seqs past the end.
	orphan := &pb.ActorLogBatch{Batch: lastBatch + 3, Incarnation: 1, Entries: []*pb.ActorLogEntry{{
		Index: last.Index + 2, CallerId: last.CallerId, Seq: last.Seq + 2, Spec: first.Spec,
	}}}
	val, err := proto.Marshal(orphan)
	if err != nil {
		t.Fatal(err)
	}
	orphanKey := gcs.ActorLogKey(h.ID(), orphan.Batch)
	if _, err := store.Put(ctx, orphanKey, val, 0); err != nil {
		t.Fatal(err)
	}
	if err := Kill(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	// The next call takes the seq the orphan skipped: it must run, once, on the state of
	// the five deposits alone.
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := Get(gctx, deposit.Remote(gctx, h, V[int64](45)))
	if err != nil || got != 60 {
		t.Fatalf("deposit after a restart over a log with a hole: %d, %v; want 60", got, err)
	}
	if got := mustGet(t, gctx, balance.Remote(gctx, h)); got != 60 {
		t.Fatalf("balance = %d, want 60", got)
	}
	if _, found, err := store.Get(ctx, orphanKey); err != nil || found {
		t.Fatalf("the batch after the hole is still in the log (found %v, %v)", found, err)
	}
}

// spawner records the IDs of the tasks its calls submit.
type spawner struct{ ids []string }

var (
	spawnerClass = Actor("test.Spawner", func() *spawner { return &spawner{} })
	spawnChild   = Method0(spawnerClass, "Spawn", func(s *spawner, ctx context.Context) (string, error) {
		ref := sleepThen.Remote(ctx, V[int64](0), V[int64](1))
		if _, err := Get(ctx, ref); err != nil {
			return "", err
		}
		s.ids = append(s.ids, ref.ID())
		return ref.ID(), nil
	})
	spawnedIDs = Method0(spawnerClass, "IDs", func(s *spawner, _ context.Context) ([]string, error) {
		return append([]string(nil), s.ids...), nil
	})
)

// TestActorReplayCreatesNewIDs: a call replayed by a later incarnation submits its tasks
// with IDs of its own. The first run's children may still be queued or running for the
// dead instance's runtime; a scheduler takes a task with the same ID for a duplicate and
// drops it, and the replay would wait for its result forever.
func TestActorReplayCreatesNewIDs(t *testing.T) {
	ctx := timeout(t)
	h := spawnerClass.Remote(ctx, MaxRestarts(1), UnboundedMethodLog())
	first := mustGet(t, ctx, spawnChild.Remote(ctx, h))
	if err := Kill(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, ctx, spawnedIDs.Remote(ctx, h)) // after the restart and its replay
	if len(got) != 1 {
		t.Fatalf("replayed state holds %d child IDs, want 1", len(got))
	}
	if got[0] == first {
		t.Fatalf("the replayed call submitted its child with the first run's ID %s", first)
	}
	// A call on the live instance (no replay) keeps the usual derivation: two calls, two IDs.
	second := mustGet(t, ctx, spawnChild.Remote(ctx, h))
	if second == first || second == got[0] {
		t.Fatalf("a new call reused an ID: %s (first %s, replayed %s)", second, first, got[0])
	}
}

// digestSink is a logged actor whose state is a running digest of every byte it was
// given, in order: a call lost, repeated or replayed with other bytes shows in it.
type digestSink struct{ sum uint64 }

func (d *digestSink) add(ps ...[]byte) uint64 {
	for _, p := range ps {
		for _, b := range p {
			d.sum = d.sum*1099511628211 + uint64(b) + 1
		}
	}
	return d.sum
}

var (
	digestClass = Actor("test.DigestSink", func() *digestSink { return &digestSink{} })
	digestTake  = Method1(digestClass, "Take", func(d *digestSink, _ context.Context, p []byte) (uint64, error) {
		return d.add(p), nil
	})
	digestTake4 = Method4(digestClass, "Take4", func(d *digestSink, _ context.Context, a, b, c, e []byte) (uint64, error) {
		return d.add(a, b, c, e), nil
	})
)

func filled(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = seed + byte(i*7)
	}
	return p
}

// TestActorLargeArguments: an exactly-once actor takes by-value arguments of any size (a
// 4 MiB one used to wait forever for a method log write etcd refuses), and its log keeps
// small stored arguments by value: after a restart, replay rebuilds the same state
// although the caller has released every object it passed.
func TestActorLargeArguments(t *testing.T) {
	ctx := timeout(t)
	h := digestClass.Remote(ctx, MaxRestarts(1), UnboundedMethodLog())
	var want digestSink
	call := func(r ObjectRef[uint64], parts ...[]byte) {
		t.Helper()
		exp := want.add(parts...)
		if got := mustGet(t, ctx, r); got != exp {
			t.Fatalf("digest %d, want %d", got, exp)
		}
	}
	small, medium := filled(50<<10, 1), filled(200<<10, 2) // inline; stored, logged by value
	call(digestTake.Remote(ctx, h, V(small)), small)
	call(digestTake.Remote(ctx, h, V(medium)), medium)
	// Four arguments under the inline limit each, over the per-call total together.
	q := [4][]byte{filled(90<<10, 3), filled(150<<10, 4), filled(95<<10, 5), filled(99<<10, 6)}
	call(digestTake4.Remote(ctx, h, V(q[0]), V(q[1]), V(q[2]), V(q[3])), q[:]...)
	// A Put passed by reference and released once answered.
	put := filled(150<<10, 7)
	ref, err := Put(ctx, put)
	if err != nil {
		t.Fatal(err)
	}
	call(digestTake.Remote(ctx, h, ref), put)
	ref.Release()
	if err := Kill(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	// Replay after the restart: every call above again, from the log alone.
	tail := filled(10, 8)
	call(digestTake.Remote(ctx, h, V(tail)), tail)
	st, err := GetActorState(ctx, h)
	if err != nil || st.Restarts != 1 {
		t.Fatalf("state = %+v, %v; want one restart", st, err)
	}
	// Its history: created (incarnation 1), alive, restarting as incarnation 2 after the
	// Kill, alive again; in time order.
	var seen []string
	for i, tr := range st.History {
		seen = append(seen, fmt.Sprintf("%s/%d", tr.Phase, tr.Incarnation))
		if i > 0 && tr.Time.Before(st.History[i-1].Time) {
			t.Fatalf("history out of time order: %+v", st.History)
		}
	}
	joined := strings.Join(seen, " ")
	if !strings.HasPrefix(joined, "Pending/1") || !strings.Contains(joined, "Alive/1 Restarting/2") || !strings.HasSuffix(joined, "Alive/2") {
		t.Fatalf("history %s; want it to start Pending/1, go Alive/1 Restarting/2 and end Alive/2", joined)
	}

	// Over the log's by-value limit: the call runs (the argument is logged by reference).
	big := digestClass.Remote(ctx, UnboundedMethodLog())
	huge := filled(4<<20, 9)
	var fresh digestSink
	if got, want := mustGet(t, ctx, digestTake.Remote(ctx, big, V(huge))), fresh.add(huge); got != want {
		t.Fatalf("4 MiB argument: digest %d, want %d", got, want)
	}
}

// ledgerState is an actor whose state the codec keeps whole (exported fields, no
// interfaces): the runtime checkpoints it by itself.
type ledgerState struct {
	Sum     int64
	ByLabel map[string]int64
	Last    []string
}

var (
	ledgerRuns  atomic.Int64 // Add bodies run, replays included
	ledgerClass = Actor("test.AutoLedger", func() *ledgerState { return &ledgerState{ByLabel: map[string]int64{}} })
	ledgerAdd   = Method2(ledgerClass, "Add", func(l *ledgerState, _ context.Context, label string, d int64) (int64, error) {
		ledgerRuns.Add(1)
		l.Sum += d
		l.ByLabel[label] += d
		if l.Last = append(l.Last, label); len(l.Last) > 3 {
			l.Last = l.Last[1:]
		}
		return l.Sum, nil
	})
	ledgerGet = Method0(ledgerClass, "Get", func(l *ledgerState, _ context.Context) (ledgerState, error) { return *l, nil })
)

// TestActorStateCheckpointedByItself: an exactly-once actor without a Checkpointer whose
// state the codec keeps whole gets checkpoints by itself: its method log stays bounded (the
// batches a checkpoint covers are deleted), a restart restores the checkpoint and replays
// only the calls after it, and every answer and the state stay exact.
func TestActorStateCheckpointedByItself(t *testing.T) {
	ctx := timeout(t)
	h := ledgerClass.Remote(ctx, MaxRestarts(1), CheckpointEvery(50))
	const calls = 1000
	var want int64
	var last ObjectRef[int64]
	for i := 1; i <= calls; i++ {
		want += int64(i)
		last = ledgerAdd.Remote(ctx, h, V(fmt.Sprintf("l%d", i%3)), V(int64(i)))
		if i%100 == 0 { // in steps, so checkpoints come between them
			if got := mustGet(t, ctx, last); got != want {
				t.Fatalf("after %d calls: sum %d, want %d", i, got, want)
			}
		}
	}
	store := nodeOf(ctx).GCS()
	var entries int
	eventually.True(t, 10*time.Second, "the method log to be cut by checkpoints (at most 150 entries)", func() bool {
		kvs, _, err := store.List(ctx, gcs.ActorLogActorPrefix(h.ID()))
		if err != nil {
			t.Fatal(err)
		}
		entries = 0
		for _, kv := range kvs {
			b := &pb.ActorLogBatch{}
			if err := proto.Unmarshal(kv.Value, b); err != nil {
				t.Fatal(err)
			}
			entries += len(b.Entries)
		}
		return entries <= 3*50
	})

	runs := ledgerRuns.Load()
	if err := Kill(ctx, h, false); err != nil { // restart: restore, replay the rest
		t.Fatal(err)
	}
	st := mustGet(t, ctx, ledgerGet.Remote(ctx, h))
	if st.Sum != want || len(st.ByLabel) != 3 || st.ByLabel["l0"]+st.ByLabel["l1"]+st.ByLabel["l2"] != want ||
		len(st.Last) != 3 || st.Last[2] != "l1" { // call 1000: 1000 % 3 == 1
		t.Fatalf("state after the restart: %+v; want sum %d over 3 labels, last label l1", st, want)
	}
	if replayed := ledgerRuns.Load() - runs; replayed > 3*50 {
		t.Fatalf("the restart replayed %d calls; want at most 150 (it restores the checkpoint)", replayed)
	}
	if got := mustGet(t, ctx, ledgerAdd.Remote(ctx, h, V("l0"), V[int64](1))); got != want+1 {
		t.Fatalf("a call after the restart: %d, want %d", got, want+1)
	}
}

// TestActorWithUncheckpointableState: an exactly-once actor whose state neither implements
// Checkpointer nor round-trips through the codec cannot be created silently with an
// unbounded log: Remote's handle fails and says what to do; AtMostOnce and
// UnboundedMethodLog are the explicit choices.
func TestActorWithUncheckpointableState(t *testing.T) {
	ctx := timeout(t)
	_, err := Get(ctx, clockTick.Remote(ctx, clockClass.Remote(ctx)))
	for _, want := range []string{"test.Clock", "ray.Checkpointer", "AtMostOnce", "UnboundedMethodLog", "unexported"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("an exactly-once actor of unexported state: %v; want an error naming %q", err, want)
		}
	}
	for _, opt := range []TaskOption{AtMostOnce(), UnboundedMethodLog()} {
		if _, err := Get(ctx, clockTick.Remote(ctx, clockClass.Remote(ctx, opt))); err != nil {
			t.Fatalf("created with an explicit choice: %v", err)
		}
	}
}

// saver counts its SaveCheckpoint calls in saves, under the name it was made with.
type saver struct{ n *atomic.Int64 }

var saves sync.Map // name -> *atomic.Int64

func (s *saver) SaveCheckpoint(context.Context) ([]byte, error)  { s.n.Add(1); return nil, nil }
func (s *saver) RestoreCheckpoint(context.Context, []byte) error { return nil }

var (
	saverClass = Actor1("test.Saver", func(_ context.Context, name string) (*saver, error) {
		n, _ := saves.LoadOrStore(name, new(atomic.Int64))
		return &saver{n: n.(*atomic.Int64)}, nil
	})
	saverPing = Method0(saverClass, "Ping", func(*saver, context.Context) (int, error) { return 1, nil })
)

// An at-most-once actor takes no periodic checkpoint unless asked with CheckpointEvery
// (each is a GCS write, and its restart starts afresh anyway); a logged one does.
func TestPeriodicCheckpointsOnlyWhenTheyBoundALogOrAreAsked(t *testing.T) {
	ctx := timeout(t)
	const calls = 3 * 500 // 1.5 x the default interval
	run := func(name string, opts ...TaskOption) (*atomic.Int64, ActorHandle[saver]) {
		h := saverClass.Remote(ctx, V(name), opts...)
		refs := make([]ObjectRef[int], calls)
		for i := range refs {
			refs[i] = saverPing.Remote(ctx, h)
		}
		for _, r := range refs {
			mustGet(t, ctx, r)
		}
		n, _ := saves.Load(name)
		return n.(*atomic.Int64), h
	}

	plain := uniqueName(t) + "-amo"
	n, h := run(plain, AtMostOnce())
	if got := n.Load(); got != 0 {
		t.Fatalf("an at-most-once actor took %d checkpoints in %d calls without CheckpointEvery, want 0", got, calls)
	}
	if err := Checkpoint(ctx, h); err != nil { // queued behind the calls, taken between two
		t.Fatal(err)
	}
	mustGet(t, ctx, saverPing.Remote(ctx, h))
	eventually.True(t, 10*time.Second, "the asked-for checkpoint", func() bool { return n.Load() >= 1 })
	if got := n.Load(); got != 1 {
		t.Fatalf("after Checkpoint: %d checkpoints, want 1", got)
	}

	asked, _ := run(uniqueName(t)+"-amo-every", AtMostOnce(), CheckpointEvery(100))
	logged, _ := run(uniqueName(t) + "-logged")
	eventually.True(t, 30*time.Second, "periodic checkpoints of the asked and the logged actor", func() bool {
		return asked.Load() >= 1 && logged.Load() >= 1
	})
}
