package ray

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/lineage"
)

// An object made by Put whose owner died fails, in the process that adopted its borrow,
// with the ErrorInfo core's adoption sets (orphan.go: OBJECT_LOST, the Put's task ID, no
// function). Get returned it as "ray: task  (id) failed: ... its owner died and it was
// made by Put": a blank function, a task failure where no task failed, no owner named,
// nothing to do. It reads as the object's loss now, naming the owner's node and what to
// do, and matches ErrObjectLost and ErrOwnerDied; so does a task's error that wraps it.
// A borrow of an owner known dead matches ErrOwnerDied too; an object lost otherwise
// does not.
func TestOwnerDiedError(t *testing.T) {
	put := ids.PutID(ids.NewRootTaskID(), 1)
	a := lineage.NewAdoption("8f27433d2b73aca8")
	acts := a.Adopt(lineage.Object{ID: put, State: lineage.Ready, Value: lineage.Value{InStore: true, Node: "8f27433d2b73aca8"}})
	fail, ok := acts[0].(lineage.FailObject)
	if len(acts) != 1 || !ok {
		t.Fatalf("adopting a Put of a dead owner: %v, want FailObject", acts)
	}
	err := convert(&core.ObjectError{Info: &pb.ErrorInfo{Kind: pb.ErrorInfo_OBJECT_LOST, TaskId: fail.Task[:], Message: fail.Message}})
	msg := err.Error()
	if !errors.Is(err, ErrObjectLost) || !errors.Is(err, ErrOwnerDied) {
		t.Errorf("a Put lost with its owner: %v, want it to match ErrObjectLost and ErrOwnerDied", err)
	}
	for _, want := range []string{"ray: object " + put.String() + " is lost", "8f27433d2b73aca8", "Put", "keep its owner running", "return the value from a task"} {
		if !strings.Contains(msg, want) {
			t.Errorf("a Put lost with its owner: %q, want it to say %q", msg, want)
		}
	}
	if strings.Contains(msg, "task ") && strings.Contains(msg, "failed") {
		t.Errorf("a Put lost with its owner: %q reads as a task failure", msg)
	}
	// A task whose function returned that error (wrapped) carries it as a cause.
	nested := &TaskError{Function: "f", TaskID: ids.NewRootTaskID().String(), Message: fmt.Sprintf("reading: %v", err),
		kind: pb.ErrorInfo_APPLICATION, causes: causesOf(fmt.Errorf("reading: %w", err))}
	if !errors.Is(nested, ErrOwnerDied) || !errors.Is(nested, ErrObjectLost) {
		t.Errorf("a task error wrapping it: %v, want ErrOwnerDied and ErrObjectLost", nested)
	}
	// The borrow of an owner known dead (core.Hold).
	borrow := convert(&core.ObjectError{Info: &pb.ErrorInfo{Kind: pb.ErrorInfo_OBJECT_LOST,
		Message: "object " + put.String() + " is lost: its owner died (127.0.0.1:9/core)"}})
	if !errors.Is(borrow, ErrOwnerDied) {
		t.Errorf("a borrow of a dead owner: %v, want ErrOwnerDied", borrow)
	}
	// Lost otherwise: not the owner's death.
	other := convert(&core.ObjectError{Info: &pb.ErrorInfo{Kind: pb.ErrorInfo_OBJECT_LOST, Message: "object " + put.String() + " is lost: node n1 is gone"}})
	if !errors.Is(other, ErrObjectLost) || errors.Is(other, ErrOwnerDied) {
		t.Errorf("an object lost with its node: %v, want ErrObjectLost, not ErrOwnerDied", other)
	}
}
