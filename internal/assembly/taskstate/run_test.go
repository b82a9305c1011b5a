package taskstate

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/tasks/sched"
)

// A query sent before a process's Server started watching (just after the process
// joined, or while a broken watch was made again) is answered: Run lists the requests
// already in the GCS before it watches from the list's revision on. It watched from "now"
// only, so such a query went unanswered and its asker waited out its whole wait for this
// process, then reported it missing.
func TestServerAnswersQueriesSentBeforeItRuns(t *testing.T) {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	c, err := core.New(core.Config{Job: "j", Node: "n1", System: sys,
		Raylet: func() *actor.PID { return nil }, Store: func() *actor.PID { return nil },
		Feasible: func(sched.Resources) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type asked struct {
		answers map[string][]byte
		missing []string
		err     error
	}
	got := make(chan asked, 1)
	go func() {
		a, m, err := ask(ctx, store, Request{Job: "j"}, map[string]bool{"n1": true}, 10*time.Second)
		got <- asked{a, m, err}
	}()
	// The query is in the GCS before the Server runs.
	for {
		kvs, _, err := store.List(ctx, gcs.StateRequestsPrefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(kvs) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the query was never put")
		case <-time.After(10 * time.Millisecond):
		}
	}
	s := &Server{Store: store, Node: "n1", Job: "j", Core: c, Logger: slog.Default()}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go s.Run(rctx)
	r := <-got
	if r.err != nil || len(r.missing) != 0 || r.answers["n1"] == nil {
		t.Fatalf("a query sent before the Server ran: answers %d, missing %v, err %v; want n1's answer", len(r.answers), r.missing, r.err)
	}
	if _, err := DecodeReport(r.answers["n1"]); err != nil {
		t.Fatalf("n1's answer: %v", err)
	}
}
