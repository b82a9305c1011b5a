package core

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// steeredCluster is a Cluster whose placer puts every task at the node the test names
// and counts the placements and their returns per node.
type steeredCluster struct {
	twoNodes
	at     ids.NodeID
	placed map[ids.NodeID]int
	done   map[ids.NodeID]int
}

func (s *steeredCluster) Place(sched.Request) (ids.NodeID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.placed[s.at]++
	return s.at, nil
}
func (s *steeredCluster) Done(n ids.NodeID, _ sched.Resources) {
	s.mu.Lock()
	s.done[n]++
	s.mu.Unlock()
}
func (s *steeredCluster) Placer(uint64) Placer { return s }
func (s *steeredCluster) steer(n ids.NodeID)   { s.mu.Lock(); s.at = n; s.mu.Unlock() }
func (s *steeredCluster) counts(n ids.NodeID) (placed, done int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.placed[n], s.done[n]
}

// TestTaskRidesItsShardsLeaseWithRoom: a Default task whose class this shard holds a
// lease for at its own node, with room for one more task, goes to that lease without a
// placement (Ray's owner gives its leased worker the next task of its class), even when
// the placement would choose a peer (as the Default policy does for a node of two CPUs
// that the shard's own lease makes half busy); it is not counted against the node by the
// view, so its end gives nothing back. A task with an argument by reference is placed.
func TestTaskRidesItsShardsLeaseWithRoom(t *testing.T) {
	sys, quiet := quietSystem(t)
	specs := map[ids.NodeID]chan *pb.TaskSpec{"n1": make(chan *pb.TaskSpec, 8), "n2": make(chan *pb.TaskSpec, 8)}
	fakes := map[ids.NodeID]*fakeNode{}
	cl := &steeredCluster{twoNodes: twoNodes{dead: map[ids.NodeID]bool{}, raylets: map[ids.NodeID]*actor.PID{}},
		at: "n1", placed: map[ids.NodeID]int{}, done: map[ids.NodeID]int{}}
	for n, ch := range specs {
		fakes[n] = newFakeNode(sys, ch)
		cl.raylets[n] = fakes[n].raylet
	}
	c := newTestCore(t, sys, cl, nil, quiet)
	tc := c.NewDriver()
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	submit := func(args ...Arg) ids.ObjectID {
		t.Helper()
		id, _, err := c.Submit(tc, Call{Function: "core_test.f", Resources: res, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	at := func(n ids.NodeID) *pb.TaskSpec {
		t.Helper()
		select {
		case s := <-specs[n]:
			return s
		case <-time.After(5 * time.Second):
			t.Fatalf("no task reached %s", n)
			return nil
		}
	}
	reply := func(n ids.NodeID, s *pb.TaskSpec) {
		c.root.Send(c.owner, &pb.TaskResult{TaskId: s.TaskId, Data: []byte("v"), RunNanos: 1000, LeaseId: fakes[n].lease(s.TaskId)})
	}
	get := func(id ids.ObjectID) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := tc.Get(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	// A first task measures the class short (1 µs): its leases take many tasks at once.
	first := submit()
	reply("n1", at("n1"))
	get(first)
	// A second holds a lease at n1 with room for more.
	second := submit()
	s2 := at("n1")
	// The placement now says n2; the third task rides the lease at n1.
	cl.steer("n2")
	third := submit()
	s3 := at("n1")
	if placed, _ := cl.counts("n2"); placed != 0 {
		t.Fatalf("the third task was placed (%d placements at n2) although a lease at n1 had room for it", placed)
	}
	// The second task was placed too, or rode the first's lease kept idle for IdleHold.
	p1, _ := cl.counts("n1")
	if p1 != 1 && p1 != 2 {
		t.Fatalf("%d placements at n1, want 1 or 2 (the first two tasks)", p1)
	}
	// A task with an argument by reference is placed: where its arguments are matters.
	fourth := submit(Arg{Ref: second, IsRef: true})
	reply("n1", s2)
	get(second)
	s4 := at("n2")
	reply("n1", s3)
	reply("n2", s4)
	get(third)
	get(fourth)
	// Every placement is given back once its task is done, and the ride is not.
	for i := 0; ; i++ {
		_, d1 := cl.counts("n1")
		_, d2 := cl.counts("n2")
		if d1 == p1 && d2 == 1 {
			break
		}
		if i == 500 || d1 > p1 {
			t.Fatalf("placements given back: %d at n1 (want %d: a ride's end gives nothing back), %d at n2 (want 1)", d1, p1, d2)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
