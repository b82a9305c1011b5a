package ray

import (
	"context"
	"encoding/hex"
	"strings"
	"time"

	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// Node describes one node that runs, or ran, the job's tasks and actors.
type Node struct {
	ID       string
	Address  string // the node's protoactor member address
	Hostname string
	PID      int    // operating system process ID of the node
	Role     string // "local" (ray.Init with no address) or "worker" (a worker process of the job)
	// AgentID is the node agent (machine) that started the worker process: the ID
	// `rayctl list nodes` and `rayctl status` show ("" in local mode). The worker process's
	// ID changes with every job; NodeAffinity takes either.
	AgentID string
	// Resources is what the node has in total, e.g. {"CPU": 2, "GPU": 0, "accel": 1}: what
	// the scheduler places there. A worker process has what its machine's agent offers
	// (as `rayctl list nodes` shows it): {"CPU": 0} on a head started with --num-cpus 0.
	Resources        map[string]float64
	ObjectStoreBytes int64
	// Alive is false for a node that died (Ray's "Alive"): nothing is placed there any more.
	Alive bool
	// DiedAt is when this process learned that the node died (zero for a live node, or when
	// not known), and DeathReason why, as far as known (Ray's "DeathReasonMessage"), e.g.
	// that the cluster's membership found it unreachable.
	DiedAt      time.Time
	DeathReason string
}

// NodeList is what Nodes returns.
type NodeList []Node

// Alive returns the nodes of l that are alive, in l's order.
func (l NodeList) Alive() NodeList {
	out := make(NodeList, 0, len(l))
	for _, n := range l {
		if n.Alive {
			out = append(out, n)
		}
	}
	return out
}

// Nodes lists the nodes that run this job's tasks and actors, then those that did and died
// (Ray's ray.nodes(), which keeps dead nodes with Alive false): in local mode the one node,
// in a cluster the job's worker processes, one per machine, alive ones first. Dead nodes
// are those whose records went within the last hour (at most 100, as this process saw
// them go), and those the cluster's membership reported gone while their records last;
// a node that died before this process started may be missing. Drivers do not run tasks
// and are not listed. The list's Alive method keeps the live nodes only.
func Nodes(ctx context.Context) (NodeList, error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return nil, err
	}
	var out NodeList
	for _, info := range tc.Core.NodeInfos() {
		out = append(out, nodeFromInfo(info, true))
	}
	for _, d := range tc.Core.DeadNodeInfos() {
		n := nodeFromInfo(d.Info, false)
		n.DiedAt, n.DeathReason = d.At, d.Why
		out = append(out, n)
	}
	return out, nil
}

func nodeFromInfo(info *pb.NodeInfo, alive bool) Node {
	return Node{ID: info.NodeId, Address: info.Address, Hostname: info.Hostname, PID: int(info.Pid), Role: info.Role, AgentID: info.AgentId,
		Resources: tasks.ResourcesFromPB(info.Total).Map(), ObjectStoreBytes: info.ObjectStoreBytes, Alive: alive}
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

// ClusterResources returns the resources of every live node of the job together, e.g.
// {"CPU": 4, "GPU": 0, "accel": 1} (Ray's ray.cluster_resources()).
func ClusterResources(ctx context.Context) (map[string]float64, error) {
	nodes, err := Nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, n := range nodes.Alive() {
		for k, v := range n.Resources {
			out[k] += v
		}
	}
	return userResources(out, nil), nil
}

// userResources drops from m what users do not ask for: the placement groups' bundle
// markers ("bundle_group_..."; a group's renamed resources, "CPU_group_...", stay, as Ray
// lists them), and amounts below 0, which a removed group's renamed resources have while
// a task that ignores its ctx still holds them: such a resource is not listed unless
// total has it (then it is 0).
func userResources(m, total map[string]float64) map[string]float64 {
	for k, v := range m {
		switch _, inTotal := total[k]; {
		case strings.HasPrefix(k, sched.BundleMarker+"_group_"):
			delete(m, k)
		case v < 0 && inTotal:
			m[k] = 0
		case v < 0:
			delete(m, k)
		}
	}
	return m
}

// AvailableResources returns the resources of the job's nodes not in use now (Ray's
// ray.available_resources()): the node's scheduler's count in local mode; in a cluster
// the nodes' load reports, which trail the truth by about 100 ms for a change that
// placement sees (a resource becoming free or used up, half the total crossed, a step of an
// eighth of it) and by up to a second for a smaller one. A resource no node has free is 0.
func AvailableResources(ctx context.Context) (map[string]float64, error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return nil, err
	}
	total, err := ClusterResources(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(total))
	for k := range total {
		out[k] = 0
	}
	for _, avail := range tc.Core.AvailableResources() {
		for k, v := range avail.Map() {
			out[k] += v
		}
	}
	return userResources(out, total), nil
}

// RuntimeContext says where the calling code runs (Ray's ray.get_runtime_context()).
type RuntimeContext struct {
	JobID  string
	NodeID string
	// TaskID is the running task's or actor call's ID, "" in a driver.
	TaskID string
	// ActorID is the ID of the actor whose method (or constructor) runs (ActorHandle.ID),
	// "" in a task or a driver (Ray's get_actor_id()).
	ActorID string
	// Resources is what the running task asked for and holds while it runs (nil in a
	// driver), e.g. {"CPU": 1}; in an actor's method or constructor, what the actor holds
	// (Ray's get_assigned_resources()).
	Resources map[string]float64
	// Namespace is the job's namespace of named actors (Ray's RuntimeContext.namespace):
	// WithNamespace's, or the anonymous one Init made for the job. A job's tasks and
	// actors report their driver's.
	Namespace string
}

// GetRuntimeContext returns the runtime context of ctx: a driver's, or the running task's
// when ctx is the context the task was given.
func GetRuntimeContext(ctx context.Context) (RuntimeContext, error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return RuntimeContext{}, err
	}
	rc := RuntimeContext{JobID: string(tc.Core.Job()), NodeID: string(tc.Core.Node()), ActorID: tc.Actor, Namespace: tc.Core.Namespace()}
	if tc.Spec != nil {
		rc.TaskID = hex.EncodeToString(tc.Spec.TaskId)
		res := tc.Spec.Resources
		if tc.Actor != "" {
			res = tc.ActorResources // an actor's method or constructor: what the actor holds
		}
		rc.Resources = tasks.ResourcesFromPB(res).Map()
	}
	return rc, nil
}
