package ray

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// gated is a test actor whose Hold call runs until the test opens its gate.
type gated struct{}

var (
	gatedOpen  atomic.Pointer[chan struct{}] // set by each run of the test
	gatedClass = Actor("test.Gated", func() *gated { return &gated{} })
	gatedSleep = Method1(gatedClass, "Sleep", func(_ *gated, _ context.Context, d time.Duration) (int, error) {
		time.Sleep(d)
		return 1, nil
	})
	gatedHold = Method0(gatedClass, "Hold", func(_ *gated, ctx context.Context) (int, error) {
		select {
		case <-*gatedOpen.Load():
			return 2, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
)

// TestActorLongCallResultNotHeldBehindNextCall: the result of a call that ran more than a
// few microseconds goes to its caller when the call ends, not after the calls queued behind
// it (the executor batches only the results of tiny calls). Here the call behind runs until
// the caller has the first result: if that result were held back, neither would finish.
func TestActorLongCallResultNotHeldBehindNextCall(t *testing.T) {
	ctx := timeout(t)
	open := make(chan struct{})
	gatedOpen.Store(&open)
	h := gatedClass.Remote(ctx, AtMostOnce())
	if h.Err() != nil {
		t.Fatal(h.Err())
	}
	mustGet(t, ctx, gatedSleep.Remote(ctx, h, V(time.Duration(0))))
	first := gatedSleep.Remote(ctx, h, V(20*time.Millisecond))
	second := gatedHold.Remote(ctx, h) // queued while first runs
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if got, err := Get(wait, first); err != nil || got != 1 {
		t.Fatalf("first call: %d, %v; want 1 while the call behind it still runs (its result was held back)", got, err)
	}
	close(open)
	if got := mustGet(t, ctx, second); got != 2 {
		t.Fatalf("second call: %d, want 2", got)
	}
}
