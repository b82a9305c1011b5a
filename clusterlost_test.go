package ray

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/assembly/core"
)

type lostNapper struct{ Naps int }

var (
	lostNapperClass = Actor("test.LostNapper", func() *lostNapper { return &lostNapper{} })
	lostNap         = Method1(lostNapperClass, "Nap", func(n *lostNapper, ctx context.Context, d time.Duration) (int, error) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		n.Naps++
		return n.Naps, nil
	})
	lostSleep = Task1("test.lostSleep", func(ctx context.Context, d time.Duration) (int, error) {
		select {
		case <-time.After(d):
			return 1, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
)

// TestClusterLostKeepsWhatIsReady: a runtime that lost its cluster (Core.Lose, as a
// driver whose GCS stopped answering) still gives the values that were ready: Get of a
// task's result, a put and an actor call's result read before, and Wait returns them as
// ready. Wait fails with ErrClusterLost only when fewer than NumReady refs are ready (the
// others never will be), and still returns the ready ones then. A pending and a later
// actor call fail with an error that matches ErrClusterLost and does not say, or match,
// that the actor died (it may live on in the cluster). Before, every Wait failed, and the
// actor calls failed as the actor's death.
func TestClusterLostKeepsWhatIsReady(t *testing.T) {
	ctx, err := Init(context.Background(), WithNumCPUs(2))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = Shutdown(ctx) }()
	done := square.Remote(ctx, V(3))
	if v, err := Get(ctx, done); err != nil || v != 9 {
		t.Fatalf("square: %d, %v", v, err)
	}
	put, err := Put(ctx, 11)
	if err != nil {
		t.Fatal(err)
	}
	h := lostNapperClass.Remote(ctx)
	called := lostNap.Remote(ctx, h, V(time.Duration(0)))
	if v, err := Get(ctx, called); err != nil || v != 1 {
		t.Fatalf("a first call: %d, %v", v, err)
	}
	pendingTask := lostSleep.Remote(ctx, V(time.Minute))
	pendingCall := lostNap.Remote(ctx, h, V(time.Minute))
	time.Sleep(100 * time.Millisecond) // both run

	nodeOf(ctx).Core.Lose(fmt.Errorf("%w: its GCS at 127.0.0.1:1 has not answered for 1m0s (the test)", core.ErrClusterLost))

	for name, r := range map[string]ObjectRef[int]{"task result": done, "put": put, "actor call result": called} {
		if _, err := Get(ctx, r); err != nil {
			t.Errorf("Get of a %s ready before the loss: %v", name, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	isLost := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrClusterLost) {
			t.Errorf("%s: %v, want an error matching ErrClusterLost", what, err)
		}
	}
	// One of two ready, one asked for: no error.
	ready, notReady, err := Wait(wctx, []ObjectRef[int]{pendingTask, done})
	if err != nil || len(ready) != 1 || ready[0] != done || len(notReady) != 1 || notReady[0] != pendingTask {
		t.Errorf("Wait(pending, ready): ready %v, not ready %v, %v; want [ready] [pending] <nil>", ready, notReady, err)
	}
	ready, notReady, err = Wait(wctx, []ObjectRef[int]{done, put, called}, NumReady(3))
	if err != nil || len(ready) != 3 || len(notReady) != 0 {
		t.Errorf("Wait of three ready refs: ready %d, not ready %d, %v", len(ready), len(notReady), err)
	}
	// Two asked for, one ready: the ready one, and the error (the other never will be).
	ready, notReady, err = Wait(wctx, []ObjectRef[int]{done, pendingCall}, NumReady(2), Timeout(time.Minute))
	isLost("Wait(ready, pending call, NumReady(2))", err)
	if len(ready) != 1 || ready[0] != done || len(notReady) != 1 || notReady[0] != pendingCall {
		t.Errorf("Wait(ready, pending call, NumReady(2)): ready %v, not ready %v; want [ready] [pending]", ready, notReady)
	}
	// Nothing ready: the error at once.
	start := time.Now()
	ready, notReady, err = Wait(wctx, []ObjectRef[int]{pendingTask, pendingCall})
	isLost("Wait(pending task, pending call)", err)
	if len(ready) != 0 || len(notReady) != 2 {
		t.Errorf("Wait(pending task, pending call): ready %d, not ready %d; want 0 and 2", len(ready), len(notReady))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Wait of refs that never become ready took %v", d)
	}
	_, err = Get(wctx, pendingTask)
	isLost("Get of the pending task", err)
	laterTask := lostSleep.Remote(ctx, V(time.Duration(0)))
	_, err = Get(wctx, laterTask)
	isLost("Get of a later task", err)
	if _, _, err := Wait(wctx, []ObjectRef[int]{laterTask}, Timeout(time.Minute)); !errors.Is(err, ErrClusterLost) {
		t.Errorf("Wait of a task submitted after the loss: %v, want an error matching ErrClusterLost", err)
	}
	laterCall := lostNap.Remote(ctx, h, V(time.Duration(0)))
	for name, r := range map[string]ObjectRef[int]{"pending": pendingCall, "later": laterCall} {
		// The call's result, not a Get's wait that the loss ended: it comes from the shard.
		var err error
		for range 500 {
			var te *TaskError
			if _, err = Get(wctx, r); errors.As(err, &te) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		isLost("Get of the "+name+" actor call", err)
		if errors.Is(err, ErrActorDied) || err != nil && strings.Contains(err.Error(), "died") {
			t.Errorf("Get of the %s actor call: %v: says (or matches) that the actor died", name, err)
		}
	}
}
