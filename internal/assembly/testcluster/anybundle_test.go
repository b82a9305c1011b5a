package testcluster

import (
	"context"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
)

type anyKeeper struct{}

var (
	anyWhere = ray.Task0("testcluster.AnyWhere", func(ctx context.Context) (string, error) {
		return ray.NodeID(ctx)
	})
	anyKeeperClass = ray.Actor0("testcluster.AnyKeeper", func(context.Context) (*anyKeeper, error) { return &anyKeeper{}, nil })
	anyKeeperWhere = ray.Method0(anyKeeperClass, "Where", func(_ *anyKeeper, ctx context.Context) (string, error) {
		return ray.NodeID(ctx)
	})
)

// TestPlacementGroupAnyBundle: a task or actor in any bundle of a group (index -1) goes to
// a bundle that can hold it, and successive ones spread over the bundles. The group is
// STRICT_SPREAD over three nodes, only its last bundle with the GPU of node 2. Before, any
// bundle meant the node holding the most bundles, ties to bundle 0's: the GPU task failed
// ErrInfeasible ("no node of the cluster has that much"), the GPU actor waited for ever,
// and the CPU tasks all ran on bundle 0's node. (A cluster of its own, for the GPU: runAlone.)
func TestPlacementGroupAnyBundle(t *testing.T) {
	if !runAlone(t) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := Start(ctx, Config{Nodes: 3, Custom: map[int]map[string]float64{2: {"GPU": 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	if err := c.AwaitViews(ctx); err != nil {
		t.Fatal(err)
	}
	dctx := c.Context(ctx, 0)
	pg, err := ray.PlacementGroup(dctx, []ray.Bundle{{"CPU": 1}, {"CPU": 1}, {"CPU": 1, "GPU": 1}}, ray.StrategyStrictSpread)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Remove(context.Background())
	if err := pg.Ready(dctx); err != nil {
		t.Fatal(err)
	}
	nodes := pg.BundleNodes()
	if c.Index(nodes[2]) != 2 {
		t.Fatalf("bundle nodes %v: want the GPU bundle on node 2 (%s)", nodes, c.Nodes[2].ID)
	}

	got, err := ray.Get(dctx, anyWhere.Options(ray.PlacementGroupBundle(pg, -1), ray.NumCPUs(0), ray.NumGPUs(1)).Remote(dctx))
	if err != nil || got != nodes[2] {
		t.Fatalf("a GPU task in any bundle ran on %q (%v), want the GPU bundle's node %s", got, err, nodes[2])
	}

	keeper := anyKeeperClass.Remote(dctx, ray.PlacementGroupBundle(pg, -1), ray.NumCPUs(0), ray.NumGPUs(1))
	if keeper.Err() != nil {
		t.Fatal(keeper.Err())
	}
	actx, acancel := context.WithTimeout(dctx, 30*time.Second)
	got, err = ray.Get(actx, anyKeeperWhere.Remote(actx, keeper))
	acancel()
	if err != nil || got != nodes[2] {
		t.Fatalf("a GPU actor in any bundle is on %q (%v), want the GPU bundle's node %s", got, err, nodes[2])
	}
	_ = ray.Kill(dctx, keeper, true)

	// One-CPU tasks in any bundle: each bundle holds one at a time, and they go to every
	// bundle in turn.
	var refs []ray.ObjectRef[string]
	for range 6 {
		refs = append(refs, anyWhere.Options(ray.PlacementGroupBundle(pg, -1)).Remote(dctx))
	}
	ran, err := ray.GetAll(dctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]int{}
	for _, n := range ran {
		on[n]++
	}
	for _, n := range nodes {
		if on[n] == 0 {
			t.Fatalf("six tasks in any bundle ran on %v: none on bundle node %s (bundles on %v)", ran, n, nodes)
		}
	}
}
