package core

import (
	"context"
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// TestRemovedGroupRecordHasNoStaleReason: a group removed while it waited for room is
// recorded REMOVED without the reason it waited for (`rayctl list placement-groups` showed
// "REMOVED ... the placement group's bundles do not fit ..."): that wait is over.
func TestRemovedGroupRecordHasNoStaleReason(t *testing.T) {
	sys, quiet := quietSystem(t)
	local := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	var mu sync.Mutex
	var last, removed *pb.PlacementGroupInfo
	c, err := New(Config{Job: "j", Node: "n1", System: sys,
		Raylet: func() *actor.PID { return local }, Store: func() *actor.PID { return local },
		Feasible: func(sched.Resources) error { return nil }, Logger: quiet,
		Nodes: func() []*pb.NodeInfo { return nil }, // no node: the group waits
		RecordGroup: func(info *pb.PlacementGroupInfo) {
			mu.Lock()
			last = info
			if info.State == "REMOVED" {
				removed = info
			}
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cpu, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	pg, err := c.CreatePlacementGroup([]sched.Resources{cpu}, sched.BundlePack, "")
	if err != nil {
		t.Fatal(err)
	}
	record := func() *pb.PlacementGroupInfo {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
	eventually.True(t, 10e9, "a PENDING record that says why", func() bool {
		r := record()
		return r != nil && r.State == "PENDING" && r.Detail != ""
	})
	if err := pg.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	r := removed
	mu.Unlock()
	if r == nil || r.Detail != "" {
		t.Fatalf("the REMOVED record: %v; want one with no reason to wait", r)
	}
}
