package worker

import (
	"context"
	"errors"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestRunCarriesTypedError: the error a task's function returns is put in its failure as
// TypedError encodes it (the name of its registered type and its encoding), besides its
// text; without TypedError, or for an error it does not know, there is none.
func TestRunCarriesTypedError(t *testing.T) {
	known := errors.New("known")
	defer func(old func(error) (string, []byte)) { TypedError = old }(TypedError)
	TypedError = func(err error) (string, []byte) {
		if errors.Is(err, known) {
			return "test.known", []byte("payload")
		}
		return "", nil
	}
	r := Runner{Node: "n1"}
	run := func(err error) *pb.ErrorInfo {
		tid := ids.ChildTaskID(ids.NewRootTaskID(), 1)
		spec := &pb.TaskSpec{TaskId: tid[:], Function: "f"}
		res := r.Run(context.Background(), context.Background(), spec, func(context.Context, [][]byte) ([]byte, error) { return nil, err })
		if res.Error == nil {
			t.Fatalf("Run of a failing body: no error in %v", res)
		}
		return res.Error
	}
	if e := run(known); e.ErrorType != "test.known" || string(e.ErrorData) != "payload" || e.Message != "known" {
		t.Errorf("a known error: %v", e)
	}
	if e := run(errors.New("other")); e.ErrorType != "" || e.ErrorData != nil {
		t.Errorf("another error: %v", e)
	}
	TypedError = nil
	if e := run(known); e.ErrorType != "" || e.ErrorData != nil {
		t.Errorf("no TypedError: %v", e)
	}
}
