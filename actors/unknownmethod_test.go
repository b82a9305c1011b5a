package actors

import (
	"context"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/worker"
)

// TestUnknownMethodSaysTheWorkerProcessLacksIt: a call of a method the actor's worker
// process does not have (the caller does: registered after ray.Init, which worker
// processes never get past) fails naming the node and saying to register methods at
// package level, not "registered in this program".
func TestUnknownMethodSaysTheWorkerProcessLacksIt(t *testing.T) {
	class := &Class{Name: "unknownmethod.C"}
	res, _ := runCall(context.Background(), &worker.Runner{Node: "n7"}, nil, nil, class, nil,
		&pb.TaskSpec{Function: "unknownmethod.C.late", TaskId: make([]byte, ids.TaskIDLen)})
	if res.Error == nil || res.Error.Kind != pb.ErrorInfo_UNKNOWN_FUNCTION {
		t.Fatalf("%v, want UNKNOWN_FUNCTION", res.Error)
	}
	for _, want := range []string{`"unknownmethod.C.late"`, "worker process on node n7", "ray.Init", "package level"} {
		if !strings.Contains(res.Error.Message, want) {
			t.Errorf("%q does not say %q", res.Error.Message, want)
		}
	}
	if strings.Contains(res.Error.Message, "in this program") {
		t.Errorf("%q says the method is not registered in this program", res.Error.Message)
	}
}
