package ray

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestInfeasibleErrorSaysWhatToDo: a task no node can run fails with ErrInfeasible, a
// message that names the function and the resource once (the placement's own error
// said "sched: infeasible" a second time), and what to do about it.
func TestInfeasibleErrorSaysWhatToDo(t *testing.T) {
	ctx := timeout(t)
	_, err := Get(ctx, accelTask.Options(Resources(map[string]float64{"tpu": 1})).Remote(ctx))
	if !errors.Is(err, ErrInfeasible) {
		t.Fatalf("a task needing tpu=1 on a cluster without: %v, want ErrInfeasible", err)
	}
	msg := err.Error()
	for _, want := range []string{"tpu=1", "rayctl start", "ask for less"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error %q does not say %q", msg, want)
		}
	}
	if n := strings.Count(msg, ErrInfeasible.Error()); n != 1 {
		t.Errorf("the error %q says %q %d times, want once", msg, ErrInfeasible, n)
	}
	t.Log(msg)
	// An actor no node can host: the handle's error says the same.
	h := tallyClass.Remote(ctx, Resources(map[string]float64{"tpu": 1}))
	if err := h.Err(); !errors.Is(err, ErrInfeasible) || !strings.Contains(err.Error(), "rayctl start") || !strings.Contains(err.Error(), tallyClass.name) {
		t.Errorf("an actor needing tpu=1: %v, want ErrInfeasible naming the class and saying what to do", err)
	} else {
		t.Log(err)
	}
	// A hard node affinity to a node that is not there says so, without that advice.
	_, err = Get(ctx, accelTask.Options(NodeAffinity("no-such-node", false)).Remote(ctx))
	if !errors.Is(err, ErrInfeasible) || strings.Contains(err.Error(), "rayctl start") {
		t.Fatalf("hard affinity to a missing node: %v, want ErrInfeasible without the resource advice", err)
	}
	// It says "sched:" once (placement's ErrAffinityUnavailable said it a second time),
	// names the node, and says where the IDs NodeAffinity takes come from.
	msg = err.Error()
	if n := strings.Count(msg, "sched:"); n != 1 {
		t.Errorf("the error %q says \"sched:\" %d times, want once", msg, n)
	}
	for _, want := range []string{"hard node affinity", `"no-such-node"`, "ray.Nodes(ctx)", "rayctl list workers", "NodeAffinity(id, true)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error %q does not say %q", msg, want)
		}
	}
	t.Log(err)
}

// TestLostObjectWhoseRerunIsInfeasible: the error of a lineage reconstruction whose rerun no
// node can run (core's TestLostObjectWhoseRerunIsInfeasible makes it: the only node with
// the task's resource died with the object) is a *TaskError that matches ErrObjectLost and
// ErrInfeasible, says which object was lost with which node and why recreating it failed,
// with "sched:" once and the resource advice, as Ray's ObjectReconstructionFailedError.
func TestLostObjectWhoseRerunIsInfeasible(t *testing.T) {
	tid := ids.NewRootTaskID()
	obj := ids.ReturnID(tid, 1)
	err := convert(&core.ObjectError{Object: obj, Info: &pb.ErrorInfo{Kind: pb.ErrorInfo_INFEASIBLE, Function: "app.make",
		TaskId: tid[:], NodeId: "n1", Causes: []pb.ErrorInfo_Kind{pb.ErrorInfo_OBJECT_LOST},
		Message: "object " + obj.String() + " was lost with node n2, which held its only copy and is gone" + core.RerunFailed +
			"sched: infeasible: task requires w1=0.1 but the largest node has w1=0"}})
	var te *TaskError
	if !errors.As(err, &te) || !errors.Is(err, ErrObjectLost) || !errors.Is(err, ErrInfeasible) {
		t.Fatalf("%v (a *TaskError: %v), want a *TaskError matching ErrObjectLost and ErrInfeasible", err, te != nil)
	}
	msg := err.Error()
	for _, want := range []string{"app.make", obj.String() + " was lost with node n2", "recreating it", "infeasible: task requires w1=0.1", "rayctl start"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error %q does not say %q", msg, want)
		}
	}
	if n := strings.Count(msg, "sched:"); n != 0 {
		t.Errorf("the error %q says \"sched:\" %d times, want none (it is a task's error)", msg, n)
	}
	if te.ErrorInfo().Kind != pb.ErrorInfo_INFEASIBLE {
		t.Errorf("wire form %v, want it kept INFEASIBLE", te.ErrorInfo())
	}
	t.Log(msg)
}

// Tasks that submit one no node can run and return its error: unchanged, wrapped, and
// two levels down.
var (
	nestedTPU = Task0("test.nestedTPU", func(ctx context.Context) (int, error) {
		return Get(ctx, accelTask.Options(Resources(map[string]float64{"tpu": 1})).Remote(ctx))
	})
	nestedTPUWrapped = Task0("test.nestedTPUWrapped", func(ctx context.Context) (int, error) {
		_, err := Get(ctx, accelTask.Options(Resources(map[string]float64{"tpu": 1})).Remote(ctx))
		return 0, fmt.Errorf("step 2: %w", err)
	})
	nestedTPUDeeper = Task0("test.nestedTPUDeeper", func(ctx context.Context) (int, error) {
		return Get(ctx, nestedTPU.Remote(ctx))
	})
	nestedUnknown = Task0("test.nestedUnknown", func(ctx context.Context) (int, error) {
		return Get(ctx, Call[int](ctx, "test.noSuchFunction", nil))
	})
)

// TestInfeasibleThroughNesting: a task that fails because a task it submitted is
// infeasible fails with a *TaskError that matches ErrInfeasible, at any depth, as Ray's
// RayTaskError keeps its cause (and ErrUnknownFunction likewise); an application error
// does not match them.
func TestInfeasibleThroughNesting(t *testing.T) {
	ctx := timeout(t)
	for _, f := range []*Func0[int]{nestedTPU, nestedTPUWrapped, nestedTPUDeeper} {
		_, err := Get(ctx, f.Remote(ctx))
		var te *TaskError
		if !errors.As(err, &te) || !errors.Is(err, ErrInfeasible) || errors.Is(err, ErrUnknownFunction) {
			t.Errorf("%s: %v (a *TaskError: %v), want a *TaskError matching ErrInfeasible", f.Name(), err, te != nil)
		}
	}
	_, err := Get(ctx, nestedUnknown.Remote(ctx))
	if !errors.Is(err, ErrUnknownFunction) || errors.Is(err, ErrInfeasible) {
		t.Errorf("a task calling an unknown function: %v, want it to match ErrUnknownFunction", err)
	}
	_, err = Get(ctx, fail.Remote(ctx, V("sched: infeasible? no, a plain failure")))
	if errors.Is(err, ErrInfeasible) || errors.Is(err, ErrUnknownFunction) {
		t.Errorf("an application error: %v matches ErrInfeasible or ErrUnknownFunction", err)
	}
}
