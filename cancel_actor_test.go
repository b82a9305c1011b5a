package ray

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The actor and task of the actor-call Cancel tests: a cancelRec counts the calls of each
// key that ran (caRan); Hold runs until its key's gate opens (or its ctx ends), telling
// caStarted it began. caCallAfter waits for a recursive Cancel to end its ctx, then calls
// Note (no ref arguments) and sends what Get of that call returned to caAfter.
type cancelRec struct{}

var (
	caRan     sync.Map // key -> *atomic.Int64: calls of key that ran
	caStarted sync.Map // key -> chan struct{}: closed when Hold of key began
	caAfter   sync.Map // key -> chan error: the Get of caCallAfter's call

	cancelRecClass = Actor("test.cancelactor.Rec", func() *cancelRec { return &cancelRec{} })
	cancelRecNote  = Method1(cancelRecClass, "Note", func(_ *cancelRec, _ context.Context, key string) (string, error) {
		caRanOf(key).Add(1)
		return key, nil
	})
	cancelRecHold = Method1(cancelRecClass, "Hold", func(_ *cancelRec, ctx context.Context, key string) (string, error) {
		caRanOf(key).Add(1)
		close(caStartedOf(key))
		select {
		case <-gateOf(key):
			return key, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	caCallAfter = Task2("test.cancelactor.callafter", func(ctx context.Context, h ActorHandle[cancelRec], key string) (int, error) {
		close(caStartedOf(key + "/task"))
		<-ctx.Done()
		// The task runs on after its Cancel, as a Go function may: its actor call
		// is refused, as a task it submitted would be.
		ref := cancelRecNote.Remote(ctx, h, V(key))
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		_, err := Get(gctx, ref)
		caAfterOf(key) <- err
		return 0, ctx.Err()
	})
)

func caRanOf(key string) *atomic.Int64 {
	n, _ := caRan.LoadOrStore(key, new(atomic.Int64))
	return n.(*atomic.Int64)
}

func caStartedOf(key string) chan struct{} {
	ch, _ := caStarted.LoadOrStore(key, make(chan struct{}))
	return ch.(chan struct{})
}

func caAfterOf(key string) chan error {
	ch, _ := caAfter.LoadOrStore(key, make(chan error, 1))
	return ch.(chan error)
}

func caWait(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("%s: %v", what, ctx.Err())
	}
}

// TestCancelRecursiveRefusesLaterActorCall: a task a recursive Cancel cancelled that goes
// on to call an actor method (without ref arguments, which skips the path a task's
// children take) has that call refused: its Get says it was cancelled and the method
// never runs. Before, the call went straight to the actor and ran.
func TestCancelRecursiveRefusesLaterActorCall(t *testing.T) {
	ctx := timeout(t)
	key := uniqueName(t)
	h := cancelRecClass.Remote(ctx)
	if got := mustGet(t, ctx, cancelRecNote.Remote(ctx, h, V(key+"/warm"))); got != key+"/warm" {
		t.Fatalf("Note: %q", got)
	}
	top := caCallAfter.Remote(ctx, V(h), V(key))
	caWait(t, ctx, caStartedOf(key+"/task"), "the task did not start")
	if err := Cancel(ctx, top); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-caAfterOf(key):
		if !errors.Is(err, ErrCancelled) {
			t.Fatalf("Get of the actor call a cancelled task made after its Cancel: %v, want ErrCancelled", err)
		}
	case <-ctx.Done():
		t.Fatal("the cancelled task's actor call did not end")
	}
	if _, err := Get(ctx, top); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Get of the cancelled task: %v, want ErrCancelled", err)
	}
	// The actor is still served in order, and the refused call never ran.
	if got := mustGet(t, ctx, cancelRecNote.Remote(ctx, h, V(key+"/after"))); got != key+"/after" {
		t.Fatalf("Note after: %q", got)
	}
	if n := caRanOf(key).Load(); n != 0 {
		t.Fatalf("the refused actor call ran %d times", n)
	}
}

// TestCancelQueuedActorCall: Cancel of a call waiting at an at-most-once actor behind a
// running one takes it back, as Ray's cancel of an actor task that has not started: its
// Get says it was cancelled, the method never runs, and the calls after it run in order.
// The running call is not interrupted; the cancelled call is answered when the actor
// reaches it. Before, Cancel refused any call sent to its actor.
// An exactly-once actor's queued call is refused with an error that says why.
func TestCancelQueuedActorCall(t *testing.T) {
	ctx := timeout(t)
	key := uniqueName(t)
	t.Cleanup(func() { close(gateOf(key + "/hold")) })
	h := cancelRecClass.Remote(ctx, AtMostOnce())
	hold := cancelRecHold.Remote(ctx, h, V(key+"/hold"))
	caWait(t, ctx, caStartedOf(key+"/hold"), "Hold did not start")
	queued := cancelRecNote.Remote(ctx, h, V(key+"/queued"))
	after := cancelRecNote.Remote(ctx, h, V(key+"/after"))
	if err := Cancel(ctx, queued); err != nil {
		t.Fatalf("Cancel of a call queued at an at-most-once actor: %v", err)
	}
	gate := gateOf(key + "/hold")
	gate <- struct{}{} // Hold returns (the gate stays open for the cleanup's close)
	if got := mustGet(t, ctx, hold); got != key+"/hold" {
		t.Fatalf("Hold: %q", got)
	}
	// Answered when the actor reaches it, after the calls ahead of it.
	if _, err := Get(ctx, queued); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Get of the cancelled queued call: %v, want ErrCancelled", err)
	}
	if got := mustGet(t, ctx, after); got != key+"/after" {
		t.Fatalf("the call after the cancelled one: %q", got)
	}
	if n := caRanOf(key + "/queued").Load(); n != 0 {
		t.Fatalf("the cancelled queued call ran %d times", n)
	}

	// Exactly-once (the default): refused, saying why.
	eo := cancelRecClass.Remote(ctx)
	hold2 := cancelRecHold.Remote(ctx, eo, V(key+"/hold2"))
	t.Cleanup(func() { close(gateOf(key + "/hold2")) })
	caWait(t, ctx, caStartedOf(key+"/hold2"), "Hold on the exactly-once actor did not start")
	q2 := cancelRecNote.Remote(ctx, eo, V(key+"/queued2"))
	// Sent to the actor: Cancel refuses it (retry while it may still be on its way).
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err = Cancel(ctx, q2); err != nil || time.Now().After(deadline) {
			break
		}
	}
	if !errors.Is(err, ErrActorCallSent) || !strings.Contains(err.Error(), "exactly-once") {
		t.Fatalf("Cancel of a call queued at an exactly-once actor: %v, want an error saying it is exactly-once", err)
	}
	gateOf(key + "/hold2") <- struct{}{}
	if got := mustGet(t, ctx, hold2); got != key+"/hold2" {
		t.Fatalf("Hold: %q", got)
	}
	if got := mustGet(t, ctx, q2); got != key+"/queued2" {
		t.Fatalf("the exactly-once actor's queued call: %q", got)
	}
}
