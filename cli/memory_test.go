package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestMemoryNamesLapsedProcesses: `rayctl memory` reads the stores' figures from the
// processes' load records; a running job's worker process whose registration lapsed has
// none, and the report names it as missing (with a warning) instead of leaving it out
// with no word. A process of an ended job is not missing.
func TestMemoryNamesLapsedProcesses(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	defer s.Close()
	put := func(key string, m proto.Message) {
		t.Helper()
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, key, b, 0); err != nil {
			t.Fatal(err)
		}
	}
	put(gcs.JobKey("j1"), &pb.JobInfo{JobId: "j1", State: pb.JobInfo_RUNNING, DriverNode: "driver1"})
	put(gcs.NodeKey("driver1"), &pb.NodeInfo{NodeId: "driver1", Role: "driver", JobId: "j1"})
	put(gcs.JobWorkerKey("j1", "a1"), &pb.JobWorker{JobId: "j1", AgentId: "a1", State: pb.JobWorker_RUNNING, Pid: 10, NodeId: "lapsed-worker"})
	put(gcs.JobKey("j2"), &pb.JobInfo{JobId: "j2", State: pb.JobInfo_SUCCEEDED, DriverNode: "ended-driver"})

	rep, err := readMemory(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Missing, []string{"lapsed-worker"}) {
		t.Fatalf("rayctl memory: missing %v, want [lapsed-worker]", rep.Missing)
	}
	var w bytes.Buffer
	warnMissingStores(&w, rep)
	if !strings.Contains(w.String(), "lapsed-worker") || !strings.Contains(w.String(), "missing") {
		t.Fatalf("rayctl memory's warning: %q, want it to name the missing process", w.String())
	}
}
