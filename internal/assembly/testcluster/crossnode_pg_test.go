package testcluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/base/eventually"
)

// TestPlacementGroupAcrossNodes: STRICT_SPREAD puts each bundle on a node of its own and a
// task in bundle i runs on bundle i's node; STRICT_PACK puts all on one node; a group that
// needs more nodes than the cluster has waits and says why; Remove frees the nodes.
func TestPlacementGroupAcrossNodes(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := alive(t)
	if len(up) < 3 {
		t.Fatalf("need 3 running nodes, have %d", len(up))
	}
	ctx := cluster.Context(base, up[0])

	spread, err := ray.PlacementGroup(ctx, []ray.Bundle{{"CPU": 1}, {"CPU": 1}, {"CPU": 1}}, ray.StrategyStrictSpread)
	if err != nil {
		t.Fatal(err)
	}
	defer spread.Remove(context.Background())
	if err := spread.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := spread.BundleNodes()
	seen := map[string]bool{}
	for _, n := range nodes {
		if cluster.Index(n) < 0 || seen[n] {
			t.Fatalf("STRICT_SPREAD bundles on %v: want 3 distinct nodes of the cluster", nodes)
		}
		seen[n] = true
	}
	for i := range nodes {
		for k := 0; k < 3; k++ {
			got, err := ray.Get(ctx, whereAmI.Options(ray.PlacementGroupBundle(spread, i)).Remote(ctx))
			if err != nil || got != nodes[i] {
				t.Fatalf("task in bundle %d ran on %q (%v), want %s", i, got, err, nodes[i])
			}
		}
	}

	pack, err := ray.PlacementGroup(ctx, []ray.Bundle{{"CPU": 0.5}, {"CPU": 0.5}}, ray.StrategyStrictPack)
	if err != nil {
		t.Fatal(err)
	}
	defer pack.Remove(context.Background())
	if err := pack.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if pn := pack.BundleNodes(); len(pn) != 2 || pn[0] != pn[1] {
		t.Fatalf("STRICT_PACK bundles on %v: want one node", pn)
	}
	got, err := ray.Get(ctx, whereAmI.Options(ray.PlacementGroupBundle(pack, 1), ray.NumCPUs(0.5)).Remote(ctx))
	if err != nil || got != pack.BundleNodes()[1] {
		t.Fatalf("task in the packed group ran on %q (%v), want %s", got, err, pack.BundleNodes()[1])
	}

	// The state API's records (rayctl list placement-groups reads them): CREATED, with
	// each bundle's node.
	eventually.True(t, 10e9, "the groups' records in the GCS", func() bool {
		groups, err := clusterstate.ReadPlacementGroups(ctx, cluster.GCS)
		if err != nil {
			return false
		}
		for _, g := range groups {
			if g.ID == spread.ID() {
				return g.State == "CREATED" && g.Strategy == "STRICT_SPREAD" && len(g.Nodes) == 3 && g.Nodes[2] == nodes[2] && g.Bundles[0]["CPU"] == 1
			}
		}
		return false
	})

	bundles := make([]ray.Bundle, len(cluster.Nodes)+1)
	for i := range bundles {
		bundles[i] = ray.Bundle{"CPU": 0.1}
	}
	tooMany, err := ray.PlacementGroup(ctx, bundles, ray.StrategyStrictSpread)
	if err != nil {
		t.Fatal(err)
	}
	short, scancel := context.WithTimeout(ctx, 500*time.Millisecond)
	err = tooMany.Ready(short)
	scancel()
	if err == nil || !strings.Contains(err.Error(), "STRICT_SPREAD needs") {
		t.Fatalf("a STRICT_SPREAD group with more bundles than nodes: %v", err)
	}
	eventually.True(t, 10e9, "a waiting group's record says why it waits", func() bool {
		groups, _ := clusterstate.ReadPlacementGroups(ctx, cluster.GCS)
		for _, g := range groups {
			if g.ID == tooMany.ID() {
				return g.State == "PENDING" && strings.Contains(g.Detail, "STRICT_SPREAD needs")
			}
		}
		return false
	})
	if err := tooMany.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10e9, "a removed group's record", func() bool {
		groups, _ := clusterstate.ReadPlacementGroups(ctx, cluster.GCS)
		for _, g := range groups {
			if g.ID == tooMany.ID() {
				return g.State == "REMOVED"
			}
		}
		return false
	})
	for _, pg := range []*ray.PlacementGroupHandle{spread, pack} {
		if err := pg.Remove(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
