package core

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// twoNodes is a Cluster of two remote nodes whose raylets are probes; n2 is chosen while
// it is alive, n3 after. Alive is what a test sets: no NodeGone is ever called.
type twoNodes struct {
	mu      sync.Mutex
	dead    map[ids.NodeID]bool
	raylets map[ids.NodeID]*actor.PID
}

func (t *twoNodes) Place(sched.Request) (ids.NodeID, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.dead["n2"] {
		return "n2", nil
	}
	return "n3", nil
}
func (t *twoNodes) Done(ids.NodeID, sched.Resources)                   {}
func (t *twoNodes) Spill(sched.Request, ids.NodeID) (ids.NodeID, bool) { return "", false }
func (t *twoNodes) Placer(uint64) Placer                               { return t }
func (t *twoNodes) Raylet(n ids.NodeID) *actor.PID                     { return t.raylets[n] }
func (t *twoNodes) Store(ids.NodeID) *actor.PID                        { return nil }
func (t *twoNodes) DataAddress(ids.NodeID) string                      { return "" }
func (t *twoNodes) DataSocket(ids.NodeID) string                       { return "" }
func (t *twoNodes) JobOf(ids.NodeID) string                            { return "" }
func (t *twoNodes) Feasible(sched.Resources) error                     { return nil }
func (t *twoNodes) Alive(n ids.NodeID) bool                            { t.mu.Lock(); defer t.mu.Unlock(); return !t.dead[n] }
func (t *twoNodes) kill(n ids.NodeID)                                  { t.mu.Lock(); t.dead[n] = true; t.mu.Unlock() }

// newClusterCore returns a Core of node n1 in a twoNodes cluster whose raylets put the
// specs they receive into specs (by node; nil: no raylets).
func newClusterCore(t *testing.T, specs map[ids.NodeID]chan *pb.TaskSpec) (*Core, *twoNodes) {
	t.Helper()
	sys, quiet := quietSystem(t)
	cl := &twoNodes{dead: map[ids.NodeID]bool{}, raylets: map[ids.NodeID]*actor.PID{}}
	for n, ch := range specs {
		cl.raylets[n] = newFakeNode(sys, ch).raylet
	}
	c := newTestCore(t, sys, cl, nil, quiet)
	return c, cl
}

// TestSweepFailsTasksOfNodesThatLeftTheView: a task sent to a node that then leaves the view
// (no membership event reaches this process) is retried on another node by the sweep.
func TestSweepFailsTasksOfNodesThatLeftTheView(t *testing.T) {
	specs := map[ids.NodeID]chan *pb.TaskSpec{"n2": make(chan *pb.TaskSpec, 4), "n3": make(chan *pb.TaskSpec, 4)}
	c, cl := newClusterCore(t, specs)
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	if _, _, err := c.Submit(c.NewDriver(), Call{Function: "core_test.f", Resources: res, MaxRetries: 3}); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-specs["n2"]:
		if s.Attempt != 0 {
			t.Fatalf("first attempt numbered %d", s.Attempt)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the task never reached n2")
	}
	cl.kill("n2")
	select {
	case s := <-specs["n3"]:
		if s.Attempt != 1 {
			t.Fatalf("retry numbered %d, want 1", s.Attempt)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the task sent to a node that left the view was never retried")
	}
	if got := c.Stats().Retried.Load(); got != 1 {
		t.Fatalf("%d retries, want 1", got)
	}
}

// TestPullFromADeadNodeIsLostAtOnce: reading an object whose node died, with no data stream
// known for it, fails as lost at once (so the owner recreates it) instead of waiting for the
// grain pull's 30 s chunk timeout on a shard that will never answer.
func TestPullFromADeadNodeIsLostAtOnce(t *testing.T) {
	c, cl := newClusterCore(t, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := l.Addr().String()
	l.Close() // the shard's process is gone: nothing listens at its address
	shard := actor.NewPID(deadAddr, "store")
	id := ids.ReturnID(ids.NewRootTaskID(), 1)
	for _, tc := range []struct {
		name string
		dead bool
	}{{"the view still counts the node", false}, {"the view dropped the node", true}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dead {
				cl.kill("n2")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			_, err := c.pull(ctx, shard, id, "n2", 1<<20)
			if !errors.Is(err, ErrObjectLost) {
				t.Fatalf("pull from a dead node: %v, want ErrObjectLost", err)
			}
			t.Logf("lost after %v", time.Since(start))
		})
	}
}
