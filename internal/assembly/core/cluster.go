package core

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// Cluster is a runtime's view of the nodes its tasks may run on (cluster mode). Without
// one (Config.Cluster nil) every task goes to the local raylet.
//
// Contract: Placer returns a placer for one shard's use alone (each shard has its own, so
// placing a task takes no lock shared across shards). Raylet and Store resolve a node's
// grains (nil if the node is unknown or gone); DataAddress is the node's object data server
// ("" if it has none or is unknown). Feasible is nil while no node is known. Every method
// but the placer's is safe for concurrent use, and none blocks on I/O.
type Cluster interface {
	Placer(seed uint64) Placer
	Raylet(node ids.NodeID) *actor.PID
	Store(node ids.NodeID) *actor.PID
	DataAddress(node ids.NodeID) string
	// DataSocket is the Unix socket of the data server of a node on this machine ("" if
	// the node runs elsewhere or has none): tried before DataAddress.
	DataSocket(node ids.NodeID) string
	// JobOf is the job a node serves ("" if unknown): a worker process of another job
	// ends with that job.
	JobOf(node ids.NodeID) string
	Feasible(req sched.Resources) error
	// Alive reports whether node is a member of the cluster now.
	Alive(node ids.NodeID) bool
}

// Placer places the tasks of one shard. Place chooses a node for a request by the sched
// policy and counts the request against that node until Done (or the node's next load
// report); it returns sched.ErrNoNodes while no node is known, which parks the task until
// ClusterChanged is called.
//
// Spill chooses another node than from for a request that waits there, one that can run
// it now by the view (sched.Spill), and counts the request against it as Place does; false
// when there is none.
type Placer interface {
	Place(req sched.Request) (ids.NodeID, error)
	Spill(req sched.Request, from ids.NodeID) (ids.NodeID, bool)
	Done(node ids.NodeID, res sched.Resources)
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

// rayletFor returns the scheduler a task goes to, placing it if the runtime has a cluster
// view; sched.ErrNoNodes or errNodeUnready park the task (no node yet).
func (s *shard) rayletFor(p *pending) (*actor.PID, error) {
	c := s.c
	cl := c.cfg.Cluster
	if p.spec.Strategy == StrategyPlacementGroup {
		return s.groupRaylet(p)
	}
	if cl == nil {
		if p.spec.Strategy == StrategyNodeAffinity && !p.spec.AffinitySoft && p.spec.AffinityNode != string(c.cfg.Node) {
			return nil, fmt.Errorf("%w: %q is not a node of this cluster (its only node is %s)",
				sched.ErrAffinityUnavailable, p.spec.AffinityNode, c.cfg.Node)
		}
		r := c.cfg.Raylet()
		if r == nil {
			return nil, errors.New("no scheduler on this node")
		}
		p.node = c.cfg.Node
		return r, nil
	}
	if r := s.leaseRoom(p); r != nil {
		return r, nil
	}
	req := s.placeRequest(p)
	node, err := s.placer.Place(req)
	if err != nil {
		return nil, err
	}
	r := cl.Raylet(node)
	if r == nil {
		s.placer.Done(node, req.Resources)
		return nil, fmt.Errorf("%w: node %s has no scheduler (it is starting, or gone)", errNodeUnready, node)
	}
	p.node = node
	return r, nil
}

// leaseRoom sends p to its own node, without a placement, when a lease of this shard there
// has room for it now (sched.Leases.Room: an idle lease kept for its class, or one of a
// short class with a free slot): Ray's owner gives a leased worker the next task of the
// worker's scheduling class wherever the worker is. Placing it instead would judge the
// node by a load that counts this shard's own lease: on a node of two CPUs, half busy
// with it, the Default policy sent the next task to a peer (a lease there, its request,
// grant, push and release across nodes) while the worker here had room. Only tasks the
// Default policy places and whose arguments are all by value (no locality to weigh)
// ride; it returns the node's scheduler, or nil when p is to be placed.
func (s *shard) leaseRoom(p *pending) *actor.PID {
	c := s.c
	p.ev.rides = false
	if p.spec.Strategy != StrategyDefault || hasRefArgs(p.spec) {
		return nil
	}
	nl := s.nodes[c.cfg.Node]
	if nl == nil || nl.raylet == nil || !nl.leases.Room(p.shape(), time.Now()) {
		return nil
	}
	p.node, p.ev.rides = c.cfg.Node, true
	return nl.raylet
}

// raylet is node's scheduler: this process's own for its node (or without a cluster), else
// the cluster's (nil while the node has none).
func (c *Core) raylet(node ids.NodeID) *actor.PID {
	if c.cfg.Cluster == nil || node == c.cfg.Node {
		return c.cfg.Raylet()
	}
	return c.cfg.Cluster.Raylet(node)
}

// groupRaylet is rayletFor of a task in a placement group: its bundle's node, with its
// demand renamed into the bundle's resources (pgPlace); the cluster view does not count
// it, the bundle's reservation already does.
func (s *shard) groupRaylet(p *pending) (*actor.PID, error) {
	c := s.c
	node, res, err := c.pgPlace(p.spec)
	if errors.Is(err, errGroupNotReady) {
		return nil, fmt.Errorf("%w: %w", errNodeUnready, err)
	}
	if err != nil {
		return nil, err
	}
	r := c.raylet(node)
	if r == nil {
		return nil, fmt.Errorf("%w: node %s of the task's placement group has no scheduler (it is starting, or gone)", errNodeUnready, node)
	}
	p.res, p.hasRes = res, true
	p.node = node
	return r, nil
}

// placeRequest is p's demand on the cluster: its resources, strategy and where its
// arguments passed by reference are.
func (s *shard) placeRequest(p *pending) sched.Request {
	req := sched.Request{Resources: p.shape(), Strategy: strategyOf(p.spec),
		AffinityNode: p.spec.AffinityNode, Soft: p.spec.AffinitySoft}
	for _, a := range p.spec.Args {
		if a.IsRef && a.NodeId != "" {
			if req.ArgBytes == nil {
				req.ArgBytes = map[string]int64{}
			}
			req.ArgBytes[a.NodeId] += a.Size
		}
	}
	return req
}

// placedDone gives a finished task's placement back to the view.
func (s *shard) placedDone(p *pending) {
	if s.placer != nil && p.node != "" && p.spec.Strategy != StrategyPlacementGroup {
		if !p.ev.rides {
			s.placer.Done(p.node, p.shape())
		}
		p.node, p.ev.rides = "", false
	}
}

// parkRetry is how often parked tasks try to place again without a ClusterChanged call.
const parkRetry = 500 * time.Millisecond

func (s *shard) park(p *pending) {
	if s.parked == nil {
		s.parked = map[ids.TaskID]*pending{}
	}
	s.parked[p.tid] = p
	s.hasParked.Store(true)
	if !s.parkTimer {
		s.parkTimer = true
		time.AfterFunc(parkRetry, func() { s.send(clusterChanged{}) })
	}
}

// clusterChanged retries the placement of parked tasks.
func (s *shard) clusterChanged() {
	parked := s.parked
	s.parked = nil
	s.parkTimer = false
	s.hasParked.Store(false) // place (park) sets it again for a task that parks again
	for tid, p := range parked {
		if s.tasks[tid] == p {
			s.place(p)
		}
	}
}

// ClusterChanged retries the placement of parked tasks (the cluster view calls it when
// nodes come or go, and for every load report it receives). Only the shards that have
// parked tasks are told: the view calls it for each watch response, N nodes' reports
// reach N views, and a message to every shard of every node for each (N x N x shards a
// report period, whether or not a task is parked) was the largest kind of message that
// grew with the cluster (benchmarks/scale -nodes). A task parked just after a change was
// published, before its shard said so, is placed again by the shard's own parkRetry timer.
func (c *Core) ClusterChanged() {
	for _, s := range c.shards {
		if s.hasParked.Load() {
			s.send(clusterChanged{})
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

// sweepGoneNodes is NodeGone's safety net, run every tick: it fails the attempts of tasks
// sent to nodes the view no longer counts alive, whether or not this process was told of
// their death (a membership event can be missed, by a process that joined late for
// instance; the node's lease lapsing removes it from the view all the same). A node must
// be missing in two sweeps in a row, so that a moment's gap in the view fails nothing.
func (s *shard) sweepGoneNodes() {
	cl := s.c.cfg.Cluster
	if cl == nil {
		return
	}
	nodes := map[ids.NodeID]bool{}
	for _, p := range s.tasks {
		if p.actor == nil && p.dispatched && p.node != "" && p.node != s.c.cfg.Node {
			nodes[p.node] = true
		}
	}
	missing := map[ids.NodeID]bool{}
	for node := range nodes {
		if !cl.Alive(node) {
			missing[node] = true
			if s.sweepMissing[node] {
				s.nodeGone(node, "")
			}
		}
	}
	s.sweepMissing = missing
}

// NodeGone fails the attempts of the tasks this runtime sent to node, which died or became
// unreachable: each comes back as a system error, so it is retried elsewhere while it has
// retries left (MaxRetries, default 3), as Ray does. An attempt that finishes on the node
// after all (a connection that broke and healed) is ignored as stale. Actor calls are left
// to the actor's own restart. why, when not "", says what happened there (the node layer
// knows whether node was a job's worker process and how it exited: "the worker process
// ... exited ..."); the error adds whether the task is retried.
func (c *Core) NodeGone(node ids.NodeID, why string) {
	select {
	case <-c.closed:
		return
	default:
	}
	for _, s := range c.shards {
		s.send(nodeGone{node: node, why: why})
	}
	c.pgs.Range(func(_, v any) bool {
		v.(*PlacementGroup).nodeGone(node) // pg.go: its bundles there are placed again
		return true
	})
}

func (s *shard) nodeGone(node ids.NodeID, why string) {
	if nl := s.nodes[node]; nl != nil {
		s.dropNode(nl) // tasks waiting for a lease there are placed again
	}
	var hits []*pending
	for _, p := range s.tasks {
		if p.actor == nil && p.dispatched && p.node == node && s.parked[p.tid] != p {
			hits = append(hits, p)
		}
	}
	if why == "" {
		why = fmt.Sprintf("node %s died (or became unreachable) while the task ran there", node)
		if cl := s.c.cfg.Cluster; cl != nil && cl.JobOf(node) != "" {
			// A job's worker process (what runs tasks in a cluster of node agents): it may
			// have exited alone, its machine and agent fine.
			why = fmt.Sprintf("the worker process that ran it (node %s) died or became unreachable while the task ran there "+
				"(it exited or crashed, or its machine or network failed); its output: rayctl logs worker %s", node, node)
		}
	}
	for _, p := range hits {
		if p.ev.start == 0 {
			// It ran there (or waited behind the task its lease ran) until the process
			// died: no result says for how long, so it started when it was pushed, as
			// far as its owner knows, and is not an attempt that failed before it ran.
			p.ev.start = p.ev.dispatch
		}
		s.onResult(&pb.TaskResult{TaskId: p.tid[:], Attempt: p.spec.Attempt, Error: &pb.ErrorInfo{
			Kind: pb.ErrorInfo_SYSTEM, Function: p.spec.Function, TaskId: p.tid[:], NodeId: string(node),
			Message: why + retryNote(p.spec)}})
	}
}

// retryNote says whether a task whose attempt failed with a system error is retried
// (retriable's rule for SYSTEM): attempts count from 1, MaxRetries more than the first.
func retryNote(spec *pb.TaskSpec) string {
	n := spec.Attempt + 1
	switch {
	case spec.Attempt < spec.MaxRetries:
		return fmt.Sprintf("; attempt %d, retried", n)
	case spec.MaxRetries <= 0:
		return fmt.Sprintf("; not retried (MaxRetries is %d)", spec.MaxRetries)
	}
	return fmt.Sprintf("; attempt %d of %d, not retried again (MaxRetries is %d)", n, spec.MaxRetries+1, spec.MaxRetries)
}
