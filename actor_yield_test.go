package ray

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// yieldProbe is an actor whose calls note, in one sequence shared with the test's driver,
// when each starts.
type yieldProbe struct{}

var (
	yieldSeq      atomic.Int64
	yieldProbeCls = Actor0("test.YieldProbe", func(context.Context) (*yieldProbe, error) { return &yieldProbe{}, nil })
	// yieldStep: sleep (the goroutine blocks, so the rest of the process runs meanwhile),
	// then note the start of the busy part and spin for spin.
	yieldStep = Method2(yieldProbeCls, "Step", func(_ *yieldProbe, _ context.Context, sleep, spin time.Duration) (int64, error) {
		time.Sleep(sleep)
		at := yieldSeq.Add(1)
		for end := time.Now().Add(spin); time.Now().Before(end); {
		}
		return at, nil
	})
)

// TestLongCallYieldsBeforeTheNextQueuedCall: with one P, a caller blocked on the result of
// a long call (over the executor's yieldAfterRun) runs before the next call queued on the
// actor starts, rather than after it: the executor yields its P after such a call. A
// caller that pipelines calls (several queued per actor, the next sent once a result
// arrives) otherwise waits for the calls queued ahead and lets the actor run dry
// (benchmarks/rl). The first call sleeps long enough for the second to reach the actor's
// queue before the first ends. Go's scheduler takes the global queue first on one turn in
// 61, so a round may go the other way; most must not.
func TestLongCallYieldsBeforeTheNextQueuedCall(t *testing.T) {
	ctx := timeout(t)
	h := yieldProbeCls.Remote(ctx)
	if _, err := Get(ctx, yieldStep.Remote(ctx, h, V(time.Duration(0)), V(time.Duration(0)))); err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	const rounds = 10
	first := 0
	for range rounds {
		a := yieldStep.Remote(ctx, h, V(50*time.Millisecond), V(100*time.Microsecond))
		b := yieldStep.Remote(ctx, h, V(time.Duration(0)), V(time.Millisecond))
		if _, err := Get(ctx, a); err != nil {
			t.Fatal(err)
		}
		got := yieldSeq.Add(1) // the driver ran, having its result
		bStart, err := Get(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if got < bStart {
			first++
		}
		a.Release()
		b.Release()
	}
	if first < rounds*7/10 {
		t.Fatalf("the caller ran before the next queued call in %d of %d rounds, want most", first, rounds)
	}
}
