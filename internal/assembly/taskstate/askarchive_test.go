package taskstate

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/tasks/sched"
)

// AskArchive reaches the one process it names (of its job), which archives and answers
// "ok"; a process that does not run (no answer) is an error once the wait is over. Before,
// a request to archive was taken for a task query and answered with a report.
func TestAskArchive(t *testing.T) {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range []ids.NodeID{"n1", "n2"} {
		c, err := core.New(core.Config{Job: "j", Node: n, System: sys,
			Raylet: func() *actor.PID { return nil }, Store: func() *actor.PID { return nil },
			Feasible: func(sched.Resources) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s := &Server{Store: store, Node: n, Job: "j", Core: c, Logger: slog.Default()}
		rctx, stop := context.WithCancel(ctx)
		defer stop()
		go s.Run(rctx)
	}
	if err := AskArchive(ctx, store, "j", "n1", 10*time.Second); err != nil {
		t.Fatalf("AskArchive of a running process: %v", err)
	}
	if err := AskArchive(ctx, store, "j", "n3", 300*time.Millisecond); err == nil {
		t.Fatal("AskArchive of a process that does not run: no error")
	}
}
