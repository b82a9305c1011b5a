package worker

import (
	"context"
	"errors"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/slab"
)

// TestResultsDoNotPointIntoTheirSpec: every result Run and Fail make carries a copy of
// its task's ID, never the spec's own bytes (an owner's spec is part of its record of the
// task, which a kept result would keep alive): with or without a slab for the IDs, for a
// result, an error, a panic and several returns.
func TestResultsDoNotPointIntoTheirSpec(t *testing.T) {
	var tids slab.Slab[ids.TaskID]
	var results slab.Slab[pb.TaskResult]
	bodies := map[string]func(context.Context, [][]byte) ([]byte, error){
		"value": func(context.Context, [][]byte) ([]byte, error) { return []byte("v"), nil },
		"error": func(context.Context, [][]byte) ([]byte, error) { return nil, errors.New("no") },
		"panic": func(context.Context, [][]byte) ([]byte, error) { panic("boom") },
	}
	for _, withSlab := range []bool{false, true} {
		r := Runner{Node: "n1"}
		if withSlab {
			r.IDs, r.Results = &tids, &results
		}
		for name, body := range bodies {
			tid := ids.ChildTaskID(ids.NewRootTaskID(), 1)
			spec := &pb.TaskSpec{TaskId: tid[:], Function: "f"}
			res := r.Run(context.Background(), context.Background(), spec, body)
			check(t, name, spec, res)
		}
		tid := ids.ChildTaskID(ids.NewRootTaskID(), 2)
		spec := &pb.TaskSpec{TaskId: tid[:], Function: "f"}
		check(t, "Fail", spec, Fail(spec, pb.ErrorInfo_SYSTEM, "m", "", "n1"))
	}
}

func check(t *testing.T, what string, spec *pb.TaskSpec, res *pb.TaskResult) {
	t.Helper()
	want := string(spec.TaskId)
	if string(res.TaskId) != want || (res.Error != nil && string(res.Error.TaskId) != want) {
		t.Fatalf("%s: the result names another task", what)
	}
	spec.TaskId[0] ^= 0xff // the spec's bytes change: the result's must not
	if string(res.TaskId) != want || (res.Error != nil && string(res.Error.TaskId) != want) {
		t.Fatalf("%s: the result's task ID is the spec's own bytes", what)
	}
}
