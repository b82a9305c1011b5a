package actors

import (
	"context"
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
