package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	ray "github.com/ray-go/ray"
)

// actorAffinityCheck runs on a cluster of two nodes (TestActorNodeAffinity). It waits for
// the job's two worker processes, then, for each, creates an actor with hard and one with
// soft NodeAffinity to it and reports where each runs (ray.NodeID in a call), and what an
// actor with hard affinity to a node that does not exist, and to this driver's own node
// (which runs no actors), does.
func actorAffinityCheck(ctx context.Context, out map[string]any) error {
	var nodes []ray.Node
	for deadline := time.Now().Add(time.Minute); ; {
		all, err := ray.Nodes(ctx)
		if err != nil {
			return err
		}
		nodes = all.Alive()
		if len(nodes) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	var ids []string
	for _, n := range nodes {
		ids = append(ids, n.ID)
	}
	out["nodes"] = ids
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	where := func(opts ...ray.TaskOption) string {
		h := accelClass.Remote(cctx, opts...)
		got, err := ray.Get(cctx, accelWhere.Remote(cctx, h))
		if err != nil {
			return "error: " + err.Error()
		}
		return got
	}
	hard, soft := map[string]string{}, map[string]string{}
	for _, n := range ids {
		// Several each: one could land on its node by chance, not all (the default
		// placement spreads them).
		for k := range 3 {
			hard[fmt.Sprint(n, "/", k)] = where(ray.NodeAffinity(n, false))
			soft[fmt.Sprint(n, "/", k)] = where(ray.NodeAffinity(n, true))
		}
	}
	out["hard"], out["soft"] = hard, soft
	out["hard_missing"] = where(ray.NodeAffinity("no-such-node", false))
	out["soft_missing"] = where(ray.NodeAffinity("no-such-node", true))
	self, err := ray.NodeID(ctx)
	if err != nil {
		return err
	}
	out["hard_driver"] = where(ray.NodeAffinity(self, false))
	return nil
}
