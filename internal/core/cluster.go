package core

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/internal/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// Cluster is a runtime's view of the nodes its tasks may run on (cluster mode). Without
// one (Config.Cluster nil) every task goes to the local raylet.
//
// Contract: Place chooses a node for a request by the sched policy and counts the request
// against that node until Done (or the node's next load report); it returns
// sched.ErrNoNodes while no node is known, which parks the task until Changed is called.
// Raylet and Store resolve a node's grains (nil if the node is unknown or gone);
// DataAddress is the node's object data server ("" if it has none or is unknown). Feasible
// is nil while no node is known. Every method is safe for concurrent use and does not block
// on I/O.
type Cluster interface {
	Place(req sched.Request) (ids.NodeID, error)
	Done(node ids.NodeID, res sched.Resources)
	Raylet(node ids.NodeID) *actor.PID
	Store(node ids.NodeID) *actor.PID
	DataAddress(node ids.NodeID) string
	Feasible(req sched.Resources) error
	// Alive reports whether node is a member of the cluster now.
	Alive(node ids.NodeID) bool
}

// strategyOf maps a spec's strategy name to the policy's.
func strategyOf(spec *pb.TaskSpec) sched.Strategy {
	switch spec.Strategy {
	case StrategySpread:
		return sched.Spread
	case StrategyNodeAffinity:
		return sched.NodeAffinity
	}
	return sched.Default
}

// errNodeUnready: the node a task was placed on has no scheduler to send it to.
var errNodeUnready = errors.New("node not ready")

// Strategy names carried in TaskSpec.strategy.
const (
	StrategyDefault      = ""
	StrategySpread       = "spread"
	StrategyNodeAffinity = "node_affinity"
)

// raylet returns the scheduler a task goes to, placing it if the runtime has a cluster view.
// ok false with a nil error parks the task (no node yet).
func (c *Core) rayletFor(p *pending) (*actor.PID, error) {
	cl := c.cfg.Cluster
	if cl == nil {
		if p.spec.Strategy == StrategyNodeAffinity && !p.spec.AffinitySoft && p.spec.AffinityNode != string(c.cfg.Node) {
			return nil, fmt.Errorf("%w: %q is not a node of this cluster (its only node is %s)",
				sched.ErrAffinityUnavailable, p.spec.AffinityNode, c.cfg.Node)
		}
		r := c.cfg.Raylet()
		if r == nil {
			return nil, errors.New("no scheduler on this node")
		}
		c.mu.Lock()
		p.node = c.cfg.Node
		c.mu.Unlock()
		return r, nil
	}
	req := sched.Request{Resources: tasks.ResourcesFromPB(p.spec.Resources), Strategy: strategyOf(p.spec),
		AffinityNode: p.spec.AffinityNode, Soft: p.spec.AffinitySoft}
	for _, a := range p.spec.Args {
		if a.IsRef && a.NodeId != "" {
			if req.ArgBytes == nil {
				req.ArgBytes = map[string]int64{}
			}
			req.ArgBytes[a.NodeId] += a.Size
		}
	}
	node, err := cl.Place(req)
	if err != nil {
		return nil, err
	}
	r := cl.Raylet(node)
	if r == nil {
		cl.Done(node, req.Resources)
		return nil, fmt.Errorf("%w: node %s has no scheduler (it is starting, or gone)", errNodeUnready, node)
	}
	c.mu.Lock()
	p.node, p.placed = node, req.Resources
	c.mu.Unlock()
	return r, nil
}

// send places and sends a task (a first attempt or a retry), parking it while no node is
// known and failing it when placement fails.
func (c *Core) send(tid ids.TaskID, p *pending) {
	r, err := c.rayletFor(p)
	if errors.Is(err, sched.ErrNoNodes) || errors.Is(err, errNodeUnready) {
		// Placed again once the view changes (or after parkRetry): a node whose scheduler
		// cannot be resolved is one that is starting or has just died, and the view catches
		// up within the membership's report or the node's lease.
		c.park(tid, p)
		return
	}
	if err != nil {
		kind := pb.ErrorInfo_SYSTEM
		if errors.Is(err, sched.ErrInfeasible) || errors.Is(err, sched.ErrAffinityUnavailable) {
			kind = pb.ErrorInfo_INFEASIBLE
		}
		c.complete(tid, p, &pb.TaskResult{TaskId: tid[:], Attempt: p.spec.Attempt, Error: &pb.ErrorInfo{
			Kind: kind, Function: p.spec.Function, TaskId: tid[:], NodeId: string(c.cfg.Node), Message: err.Error()}})
		return
	}
	c.root.Send(r, p.spec)
	// A node that died between placement and now: NodeGone (run after the view learned
	// of the death) fails the attempts it finds placed there; one placed after that scan
	// is caught here, since the view already says the node is gone.
	c.mu.Lock()
	node, attempt, dispatched := p.node, p.spec.Attempt, p.dispatched && c.tasks[tid] == p
	c.mu.Unlock()
	if cl := c.cfg.Cluster; cl != nil && dispatched && node != "" && node != c.cfg.Node && !cl.Alive(node) {
		c.onResult(&pb.TaskResult{TaskId: tid[:], Attempt: attempt, Error: &pb.ErrorInfo{
			Kind: pb.ErrorInfo_SYSTEM, Function: p.spec.Function, TaskId: tid[:], NodeId: string(node),
			Message: fmt.Sprintf("node %s died as the task was sent there", node)}})
	}
}

// placedDone gives a finished task's placement back to the view.
func (c *Core) placedDone(p *pending) {
	if c.cfg.Cluster != nil && p.node != "" {
		c.cfg.Cluster.Done(p.node, p.placed)
		p.node, p.placed = "", sched.Resources{}
	}
}

// parkRetry is how often parked tasks try to place again without a Changed call.
const parkRetry = 500 * time.Millisecond

func (c *Core) park(tid ids.TaskID, p *pending) {
	c.parkMu.Lock()
	if c.parked == nil {
		c.parked = map[ids.TaskID]*pending{}
	}
	c.parked[tid] = p
	first := !c.parkTimer
	c.parkTimer = true
	c.parkMu.Unlock()
	if first {
		time.AfterFunc(parkRetry, c.ClusterChanged)
	}
}

// ClusterChanged retries the placement of parked tasks (the cluster view calls it when
// nodes come or go).
func (c *Core) ClusterChanged() {
	c.parkMu.Lock()
	parked := c.parked
	c.parked = nil
	c.parkTimer = false
	c.parkMu.Unlock()
	for tid, p := range parked {
		select {
		case <-c.closed:
			return
		default:
		}
		c.mu.Lock()
		live := c.tasks[tid] == p
		c.mu.Unlock()
		if live {
			c.send(tid, p)
		}
	}
}

// storeOf returns the store shard of node (the local one for "" or this node).
func (c *Core) storeOf(node ids.NodeID) *actor.PID {
	if node == "" || node == c.cfg.Node || c.cfg.Cluster == nil {
		return c.cfg.Store()
	}
	return c.cfg.Cluster.Store(node)
}

// sweepGoneNodes is NodeGone's safety net, run every second: it fails the attempts of
// tasks sent to nodes the view no longer counts alive, whether or not this process was
// told of their death (a membership event can be missed, by a process that joined late
// for instance; the node's lease lapsing removes it from the view all the same). A node
// must be missing in two sweeps in a row, so that a moment's gap in the view fails nothing.
func (c *Core) sweepGoneNodes() {
	cl := c.cfg.Cluster
	if cl == nil {
		return
	}
	nodes := map[ids.NodeID]bool{}
	c.mu.Lock()
	for _, p := range c.tasks {
		if p.actor == nil && p.dispatched && p.node != "" && p.node != c.cfg.Node {
			nodes[p.node] = true
		}
	}
	c.mu.Unlock()
	missing := map[ids.NodeID]bool{}
	for node := range nodes {
		if !cl.Alive(node) {
			missing[node] = true
			if c.sweepMissing[node] {
				c.NodeGone(node)
			}
		}
	}
	c.sweepMissing = missing // only this goroutine (flushLoop) touches it
}

// NodeGone fails the attempts of the tasks this runtime sent to node, which died or became
// unreachable: each comes back as a system error, so it is retried elsewhere while it has
// retries left (MaxRetries, default 3), as Ray does. An attempt that finishes on the node
// after all (a connection that broke and healed) is ignored as stale. Actor calls are left
// to the actor's own restart.
func (c *Core) NodeGone(node ids.NodeID) {
	type hit struct {
		tid     ids.TaskID
		attempt int32
		fn      string
	}
	select {
	case <-c.closed:
		return
	default:
	}
	var hits []hit
	c.mu.Lock()
	for tid, p := range c.tasks {
		if p.actor == nil && p.dispatched && p.node == node {
			hits = append(hits, hit{tid, p.spec.Attempt, p.spec.Function})
		}
	}
	c.mu.Unlock()
	for _, h := range hits {
		c.onResult(&pb.TaskResult{TaskId: h.tid[:], Attempt: h.attempt, Error: &pb.ErrorInfo{
			Kind: pb.ErrorInfo_SYSTEM, Function: h.fn, TaskId: h.tid[:], NodeId: string(node),
			Message: fmt.Sprintf("node %s died (or became unreachable) while the task ran there", node)}})
	}
}
