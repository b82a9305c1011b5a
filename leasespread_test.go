package ray

import (
	"context"
	"testing"
	"time"
)

var napMeasure = Task2("test.napMeasure", func(_ context.Context, key string, d time.Duration) (int, error) {
	cur := running(key).Add(1)
	defer running(key).Add(-1)
	for {
		m := peak(key).Load()
		if cur <= m || peak(key).CompareAndSwap(m, cur) {
			break
		}
	}
	time.Sleep(d)
	return int(cur), nil
})

// TestSlowTasksOfAFastClassSpread: tasks of a class measured fast are pipelined several
// to a lease; when later ones run long, those queued behind a long one go back to the
// owner and run on other leases, so they still use every CPU (here 2 at a time at 2 CPUs
// each on the 4-CPU node) instead of waiting in one worker's queue.
func TestSlowTasksOfAFastClassSpread(t *testing.T) {
	ctx := timeout(t)
	cpusFree(t, ctx, 4) // a task an earlier test left running would hold one (a 1.9-CPU task would not fit beside it)
	opt := NumCPUs(1.9) // a shape of this test's own
	warm := uniqueName(t) + "/warm"
	refs := make([]ObjectRef[int], 200)
	for i := range refs {
		refs[i] = napMeasure.Options(opt).Remote(ctx, V(warm), V(time.Duration(0)))
	}
	if _, err := GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	key := uniqueName(t) + "/slow"
	refs = refs[:6]
	for i := range refs {
		refs[i] = napMeasure.Options(opt).Remote(ctx, V(key), V(50*time.Millisecond))
	}
	if _, err := GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	if p := peak(key).Load(); p != 2 {
		t.Fatalf("at most %d slow tasks ran at once, want 2 (the node has room for 2)", p)
	}
}
