package core

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/dispatch"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// noNodesYet is a twoNodes cluster that has no alive node until ready: placement parks.
type noNodesYet struct {
	*twoNodes
	ready atomic.Bool
}

func (n *noNodesYet) Place(r sched.Request) (ids.NodeID, error) {
	if !n.ready.Load() {
		return "", sched.ErrNoNodes
	}
	return n.twoNodes.Place(r)
}
func (n *noNodesYet) Placer(uint64) Placer { return n }

// syncMark is a message a test sends every shard: once the shards handled it, they handled
// everything sent to them before.
type syncMark struct{}

// TestClusterChangedReachesOnlyShardsWithParkedTasks: the view calls ClusterChanged for
// every load report of every node; a shard with no parked task gets no message from it,
// and a parked task is placed when a change comes.
func TestClusterChangedReachesOnlyShardsWithParkedTasks(t *testing.T) {
	sys, quiet := quietSystem(t)
	specs := make(chan *pb.TaskSpec, 4)
	cl := &noNodesYet{twoNodes: &twoNodes{dead: map[ids.NodeID]bool{}, raylets: map[ids.NodeID]*actor.PID{}}}
	cl.raylets["n2"] = newFakeNode(sys, specs).raylet

	var mu sync.Mutex
	changed := map[string]int{} // role -> clusterChanged messages its actors handled
	var marks atomic.Int32
	counter := &dispatch.Counter{}
	counter.Tap = func(role string, m any) {
		switch actor.UnwrapEnvelopeMessage(m).(type) {
		case clusterChanged:
			mu.Lock()
			changed[role]++
			mu.Unlock()
		case syncMark:
			marks.Add(1)
		}
	}
	c := newTestCore(t, sys, cl, counter, quiet)
	// drain sends every shard a syncMark and waits until all were handled.
	drain := func() {
		t.Helper()
		marks.Store(0)
		for _, s := range c.shards {
			c.root.Send(s.pid, syncMark{})
		}
		for i := 0; marks.Load() < int32(len(c.shards)); i++ {
			if i == 5000 {
				t.Fatal("the shards did not handle the sync marks")
			}
			time.Sleep(time.Millisecond)
		}
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return changed["shard"]
	}

	// No task parked: a hundred changes (a busy cluster's load reports) send nothing.
	for range 100 {
		c.ClusterChanged()
	}
	drain()
	if n := count(); n != 0 {
		t.Fatalf("with no parked task, 100 ClusterChanged calls sent %d messages to the shards, want 0", n)
	}

	// A task with no node to go to parks in its shard; a change then places it.
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	if _, _, err := c.Submit(c.NewDriver(), Call{Function: "core_test.f", Resources: res}); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		parked := 0
		for _, s := range c.shards {
			if s.hasParked.Load() {
				parked++
			}
		}
		if parked == 1 {
			break
		}
		if parked > 1 || i == 5000 {
			t.Fatalf("%d shards say they have parked tasks, want 1", parked)
		}
		time.Sleep(time.Millisecond)
	}
	cl.ready.Store(true)
	for range 100 {
		c.ClusterChanged()
	}
	select {
	case s := <-specs:
		if s.Function != "core_test.f" {
			t.Fatalf("n2 got %q", s.Function)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the parked task was not placed after the cluster changed")
	}
	drain()
	// The shard with the task got the changes (up to all 100, fewer once it placed the
	// task and said it had none left, plus its own retry timer's); no other shard got any.
	if n := count(); n < 1 || n > 101 {
		t.Fatalf("the shards handled %d clusterChanged messages, want 1 to 101 (the parked task's shard only)", n)
	}
	for _, s := range c.shards {
		if s.hasParked.Load() {
			t.Fatalf("shard %d still says it has parked tasks after placing its only one", s.i)
		}
	}
}
