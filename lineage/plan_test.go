package lineage

import (
	"errors"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestGetReadAllocatesNothing: every Get of a ready value asks its Get whether to read,
// so that answer must cost no allocation.
func TestGetReadAllocatesNothing(t *testing.T) {
	id := ids.ReturnID(taskID("t1"), 1)
	o := Object{ID: id, State: Ready, Value: Value{InStore: true, Node: "n1"}}
	var act Action
	allocs := testing.AllocsPerRun(1000, func() {
		g := Get{Object: id}
		act = g.Seen(o)
	})
	if _, ok := act.(Read); !ok || allocs != 0 {
		t.Fatalf("Seen of a live value: %v with %.1f allocations, want Read with none", act, allocs)
	}
}

func TestLostRefusals(t *testing.T) {
	tid := taskID("t1")
	for _, tc := range []struct {
		o    Object
		want Reason
	}{
		{Object{ID: ids.PutID(tid, 1), State: Ready, Record: true}, ReasonPut},
		{Object{ID: ids.ReturnID(tid, 0), State: Ready, Record: true}, ReasonPut}, // index 0: no task returns it
		{Object{ID: ids.ReturnID(tid, 1), State: Ready}, ReasonNoRecord},
	} {
		acts, err := Lost(tc.o)
		var le *Error
		if !errors.Is(err, ErrNotReconstructible) || !errors.As(err, &le) || le.Reason != tc.want || le.Object != tc.o.ID || acts != nil {
			t.Errorf("Lost(%v) = %v, %v; want reason %v", tc.o, acts, err, tc.want)
		}
	}
}

// TestLostOtherReturn: a task's second return is recreated by running the task again, as
// its first is; the rerun is for that return (its future is the one made pending again, and
// its old copy the one freed).
func TestLostOtherReturn(t *testing.T) {
	tid := taskID("t1")
	ret2 := ids.ReturnID(tid, 2)
	acts, err := Lost(Object{ID: ret2, State: Ready, Value: Value{InStore: true, Node: "n2", Gone: true}, Record: true})
	if err != nil || len(acts) != 2 || acts[0] != (ResetFuture{Object: ret2}) {
		t.Fatalf("Lost(return 2) = %v, %v", acts, err)
	}
	rr, ok := acts[1].(Rerun)
	if !ok || rr.Task != tid || rr.Object != ret2 {
		t.Fatalf("Lost(return 2) reruns %v, want task %s for %s", acts[1], tid, ret2)
	}
	req := NewRerunRequest(rr)
	if got := req.Arrived(HeldNone); len(got) != 2 || got[1] != (FreeOld{Object: ret2, Node: "n2"}) {
		t.Fatalf("Arrived = %v, want Claim, FreeOld of return 2", got)
	}
	got := Restart(Task{ID: tid, Object: req.Object, MaxRetries: -1}, nil)
	if len(got) < 2 || got[1] != (ResetFuture{Object: ret2}) {
		t.Fatalf("Restart = %v, want return 2's future reset", got)
	}
	// The zero Object is the first return, as before tasks had several.
	if got := Restart(Task{ID: tid, MaxRetries: -1}, nil); got[1] != (ResetFuture{Object: ids.ReturnID(tid, 1)}) {
		t.Fatalf("Restart without an object = %v", got)
	}
	// Without retries left, the return that fails is the one the rerun was for.
	if got := Restart(Task{ID: tid, Object: req.Object}, nil); len(got) != 1 || got[0] != (NoRetries{Task: tid, Object: ret2}) {
		t.Fatalf("Restart with no retries left = %v, want NoRetries for return 2", got)
	}
}

// single returns the only action of acts if it is an A.
func single[A Action](acts []Action) (A, bool) {
	var zero A
	if len(acts) != 1 {
		return zero, false
	}
	a, ok := acts[0].(A)
	return a, ok
}

// TestAdoptionMessages: the errors an adopted object fails with name it and say why.
func TestAdoptionMessages(t *testing.T) {
	a := NewAdoption("n2")
	put := ids.PutID(taskID("t1"), 1)
	acts := a.Adopt(Object{ID: put, State: Ready, Value: Value{InStore: true, Node: "n2"}})
	want := FailObject{Object: put, Task: put.Task(),
		Message: "object " + put.String() + " is lost: its owner died (node n2, the driver or worker process that created it with Put), " +
			"and an object made by Put cannot be made again: keep its owner running while other processes use it, " +
			"or return the value from a task instead (a task's result is made again from its lineage)"}
	if len(acts) != 1 || acts[0] != want || a.Lost != 1 {
		t.Fatalf("adopting a lost Put: %v (lost %d), want %v", acts, a.Lost, want)
	}
	// A Put the adopter never resolved (its owner died first) fails too, also when the
	// adopter holds the record of the task that put it (it submitted that task, whose
	// worker put the object and returned its ref): the record is not the Put's, and no
	// recreation is under way. It stayed pending for good.
	pending := ids.PutID(taskID("t1"), 2)
	for _, o := range []Object{{ID: pending, State: Pending, Record: true}, {ID: pending, State: Pending},
		{ID: pending, State: Ready, Value: Value{InStore: true, Node: "n2"}, Record: true}} {
		lost := a.Lost
		acts := a.Adopt(o)
		if f, ok := single[FailObject](acts); !ok || f.Object != pending || !strings.Contains(f.Message, OwnerDied) || a.Lost != lost+1 {
			t.Fatalf("adopting %v: %v, want it failed because its owner died", o, acts)
		}
	}
	// A value that is an object-lost error needs recovery; any other error is kept.
	id := ids.ReturnID(taskID("t2"), 1)
	if acts := a.Adopt(Object{ID: id, State: Ready, Value: Value{Failed: true, Err: pb.ErrorInfo_APPLICATION}}); acts != nil {
		t.Fatalf("adopting a task's own error: %v", acts)
	}
	if acts := a.Adopt(Object{ID: id, State: Ready, Value: Value{Failed: true, Err: pb.ErrorInfo_OBJECT_LOST}}); len(acts) != 1 || acts[0] != (ReadLineage{Node: "n2"}) {
		t.Fatalf("adopting a lost value: %v, want ReadLineage", acts)
	}
}
