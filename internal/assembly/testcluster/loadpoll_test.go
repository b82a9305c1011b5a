package testcluster_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/tasks/raylet"
)

// TestIdleNodeDoesNotPollItsRaylet: a node's load reporter asks its raylet for Stats only
// when the raylet handled something since the last answer: idle, none of the ten asks a
// second it made before; once tasks run, it asks again.
func TestIdleNodeDoesNotPollItsRaylet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := alive(t)
	idle := up[len(up)-1] // a running node other than the driver's (node 0)
	var polls atomic.Int32
	tap := func(role string, m any) {
		if _, ok := actor.UnwrapEnvelopeMessage(m).(raylet.Stats); ok && role == "raylet" {
			polls.Add(1)
		}
	}
	taps[idle].Store(&tap)
	defer taps[idle].Store(nil)
	dctx := cluster.Context(ctx, 0)
	on := whereAmI.Options(ray.NodeAffinity(string(cluster.Nodes[idle].ID), false))
	run := func() {
		t.Helper()
		if _, err := ray.Get(dctx, on.Remote(dctx)); err != nil {
			t.Fatal(err)
		}
	}
	run()
	time.Sleep(500 * time.Millisecond) // the lease goes back and the reporter sees it
	polls.Store(0)
	time.Sleep(time.Second) // ten report intervals with nothing to run
	if n := polls.Load(); n > 2 {
		t.Fatalf("an idle node's load reporter asked its raylet for Stats %d times in 10 report intervals, want at most 2", n)
	}
	run()
	for i := 0; polls.Load() == 0; i++ {
		if i == 5000 {
			t.Fatal("the load reporter never asked the raylet again after a task ran")
		}
		time.Sleep(time.Millisecond)
	}
}
