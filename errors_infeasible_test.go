package ray

import (
	"errors"
	"strings"
	"testing"
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
	t.Log(err)
}
