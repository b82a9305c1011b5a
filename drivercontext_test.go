package ray

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// driverCtxs holds the driver contexts the test.viaDriver tasks misuse, by round.
var driverCtxs sync.Map

// viaDriver is a task written wrongly on purpose: it submits a child and waits for it
// (Get, Wait, or a generator's Next, by mode) through a driver's context saved from Init instead of its own
// ctx. The first two calls of a round meet at a gate first, so both of the node's two
// CPUs are held by tasks of the round when they wait.
var viaDriver = Task3("test.viaDriver", func(ctx context.Context, round, mode string, x int) (int, error) {
	if counter(calls, round).Add(1) == 2 {
		close(gateOf(round))
	}
	select {
	case <-gateOf(round):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	d, _ := driverCtxs.Load(round)
	driver := d.(context.Context)
	if mode == "next" { // the items of a generator, through the driver's ctx
		g := genCount.Remote(driver, V(x*x+1))
		defer g.Close()
		var last ObjectRef[int]
		for {
			ref, err := g.Next(driver)
			if errors.Is(err, ErrGeneratorDone) {
				break
			}
			if err != nil {
				return 0, checkDriverErr(err)
			}
			last = ref
		}
		return Get(driver, last) // the last item is x*x, ready
	}
	r := square.Remote(driver, V(x))
	if mode == "wait" {
		if _, _, err := Wait(driver, []ObjectRef[int]{r}); err != nil {
			return 0, checkDriverErr(err)
		}
	}
	v, err := Get(driver, r)
	if err != nil {
		return 0, checkDriverErr(err)
	}
	return v, nil
})

// checkDriverErr passes on an ErrDriverContext, and says so when an error is another.
func checkDriverErr(err error) error {
	if errors.Is(err, ErrDriverContext) {
		return err
	}
	return errors.New("not ErrDriverContext: " + err.Error())
}

// TestDriverContextInTask: tasks that wait through the driver's context, as many as twice
// the node's CPUs, do not hang the node. Waiting that way cannot lend the task's CPU back,
// so with every CPU held by such a task, nothing could run their children: the Get or
// Wait fails at once with ErrDriverContext, which names the context to use.
//
// Each round has a runtime of its own: the owner pushes one task at a time to a lease
// until it has measured the tasks' class short, so the first two run at once, on the two
// CPUs, and can meet at the gate (tasks pushed together to one lease run one after the
// other, and the first would wait at the gate for ever).
func TestDriverContextInTask(t *testing.T) {
	for _, mode := range []string{"get", "wait", "next"} {
		driverContextRound(t, mode)
	}
	for _, want := range []string{"ray.Init", "ctx the task"} {
		if !strings.Contains(ErrDriverContext.Error(), want) {
			t.Errorf("ErrDriverContext %q does not say %q", ErrDriverContext, want)
		}
	}
}

func driverContextRound(t *testing.T, mode string) {
	ctx, err := Init(context.Background(), WithNumCPUs(2))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := Shutdown(ctx); err != nil {
			t.Error(err)
		}
	}()
	{
		round := uniqueName(t) + "/" + mode
		driverCtxs.Store(round, ctx)
		refs := make([]ObjectRef[int], 4)
		for i := range refs {
			refs[i] = viaDriver.Remote(ctx, V(round), V(mode), V(i+1))
		}
		// Bounded: before the fix this round deadlocked, and the deadline ended it.
		bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
		failed := 0
		for i, r := range refs {
			v, err := Get(bounded, r)
			switch {
			case errors.Is(err, context.DeadlineExceeded):
				cancel()
				t.Fatalf("%s: task %d still waits after 30 s: the node is deadlocked", mode, i+1)
			case err != nil:
				var te *TaskError
				if !errors.As(err, &te) || !strings.Contains(te.Message, ErrDriverContext.Error()) {
					t.Fatalf("%s: task %d: %v; want a *TaskError with ErrDriverContext", mode, i+1, err)
				}
				failed++
			case v != (i+1)*(i+1):
				t.Fatalf("%s: task %d = %d, want %d", mode, i+1, v, (i+1)*(i+1))
			}
		}
		cancel()
		// The two that met at the gate held both CPUs while they waited: they must fail.
		// The later two may find their child done already (no wait, no error).
		if failed < 2 {
			t.Fatalf("%s: %d tasks failed with ErrDriverContext, want at least the 2 that held every CPU", mode, failed)
		}
	}
}
