package core

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/dispatch"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/tasks/sched"
)

// TestSpillTimerOnlyForMovableTasks: tasks that wait for a lease at a node that does not
// answer arm the shard's spill timer (spillCheck every SpillAfter) only if spillback may
// move them: tasks bound to the node by a hard affinity do not; a default task does.
func TestSpillTimerOnlyForMovableTasks(t *testing.T) {
	sys, quiet := quietSystem(t)
	var asked atomic.Int32
	silent := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) { // a scheduler that never grants
		if _, ok := c.Message().(interface{ GetRequestId() uint64 }); ok {
			asked.Add(1)
		}
	}))
	cl := &twoNodes{dead: map[ids.NodeID]bool{}, raylets: map[ids.NodeID]*actor.PID{"n2": silent}}
	var checks atomic.Int32
	counter := &dispatch.Counter{Tap: func(role string, m any) {
		if _, ok := actor.UnwrapEnvelopeMessage(m).(spillCheck); ok {
			checks.Add(1)
		}
	}}
	c := newTestCore(t, sys, cl, counter, quiet)
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	waitAsked := func(n int32) {
		t.Helper()
		for i := 0; asked.Load() < n; i++ {
			if i == 5000 {
				t.Fatalf("%d lease requests reached the node, want %d", asked.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	tc := c.NewDriver()
	for range 3 {
		if _, _, err := c.Submit(tc, Call{Function: "core_test.f", Resources: res, Strategy: StrategyNodeAffinity, AffinityNode: "n2"}); err != nil {
			t.Fatal(err)
		}
	}
	waitAsked(1)
	time.Sleep(4 * SpillAfter) // several spill intervals with the tasks waiting
	if n := checks.Load(); n != 0 {
		t.Fatalf("%d spill checks for tasks bound to their node by a hard affinity, want 0", n)
	}
	// A default task, which spillback may move, arms the timer.
	if _, _, err := c.Submit(tc, Call{Function: "core_test.f", Resources: res}); err != nil {
		t.Fatal(err)
	}
	for i := 0; checks.Load() == 0; i++ {
		if i == 10000 {
			t.Fatal("no spill check for a movable task waiting at a node that does not answer")
		}
		time.Sleep(time.Millisecond)
	}
}
