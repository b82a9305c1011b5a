package ray

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tasks of TestCancelRecursiveRefusesLaterChildren: csaLoop keeps submitting
// csaChild, whatever its ctx says, until its key's gate opens; a child runs until its ctx
// ends (or the test's gate opens: it was never cancelled), counted in csaRunning.
var (
	csaRunning sync.Map // key -> *atomic.Int64: children of key running
	csaLoopEnd sync.Map // key -> chan int: closed when the loop of key ends, after sending how many it submitted
	csaChild   = Task1("test.cancelsubmit.child", func(ctx context.Context, key string) (int, error) {
		n := csaCounter(key)
		n.Add(1)
		defer n.Add(-1)
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-gateOf(key + "/children"):
			return 1, nil
		}
	})
	csaLoop = Task1("test.cancelsubmit.loop", func(ctx context.Context, key string) (int, error) {
		submitted := 0
		defer func() { csaEnd(key) <- submitted }()
		for {
			select {
			case <-gateOf(key + "/loop"):
				return submitted, nil
			case <-time.After(5 * time.Millisecond):
			}
			csaChild.Options(NumCPUs(0)).Remote(ctx, V(key))
			submitted++
		}
	})
)

func csaCounter(key string) *atomic.Int64 {
	n, _ := csaRunning.LoadOrStore(key, new(atomic.Int64))
	return n.(*atomic.Int64)
}

func csaEnd(key string) chan int {
	ch, _ := csaLoopEnd.LoadOrStore(key, make(chan int, 1))
	return ch.(chan int)
}

// TestCancelRecursiveRefusesLaterChildren: a task that goes on submitting children after
// a recursive Cancel (it does not look at its ctx) has those children cancelled too, not
// only the ones it had submitted when the Cancel looked for them: once the task has
// stopped, no child of it runs, and Get of the task says it was cancelled.
func TestCancelRecursiveRefusesLaterChildren(t *testing.T) {
	ctx := timeout(t)
	key := uniqueName(t)
	t.Cleanup(func() { close(gateOf(key + "/children")) })
	running := csaCounter(key)
	loop := csaLoop.Remote(ctx, V(key))
	for deadline := time.Now().Add(20 * time.Second); running.Load() < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d children running after 20s", running.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := Cancel(ctx, loop); err != nil {
		t.Fatal(err)
	}
	// The loop goes on submitting for a while after the Cancel, then stops.
	time.Sleep(300 * time.Millisecond)
	close(gateOf(key + "/loop"))
	var submitted int
	select {
	case submitted = <-csaEnd(key):
	case <-ctx.Done():
		t.Fatal("the loop did not end")
	}
	if _, err := Get(ctx, loop); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Get of the cancelled task: %v, want ErrCancelled", err)
	}
	for deadline := time.Now().Add(20 * time.Second); running.Load() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d children the cancelled task submitted still run 20s after it ended", running.Load(), submitted)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
