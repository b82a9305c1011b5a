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

// silentNodeCore is a test Core of a cluster whose node n2's scheduler never answers a
// lease request; asked counts the requests that reached it, checks the shard's spill
// checks.
func silentNodeCore(t *testing.T) (c *Core, asked, checks *atomic.Int32) {
	t.Helper()
	sys, quiet := quietSystem(t)
	asked, checks = new(atomic.Int32), new(atomic.Int32)
	silent := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(interface{ GetRequestId() uint64 }); ok {
			asked.Add(1)
		}
	}))
	cl := &twoNodes{dead: map[ids.NodeID]bool{}, raylets: map[ids.NodeID]*actor.PID{"n2": silent}}
	counter := &dispatch.Counter{Tap: func(role string, m any) {
		if _, ok := actor.UnwrapEnvelopeMessage(m).(spillCheck); ok {
			checks.Add(1)
		}
	}}
	return newTestCore(t, sys, cl, counter, quiet), asked, checks
}

// TestSpillTimerOnlyForMovableTasks: tasks that wait for a lease at a node that does not
// answer arm the shard's spill timer (spillCheck every SpillAfter) only if spillback may
// move them: tasks bound to the node by a hard affinity do not; a default task does.
func TestSpillTimerOnlyForMovableTasks(t *testing.T) {
	c, asked, checks := silentNodeCore(t)
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

// TestSpillChecksGoOnWhileTasksWait: a spill check that finds no stalled class (its
// request was answered, or asked, a moment ago) comes again SpillAfter later while the
// tasks wait, with nothing else happening: before, the next check came only with the next
// event that pumped a node (a result), and a burst on 3 idle nodes of 2 CPUs ran on the
// submitting node alone (6 tasks of 300 ms: 0.9 s, not 0.3-0.7).
func TestSpillChecksGoOnWhileTasksWait(t *testing.T) {
	c, asked, checks := silentNodeCore(t)
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	tc := c.NewDriver()
	// A soft affinity: the task goes to n2, and spillback may move it.
	if _, _, err := c.Submit(tc, Call{Function: "core_test.f", Resources: res, Strategy: StrategyNodeAffinity, AffinityNode: "n2", AffinitySoft: true}); err != nil {
		t.Fatal(err)
	}
	for i := 0; checks.Load() == 0; i++ {
		if i == 10000 {
			t.Fatalf("no spill check for a movable task waiting at a node that does not answer (%d requests reached it)", asked.Load())
		}
		time.Sleep(time.Millisecond)
	}
	// n2 says nothing, so the class stalls only after SpillSilent: until then every check
	// finds nothing to move, and the checks must go on by themselves.
	time.Sleep(8 * SpillAfter)
	if n := checks.Load(); n < 3 {
		t.Fatalf("%d spill checks in %v while the task waited, want them every %v", n, 9*SpillAfter, SpillAfter)
	}
}
