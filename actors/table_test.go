package actors

import (
	"context"
	"slices"
	"testing"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestMoveAffinity: an actor bound to a placement group bundle's node moves to the
// bundle's new node only while its record names the old one and it is not dead.
func TestMoveAffinity(t *testing.T) {
	ctx := context.Background()
	table := &Table{Store: memstore.New(memstore.Options{})}
	id := ids.NewActorID()
	info := &pb.ActorInfo{ActorId: id[:], Class: "test.C", MaxRestarts: 1, AffinityNode: "n1", PlacementGroup: "g"}
	if _, _, err := table.Create(ctx, info); err != nil {
		t.Fatal(err)
	}
	if moved, err := table.MoveAffinity(ctx, id.String(), "n1", "n2"); err != nil || !moved {
		t.Fatalf("move n1 -> n2: %v, %v; want moved", moved, err)
	}
	got, _, err := table.Get(ctx, id.String())
	if err != nil || got.AffinityNode != "n2" || lifecycle.Phase(got.Phase) != lifecycle.Pending {
		t.Fatalf("record after the move: %+v, %v", got, err)
	}
	// A stale move (the record names another node now) changes nothing.
	if moved, err := table.MoveAffinity(ctx, id.String(), "n1", "n3"); err != nil || moved {
		t.Fatalf("stale move n1 -> n3: %v, %v; want not moved", moved, err)
	}
	if _, _, _, err := table.Step(ctx, id.String(), lifecycle.Kill{NoRestart: true}); err != nil {
		t.Fatal(err)
	}
	if moved, err := table.MoveAffinity(ctx, id.String(), "n2", "n3"); err != nil || moved {
		t.Fatalf("move of a dead actor: %v, %v; want not moved", moved, err)
	}
	if _, err := table.MoveAffinity(ctx, ids.NewActorID().String(), "n1", "n2"); err == nil {
		t.Fatal("move of an unknown actor: no error")
	}
}

// TestHistory: the record keeps the actor's transitions (phase, incarnation, node), not a
// checkpoint's progress, and at most maxHistory of them: the first and the newest.
func TestHistory(t *testing.T) {
	ctx := context.Background()
	table := &Table{Store: memstore.New(memstore.Options{})}
	id := ids.NewActorID()
	info := &pb.ActorInfo{ActorId: id[:], Class: "test.C", MaxRestarts: -1}
	if _, _, err := table.Create(ctx, info); err != nil {
		t.Fatal(err)
	}
	step := func(ev lifecycle.Event) {
		t.Helper()
		if _, _, _, err := table.Step(ctx, id.String(), ev); err != nil {
			t.Fatalf("%v: %v", ev, err)
		}
	}
	phases := func() (out []lifecycle.Phase, incs []uint64, nodes []string) {
		t.Helper()
		got, _, err := table.Get(ctx, id.String())
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got.History {
			out = append(out, lifecycle.Phase(h.Phase))
			incs = append(incs, h.Incarnation)
			nodes = append(nodes, h.Node)
			if h.UnixMs <= 0 {
				t.Fatalf("transition %+v has no time", h)
			}
		}
		return out, incs, nodes
	}
	step(lifecycle.Placed{Incarnation: 1, Node: "n1"})
	step(lifecycle.ConstructorSucceeded{Incarnation: 1})
	step(lifecycle.CheckpointTaken{Incarnation: 1, Seq: 5, Ref: "r"}) // not a transition
	step(lifecycle.ProcessDied{Incarnation: 1, Message: "killed"})
	ph, incs, nodes := phases()
	want := []lifecycle.Phase{lifecycle.Pending, lifecycle.Pending, lifecycle.Alive, lifecycle.Restarting}
	if !slices.Equal(ph, want) || incs[1] != 1 || nodes[1] != "n1" || incs[3] != 2 {
		t.Fatalf("history %v incarnations %v nodes %v; want phases %v, placed on n1 in incarnation 1, restarting as 2", ph, incs, nodes, want)
	}
	// Many restarts: the first transition stays, the record stays bounded.
	for inc := uint64(2); inc < 30; inc++ {
		step(lifecycle.Placed{Incarnation: inc, Node: "n2"})
		step(lifecycle.ConstructorSucceeded{Incarnation: inc})
		step(lifecycle.ProcessDied{Incarnation: inc, Message: "killed"})
	}
	step(lifecycle.Kill{NoRestart: true})
	ph, incs, _ = phases()
	if len(ph) != maxHistory || ph[0] != lifecycle.Pending || incs[0] != 1 || ph[len(ph)-1] != lifecycle.Dead {
		t.Fatalf("after 30 incarnations: %d transitions %v (incarnations %v); want %d, the first Pending of incarnation 1, the last Dead", len(ph), ph, incs, maxHistory)
	}
	if got, _, _ := table.Get(ctx, id.String()); got.History[len(got.History)-1].Detail == "" {
		t.Fatal("the death's transition has no detail")
	}
}
