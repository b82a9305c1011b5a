package sched

import (
	"errors"
	"fmt"
	"math"
)

// Errors returned by Place. Branch on them with errors.Is.
var (
	// ErrInfeasible: no alive node's total resources can ever satisfy the request (or, for hard
	// node affinity, the named node's cannot). The error is an *InfeasibleError carrying the
	// resource and amounts for a message fit for the user.
	ErrInfeasible = errors.New("sched: infeasible")
	// ErrAffinityUnavailable: hard node affinity names a node that is dead or not in the view.
	ErrAffinityUnavailable = errors.New("sched: node affinity: node unavailable")
	// ErrAffinitySuspect: hard node affinity names a node that is Suspect (neither alive nor
	// known dead); the caller tries again when the view changes.
	ErrAffinitySuspect = errors.New("sched: node affinity: node unreachable for now")
	// ErrSuspectOnly: no alive node can ever hold the request, but a Suspect node could (one
	// that has just joined and is not yet a member to the caller, or whose connection broke):
	// the caller tries again when its view changes. Once that node answers the request is
	// placed there; once it is known dead the request is infeasible.
	ErrSuspectOnly = errors.New("sched: only nodes unreachable for now could run it")
	// ErrNoNodes: the view holds no alive node. Unlike ErrInfeasible this is usually transient
	// (the cluster is starting or every node just died).
	ErrNoNodes = errors.New("sched: no alive nodes")
	// ErrInvalidRequest: the request itself is malformed (unknown strategy, negative demand,
	// node affinity without a node).
	ErrInvalidRequest = errors.New("sched: invalid request")
)

// InfeasibleError says why a request can never run. It wraps ErrInfeasible.
type InfeasibleError struct {
	// Request is the demand that cannot be met.
	Request Resources
	// Resource is the first resource (in the order of Resources.Each) that no considered node
	// has enough of in total; empty when every resource is available somewhere but no single
	// node has them all.
	Resource string
	// Need is the amount of Resource requested and Largest the largest total of it on any
	// considered node (or on Node).
	Need, Largest Quantity
	// Node is set when only one node was considered: the target of hard node affinity.
	Node string
	// What names the request in the message: "task" when empty, "bundle" for a placement
	// group's bundle.
	What string
}

func (e *InfeasibleError) Error() string {
	what := e.What
	if what == "" {
		what = "task"
	}
	switch {
	case e.Resource == "":
		return fmt.Sprintf("%v: %s requires %v but no single node has all of it", ErrInfeasible, what, e.Request)
	case e.Node != "":
		return fmt.Sprintf("%v: %s requires %s=%v but node %q (hard affinity) has %s=%v",
			ErrInfeasible, what, e.Resource, e.Need, e.Node, e.Resource, e.Largest)
	default:
		return fmt.Sprintf("%v: %s requires %s=%v but the largest node has %s=%v",
			ErrInfeasible, what, e.Resource, e.Need, e.Resource, e.Largest)
	}
}

func (e *InfeasibleError) Unwrap() error { return ErrInfeasible }

// Strategy selects the placement policy of a request.
type Strategy uint8

const (
	// Default is Ray's hybrid policy: stay on the preferred node while it is lightly loaded,
	// otherwise take the best-scoring feasible node. See the package documentation.
	Default Strategy = iota
	// Spread rotates over the feasible nodes, preferring those that can run the task now.
	Spread
	// NodeAffinity targets Request.AffinityNode; with Request.Soft it falls back to Default.
	NodeAffinity
)

func (s Strategy) String() string {
	switch s {
	case Default:
		return "default"
	case Spread:
		return "spread"
	case NodeAffinity:
		return "node-affinity"
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// Node is the scheduler's view of one node.
type Node struct {
	ID string
	// Total is what the node has; Available what is not in use (may be negative, see
	// Resources).
	Total, Available Resources
	// Queued is the number of tasks waiting in the node's local queue.
	Queued int
	// Alive is false for nodes known to be dead; they are never chosen.
	Alive bool
	// Suspect marks a node that is not Alive now but is not known to be dead either: its
	// connection broke or its scheduler could not be resolved, and its process may live, or
	// it has just joined and the caller's membership has not seen it yet. Nothing is placed
	// there; a hard node-affinity request for it waits (ErrAffinitySuspect), and a request
	// only it could hold waits (ErrSuspectOnly), instead of failing.
	Suspect bool
}

// Request is one task's (or actor's) placement demand.
type Request struct {
	Resources
	Strategy Strategy
	// AffinityNode is the target node ID of the NodeAffinity strategy.
	AffinityNode string
	// Soft makes NodeAffinity a preference: when the target is dead, missing or too small the
	// Default policy places the request instead of failing.
	Soft bool
	// ArgBytes is the size of the task's arguments held by each node, keyed by node ID (only
	// arguments in object stores count; inline arguments travel with the task). Nil when the
	// task has no such arguments.
	ArgBytes map[string]int64
}

func (r Request) String() string {
	s := r.Resources.String() + " " + r.Strategy.String()
	if r.Strategy == NodeAffinity {
		s += fmt.Sprintf(" node=%q soft=%t", r.AffinityNode, r.Soft)
	}
	return s
}

// Defaults of Options.
const (
	DefaultThreshold      = 0.5
	DefaultLocalityWeight = 0.25
	DefaultKeepBytes      = 1 << 20
)

// Options tune Place. The zero value is Ray's behaviour.
type Options struct {
	// Threshold is the utilization under which the preferred node keeps work and under which
	// nodes count as idle when scored (Ray's scheduler_spread_threshold). Zero, negative or
	// NaN means DefaultThreshold.
	Threshold float64
	// LocalityWeight is the score bonus of a node holding all of the task's argument bytes
	// (proportionally less for part of them). Zero means DefaultLocalityWeight; negative
	// disables the bonus (argument bytes then only break ties).
	LocalityWeight float64
	// SpreadCounter picks the node of the Spread strategy: the caller increments it once per
	// spread request so successive requests rotate over the nodes.
	SpreadCounter uint64
	// KeepGPUNodes turns off GPU-node avoidance: by default (as in Ray) a request that needs no
	// GPU goes to a node without GPUs when one can run it now.
	KeepGPUNodes bool
	// KeepBytes is how many of the task's argument bytes a node must hold to keep a task it
	// can run now whatever its utilization: moving a megabyte or more costs more than
	// sharing a busy node that has the resources free (Ray's raylet would pass the task on
	// above Threshold; small arguments still do here). Zero means DefaultKeepBytes;
	// negative turns it off.
	KeepBytes int64
}

func (o *Options) keepBytes() int64 {
	switch {
	case o.KeepBytes == 0:
		return DefaultKeepBytes
	case o.KeepBytes < 0:
		return math.MaxInt64
	}
	return o.KeepBytes
}

func (o *Options) threshold() float64 {
	if !(o.Threshold > 0) {
		return DefaultThreshold
	}
	return o.Threshold
}

func (o *Options) localityWeight() float64 {
	switch {
	case o.LocalityWeight == 0:
		return DefaultLocalityWeight
	case o.LocalityWeight < 0 || math.IsNaN(o.LocalityWeight):
		return 0
	}
	return o.LocalityWeight
}

// Reason says which rule chose a Decision's node.
type Reason uint8

const (
	// ReasonPreferred: the preferred node (local, or the one with most argument bytes) was
	// under the threshold and could run the request now.
	ReasonPreferred Reason = iota + 1
	// ReasonBest: the best-scoring feasible node.
	ReasonBest
	// ReasonSpread: chosen by rotation (Spread strategy).
	ReasonSpread
	// ReasonAffinity: the NodeAffinity target.
	ReasonAffinity
)

func (r Reason) String() string {
	switch r {
	case ReasonPreferred:
		return "preferred"
	case ReasonBest:
		return "best"
	case ReasonSpread:
		return "spread"
	case ReasonAffinity:
		return "affinity"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Decision is where a request goes.
type Decision struct {
	// Node is the chosen node's ID and Index its position in the nodes slice given to Place.
	Node  string
	Index int
	// RunNow is true when the node's Available resources fit the request now; false means the
	// request must wait in that node's queue. The caller should subtract the request from the
	// node's Available in its view once it dispatches (see Resources.Sub), so that the next
	// Place sees the load.
	RunNow bool
	Reason Reason
}

func decide(nodes []Node, i int, runNow bool, why Reason) Decision {
	return Decision{Node: nodes[i].ID, Index: i, RunNow: runNow, Reason: why}
}

// Place chooses a node for req among nodes, local being the ID of the node whose scheduler
// asks (it may be absent from nodes, e.g. a driver without resources). Place is a pure
// function: it reads its arguments, allocates nothing on success and is deterministic. Spread
// depends on the order of nodes, so callers should pass them in a stable order (e.g. by ID).
//
// Errors: ErrInvalidRequest, ErrNoNodes, ErrInfeasible (as *InfeasibleError), ErrSuspectOnly
// (only a Suspect node could hold it: try again when the view changes) and, for hard
// node affinity, ErrAffinityUnavailable (the node is dead or unknown) or ErrAffinitySuspect
// (it may live: try again when the view changes).
func Place(req Request, nodes []Node, local string, opt Options) (Decision, error) {
	if req.Negative() {
		return Decision{}, fmt.Errorf("%w: negative demand %v", ErrInvalidRequest, req.Resources)
	}
	switch req.Strategy {
	case Default:
		return placeDefault(&req, nodes, local, &opt)
	case Spread:
		return placeSpread(&req, nodes, &opt)
	case NodeAffinity:
		return placeAffinity(&req, nodes, local, &opt)
	}
	return Decision{}, fmt.Errorf("%w: unknown strategy %v", ErrInvalidRequest, req.Strategy)
}

// Spill chooses where a request that waits in the queue of node from should go instead
// (spillback, paper §4.2.2): the node Place would choose among the others, if it can run
// the request now; false when none can (the request stays where it waits, as it would
// gain nothing by moving), when the request is bound to from by a hard NodeAffinity, or
// when from holds at least KeepBytes of its arguments and has room for it by the view (its
// Available, which counts the request itself while it waits there, plus the request): as
// Place keeps such a task where its bytes are, a wait there is the node's latency (a busy
// machine), not a backlog, and moving it would move the bytes.
func Spill(req Request, nodes []Node, from string, opt Options) (Decision, bool) {
	if req.Strategy == NodeAffinity && !req.Soft {
		return Decision{}, false
	}
	others := make([]Node, 0, len(nodes))
	index := make([]int, 0, len(nodes))
	for i, n := range nodes {
		if n.ID != from {
			others, index = append(others, n), append(index, i)
			continue
		}
		if req.ArgBytes[from] >= opt.keepBytes() && n.Alive {
			if room := n.Available.Add(req.Resources); fits(&room, &req.Resources) {
				return Decision{}, false
			}
		}
	}
	d, err := Place(req, others, from, opt)
	if err != nil || !d.RunNow {
		return Decision{}, false
	}
	d.Index = index[d.Index]
	return d, true
}

// KeepsLocal reports whether the Default policy places req on the local node n whatever
// the other nodes' loads (Place's fast path): req is of the Default strategy with no
// argument bytes on any node, and n is alive, can hold req in total and now, is not a GPU
// node to avoid, and stays under the utilization threshold with it. A placer that knows
// the local node's load exactly needs no other node's report for such a request.
func KeepsLocal(req Request, n Node, opt Options) bool {
	if req.Strategy != Default {
		return false
	}
	for _, b := range req.ArgBytes {
		if b > 0 {
			return false
		}
	}
	return keepsLocal(&req, &n, &opt)
}

// keepsLocal is KeepsLocal's test of the node.
func keepsLocal(req *Request, n *Node, opt *Options) bool {
	avoidGPU := !opt.KeepGPUNodes && req.gpu <= 0
	return n.Alive && fits(&n.Total, &req.Resources) && fits(&n.Available, &req.Resources) &&
		!(avoidGPU && n.Total.gpu > 0) && utilization(n, &req.Resources) < opt.threshold()
}

// candidate is a feasible node with the terms of its score.
type candidate struct {
	i        int
	runNow   bool    // Available fits the request
	avoided  bool    // a GPU node and the request needs no GPU (GPU avoidance on)
	local    bool    // the asking node
	util     float64 // critical utilization u
	score    float64 // s = ũ + wait − w·f
	argBytes int64
}

// better reports whether c ranks before d: can run now, not an avoided GPU node, lower score,
// more argument bytes, lower raw utilization, local, smaller ID.
func (c *candidate) better(d *candidate, nodes []Node) bool {
	switch {
	case c.runNow != d.runNow:
		return c.runNow
	case c.avoided != d.avoided:
		return !c.avoided
	case c.score != d.score:
		return c.score < d.score
	case c.argBytes != d.argBytes:
		return c.argBytes > d.argBytes
	case c.util != d.util:
		return c.util < d.util
	case c.local != d.local:
		return c.local
	}
	return nodes[c.i].ID < nodes[d.i].ID
}

// morePreferred reports whether c beats d as the preferred node: more argument bytes, then
// local, then smaller ID.
func (c *candidate) morePreferred(d *candidate, nodes []Node) bool {
	switch {
	case c.argBytes != d.argBytes:
		return c.argBytes > d.argBytes
	case c.local != d.local:
		return c.local
	}
	return nodes[c.i].ID < nodes[d.i].ID
}

func placeDefault(req *Request, nodes []Node, local string, opt *Options) (Decision, error) {
	threshold := opt.threshold()
	weight := opt.localityWeight()
	var totalBytes int64
	for _, b := range req.ArgBytes {
		if b > 0 {
			totalBytes += b
		}
	}
	avoidGPU := !opt.KeepGPUNodes && req.gpu <= 0

	// Fast path: without argument bytes the preferred node is the local one; when it keeps the
	// request there is nothing to score.
	if totalBytes == 0 && local != "" {
		for i := range nodes {
			if n := &nodes[i]; n.ID == local {
				if keepsLocal(req, n, opt) {
					return decide(nodes, i, true, ReasonPreferred), nil
				}
				break
			}
		}
	}

	best, pref := candidate{i: -1}, candidate{i: -1}
	alive := false
	for i := range nodes {
		n := &nodes[i]
		if !n.Alive {
			continue
		}
		alive = true
		if !fits(&n.Total, &req.Resources) {
			continue
		}
		c := candidate{
			i:       i,
			runNow:  fits(&n.Available, &req.Resources),
			avoided: avoidGPU && n.Total.gpu > 0,
			local:   n.ID == local,
			util:    utilization(n, &req.Resources),
		}
		c.score = c.util
		if c.score < threshold {
			c.score = 0
		}
		c.score += float64(n.Queued) / max(1, n.Total.cpu.Float())
		if totalBytes > 0 {
			if b := req.ArgBytes[n.ID]; b > 0 {
				c.argBytes = b
				c.score -= weight * float64(b) / float64(totalBytes)
			}
		}
		if best.i < 0 || c.better(&best, nodes) {
			best = c
		}
		if (c.argBytes > 0 || c.local) && (pref.i < 0 || c.morePreferred(&pref, nodes)) {
			pref = c
		}
	}
	switch {
	case !alive:
		return Decision{}, ErrNoNodes
	case best.i < 0:
		return Decision{}, infeasibleOrWait(req.Resources, nodes)
	}
	// The preferred node keeps the work while it is under the threshold (or holds at least
	// KeepBytes of the arguments), unless it is a GPU node to avoid and a non-GPU node can
	// run the request now.
	if pref.i >= 0 && pref.runNow && (pref.util < threshold || pref.argBytes >= opt.keepBytes()) &&
		!(pref.avoided && best.runNow && !best.avoided) {
		return decide(nodes, pref.i, true, ReasonPreferred), nil
	}
	return decide(nodes, best.i, best.runNow, ReasonBest), nil
}

// utilization is the node's critical utilization for req: the largest 1 − available/total
// over CPU, memory, object store memory and every resource req asks for, counting only
// resources the node has. Above 1 when oversubscribed.
func utilization(n *Node, req *Resources) float64 {
	u := 0.0
	if t := n.Total.cpu; t > 0 {
		u = 1 - float64(n.Available.cpu)/float64(t)
	}
	if t := n.Total.gpu; t > 0 && req.gpu > 0 {
		u = max(u, 1-float64(n.Available.gpu)/float64(t))
	}
	// One merged walk over the three sorted slices.
	avail, want := n.Available.other, req.other
	ai, wi := 0, 0
	for _, e := range n.Total.other {
		if e.q <= 0 {
			continue
		}
		for wi < len(want) && want[wi].name < e.name {
			wi++
		}
		if e.name != Memory && e.name != ObjectStoreMemory &&
			(wi == len(want) || want[wi].name != e.name || want[wi].q <= 0) {
			continue
		}
		for ai < len(avail) && avail[ai].name < e.name {
			ai++
		}
		var a Quantity
		if ai < len(avail) && avail[ai].name == e.name {
			a = avail[ai].q
		}
		u = max(u, 1-float64(a)/float64(e.q))
	}
	return u
}

func placeSpread(req *Request, nodes []Node, opt *Options) (Decision, error) {
	alive := false
	feasible, ready := 0, 0
	for i := range nodes {
		n := &nodes[i]
		if !n.Alive {
			continue
		}
		alive = true
		if fits(&n.Total, &req.Resources) {
			feasible++
			if fits(&n.Available, &req.Resources) {
				ready++
			}
		}
	}
	switch {
	case !alive:
		return Decision{}, ErrNoNodes
	case feasible == 0:
		return Decision{}, infeasibleOrWait(req.Resources, nodes)
	}
	// Rotate over the nodes that can run the request now; when none can, over the feasible
	// ones (the request then queues there).
	count, needReady := feasible, false
	if ready > 0 {
		count, needReady = ready, true
	}
	k := int(opt.SpreadCounter % uint64(count))
	for i := range nodes {
		n := &nodes[i]
		if !n.Alive || !fits(&n.Total, &req.Resources) {
			continue
		}
		runNow := fits(&n.Available, &req.Resources)
		if needReady && !runNow {
			continue
		}
		if k == 0 {
			return decide(nodes, i, runNow, ReasonSpread), nil
		}
		k--
	}
	panic("sched: unreachable: spread counted a node it did not find")
}

func placeAffinity(req *Request, nodes []Node, local string, opt *Options) (Decision, error) {
	if req.AffinityNode == "" {
		return Decision{}, fmt.Errorf("%w: node affinity without a node ID", ErrInvalidRequest)
	}
	idx := -1
	for i := range nodes {
		if nodes[i].ID == req.AffinityNode {
			idx = i
			break
		}
	}
	switch {
	case idx >= 0 && nodes[idx].Alive && fits(&nodes[idx].Total, &req.Resources):
		return decide(nodes, idx, fits(&nodes[idx].Available, &req.Resources), ReasonAffinity), nil
	case req.Soft:
		return placeDefault(req, nodes, local, opt)
	case idx < 0:
		return Decision{}, fmt.Errorf("%w: %q is not in the cluster view", ErrAffinityUnavailable, req.AffinityNode)
	case !nodes[idx].Alive && nodes[idx].Suspect:
		return Decision{}, fmt.Errorf("%w: %q", ErrAffinitySuspect, req.AffinityNode)
	case !nodes[idx].Alive:
		return Decision{}, fmt.Errorf("%w: %q is dead", ErrAffinityUnavailable, req.AffinityNode)
	}
	return Decision{}, infeasible(req.Resources, nodes[idx:idx+1], true)
}

// infeasibleOrWait is, for a request no alive node of nodes can ever hold, ErrSuspectOnly
// when a Suspect node could (the request waits for it), else infeasible's error.
func infeasibleOrWait(req Resources, nodes []Node) error {
	for i := range nodes {
		if n := &nodes[i]; !n.Alive && n.Suspect && fits(&n.Total, &req) {
			return fmt.Errorf("%w: task requires %v, which node %s has", ErrSuspectOnly, req, n.ID)
		}
	}
	return infeasible(req, nodes, false)
}

// infeasible explains why no alive node in nodes can ever hold req. With target set, nodes is
// the one target of hard node affinity and is considered whether alive or not.
func infeasible(req Resources, nodes []Node, target bool) error {
	e := &InfeasibleError{Request: req}
	if target {
		e.Node = nodes[0].ID
	}
	req.Each(func(name string, need Quantity) {
		if e.Resource != "" { // report the first one only
			return
		}
		var largest Quantity
		for i := range nodes {
			if nodes[i].Alive || e.Node != "" {
				if q := nodes[i].Total.Get(name); q > largest {
					largest = q
				}
			}
		}
		if largest < need {
			e.Resource, e.Need, e.Largest = name, need, largest
		}
	})
	return e
}
