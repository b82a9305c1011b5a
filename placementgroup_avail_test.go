package ray

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
)

// stubborn waits for its gate and ignores its ctx (a task that goes on after its group
// was removed).
var stubborn = Task1("test.stubborn", func(_ context.Context, gate string) (string, error) {
	<-gateOf(gate)
	return gate, nil
})

// TestRemovedGroupNotInAvailableResources: after Remove, a task of the group that ignores
// its ctx still holds the group's renamed resources; AvailableResources listed them, below
// 0 ("CPU_group_...: -0.5"), with the internal bundle markers. Now it lists no amount
// below 0 and no bundle marker, during the group's life or after.
func TestRemovedGroupNotInAvailableResources(t *testing.T) {
	ctx := timeout(t)
	cpusFree(t, ctx, 4)
	pg, err := PlacementGroup(ctx, []Bundle{{"CPU": 1}}, StrategyPack)
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	gate := uniqueName(t)
	started := stubborn.Options(PlacementGroupBundle(pg, 0), NumCPUs(0.5)).Remote(ctx, V(gate))
	defer close(gateOf(gate))
	check := func(when string) {
		t.Helper()
		avail, err := AvailableResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range avail {
			if v < 0 || strings.HasPrefix(k, "bundle") {
				t.Fatalf("%s: AvailableResources has %s=%v: %v", when, k, v, avail)
			}
		}
	}
	eventually.True(t, 10e9, "the group's task holds half its CPU", func() bool {
		avail, err := AvailableResources(ctx)
		return err == nil && avail["CPU_group_"+pg.ID()] == 0.5
	})
	check("while the group lives")
	if err := pg.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	// The node gets the bundle back at once (the task's half CPU stays counted as the
	// group's until the task ends).
	eventually.True(t, 10e9, "the bundle given back", func() bool {
		avail, err := AvailableResources(ctx)
		return err == nil && avail["CPU"] >= 3.5
	})
	time.Sleep(300 * time.Millisecond) // a load report after the release
	check("after Remove")
	_ = started
}
