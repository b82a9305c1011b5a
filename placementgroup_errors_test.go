package ray

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestPlacementGroupBundleErrors: what PlacementGroupBundle refuses says what was wrong:
// a nil handle is named as such (not "removed"), an index below -1 is reported as given
// (not as -2), and an actor in a bundle that does not exist gets the index error alone,
// without advice to add nodes.
func TestPlacementGroupBundleErrors(t *testing.T) {
	ctx := timeout(t)
	_, err := Get(ctx, lookAround.Options(PlacementGroupBundle(nil, 0)).Remote(ctx))
	if err == nil || !strings.Contains(err.Error(), "nil placement group handle") || errors.Is(err, ErrPlacementGroupRemoved) {
		t.Errorf("a task with a nil group: %v", err)
	}
	if h := accountClass.Remote(ctx, V("nil"), PlacementGroupBundle(nil, 0)); h.Err() == nil || !strings.Contains(h.Err().Error(), "nil placement group handle") {
		t.Errorf("an actor with a nil group: %v", h.Err())
	}
	pg, err := PlacementGroup(ctx, []Bundle{{"CPU": 1}}, StrategyPack)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Remove(context.Background())
	if err := pg.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = Get(ctx, lookAround.Options(PlacementGroupBundle(pg, -7)).Remote(ctx))
	if err == nil || !strings.Contains(err.Error(), "bundle -7 was asked for") {
		t.Errorf("a task in bundle -7: %v", err)
	}
	h := accountClass.Remote(ctx, V("out"), PlacementGroupBundle(pg, 3), NumCPUs(1))
	if err := h.Err(); err == nil || !strings.Contains(err.Error(), "bundle 3 was asked for") || strings.Contains(err.Error(), "add a node") {
		t.Errorf("an actor in bundle 3 of 1: %v; want the index error alone", err)
	}
}
