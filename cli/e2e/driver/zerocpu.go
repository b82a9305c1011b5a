package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	ray "github.com/ray-go/ray"
)

// zeroCPUCheck runs on a head started with --num-cpus 0 and a node of 1 CPU
// (TestZeroCPUHead). It waits for the job's two worker processes and reports them
// (ray.Nodes, ray.ClusterResources), the nodes 4 one-CPU tasks ran on, and, for each
// node, where a task that needs nothing ran when pinned there (hard NodeAffinity).
func zeroCPUCheck(ctx context.Context, out map[string]any) error {
	var nodes []ray.Node
	for deadline := time.Now().Add(time.Minute); ; {
		var err error
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
	out["nodes"] = nodes
	total, err := ray.ClusterResources(ctx)
	if err != nil {
		return err
	}
	out["cluster_cpus"] = total["CPU"]
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	refs := make([]ray.ObjectRef[string], 4)
	for i := range refs {
		refs[i] = busy.Options(ray.NumCPUs(1)).Remote(cctx, ray.V(50*time.Millisecond))
	}
	ran, err := ray.GetAll(cctx, refs)
	if err != nil {
		return fmt.Errorf("one-CPU tasks: %w", err)
	}
	out["cpu_task_nodes"] = ran
	pinned := map[string]string{}
	for _, n := range nodes {
		got, err := ray.Get(cctx, busy.Options(ray.NumCPUs(0), ray.NodeAffinity(n.ID, false)).Remote(cctx, ray.V(time.Duration(0))))
		if err != nil {
			got = "error: " + err.Error()
		}
		pinned[n.ID] = got
	}
	out["zero_cpu_task_nodes"] = pinned
	return nil
}
