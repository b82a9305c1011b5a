package ray

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/base/eventually"
)

// TestActorInPendingPlacementGroup: an actor created in a group that waits for resources
// is recorded at once, PENDING_CREATION with a reason that names the group (as Ray lists
// it), and is created once the group is placed. Before, the state API said "no such
// actor" until the group was placed, and the actor died after 30 s if it was not. An
// actor waiting for a group that is removed dies of it: its calls fail with
// ErrPlacementGroupRemoved (and ErrActorDied), as a task's in the group do.
func TestActorInPendingPlacementGroup(t *testing.T) {
	ctx := timeout(t)
	cpusFree(t, ctx, 4)
	gate := uniqueName(t)
	hog := blockUntil.Options(NumCPUs(3)).Remote(ctx, V(gate))
	cpusFree(t, ctx, 1)
	pg, err := PlacementGroup(ctx, []Bundle{{"CPU": 2}}, StrategyStrictPack)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Remove(context.Background())
	h := clockClass.Remote(ctx, PlacementGroupBundle(pg, 0), NumCPUs(1), AtMostOnce())
	if h.Err() != nil {
		t.Fatal(h.Err())
	}
	var st ActorState
	eventually.True(t, 10e9, "the actor listed PENDING_CREATION, waiting for its group", func() bool {
		st, err = GetActorState(ctx, h)
		return err == nil && st.Phase == "Pending" && strings.Contains(st.Detail, "placement group "+pg.ID())
	})
	if st.Node != "" {
		t.Fatalf("the actor waiting for its group has a node: %+v", st)
	}
	close(gateOf(gate))
	if mustGet(t, ctx, hog) != gate {
		t.Fatal("the hog answered wrong")
	}
	if err := pg.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	mustGet(t, ctx, clockTick.Remote(ctx, h))
	if st, err := GetActorState(ctx, h); err != nil || st.Phase != "Alive" || st.Node != pg.BundleNodes()[0] {
		t.Fatalf("the actor after its group was placed: %+v, %v; want it alive on the bundle's node %s", st, err, pg.BundleNodes()[0])
	}
	if err := Kill(ctx, h, true); err != nil {
		t.Fatal(err)
	}
	if err := pg.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	cpusFree(t, ctx, 4)

	// A group that waits and is removed: the actor waiting for it dies of that.
	gate2 := uniqueName(t) + "/2"
	hog2 := blockUntil.Options(NumCPUs(3)).Remote(ctx, V(gate2))
	defer func() {
		close(gateOf(gate2))
		if mustGet(t, ctx, hog2) != gate2 {
			t.Error("the second hog answered wrong")
		}
	}()
	cpusFree(t, ctx, 1)
	pg2, err := PlacementGroup(ctx, []Bundle{{"CPU": 2}}, StrategyStrictPack)
	if err != nil {
		t.Fatal(err)
	}
	h2 := clockClass.Remote(ctx, PlacementGroupBundle(pg2, 0), NumCPUs(1), AtMostOnce())
	eventually.True(t, 10e9, "the second actor listed", func() bool {
		st, err := GetActorState(ctx, h2)
		return err == nil && st.Phase == "Pending"
	})
	if err := pg2.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = Get(ctx, clockTick.Remote(ctx, h2))
	if !errors.Is(err, ErrPlacementGroupRemoved) || !errors.Is(err, ErrActorDied) {
		t.Fatalf("a call of an actor whose group was removed before it was placed: %v; want ErrPlacementGroupRemoved and ErrActorDied", err)
	}
	if st, err := GetActorState(ctx, h2); err != nil || st.Phase != "Dead" {
		t.Fatalf("the actor of the removed group: %+v, %v; want it dead", st, err)
	}
}
