package core

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/dispatch"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// TestIdleShardsAreNotTicked: a shard whose tick found nothing to watch gets no more ticks
// until a message or a direct actor call gives it something (a task submitted to it); a
// shard with a task still pending keeps getting them.
func TestIdleShardsAreNotTicked(t *testing.T) {
	sys, quiet := quietSystem(t)
	specs := make(chan *pb.TaskSpec, 4)
	fake := newFakeNode(sys, specs) // grants leases; its worker never answers: tasks stay pending
	// The test's ticks, told apart from the runtime's own ticker's; a sync tick, sent to
	// every shard, says the shards handled what was sent before it (any other message
	// would give the shard something to tick for).
	mark, sync := time.Unix(1, 0), time.Unix(2, 0)
	var ticks, marks atomic.Int32
	counter := &dispatch.Counter{Tap: func(role string, m any) {
		switch m := actor.UnwrapEnvelopeMessage(m).(type) {
		case tick:
			if m.now.Equal(mark) {
				ticks.Add(1)
			} else if m.now.Equal(sync) {
				marks.Add(1)
			}
		}
	}}
	c, err := New(Config{Job: "j", Node: "n1", System: sys, Messages: counter,
		Raylet: func() *actor.PID { return fake.raylet }, Store: func() *actor.PID { return fake.raylet },
		Feasible: func(sched.Resources) error { return nil }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// tickRound ticks the shards and returns how many ticks they handled.
	tickRound := func() int32 {
		t.Helper()
		ticks.Store(0)
		marks.Store(0)
		c.tickShards(mark)
		for _, s := range c.shards {
			c.root.Send(s.pid, tick{now: sync})
		}
		for i := 0; marks.Load() < int32(len(c.shards)); i++ {
			if i == 5000 {
				t.Fatal("the shards did not handle the sync marks")
			}
			time.Sleep(time.Millisecond)
		}
		return ticks.Load()
	}
	if n := tickRound(); n != int32(len(c.shards)) {
		t.Fatalf("first round: %d ticks, want one per shard (%d)", n, len(c.shards))
	}
	for round := range 3 {
		if n := tickRound(); n != 0 {
			t.Fatalf("idle round %d: %d ticks, want 0 (no shard has anything to watch)", round, n)
		}
	}
	// An actor call queued straight to a quiet shard (addDirect, no message) gets it ticked
	// again: once (a call that has already finished leaves nothing to watch).
	c.shards[0].addDirect(&pending{finished: true})
	if n := tickRound(); n != 1 {
		t.Fatalf("after a direct call queued to a quiet shard: %d ticks, want 1", n)
	}
	if n := tickRound(); n != 0 {
		t.Fatalf("after that call was taken: %d ticks, want 0", n)
	}
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	if _, _, err := c.Submit(c.NewDriver(), Call{Function: "core_test.f", Resources: res}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-specs: // pushed to the worker, which never answers
	case <-time.After(10 * time.Second):
		t.Fatal("the task was not pushed")
	}
	for round := range 3 {
		if n := tickRound(); n != 1 {
			t.Fatalf("round %d with a task pending: %d ticks, want 1 (its shard's)", round, n)
		}
	}
}
