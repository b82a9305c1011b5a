package core

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/actors/caller"
	"github.com/ray-go/ray/internal/base/handoff"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/mapx"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects"
	"github.com/ray-go/ray/tasks/sched"
)

// A shard is the run loop (an actor) that owns the tasks of one partition of this
// runtime's task IDs: those whose Family selects it, that is the children of some set of
// parent tasks. Everything about a pending task but its future and reference counts (leaf
// structures any goroutine may use) is the shard's: its registration, lineage record,
// dependencies, placement, dispatch, results, retries and cancellation. Other goroutines
// hand it work as messages; it never blocks on I/O (what must wait runs on a goroutine
// that answers with a message).
//
// Dispatch goes through worker leases (lease.go): per node and scheduling class, the
// shard asks the node's scheduler for leases and pushes its ready tasks straight to the
// leased workers, several at a time; the scheduler sees a request and a release per
// lease, not every task. What a turn of the mailbox decides (pushes, lease requests,
// releases, actor calls) goes out when the shard's flush message comes around, posted by
// the first change of the turn: under load the mailbox holds many submissions and results
// ahead of it and the batches are large; on an idle shard the flush follows at once.
// Results come back in batches (the worker's ResultBatch). The shard is a caller of its own
// of the actors its tasks' submitters call, and flushes those callers' outboxes the same
// way (actor.go).
type shard struct {
	c    *Core
	i    int
	pid  *actor.PID
	pidW *pb.PID

	// inbox: tasks submitted and not yet taken by the loop. Submitters append under its
	// mutex and wake the loop (drainInbox) only when it was empty, so a burst of
	// submissions costs one message, not one each.
	inbox handoff.Queue[*pending]

	// direct: actor calls their submitters sent straight to the actor (sendDirect), to be
	// registered in tasks before the loop handles its next message.
	direct handoff.Queue[*pending]

	// done: actor calls the executor of an actor in this process completed off the loop
	// (takeLocal), for the loop to forget and record (takeDone) before its next message;
	// a doneBatch message is posted only once maxDone wait (or the shard is quiet: the
	// ticker then reaches it), so such calls cost the loop no message each.
	done handoff.Queue[doneCall]

	tasks    map[ids.TaskID]*pending
	tasksMax mapx.Peak              // of tasks (a burst must not keep the map's memory)
	actors   []*actorCaller         // actor callers to flush at the end of this turn
	outbox   []caller.Out[*pending] // flushCaller's buffer
	flushing bool                   // a flushTurn is in the mailbox

	// worker leases (lease.go)
	nodes   map[ids.NodeID]*nodeLeases
	dirty   []*nodeLeases // changed this turn: pumped at its end
	asks    map[uint64]leaseAsk
	acts    sched.Actions[*pending, *actor.PID] // pumpLeases's, reused
	nextAsk uint64
	leaseOf map[string]leaseEntry
	// idleTimer: an idleLeases message is due
	idleTimer bool
	// spillTimer: a spillCheck message is due
	spillTimer bool

	// lineage (lineage.go): tasks whose records may need writing to the GCS, in two
	// generations: [1] noted since the timer's last tick, [0] before. By ID, not by
	// pending: a task released meanwhile is garbage at once (see toRecord).
	unrecorded  [2][]ids.TaskID
	recordTimer bool

	callers   map[ids.ActorID]*actorCaller // this shard's callers, by actor
	parked    map[ids.TaskID]*pending      // waiting for a node (cluster mode)
	placer    Placer                       // cluster mode: this shard's placements
	parkTimer bool
	// quiet: the last tick found nothing to watch (no task, actor caller, queued direct
	// call or missing node) and no message or direct call came since; the ticker skips the
	// shard while it is (tickShards). The shard sets it; a message or addDirect clears it.
	quiet atomic.Bool
	// hasParked: parked may hold tasks (set by park, cleared when they are placed again);
	// read by ClusterChanged from other goroutines, so that a change reaches only the
	// shards with tasks to place.
	hasParked atomic.Bool
	// sweepMissing: nodes with dispatched tasks that the last sweep found gone.
	sweepMissing map[ids.NodeID]bool

	ev shardEvents // the history of its tasks (events.go)
}

func newShard(c *Core, i int) *shard {
	s := &shard{c: c, i: i, tasks: make(map[ids.TaskID]*pending, 256), callers: map[ids.ActorID]*actorCaller{},
		nodes: map[ids.NodeID]*nodeLeases{}, asks: map[uint64]leaseAsk{}, leaseOf: map[string]leaseEntry{}}
	if c.cfg.Cluster != nil {
		s.placer = c.cfg.Cluster.Placer(uint64(i))
	}
	s.ev.init(c.evBudget)
	return s
}

// The shard's local messages.
type (
	// flushTurn ends a turn: the batches collected go out.
	flushTurn struct{}
	// depsReady: the last argument of p became ready.
	depsReady struct{ p *pending }
	// argsStored: the in-memory ref arguments of p that did not fit inline were put into
	// the store (storeRefArgs); err: one could not be.
	argsStored struct {
		p   *pending
		err error
	}
	// completeTask finishes p with r (sent by goroutines that found it done: a dead
	// actor, a cancellation).
	completeTask struct {
		p *pending
		r *pb.TaskResult
	}
	// cancelTask cancels the task; the answer goes to reply.
	cancelTask struct {
		tid       ids.TaskID
		recursive bool
		reply     chan error
	}
	// cancelChildren cancels the unfinished tasks parent submitted (Core.CancelChildren).
	cancelChildren struct{ parent ids.TaskID }
	nodeGone       struct {
		node ids.NodeID
		why  string
	}
	clusterChanged struct{}
	tick           struct{ now time.Time }
	// rerun: p's rerun request (reconstruction or adoption) arrives.
	rerun struct{ p *pending }
	// oldFreed: the old copy of the object p's rerun request recreates was freed.
	oldFreed struct{ p *pending }
	// argsLost: the arguments of p in lost were recreated (being recreated), dispatch p
	// once they are ready; empty: none was lost that way, retry p as usual.
	argsLost struct {
		p    *pending
		lost []ids.ObjectID
	}
	// flushActor: ac has calls to send.
	flushActor struct{ ac *actorCaller }
	// actorResolved: ac's instance was found (pid nil: not yet, try later).
	actorResolved struct {
		ac  *actorCaller
		pid *actor.PID
	}
	// newCaller: ac is one of this shard's callers.
	newCaller struct{ ac *actorCaller }
	// callerGone: ac's actor died, and the process forgot it (forgetCaller).
	callerGone struct{ ac *actorCaller }
	// doneBatch: the done list is long (addDone).
	doneBatch struct{}
)

func (s *shard) receive(ctx actor.Context) {
	if s.closed() {
		return
	}
	s.ev.now = 0 // events.go: one clock read per message, if any
	if s.quiet.Load() {
		s.quiet.Store(false) // something came: tick it again
	}
	if s.direct.Len() > 0 {
		s.takeDirect()
	}
	if s.done.Len() > 0 {
		s.takeDone() // after takeDirect: a call registered and completed meanwhile is gone
	}
	switch m := ctx.Message().(type) {
	case drainInbox:
		s.drainInbox()
	case depsReady:
		if s.tasks[m.p.tid] == m.p && !m.p.dispatched {
			if s.ev.on {
				m.p.ev.ready = s.evNow()
			}
			s.dispatch(m.p)
		}
	case argsStored:
		if s.tasks[m.p.tid] == m.p && !m.p.dispatched {
			if m.err != nil {
				s.complete(m.p, &pb.TaskResult{TaskId: m.p.tid[:], Error: &pb.ErrorInfo{
					Kind: pb.ErrorInfo_SYSTEM, Function: m.p.spec.Function, TaskId: m.p.tid[:], NodeId: string(s.c.cfg.Node),
					Message: m.err.Error()}})
				return
			}
			s.dispatch(m.p)
		}
	case *pb.TaskResult:
		s.onResult(m)
	case *pb.ResultBatch:
		for _, r := range m.Results {
			s.onResult(r)
		}
	case *pb.GeneratorItem:
		s.onItem(ctx, m) // generator.go
	case *pb.GeneratorWait:
		s.onWait(ctx, m)
	case *pb.LeaseGrant:
		s.granted(m)
	case *pb.LeaseReturned:
		s.returned(m)
	case *pb.LeaseRevoke:
		if nl := s.leaseOf[string(m.LeaseId)].nl; nl != nil {
			nl.leases.Revoke(string(m.LeaseId))
			s.markDirty(nl)
		}
	case *pb.ActorCallBounce:
		s.onBounce(m)
	case idleLeases:
		s.releaseIdle()
	case spillCheck:
		s.spill()
	case flushTurn:
		s.flush()
	case doneBatch:
		// taken above
	case completeTask:
		if m.p.actor != nil && !m.p.finished && s.tasks[m.p.tid] == nil {
			s.tasks[m.p.tid] = m.p // an actor call that never left its outbox
		}
		s.complete(m.p, m.r)
	case cancelTask:
		s.drainInbox() // a task submitted just before is registered first
		if _, ok := s.tasks[m.tid]; !ok {
			m.reply <- errNotHere
			return
		}
		m.reply <- s.cancel(m.tid, m.recursive)
	case cancelChildren:
		s.drainInbox() // a task submitted just before is registered first
		s.cancelChildren(m.parent)
	case nodeGone:
		s.nodeGone(m.node, m.why)
	case lostMsg:
		s.failLost()
	case clusterChanged:
		s.clusterChanged()
	case tick:
		s.c.resendStale(s, m.now)
		s.collectIfStarved(m.now)
		s.sweepGoneNodes()
		if len(s.tasks) == 0 && len(s.callers) == 0 && len(s.sweepMissing) == 0 {
			s.quiet.Store(true)
			if s.direct.Len() > 0 || s.done.Len() > 0 {
				s.quiet.Store(false) // an actor call queued or completed meanwhile (addDirect, addDone saw it not quiet yet)
			}
		}
	case rerun:
		s.rerun(m.p, false)
	case oldFreed:
		s.rerun(m.p, true)
	case argsLost:
		s.argsLost(m.p, m.lost)
	case flushActor:
		s.queueActor(m.ac)
	case actorResolved:
		s.actorResolved(m.ac, m.pid)
	case newCaller:
		if ac, ok := s.c.callers.Load(callerKey{s.i, m.ac.id}); ok && ac == m.ac {
			s.callers[m.ac.id] = m.ac // not if forgotten already (forgetCaller)
		}
	case callerGone:
		if s.callers[m.ac.id] == m.ac {
			delete(s.callers, m.ac.id)
		}
	case taskQuery:
		m.reply <- s.answer(m.q, m.actorNodes)
	case submitFailed:
		if s.ev.on {
			s.evRecordAt(m.p, &pb.TaskResult{Error: m.info}, stateCodeFailed, m.p.ev.submit)
		}
	case recordLineage:
		s.recordLineage(m.all, m.done == nil)
		if m.done != nil {
			close(m.done)
		}
	}
}

func (s *shard) closed() bool {
	select {
	case <-s.c.closed:
		return true
	default:
		return false
	}
}

// drainInbox: the inbox has tasks.
type drainInbox struct{}

// submit hands the shard a new task (from any goroutine).
func (s *shard) submit(p *pending) {
	if s.inbox.Add(1, false, p) {
		s.c.root.Send(s.pid, drainInbox{})
	}
}

// drainInbox takes every task submitted so far.
func (s *shard) drainInbox() {
	q := s.inbox.Take()
	if s.ev.on && len(q) > 0 {
		now := s.evNow()
		for _, p := range q {
			p.ev.submit = now
		}
	}
	for _, p := range q {
		s.submitted(p)
	}
	s.inbox.Release(q, maxOutbox)
}

// addDirect hands the shard an actor call its submitter sends to the actor itself (from
// any goroutine, before the send): the loop registers it before its next message.
func (s *shard) addDirect(p *pending) {
	s.direct.Add(0, false, p)
	if s.quiet.Load() {
		// No message tells the shard of this call: the ticker must reach it again, so that
		// the call is registered (and resent if it goes stale) even if nothing else comes.
		s.quiet.Store(false)
	}
}

// takeDirect registers the actor calls sent straight to their actors so far, as
// flushCaller registers the calls it sends.
func (s *shard) takeDirect() {
	q := s.direct.Take()
	for _, p := range q {
		if !p.finished && s.tasks[p.tid] == nil {
			s.tasks[p.tid] = p
		}
	}
	s.tasksMax.Grew(len(s.tasks))
	s.direct.Release(q, maxOutbox)
}

// send hands the shard a message from any goroutine.
func (s *shard) send(m any) { s.c.root.Send(s.pid, m) }

// endOfTurn makes sure the batches of this turn go out.
func (s *shard) endOfTurn() {
	if !s.flushing {
		s.flushing = true
		s.c.root.Send(s.pid, flushTurn{})
	}
}

// submitted registers a new task, or an actor call with ref arguments, and dispatches it
// once its arguments are ready (an actor call without them goes straight to its caller's
// outbox and is registered when the outbox is flushed).
func (s *shard) submitted(p *pending) {
	s.tasks[p.tid] = p
	s.tasksMax.Grew(len(s.tasks))
	if s.c.Lost() != nil { // submitted as the runtime was lost (lost.go)
		p.spec.MaxRetries = p.spec.Attempt
		s.onResult(s.c.lostTask(p))
		return
	}
	if s.c.cancelled.any() && s.parentCancelled(p) {
		return
	}
	if p.actor == nil {
		s.toRecord(p)
	}
	s.awaitArgs(p, p.argRefs)
}

// cancelledParentKeep is how long a process refuses the children of a task a recursive
// Cancel cancelled (cancelledParents), and cancelledParentsMax how many such tasks it
// keeps at most (the oldest go first).
const (
	cancelledParentKeep = 10 * time.Minute
	cancelledParentsMax = 1 << 12
)

// cancelledParents are the tasks a recursive Cancel had their children cancelled
// (Core.CancelChildren), by ID, and when. A task cancelled while running may run on (its
// function need not look at its ctx) and submit more: such a child is cancelled when it
// arrives (shard.submitted; an actor call without ref arguments, which skips its shard's
// inbox, is sent there instead of to its actor, submitActorCall), as the ones there were
// then. Kept cancelledParentKeep. A parent is noted before its worker cancels its ctx
// (worker.Env.Cancelled), so a child the task submits once it sees its ctx end is
// refused. The submit paths read n only (one atomic load) while none is kept.
type cancelledParents struct {
	n  atomic.Int32
	mu sync.Mutex
	m  map[ids.TaskID]time.Time
}

// any reports whether any parent is kept (the submit paths' cheap check).
func (cp *cancelledParents) any() bool { return cp.n.Load() > 0 }

// has reports whether parent is kept.
func (cp *cancelledParents) has(parent ids.TaskID) bool {
	cp.mu.Lock()
	_, ok := cp.m[parent]
	cp.mu.Unlock()
	return ok
}

// hasSpec reports whether the parent of a task's spec is kept.
func (cp *cancelledParents) hasSpec(spec *pb.TaskSpec) (ids.TaskID, bool) {
	parent, err := ids.TaskIDFromBytes(spec.ParentTaskId)
	if err != nil {
		return parent, false
	}
	return parent, cp.has(parent)
}

// note remembers that parent's children are cancelled, now and when they come, and
// forgets the tasks noted longer ago than cancelledParentKeep (or the oldest, past
// cancelledParentsMax).
func (cp *cancelledParents) note(parent ids.TaskID, now time.Time) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.m == nil {
		cp.m = map[ids.TaskID]time.Time{}
	}
	cp.m[parent] = now
	defer func() { cp.n.Store(int32(len(cp.m))) }()
	if len(cp.m) <= cancelledParentsMax/2 {
		return
	}
	cut := now.Add(-cancelledParentKeep)
	if len(cp.m) > cancelledParentsMax {
		var oldest time.Time
		for _, at := range cp.m {
			if oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
		}
		if o := oldest.Add(time.Nanosecond); cut.Before(o) {
			cut = o
		}
	}
	for id, at := range cp.m {
		if at.Before(cut) {
			delete(cp.m, id)
		}
	}
}

// parentCancelled cancels p, just submitted, if its parent task was cancelled with its
// children (the task submitted p after the Cancel looked for them), and reports whether
// it did.
func (s *shard) parentCancelled(p *pending) bool {
	parent, ok := s.c.cancelled.hasSpec(p.spec)
	if !ok {
		return false
	}
	if p.actor != nil {
		return s.cancelActorCall(p) == nil
	}
	p.spec.MaxRetries = 0
	s.complete(p, &pb.TaskResult{TaskId: p.tid[:], Error: &pb.ErrorInfo{
		Kind: pb.ErrorInfo_CANCELLED, Function: p.spec.Function, TaskId: p.tid[:],
		Message: "task was cancelled before it ran: the task that submitted it (" + parent.String() + ") was cancelled, with the tasks it submits"}})
	return true
}

// awaitArgs dispatches p when every object of args is ready (or gone: dispatch then
// reports it lost).
func (s *shard) awaitArgs(p *pending, args []ids.ObjectID) {
	c := s.c
	var waiting []ids.ObjectID
	for _, r := range args {
		if _, ready, known := c.mem.Get(r); known && !ready {
			waiting = append(waiting, r)
		}
	}
	if len(waiting) == 0 {
		s.dispatch(p)
		return
	}
	p.waiting.Store(int32(len(waiting)))
	ready := func(objects.Value) {
		if p.waiting.Add(-1) == 0 {
			s.send(depsReady{p})
		}
	}
	for _, r := range waiting {
		if !c.mem.OnReady(r, ready) {
			ready(objects.Value{}) // freed meanwhile: dispatch reports it lost
		}
	}
}

// dispatch fills in argument values and locations and sends the task on (to a scheduler,
// or to its actor), or fails it with its first failed argument's error. The values of ref
// arguments held in this process's memory go inline while the spec's inline bytes stay
// within pb.InlineArgsTotal, as by-value arguments do (storeLargeArgs); the others are
// first put into the store (storeRefArgs), and the task waits for that.
func (s *shard) dispatch(p *pending) {
	c := s.c
	p.dispatched = true
	inline := 0
	for _, a := range p.spec.Args {
		if !a.IsRef {
			inline += len(a.Data)
		}
	}
	var toStore []int
	for i, a := range p.spec.Args {
		if !a.IsRef {
			continue
		}
		id, _ := ids.ObjectIDFromBytes(a.ObjectId)
		v, ready, known := c.mem.Get(id)
		if !known || !ready {
			s.complete(p, &pb.TaskResult{TaskId: p.tid[:], Error: &pb.ErrorInfo{
				Kind: pb.ErrorInfo_OBJECT_LOST, Function: p.spec.Function, TaskId: p.tid[:], NodeId: string(c.cfg.Node),
				Message: fmt.Sprintf("argument %d: object %s was freed before the task could run", i+1, id)}})
			return
		}
		if v.Err != nil {
			// Ray semantics: a task whose argument failed fails with that same error.
			s.complete(p, &pb.TaskResult{TaskId: p.tid[:], Error: v.Err})
			return
		}
		switch {
		case v.InStore:
			a.Data, a.NodeId, a.Size = nil, string(v.Node), v.Size
		case inline+len(v.Data) > pb.InlineArgsTotal && c.cfg.Store != nil && c.cfg.Store() != nil:
			toStore = append(toStore, i)
		default: // (without a store, inline as the only way)
			a.Data = v.Data
			inline += len(v.Data)
		}
	}
	if toStore != nil {
		p.dispatched = false // until argsStored
		s.storeRefArgs(p, toStore)
		return
	}
	if p.actor != nil {
		c.sendActorCall(p, 0)
		return
	}
	s.place(p)
}

// storeRefArgs puts the in-memory values of p's ref arguments at the indexes in args into
// this node's store, off the mailbox, records that they live there now (the owner's
// memory then holds where, not what: Get reads them from the store, and freeing them frees
// the store's copy) and sends argsStored to dispatch p again, which passes them by
// reference. The task holds its arguments, so none is freed meanwhile.
func (s *shard) storeRefArgs(p *pending, args []int) {
	c := s.c
	objs := make([]ids.ObjectID, len(args))
	for j, i := range args {
		objs[j], _ = ids.ObjectIDFromBytes(p.spec.Args[i].ObjectId)
	}
	go func() {
		var err error
		for j, id := range objs {
			if err = c.moveToStore(id); err != nil {
				err = fmt.Errorf("argument %d: %w", args[j]+1, err)
				break
			}
		}
		s.send(argsStored{p: p, err: err})
	}()
}

// place places and queues a task (a first attempt or a retry) for its scheduler, parking
// it while no node is known and failing it when placement fails.
func (s *shard) place(p *pending) {
	c := s.c
	if c.Lost() != nil { // a retry, or arguments that became ready, after the loss (lost.go)
		p.spec.MaxRetries = p.spec.Attempt
		s.onResult(c.lostTask(p))
		return
	}
	r, err := s.rayletFor(p)
	if errors.Is(err, sched.ErrNoNodes) || errors.Is(err, errNodeUnready) || errors.Is(err, sched.ErrAffinitySuspect) ||
		errors.Is(err, sched.ErrSuspectOnly) {
		// Placed again once the view changes (or after parkRetry): a node whose scheduler
		// cannot be resolved is one that is starting or has just died, and the view catches
		// up within the membership's report or the node's lease. A hard affinity for a node
		// the membership suspects waits the same way, and so does a task that only such a
		// node could run (one that started beside this process and that its membership has
		// not seen yet): it fails once the node is known dead.
		s.park(p)
		return
	}
	if err != nil {
		kind := pb.ErrorInfo_SYSTEM
		if errors.Is(err, sched.ErrInfeasible) || errors.Is(err, sched.ErrAffinityUnavailable) {
			kind = pb.ErrorInfo_INFEASIBLE
		} else if errors.Is(err, ErrPlacementGroupRemoved) {
			kind = pb.ErrorInfo_PLACEMENT_GROUP_REMOVED
		}
		info := &pb.ErrorInfo{Kind: kind, Function: p.spec.Function, TaskId: p.tid[:], NodeId: string(c.cfg.Node), Message: err.Error()}
		if p.rerun != nil {
			c.rerunUnplaceable(p, info) // reconstruct.go
		}
		s.complete(p, &pb.TaskResult{TaskId: p.tid[:], Attempt: p.spec.Attempt, Error: info})
		return
	}
	s.queueTask(p, p.node, r)
	// A node that died between placement and now: NodeGone (run after the view learned
	// of the death) fails the attempts it finds placed there; one placed after that scan
	// is caught here, since the view already says the node is gone.
	if cl := c.cfg.Cluster; cl != nil && p.node != "" && p.node != c.cfg.Node && !cl.Alive(p.node) {
		s.onResult(&pb.TaskResult{TaskId: p.tid[:], Attempt: p.spec.Attempt, Error: &pb.ErrorInfo{
			Kind: pb.ErrorInfo_SYSTEM, Function: p.spec.Function, TaskId: p.tid[:], NodeId: string(p.node),
			Message: fmt.Sprintf("node %s died as the task was sent there", p.node)}})
	}
}

// flush sends what this turn collected: a batch of specs per scheduler, the outboxes of
// the actor callers.
func (s *shard) flush() {
	s.flushing = false
	s.pumpLeases()
	if len(s.actors) > 0 {
		q := s.actors
		s.actors = nil
		for _, ac := range q {
			s.flushCaller(ac)
		}
	}
}

// onResult handles a task's outcome: retry, or complete.
func (s *shard) onResult(r *pb.TaskResult) {
	c := s.c
	tid, err := ids.TaskIDFromBytes(r.TaskId)
	if err != nil {
		return
	}
	p, ok := s.tasks[tid]
	if !ok || r.Attempt != p.spec.Attempt {
		return // a duplicate or a stale attempt: handlers are idempotent
	}
	if s.ev.on {
		s.evResult(p, r)
	}
	s.leaseResult(p, r)
	s.placedDone(p)
	if r.Error != nil && retriable(p.spec, r.Error) {
		if s.ev.on {
			s.evRecord(p, r, stateCodeRetried)
		}
		p.spec.Attempt++
		c.stats.Retried.Add(1)
		if r.Error.Kind == pb.ErrorInfo_OBJECT_LOST && len(p.argRefs) > 0 {
			s.recoverArgs(p) // sent again once its lost arguments are recreated
			return
		}
		s.place(p)
		return
	}
	s.complete(p, r)
}

func retriable(spec *pb.TaskSpec, e *pb.ErrorInfo) bool {
	if spec.MaxRetries >= 0 && spec.Attempt >= spec.MaxRetries { // -1: no limit
		return false
	}
	switch e.Kind {
	case pb.ErrorInfo_APPLICATION, pb.ErrorInfo_PANIC:
		return spec.RetryExceptions
	case pb.ErrorInfo_SYSTEM, pb.ErrorInfo_OBJECT_LOST:
		return true
	}
	return false
}

// complete makes the task's return ready and releases its argument references.
func (s *shard) complete(p *pending, r *pb.TaskResult) {
	c := s.c
	tid := p.tid
	if s.tasks[tid] != p {
		return
	}
	if p.actor != nil && !c.actorFinished(p) {
		// Completed off the loop already (takeLocal finished it for its caller first):
		// takeDone forgets it.
		return
	}
	if s.ev.on {
		s.evEnded(p, r)
	}
	p.finished = true
	delete(s.tasks, tid)
	s.tasks = mapx.Shrink(&s.tasksMax, s.tasks)
	delete(s.parked, tid)
	if n := p.spec.NumReturns; n != 1 && n != 0 {
		if n == pb.StreamingReturns {
			s.completeGenerator(p, r) // generator.go
		} else {
			s.completeReturns(p, r) // returns.go
		}
		return
	}
	c.setReturn(p, r)
}

// setReturn makes the return object of p (a task with one return) its result r and
// releases its argument references (from any goroutine: what it touches are the
// owner's leaf tables).
func (c *Core) setReturn(p *pending, r *pb.TaskResult) {
	tid := p.tid
	ret := ids.ReturnID(tid, 1)
	v := objects.Value{Data: r.Data, InStore: r.InStore, Node: ids.NodeID(r.NodeId), Size: r.Size, Err: r.Error, Meta: r.Meta}
	if len(r.Nested) > 0 && r.Error == nil {
		if nested, err := ParseNested(r.Nested); err == nil {
			c.pinAdopted(ret, nested)
		} else {
			c.cfg.Logger.Warn("ray: a task's result holds corrupt refs", "task", tid, "err", err)
		}
	}
	owned := c.unborrowArgs(p.argRefs)
	if len(owned) == 0 && c.mem.SetIfPresentIn(ret, &p.ret, v) {
		// The fast path of a task without owned ref arguments: the reference table has
		// nothing to drop, and the result's entry, made at submission, is still there, so
		// a handle to it lived at least until now. A handle dropped since removes the
		// entry, and with it the value, when its release frees it (after this Set).
		if p.pinned {
			c.unpin(argsKey(ret))
		}
		return
	}
	c.mem.Set(ret, v)
	unreferenced, released := c.refs.Completed(ret, owned)
	if unreferenced {
		// Every handle to the result was dropped while the task ran.
		released.AddValue(ret)
	}
	c.free(released)
	if p.pinned {
		c.unpin(argsKey(ret))
	}
}

// cancel cancels task tid: a queued or waiting task never runs; a running one has its
// context cancelled (recursive: and its worker has the tasks it submitted cancelled). Its
// result becomes a cancellation error.
func (s *shard) cancel(tid ids.TaskID, recursive bool) error {
	c := s.c
	p, ok := s.tasks[tid]
	if !ok {
		return nil // finished already (or never existed): nothing to cancel
	}
	if p.actor != nil {
		return s.cancelActorCall(p)
	}
	p.spec.MaxRetries = 0
	if p.worker != nil {
		// Pushed to a lease: its worker cancels it (queued: never runs; running: its
		// context is cancelled) and answers with a cancelled result.
		c.root.Send(p.worker, &pb.CancelTask{TaskId: tid[:], NonRecursive: !recursive})
		return nil
	}
	if s.parked[tid] == p {
		delete(s.parked, tid)
	}
	s.unqueue(p)
	s.complete(p, &pb.TaskResult{TaskId: tid[:], Error: &pb.ErrorInfo{
		Kind: pb.ErrorInfo_CANCELLED, Function: p.spec.Function, TaskId: tid[:], Message: "task was cancelled before it ran"}})
	return nil
}

// cancelChildren cancels the unfinished tasks of this shard that parent submitted
// (Core.CancelChildren): tasks recursively (cancel), actor calls not sent yet.
func (s *shard) cancelChildren(parent ids.TaskID) {
	var kids []*pending
	for _, p := range s.tasks {
		if !p.finished && string(p.spec.ParentTaskId) == string(parent[:]) {
			kids = append(kids, p)
		}
	}
	for _, p := range kids {
		if s.tasks[p.tid] != p {
			continue // completed by an earlier one's cancellation
		}
		err := s.cancel(p.tid, true)
		if err != nil && !errors.Is(err, ErrActorCallSent) {
			s.c.cfg.Logger.Warn("ray: cancelling a cancelled task's child", "parent", parent, "task", p.tid, "err", err)
		}
	}
}
