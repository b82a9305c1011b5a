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
	// cancelRecWait is Hold that may run more than once (again after a restart): each
	// start is sent to caStarts of its key.
	cancelRecWait = Method1(cancelRecClass, "Wait", func(_ *cancelRec, ctx context.Context, key string) (string, error) {
		caRanOf(key).Add(1)
		select {
		case caStartsOf(key) <- struct{}{}:
		default:
		}
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

var caStarts sync.Map // key -> chan struct{}: a send per start of Wait of key

func caStartsOf(key string) chan struct{} {
	ch, _ := caStarts.LoadOrStore(key, make(chan struct{}, 8))
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
// Get says it was cancelled at once, while the call ahead of it still runs (not
// interrupted), the method never runs, and the calls after it run in order. Before, the
// cancelled call was answered only when the actor reached it (and before that, Cancel
// refused any call sent to its actor). An exactly-once actor's queued call is refused
// with an error that says why.
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
	// Answered now, while Hold runs (its gate is still closed).
	gctx, gcancel := context.WithTimeout(ctx, 20*time.Second)
	_, err := Get(gctx, queued)
	gcancel()
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("Get of the cancelled queued call while the call ahead of it runs: %v, want ErrCancelled at once", err)
	}
	gate := gateOf(key + "/hold")
	gate <- struct{}{} // Hold returns (the gate stays open for the cleanup's close)
	if got := mustGet(t, ctx, hold); got != key+"/hold" {
		t.Fatalf("Hold: %q", got)
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

// TestCancelQueuedActorCallRestart: a call cancelled while it waits at an at-most-once
// actor that restarts (with MaxTaskRetries, so the calls in flight are sent again) stays
// cancelled: the new instance never runs it and its Get says it was cancelled, whether
// the Cancel came before the restart or while the actor restarts; the running call (sent
// again) and the call after the cancelled one run on the new instance, in order.
// Before, an instance kept the cancel in memory only, and the caller sent the cancelled
// call again to the new instance, which ran it.
func TestCancelQueuedActorCallRestart(t *testing.T) {
	for _, when := range []string{"before", "during"} {
		t.Run(when, func(t *testing.T) {
			ctx := timeout(t)
			key := uniqueName(t)
			t.Cleanup(func() { close(gateOf(key + "/hold")) })
			h := cancelRecClass.Remote(ctx, AtMostOnce(), MaxRestarts(1), MaxTaskRetries(-1))
			hold := cancelRecWait.Remote(ctx, h, V(key+"/hold"))
			caWait(t, ctx, caStartsOf(key+"/hold"), "Wait did not start")
			queued := cancelRecNote.Remote(ctx, h, V(key+"/queued"))
			after := cancelRecNote.Remote(ctx, h, V(key+"/after"))
			if when == "before" {
				if err := Cancel(ctx, queued); err != nil {
					t.Fatalf("Cancel: %v", err)
				}
			}
			if err := Kill(ctx, h, false); err != nil {
				t.Fatal(err)
			}
			if when == "during" {
				// The caller may not know of the restart yet, or know and not reach the
				// new instance yet: either way the cancel holds.
				if err := Cancel(ctx, queued); err != nil {
					t.Fatalf("Cancel while the actor restarts: %v", err)
				}
			}
			// Wait runs again on the new instance (sent again: MaxTaskRetries).
			caWait(t, ctx, caStartsOf(key+"/hold"), "Wait did not run again after the restart")
			// Answered while Wait runs again (its gate still closed).
			gctx, gcancel := context.WithTimeout(ctx, 20*time.Second)
			_, qerr := Get(gctx, queued)
			gcancel()
			gateOf(key + "/hold") <- struct{}{}
			if got := mustGet(t, ctx, hold); got != key+"/hold" {
				t.Fatalf("Wait: %q", got)
			}
			if got := mustGet(t, ctx, after); got != key+"/after" {
				t.Fatalf("the call after the cancelled one: %q", got)
			}
			if n := caRanOf(key + "/queued").Load(); !errors.Is(qerr, ErrCancelled) || n != 0 {
				t.Fatalf("the cancelled call after the restart: Get said %v (want ErrCancelled, while the call ahead of it runs), and it ran %d times (want 0)", qerr, n)
			}
			if st, err := GetActorState(ctx, h); err != nil || st.Restarts != 1 {
				t.Fatalf("actor state %+v, %v; want 1 restart", st, err)
			}
		})
	}
}
