package core

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/eventually"
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

// suspectPlacer answers a hard affinity for n2 with sched.ErrAffinitySuspect while suspect
// is set, and with ErrAffinityUnavailable once n2 is dead.
type suspectPlacer struct {
	*twoNodes
	suspect atomic.Bool
	asked   atomic.Int32
}

func (p *suspectPlacer) Placer(uint64) Placer { return p }
func (p *suspectPlacer) Place(req sched.Request) (ids.NodeID, error) {
	p.asked.Add(1)
	switch {
	case p.suspect.Load():
		return "", fmt.Errorf("%w: %q", sched.ErrAffinitySuspect, req.AffinityNode)
	case !p.Alive("n2"):
		return "", fmt.Errorf("%w: %q is dead", sched.ErrAffinityUnavailable, req.AffinityNode)
	}
	return "n2", nil
}

// TestHardAffinityParksWhileTheNodeIsSuspect: a task bound to a node the view suspects (its
// connection broke, its process may live) waits for it instead of failing, runs there once
// it answers again, and fails once the node is known dead.
func TestHardAffinityParksWhileTheNodeIsSuspect(t *testing.T) {
	sys, quiet := quietSystem(t)
	specs := make(chan *pb.TaskSpec, 4)
	cl := &suspectPlacer{twoNodes: &twoNodes{dead: map[ids.NodeID]bool{}, raylets: map[ids.NodeID]*actor.PID{"n2": newFakeNode(sys, specs).raylet}}}
	c := newTestCore(t, sys, cl, nil, quiet)
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	call := Call{Function: "core_test.f", Resources: res, Strategy: StrategyNodeAffinity, AffinityNode: "n2"}
	tc := c.NewDriver()

	cl.suspect.Store(true)
	if _, _, err := c.Submit(tc, call); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "placement asked", func() bool { return cl.asked.Load() > 0 })
	c.ClusterChanged() // the view changed, the node still suspect: it waits on
	select {
	case s := <-specs:
		t.Fatalf("task %x sent to a suspect node", s.TaskId)
	case <-time.After(2 * parkRetry):
	}
	cl.suspect.Store(false) // it answered again
	c.ClusterChanged()
	select {
	case <-specs:
	case <-time.After(5 * time.Second):
		t.Fatal("the task never reached its node once it answered again")
	}

	// Suspect, then known dead: the task fails as unplaceable.
	cl.suspect.Store(true)
	id, e, err := c.Submit(tc, call)
	if err != nil {
		t.Fatal(err)
	}
	cl.kill("n2")
	cl.suspect.Store(false)
	c.ClusterChanged()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = tc.GetIn(ctx, id, e)
	var te *ObjectError
	if !errors.As(err, &te) || te.Info.Kind != pb.ErrorInfo_INFEASIBLE || !strings.Contains(err.Error(), "is dead") {
		t.Fatalf("a task bound to a node known dead: %v, want an INFEASIBLE error saying the node is dead", err)
	}
}
