package lineage

import (
	"errors"
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
		{Object{ID: ids.ReturnID(tid, 2), State: Ready, Record: true}, ReasonPut}, // not what its task returns
		{Object{ID: ids.ReturnID(tid, 1), State: Ready}, ReasonNoRecord},
	} {
		acts, err := Lost(tc.o)
		var le *Error
		if !errors.Is(err, ErrNotReconstructible) || !errors.As(err, &le) || le.Reason != tc.want || le.Object != tc.o.ID || acts != nil {
			t.Errorf("Lost(%v) = %v, %v; want reason %v", tc.o, acts, err, tc.want)
		}
	}
}

// TestAdoptionMessages: the errors an adopted object fails with name it and say why.
func TestAdoptionMessages(t *testing.T) {
	a := NewAdoption("n2")
	put := ids.PutID(taskID("t1"), 1)
	acts := a.Adopt(Object{ID: put, State: Ready, Value: Value{InStore: true, Node: "n2"}})
	want := FailObject{Object: put, Task: put.Task(),
		Message: "object " + put.String() + " is lost: its owner died and it was made by Put, so no task can make it again"}
	if len(acts) != 1 || acts[0] != want || a.Lost != 1 {
		t.Fatalf("adopting a lost Put: %v (lost %d), want %v", acts, a.Lost, want)
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
