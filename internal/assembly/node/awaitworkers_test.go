package node

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/clusterview"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestAwaitWorkersWarnsOncePerProblem: a driver waiting for its job's worker processes
// looks at their records every 250 ms; a worker process that exited (SIGKILL while the
// job started: the agent restarts it) is logged once, not once per look (a user's
// driver printed the same WARN three times in half a second).
func TestAwaitWorkersWarnsOncePerProblem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := memstore.New(memstore.Options{})
	const job, agent = "j1", "a1"
	if _, err := st.Put(ctx, gcs.AgentAliveKey(agent), []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	w, _ := proto.Marshal(&pb.JobWorker{JobId: job, AgentId: agent, State: pb.JobWorker_EXITED, Message: "worker killed by signal killed; restarting in 500ms", LogPath: "/tmp/w.log"})
	if _, err := st.Put(ctx, gcs.JobWorkerKey(job, agent), w, 0); err != nil {
		t.Fatal(err)
	}
	self := ids.NodeID("driver-node")
	view, err := clusterview.Start(ctx, clusterview.Config{Self: self, Store: st, Member: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Stop()
	var logs bytes.Buffer
	n := &Node{store: st, view: view, cfg: Config{Job: ids.JobID(job), Logger: slog.New(slog.NewTextHandler(&logs, nil))}}
	start := time.Now()
	err = n.awaitWorkers(ctx, 1200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "worker killed by signal") {
		t.Fatalf("awaitWorkers with the only worker process exited: %v, want an error saying why", err)
	}
	if looked := time.Since(start); looked < time.Second {
		t.Fatalf("awaitWorkers returned after %v, before its timeout", looked)
	}
	if c := strings.Count(logs.String(), "worker process exited"); c != 1 {
		t.Fatalf("the exited worker process was logged %d times in ~1.2 s of looks, want once:\n%s", c, logs.String())
	}
}
