package node

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/machine"
	"github.com/ray-go/ray/tasks/sched"
)

// downStore is a GCS that is down: every read fails.
type downStore struct{ gcs.Store }

func (downStore) Get(context.Context, string) (gcs.KV, bool, error) {
	return gcs.KV{}, false, errors.New("etcdserver: request timed out")
}

// TestWorkerRidesOutAGCSOutage: a worker process whose GCS does not answer keeps serving
// while the agent of its machine is alive (its machine ledger connection is open), as the
// agent rides out a head's outage; it stops ("the GCS is unreachable") only once no agent
// is there either. It stopped after ~30 s of an outage whatever its agent did, and every
// actor it hosted, detached ones included, went with it.
func TestWorkerRidesOutAGCSOutage(t *testing.T) {
	defer func(tick time.Duration, n int) { serveWorkerTick, gcsUnreachableTicks = tick, n }(serveWorkerTick, gcsUnreachableTicks)
	serveWorkerTick, gcsUnreachableTicks = 10*time.Millisecond, 5
	mem := memstore.New(memstore.Options{})
	t.Cleanup(func() { mem.Close() })
	total, err := sched.FromMap(map[string]float64{sched.CPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "machine.sock")
	srv, err := machine.Serve(sock, machine.NewLedger(total), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	mc, err := machine.Dial(sock, "w1", func(*pb.MachineMsg) {})
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	n := &Node{store: downStore{mem}, machine: mc, cfg: Config{Role: RoleWorker, Job: ids.JobID("j1"), AgentID: "a1"}}
	done := make(chan string, 1)
	go func() { done <- n.serveWorker(context.Background()) }()
	select {
	case reason := <-done:
		t.Fatalf("the worker process stopped (%q) during a GCS outage while its agent was alive", reason)
	case <-time.After(time.Second): // 100 looks, 20 times gcsUnreachableTicks
	}
	srv.Close() // the agent is gone too
	select {
	case reason := <-done:
		if reason != "the GCS is unreachable" {
			t.Fatalf("stopped with %q, want the GCS is unreachable", reason)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the worker process did not stop once its agent was gone too")
	}
}
