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
	if _, err := s.Put(ctx, gcs.AgentAliveKey("a1"), []byte("h1"), 0); err != nil {
		t.Fatal(err)
	}
	// A worker process SIGKILLed with its machine's agent (a2 has no alive key), and a
	// driver whose registration lapsed.
	put(gcs.JobWorkerKey("j1", "a2"), &pb.JobWorker{JobId: "j1", AgentId: "a2", State: pb.JobWorker_RUNNING, Pid: 11, NodeId: "killed-worker"})
	put(gcs.JobKey("j3"), &pb.JobInfo{JobId: "j3", State: pb.JobInfo_RUNNING, DriverNode: "lapsed-driver"})

	rep, err := readMemory(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Missing, []string{"killed-worker", "lapsed-driver", "lapsed-worker"}) {
		t.Fatalf("rayctl memory: missing %v, want [killed-worker lapsed-driver lapsed-worker]", rep.Missing)
	}
	var w bytes.Buffer
	warnMissingStores(&w, rep)
	for _, want := range []string{
		"killed-worker (worker process of job j1 on machine a2, whose agent is dead: gone with its machine (rayctl list nodes shows it DEAD))",
		"lapsed-driver (driver of job j3: its registration lapsed",
		"lapsed-worker (worker process of job j1 on machine a1: its registration lapsed",
	} {
		if !strings.Contains(w.String(), want) {
			t.Fatalf("rayctl memory's warning: %q, want it to say %q", w.String(), want)
		}
	}
	if strings.Contains(w.String(), "a driver UNREACHABLE") {
		t.Fatalf("rayctl memory's warning blames a driver for worker processes: %q", w.String())
	}
}
