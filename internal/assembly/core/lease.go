package core

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// A shard's worker leases (Ray's direct task submission): for each node its tasks go to,
// a sched.Leases decides when to ask the node's scheduler for a lease per scheduling class,
// which tasks to push to which lease's worker, and when to give a lease back; this file
// carries out what it decides. Tasks go to workers without passing through the scheduler,
// which sees a request and a release per lease.

// nodeLeases are a shard's leases with one node.
type nodeLeases struct {
	node   ids.NodeID
	raylet *actor.PID
	leases sched.Leases[*pending, *actor.PID]
	dirty  bool
	// movable: a task that spillback may move (not bound to the node by a hard affinity or
	// its placement group) was queued here; without one the spill timer is not armed for
	// this node's waiting tasks (it would find nothing to move, every SpillAfter).
	movable bool
}

// leaseEntry is a lease granted to a shard: its node, and its ID as the wire has it (for
// the pushes to it, which would each convert it otherwise).
type leaseEntry struct {
	nl *nodeLeases
	id []byte
}

// onePush is a LeasePush of one task with its task list.
type onePush struct {
	msg   pb.LeasePush
	specs [1]*pb.TaskSpec
}

// leaseAsk is a lease request waiting for its grant.
type leaseAsk struct {
	nl    *nodeLeases
	shape sched.Resources
}

// queueTask queues p (placed on node, whose scheduler is raylet) for a lease.
func (s *shard) queueTask(p *pending, node ids.NodeID, raylet *actor.PID) {
	nl := s.nodes[node]
	if nl == nil || nl.raylet != raylet {
		if nl != nil {
			s.dropNode(nl) // the node's scheduler changed: a new incarnation
		}
		nl = &nodeLeases{node: node, raylet: raylet}
		s.nodes[node] = nl
	}
	p.lease, p.worker = "", nil
	nl.leases.Add(p, p.shape())
	if !nl.movable && spillable(p.spec) {
		nl.movable = true
	}
	s.markDirty(nl)
}

// spillable reports whether spillback may move a task of spec to another node.
func spillable(spec *pb.TaskSpec) bool {
	return spec.Strategy != StrategyPlacementGroup && (spec.Strategy != StrategyNodeAffinity || spec.AffinitySoft)
}

func (s *shard) markDirty(nl *nodeLeases) {
	if !nl.dirty {
		nl.dirty = true
		s.dirty = append(s.dirty, nl)
	}
	s.endOfTurn()
}

// pumpLeases carries out what the leases of every node that changed this turn decide.
func (s *shard) pumpLeases() {
	if len(s.dirty) == 0 {
		return
	}
	now := time.Now()
	evNow := now.UnixNano()
	for _, nl := range s.dirty {
		nl.dirty = false
		if s.nodes[nl.node] != nl {
			continue // dropped meanwhile
		}
		nl.leases.PumpInto(now, &s.acts)
		a := &s.acts
		for _, ps := range a.Pushes {
			var msg *pb.LeasePush
			var specs []*pb.TaskSpec
			if len(ps.Tasks) == 1 {
				// A lease at depth 1 (slow tasks, or a caller that waits for each) gets one
				// task per push: the message and its list are one allocation.
				one := new(onePush)
				msg, specs = &one.msg, one.specs[:]
			} else {
				msg, specs = new(pb.LeasePush), make([]*pb.TaskSpec, len(ps.Tasks))
			}
			for i, p := range ps.Tasks {
				specs[i] = p.spec
				p.lease, p.worker = ps.Lease, ps.Worker
				p.ev.dispatch = evNow
			}
			lid := s.leaseOf[ps.Lease].id
			if lid == nil {
				lid = []byte(ps.Lease)
			}
			msg.LeaseId, msg.ReplyTo = lid, s.pidW
			if len(specs) == 1 || specsBytes(specs) <= pb.BatchBytes {
				msg.Tasks = specs
				s.c.root.Send(ps.Worker, msg)
				continue
			}
			// Tasks with large inline arguments: several pushes, each message bounded
			// (pb.BatchBytes), in order; the worker runs them one after another anyway.
			pb.Split(specs, pb.SpecBytes, pb.BatchBytes, func(run []*pb.TaskSpec) {
				s.c.root.Send(ps.Worker, &pb.LeasePush{LeaseId: lid, Tasks: run, ReplyTo: s.pidW})
			})
		}
		for _, rq := range a.Requests {
			s.nextAsk++
			s.asks[s.nextAsk] = leaseAsk{nl: nl, shape: rq.Shape}
			s.c.root.Send(nl.raylet, &pb.LeaseRequest{RequestId: s.nextAsk, Resources: tasks.ResourcesToPB(rq.Shape), Backlog: int32(rq.Backlog), Owner: s.pidW})
		}
		for _, rl := range a.Releases {
			delete(s.leaseOf, rl.Lease)
			s.c.root.Send(nl.raylet, &pb.LeaseRelease{LeaseId: []byte(rl.Lease)})
		}
	}
	clear(s.dirty)
	s.dirty = s.dirty[:0]
	s.armSpill()
	if !s.idleTimer {
		for _, nl := range s.nodes {
			if nl.leases.Idle() {
				// Leases kept for more work go back IdleHold after they ran out of it.
				s.idleTimer = true
				time.AfterFunc(sched.IdleHold, func() { s.send(idleLeases{}) })
				break
			}
		}
	}
}

// idleLeases: time to give back the leases idle for sched.IdleHold.
type idleLeases struct{}

func (s *shard) releaseIdle() {
	s.idleTimer = false
	for _, nl := range s.nodes {
		if nl.leases.Idle() {
			s.markDirty(nl)
		}
	}
}

// SpillAfter is how long a lease request the node said it queued (LeaseGrant.queued) may
// go unanswered while tasks of its class wait before the shard places those tasks on other
// nodes that can run them now (spillback, paper §4.2.2: the node's queue is full, others
// have become free since the tasks were placed, e.g. because their load reports were
// stale or tasks ran longer than others). SpillSilent is the same for a request the node
// has said nothing about: a node that is only slow to answer (its process starved of CPU)
// has room, and moving its tasks away made every node busier (64 simulated nodes on two
// cores spilled about one task in two for want of an answer within SpillAfter, and sent
// half again as many messages per task).
const (
	SpillAfter  = 50 * time.Millisecond
	SpillSilent = time.Second
)

// spillCheck: time to look for stalled classes (SpillAfter after tasks began waiting).
type spillCheck struct{}

// armSpill has a spillCheck come SpillAfter from now while tasks that may move wait for a
// lease (and none is due already).
func (s *shard) armSpill() {
	if s.spillTimer || s.placer == nil {
		return
	}
	for _, nl := range s.nodes {
		if nl.movable && nl.leases.Waiting() > 0 {
			// Tasks wait for a lease: see in SpillAfter whether a node stalls them.
			s.spillTimer = true
			time.AfterFunc(SpillAfter, func() { s.send(spillCheck{}) })
			return
		}
	}
}

// spill moves the waiting tasks of classes that a node stalls (sched.Leases.Stalled) to
// other nodes that can run them now (Placer.Spill), one task at a time while the view has
// room for them; the rest wait where they are. It runs again SpillAfter later while tasks
// wait.
func (s *shard) spill() {
	s.spillTimer = false
	now := time.Now()
	type move struct {
		p    *pending
		node ids.NodeID
	}
	var moves []move
	var to []ids.NodeID
	for _, nl := range s.nodes {
		for _, shape := range nl.leases.Stalled(now, SpillAfter, SpillSilent) {
			full := false // no other node can run this shape now: stop asking
			to = to[:0]
			moved := nl.leases.Take(shape, func(p *pending) bool {
				if full || !spillable(p.spec) {
					return false // bound to its node: a hard affinity, or its group's bundle
				}
				node, ok := s.placer.Spill(s.placeRequest(p), nl.node)
				if !ok {
					// Without arguments by reference every task of the class gets the
					// same answer.
					full = !hasRefArgs(p.spec)
					return false
				}
				to = append(to, node)
				return true
			})
			for i, p := range moved {
				moves = append(moves, move{p, to[i]})
			}
			s.markDirty(nl)
		}
	}
	for _, m := range moves {
		r := s.c.cfg.Cluster.Raylet(m.node)
		s.placedDone(m.p) // its placement at the node it left
		if r == nil {
			s.placer.Done(m.node, m.p.shape())
			s.place(m.p)
			continue
		}
		m.p.node = m.node
		s.queueTask(m.p, m.node, r)
	}
	s.pumpLeases()
	// Again SpillAfter later while tasks wait, whether or not this check moved any: a
	// class whose clock an answer had just restarted is stalled by then (pumpLeases arms
	// it only when a node has something to pump; a check that moved nothing left none,
	// and the next came with the next result: 300 ms later, 3 nodes idle beside a queue).
	s.armSpill()
}

// hasRefArgs reports whether spec has arguments passed by reference (whose locality may
// make another node's answer differ from the last one's).
func hasRefArgs(spec *pb.TaskSpec) bool {
	for _, a := range spec.Args {
		if a.IsRef {
			return true
		}
	}
	return false
}

// granted handles a scheduler's answer to a lease request.
func (s *shard) granted(m *pb.LeaseGrant) {
	ask, ok := s.asks[m.RequestId]
	if !ok {
		return
	}
	if m.Queued {
		// Word that the request waits in the node's queue: it stays outstanding, and its
		// class's waiting tasks may spill SpillAfter from now.
		if s.nodes[ask.nl.node] == ask.nl {
			ask.nl.leases.Queued(ask.shape)
		}
		return
	}
	delete(s.asks, m.RequestId)
	nl := ask.nl
	if s.nodes[nl.node] != nl {
		if len(m.LeaseId) > 0 { // for a node queue dropped meanwhile: give it back
			s.c.root.Send(nl.raylet, &pb.LeaseRelease{LeaseId: m.LeaseId})
		}
		return
	}
	if m.Denied != nil || m.Worker == nil {
		// The node can never hold the class: its tasks fail (infeasible is final; a system
		// error is retried like any other).
		e := m.Denied
		if e == nil {
			e = &pb.ErrorInfo{Kind: pb.ErrorInfo_SYSTEM, NodeId: string(nl.node), Message: fmt.Sprintf("node %s granted a lease without a worker", nl.node)}
		}
		for _, p := range nl.leases.Denied(ask.shape) {
			err := &pb.ErrorInfo{Kind: e.Kind, Function: p.spec.Function, TaskId: p.tid[:], NodeId: e.NodeId, Message: e.Message}
			s.onResult(&pb.TaskResult{TaskId: p.tid[:], Attempt: p.spec.Attempt, Error: err})
		}
		s.markDirty(nl)
		return
	}
	id := string(m.LeaseId)
	nl.leases.Granted(ask.shape, id, actor.NewPID(m.Worker.Address, m.Worker.Id), time.Now())
	s.leaseOf[id] = leaseEntry{nl: nl, id: m.LeaseId}
	s.markDirty(nl)
}

// leaseResult counts a result of a pushed task against its lease.
func (s *shard) leaseResult(p *pending, r *pb.TaskResult) {
	if p.lease == "" || string(r.LeaseId) != p.lease {
		return
	}
	if nl := s.leaseOf[p.lease].nl; nl != nil {
		nl.leases.Done(p.lease, 1, float64(r.RunNanos))
		s.markDirty(nl)
	}
	p.lease, p.worker = "", nil
}

// returned: a lease's running task blocked, and its worker handed back the tasks behind it.
func (s *shard) returned(m *pb.LeaseReturned) {
	id := string(m.LeaseId)
	nl := s.leaseOf[id].nl
	var back []*pending
	for _, spec := range m.Tasks {
		tid, err := ids.TaskIDFromBytes(spec.TaskId)
		if err != nil {
			continue
		}
		if p := s.tasks[tid]; p != nil && p.lease == id && p.spec.Attempt == spec.Attempt {
			p.lease, p.worker = "", nil
			back = append(back, p)
		}
	}
	if nl == nil {
		for _, p := range back { // the lease is gone: place them again
			s.place(p)
		}
		return
	}
	nl.leases.Returned(id, back)
	s.markDirty(nl)
}

// dropNode forgets a node's leases (the node is gone, or its scheduler changed): waiting
// tasks are placed again; tasks in flight there are failed by the caller (nodeGone).
func (s *shard) dropNode(nl *nodeLeases) {
	delete(s.nodes, nl.node)
	for id, x := range s.leaseOf {
		if x.nl == nl {
			delete(s.leaseOf, id)
		}
	}
	for id, a := range s.asks {
		if a.nl == nl {
			delete(s.asks, id)
		}
	}
	for _, p := range nl.leases.Drain() {
		if s.tasks[p.tid] == p {
			s.placedDone(p)
			s.place(p)
		}
	}
}

// unqueue takes p out of its node's waiting tasks; it reports whether p was waiting.
func (s *shard) unqueue(p *pending) bool {
	for _, nl := range s.nodes {
		if nl.leases.Remove(func(q *pending) bool { return q == p }) {
			return true
		}
	}
	return false
}

// shape is the resources p asks for.
func (p *pending) shape() sched.Resources {
	if !p.hasRes {
		p.res, p.hasRes = tasks.ResourcesFromPB(p.spec.Resources), true
	}
	return p.res
}

// specsBytes is the estimated wire size of specs together (pb.SpecBytes).
func specsBytes(specs []*pb.TaskSpec) int {
	n := 0
	for _, s := range specs {
		n += pb.SpecBytes(s)
	}
	return n
}
