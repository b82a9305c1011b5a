package ray

import (
	"context"

	"github.com/ray-go/ray/tasks"
)

// Node describes one node that runs the job's tasks and actors.
type Node struct {
	ID       string
	Address  string // the node's protoactor member address
	Hostname string
	PID      int    // operating system process ID of the node
	Role     string // "local" (ray.Init with no address) or "worker" (a worker process of the job)
	// Resources is what the node has in total, e.g. {"CPU": 2, "GPU": 0, "accel": 1}.
	Resources        map[string]float64
	ObjectStoreBytes int64
}

// Nodes lists the nodes that run this job's tasks and actors (Ray's ray.nodes()): in local
// mode the one node, in a cluster the job's worker processes, one per machine. Drivers do
// not run tasks and are not listed.
func Nodes(ctx context.Context) ([]Node, error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return nil, err
	}
	var out []Node
	for _, info := range tc.Core.NodeInfos() {
		res := tasks.ResourcesFromPB(info.Total).Map()
		out = append(out, Node{ID: info.NodeId, Address: info.Address, Hostname: info.Hostname, PID: int(info.Pid),
			Role: info.Role, Resources: res, ObjectStoreBytes: info.ObjectStoreBytes})
	}
	return out, nil
}

// NodeID is the ID of the node the calling code runs on: a task's or actor's node, or the
// driver's own node (Ray's get_runtime_context().get_node_id()). Pass it to NodeAffinity.
func NodeID(ctx context.Context) (string, error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return "", err
	}
	return string(tc.Core.Node()), nil
}

// RuntimeStats counts the recovery work this process's runtime did as the owner of its
// tasks and objects, and the messages its actors handled.
type RuntimeStats struct {
	// TasksRetried counts task attempts submitted again after a failure (a dead node, a
	// system error, or an application error with RetryExceptions).
	TasksRetried int64
	// ObjectsReconstructed counts lost objects recreated by running their task again
	// (lineage reconstruction), including objects adopted from an owner that died.
	ObjectsReconstructed int64
	// MessagesHandled counts the messages this process's actors (its node's scheduler,
	// workers, store and actor grains, and its runtime's owner shards) handled so far:
	// over a run of tasks, divided by their number, the messages a task costs.
	MessagesHandled int64
}

// Stats returns the recovery counters of the runtime in ctx.
func Stats(ctx context.Context) (RuntimeStats, error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return RuntimeStats{}, err
	}
	s := tc.Core.Stats()
	return RuntimeStats{TasksRetried: s.Retried.Load(), ObjectsReconstructed: s.Reconstructed.Load(),
		MessagesHandled: tc.Core.MessagesHandled()}, nil
}
