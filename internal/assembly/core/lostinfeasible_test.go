package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// onlyNodeWithW1 is a twoNodes cluster where n2 is the only node with the task's custom
// resource: once n2 is dead, no node can run the task.
type onlyNodeWithW1 struct{ *twoNodes }

func (o onlyNodeWithW1) Placer(uint64) Placer { return o }
func (o onlyNodeWithW1) Place(sched.Request) (ids.NodeID, error) {
	if !o.Alive("n2") {
		return "", fmt.Errorf("%w: task requires w1=0.1 but the largest node has w1=0", sched.ErrInfeasible)
	}
	return "n2", nil
}

// TestLostObjectWhoseRerunIsInfeasible: an object made by a task that only node n2 can run
// is ready in n2's store; n2 dies. The Get recreates it by running the task again, which no
// node can run any more: its error says the object was lost with n2 and that recreating it
// failed (why: infeasible), and carries OBJECT_LOST as a cause (ray.ErrObjectLost matches
// it) while its kind stays INFEASIBLE (ray.ErrInfeasible matches it too), as Ray's
// ObjectReconstructionFailedError. Before, the Get returned the bare infeasible error of the
// rerun, with nothing saying that the object had existed and was lost.
func TestLostObjectWhoseRerunIsInfeasible(t *testing.T) {
	sys, quiet := quietSystem(t)
	specs := make(chan *pb.TaskSpec, 4)
	fake := newFakeNode(sys, specs)
	cl := onlyNodeWithW1{&twoNodes{dead: map[ids.NodeID]bool{}, raylets: map[ids.NodeID]*actor.PID{"n2": fake.raylet}}}
	local := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	c, err := New(Config{Job: "j", Node: "n1", System: sys, Cluster: cl,
		Raylet: func() *actor.PID { return local }, Store: func() *actor.PID { return local },
		Feasible: func(sched.Resources) error { return nil }, Lineage: &lineageMap{records: map[ids.TaskID]bool{}}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	tc := c.NewDriver()
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1, "w1": 0.1})
	id, e, err := c.Submit(tc, Call{Function: "core_test.f", Resources: res, MaxRetries: 3})
	if err != nil {
		t.Fatal(err)
	}
	var s *pb.TaskSpec
	select {
	case s = <-specs:
	case <-time.After(5 * time.Second):
		t.Fatal("the task never reached n2")
	}
	// Its result is in n2's store.
	c.root.Send(c.owner, &pb.TaskResult{TaskId: s.TaskId, Attempt: s.Attempt, InStore: true, NodeId: "n2", Size: 40 << 20,
		LeaseId: fake.lease(s.TaskId)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := tc.wait(ctx, id, e); err != nil {
		t.Fatalf("the object never became ready: %v", err)
	}

	cl.kill("n2")
	_, err = tc.GetIn(ctx, id, e)
	var oe *ObjectError
	if !errors.As(err, &oe) {
		t.Fatalf("Get of an object lost with n2 whose task no node can run: %v, want an *ObjectError", err)
	}
	if oe.Info.Kind != pb.ErrorInfo_INFEASIBLE {
		t.Errorf("kind %v, want INFEASIBLE", oe.Info.Kind)
	}
	if !slices.Contains(oe.Info.Causes, pb.ErrorInfo_OBJECT_LOST) {
		t.Errorf("causes %v, want OBJECT_LOST among them (the object was lost): %v", oe.Info.Causes, err)
	}
	for _, want := range []string{"object " + id.String() + " was lost with node n2", "recreating it", "task requires w1=0.1"} {
		if !strings.Contains(oe.Info.Message, want) {
			t.Errorf("message %q does not say %q", oe.Info.Message, want)
		}
	}
	if c.Stats().Reconstructed.Load() != 1 {
		t.Errorf("%d reconstructions, want 1 (the Get tries once, and does not take the failure for another loss)", c.Stats().Reconstructed.Load())
	}
}
