package core

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	_ "unsafe" // runtime.nanotime

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// Task events: what the state API (`rayctl list tasks`, `rayctl timeline`, ray.ListTasks)
// shows of the tasks and actor calls this process owns.
//
// Every shard keeps the history of its own tasks, so recording touches nothing another
// core touches (DESIGN §9):
//   - a live task's times sit in its pending (submitted, arguments ready, pushed to a
//     worker), stamped with one clock read per batch the shard handles (an inbox drain, a
//     turn's lease pushes, a batch of results), not per task;
//   - each attempt that ends (finished, failed, retried, cancelled) becomes one fixed-size
//     record without pointers, written into the shard's ring (eventRing) at its end: chunks
//     of eventChunk records, grown while the process's budget (Config.TaskEvents) lasts, then
//     overwritten oldest first. Function names and (node, worker) pairs are interned per shard
//     (a pair's entry is reused once the ring has overwritten the records that use it: a
//     process calling actor after actor keeps the places of its kept records only);
//     error messages and the producer → consumer edges (a task that used another's result)
//     have rings of their own;
//   - a task or actor call that fails as it is submitted (an unknown function, resources
//     no node has, a dead actor), before its shard ever sees it, is sent to its shard
//     (submitFailed), which writes its FAILED record the same way: only a failed
//     submission pays for the message;
//   - a query (Core.Tasks) is a message to every shard, which scans its live tasks and its
//     ring newest first and answers with what matched, at most the query's limit;
//   - each shard also counts the attempts that ended, by function and state, in an array of
//     its own (ended, one increment per record, on memory no other core writes): a counts
//     query (TaskQuery.Counts, what Prometheus metrics read) adds those to a scan of the
//     live tasks only, so it costs O(live tasks + functions), not O(records), and counts
//     what retention has dropped too.
//
// Nothing is written to the GCS: a process serves its records on demand (package
// internal/assembly/taskstate gathers them from a job's processes).

// DefaultTaskEvents is how many task records a process keeps by default: a job of a
// million tasks submitted by one driver keeps them all (88 bytes a record: about 92 MB).
const DefaultTaskEvents = 1 << 20

// eventChunk is how many records a ring allocates at a time.
const eventChunk = 4096

// maxEventErrors bounds the error messages a shard keeps (failures are rare; a message can
// be long).
const maxEventErrors = 4096

// The states of a task (Ray's names, util/state/common.py TaskStatus).
const (
	StatePendingArgs  = "PENDING_ARGS_AVAIL"      // waiting for its arguments
	StatePendingNode  = "PENDING_NODE_ASSIGNMENT" // waiting for a node and a worker lease
	StateRunning      = "RUNNING"                 // pushed to a worker (running, or queued behind the lease's running task)
	StateFinished     = "FINISHED"
	StateFailed       = "FAILED"
	StateCancelled    = "CANCELLED"
	StateRetried      = "FAILED_RETRIED" // an attempt that failed and was retried (one record per attempt)
	stateCodeNone     = 0
	stateCodeFinished = 1
	stateCodeFailed   = 2
	stateCodeCancel   = 3
	stateCodeRetried  = 4
)

var stateNames = [...]string{"", StateFinished, StateFailed, StateCancelled, StateRetried}

// Ended reports whether state is that of an attempt that ended (FINISHED, FAILED,
// CANCELLED, FAILED_RETRIED), not of a live task.
func Ended(state string) bool {
	return state != "" && slices.Contains(stateNames[1:], state)
}

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// clock is a wall clock read cheaply: the monotonic clock plus the offset to wall time
// taken at start (records are compared across processes by wall time).
type clock struct{ base int64 }

func newClock() clock { return clock{base: time.Now().UnixNano() - nanotime()} }

func (c clock) now() int64 { return c.base + nanotime() }

// at is the clock's time n (a now()) as a time.Time. The times an actor caller compares
// (when a call was sent, the tick that looks for stale ones: actor.go) all come from the
// clock, so they move with the monotonic clock, and a call's send costs one clock read
// instead of time.Now's two.
func (c clock) at(n int64) time.Time { return time.Unix(0, n) }

// eventRec is one ended attempt of a task or actor call. No pointers: a ring of a million
// costs the collector nothing to scan.
type eventRec struct {
	tid                                 ids.TaskID
	submit, ready, dispatch, start, end int64  // unix nanoseconds; 0: not known
	logStart, logEnd                    int64  // the attempt's output in its worker's log (TaskResult.log_start, log_end)
	fn                                  uint32 // shard.ev.fns
	where                               uint32 // shard.ev.wheres (0: none)
	attempt                             uint16
	inc                                 uint16 // an actor call's: the actor's incarnation it was last sent to (saturates)
	state                               uint8
	errKind                             uint8
	actor                               bool
}

// evTimes are a live task's times (in its pending), and where its attempt ran once its
// result is in.
type evTimes struct {
	submit, ready, dispatch, start int64
	where                          uint32
	// inc: an actor call's, the incarnation of its actor it was last sent to (flushCaller):
	// a call resent to a newer incarnation after a restart ran there (incOf: saturates).
	inc uint16
	// rides: the attempt was sent to its node because a lease of its shard there had room
	// for it, not placed (shard.leaseRoom), so the cluster view does not count it. Not a
	// time: it sits in this struct's padding, which keeps pending in its size class.
	rides bool
}

// ring is a shard's chunked ring of T: it grows a chunk at a time while budget allows, then
// overwrites its oldest entries.
type ring[T any] struct {
	chunks [][]T
	n      uint64 // entries ever written
	fixed  bool   // no more growth: wrap
	budget *atomic.Int64
}

func (r *ring[T]) capacity() uint64 { return uint64(len(r.chunks)) * eventChunk }

// next returns the slot of a new entry (nil: recording is off).
func (r *ring[T]) next() *T {
	c := r.capacity()
	if r.n == c && !r.fixed {
		if r.budget != nil && r.budget.Add(-eventChunk) >= 0 {
			r.chunks = append(r.chunks, make([]T, eventChunk))
			c += eventChunk
		} else {
			if r.budget != nil {
				r.budget.Add(eventChunk)
			}
			r.fixed = true
		}
	}
	if c == 0 {
		return nil
	}
	i := r.n % c
	r.n++
	return &r.chunks[i/eventChunk][i%eventChunk]
}

// oldest is the index of the oldest entry kept.
func (r *ring[T]) oldest() uint64 {
	if c := r.capacity(); r.n > c {
		return r.n - c
	}
	return 0
}

// at returns entry i (oldest() <= i < n).
func (r *ring[T]) at(i uint64) *T {
	c := r.capacity()
	j := i % c
	return &r.chunks[j/eventChunk][j%eventChunk]
}

// edge: consumer used producer's result (a ref argument).
type edge struct{ consumer, producer ids.TaskID }

type evError struct {
	rec uint64 // the record's index
	msg string
}

// where is an interned (node, worker) pair. last bounds the records that use it: each
// has an index below last (a lookup sets it past the record about to be written; the
// entry evResult keeps at hand, lastWhere, gets it when evResult moves to another, so a
// record costs no write here). Once the ring has overwritten every record below last,
// nothing uses the entry and its index is reused (shardEvents.reclaim): the table holds
// what the kept records use, not every worker and actor this process ever called.
type where struct {
	node, worker string
	last         uint64
}

// minWhereScan is how large the where table grows before a look for unused entries.
const minWhereScan = 1024

// shardEvents is a shard's task history (its loop's only).
type shardEvents struct {
	on      bool
	now     int64 // the clock read for the message being handled (0: none yet)
	recs    ring[eventRec]
	edges   ring[edge]
	errs    []evError // the newest maxEventErrors, in record order
	fns     []string
	ended   [][len(stateNames)]uint64 // by fn index, then state code: attempts ever ended
	fnIdx   map[string]uint32
	lastFn  string
	lastFnI uint32
	wheres  []where
	whereOf map[string]uint32 // by worker (a worker PID's ID or an actor's ID)
	// freeWh: indexes of wheres no kept record uses (reclaim), reused first; scanWh: the
	// table's length at which reclaim looks again
	freeWh []uint32
	scanWh int
	// the worker PID last looked up, and its index: a lease's results come together
	lastPID   *actor.PID
	lastWhere uint32
}

func (e *shardEvents) init(budget *atomic.Int64) {
	e.on = budget != nil
	e.recs.budget, e.edges.budget = budget, budget
	e.fns, e.fnIdx = []string{""}, map[string]uint32{"": 0}
	e.wheres, e.whereOf = []where{{}}, map[string]uint32{"": 0}
}

func (e *shardEvents) fn(name string) uint32 {
	if name == e.lastFn {
		return e.lastFnI
	}
	i, ok := e.fnIdx[name]
	if !ok {
		i = uint32(len(e.fns))
		e.fns = append(e.fns, name)
		e.fnIdx[name] = i
	}
	e.lastFn, e.lastFnI = name, i
	return i
}

func (e *shardEvents) where(node, worker string) uint32 {
	if worker == "" && node == "" {
		return 0
	}
	i, ok := e.whereOf[worker]
	if !ok || e.wheres[i].node != node {
		if len(e.freeWh) == 0 && len(e.wheres) >= max(e.scanWh, minWhereScan) {
			e.reclaim()
		}
		w := where{node: node, worker: worker}
		if n := len(e.freeWh); n > 0 {
			i = e.freeWh[n-1]
			e.freeWh = e.freeWh[:n-1]
			e.wheres[i] = w
		} else {
			i = uint32(len(e.wheres))
			e.wheres = append(e.wheres, w)
		}
		e.whereOf[worker] = i
	}
	e.keepWhere(i)
	return i
}

// keepWhere marks where i used by the records written so far and the one about to be.
func (e *shardEvents) keepWhere(i uint32) {
	e.wheres[i].last = max(e.wheres[i].last, e.recs.n+1)
}

// reclaim frees the wheres that no kept record uses: their records were overwritten. It
// looks again when the table has doubled if it found less than a quarter free, so a
// lookup costs O(1) amortized.
func (e *shardEvents) reclaim() {
	oldest := e.recs.oldest()
	for i := 1; i < len(e.wheres); i++ {
		w := &e.wheres[i]
		if w.last > oldest || uint32(i) == e.lastWhere || w.worker == "" && w.node == "" {
			continue // in use, at hand, or already free
		}
		if j, ok := e.whereOf[w.worker]; ok && j == uint32(i) {
			delete(e.whereOf, w.worker)
		}
		*w = where{}
		e.freeWh = append(e.freeWh, uint32(i))
	}
	e.scanWh = len(e.wheres)
	if len(e.freeWh) < len(e.wheres)/4 {
		e.scanWh = 2 * len(e.wheres)
	}
}

// evNow is the time of the message being handled (one clock read per message).
func (s *shard) evNow() int64 {
	if s.ev.now == 0 {
		s.ev.now = s.c.clock.now()
	}
	return s.ev.now
}

// evResult notes where p's attempt ran and when it started, from its result r (before
// the lease forgets the worker).
func (s *shard) evResult(p *pending, r *pb.TaskResult) {
	e := &s.ev
	if r.RunNanos > 0 {
		p.ev.start = s.evNow() - r.RunNanos
	}
	if p.worker != nil {
		if p.worker == e.lastPID {
			p.ev.where = e.lastWhere
			return
		}
		node := p.node
		if node == "" {
			node = s.c.cfg.Node
		}
		if e.lastWhere != 0 {
			e.keepWhere(e.lastWhere) // no longer at hand: its records are bounded now
		}
		p.ev.where = e.where(string(node), p.worker.Id)
		e.lastPID, e.lastWhere = p.worker, p.ev.where
	}
}

// evEnded writes the record of p's last attempt, which ended with r.
func (s *shard) evEnded(p *pending, r *pb.TaskResult) { s.evRecord(p, r, endState(r)) }

// endState is the state code of an attempt that ended with r.
func endState(r *pb.TaskResult) uint8 {
	state := uint8(stateCodeFinished)
	if r.Error != nil {
		state = stateCodeFailed
		if r.Error.Kind == pb.ErrorInfo_CANCELLED {
			state = stateCodeCancel
		}
	}
	return state
}

// evRecord writes the record of p's attempt that ended with r (state: a stateCode) and
// resets p's times for a next attempt.
func (s *shard) evRecord(p *pending, r *pb.TaskResult, state uint8) {
	s.evRecordAt(p, r, state, s.evNow())
}

// evRecordAt is evRecord of an attempt that ended at end (unix nanoseconds).
func (s *shard) evRecordAt(p *pending, r *pb.TaskResult, state uint8, end int64) {
	e := &s.ev
	fn := e.fn(p.spec.Function)
	for int(fn) >= len(e.ended) {
		e.ended = append(e.ended, [len(stateNames)]uint64{})
	}
	e.ended[fn][state]++
	rec := e.recs.next()
	if rec == nil {
		return
	}
	idx := e.recs.n - 1
	*rec = eventRec{tid: p.tid, submit: p.ev.submit, ready: p.ev.ready, dispatch: p.ev.dispatch, start: p.ev.start, end: end,
		logStart: r.LogStart, logEnd: r.LogEnd, fn: fn, where: p.ev.where, attempt: uint16(p.spec.Attempt), state: state, actor: p.actor != nil}
	if p.actor != nil {
		rec.where = e.where("", p.actor.hex)
		rec.inc = p.ev.inc
	}
	p.ev.dispatch, p.ev.start, p.ev.where = 0, 0, 0
	if r.Error != nil {
		rec.errKind = uint8(r.Error.Kind)
		if len(e.errs) >= maxEventErrors {
			copy(e.errs, e.errs[1:])
			e.errs = e.errs[:len(e.errs)-1]
		}
		e.errs = append(e.errs, evError{rec: idx, msg: r.Error.Message})
	}
	if state != stateCodeRetried {
		for _, a := range p.argRefs {
			if ed := e.edges.next(); ed != nil {
				*ed = edge{consumer: p.tid, producer: a.Task()}
			}
		}
	}
}

// submitFailed: p failed as it was submitted, with info (submitFailure).
type submitFailed struct {
	p    *pending
	info *pb.ErrorInfo
}

// submitFailure records p, a task or actor call that failed as it was submitted (an
// unknown function, resources no node has, a dead actor ...), as one FAILED attempt that
// was submitted and ended now: its shard writes the record (submitFailed), as it does
// for the tasks that fail later. Only a failed submission pays for this.
func (c *Core) submitFailure(p *pending, fn string, info *pb.ErrorInfo) {
	if c.evBudget == nil {
		return
	}
	p.spec.Function = fn
	p.ev.submit = c.clock.now()
	c.shardOf(p.tid).send(submitFailed{p: p, info: info})
}

// maxInc is the largest incarnation a record keeps (an actor restarted more often shows
// this one).
const maxInc = 1<<16 - 1

// errorOf returns the error message of record idx ("" if not kept).
func (e *shardEvents) errorOf(idx uint64) string {
	i := sort.Search(len(e.errs), func(i int) bool { return e.errs[i].rec >= idx })
	if i < len(e.errs) && e.errs[i].rec == idx {
		return e.errs[i].msg
	}
	return ""
}

// TaskQuery selects task records. Empty fields match everything.
type TaskQuery struct {
	State    string `json:"state,omitempty"`    // one of the State constants
	Function string `json:"function,omitempty"` // the function's registered name (or Class.Method)
	Node     string `json:"node,omitempty"`     // node ID (a prefix of at least 6 characters will do); an actor call's is its incarnation's node (Core.actorNodes)
	TaskID   string `json:"task_id,omitempty"`  // hex task ID, or a prefix of it
	// Worker is the worker grain a task ran in, or an actor's hex ID: that actor's calls.
	Worker string `json:"worker,omitempty"`
	// Limit is how many tasks to return, newest first (0: all).
	Limit int `json:"limit,omitempty"`
	// Edges asks for the producer → consumer edges among the tasks returned.
	Edges bool `json:"edges,omitempty"`
	// Summary asks for counts by function and state (of every match, whatever Limit).
	Summary bool `json:"summary,omitempty"`
	// Counts asks only for the summary, of every task this process ever owned: the attempts
	// that ended, from the shards' counters (retention does not drop them), and the live
	// tasks. The other fields are ignored; the answer has no Tasks, and Total is the sum of
	// the counts. What metrics read: it costs O(live tasks), not O(records).
	Counts bool `json:"counts,omitempty"`
}

// TaskEvent is one task attempt as the state API shows it. Times are unix nanoseconds
// (0: not known). Started is the owner's estimate: the time the result arrived minus how
// long the worker ran the body; of an attempt still RUNNING, or one whose worker process
// died while it ran (no result came), the time it was pushed to its worker.
type TaskEvent struct {
	TaskID   string `json:"task_id"`
	Attempt  int    `json:"attempt"`
	Function string `json:"name"`
	State    string `json:"state"`
	Job      string `json:"job_id"`
	Actor    bool   `json:"actor_call,omitempty"`
	Node     string `json:"node,omitempty"`   // an actor call's: the node of its incarnation (Core.actorNodes)
	Worker   string `json:"worker,omitempty"` // the worker grain, or the actor's ID for a call
	// Incarnation is an actor call's: the incarnation of its actor (1 first, one more per
	// restart; 0 not sent yet) it was last sent to, which ran it (a call in flight when its actor restarted
	// is resent to, or replayed by, the next one). Node is that incarnation's node.
	Incarnation int    `json:"actor_incarnation,omitempty"`
	Owner       string `json:"owner_node,omitempty"`
	Submitted   int64  `json:"submitted,omitempty"`
	Ready       int64  `json:"args_ready,omitempty"`
	Dispatched  int64  `json:"dispatched,omitempty"`
	Started     int64  `json:"started,omitempty"`
	Ended       int64  `json:"ended,omitempty"`
	ErrorKind   string `json:"error_type,omitempty"`
	Error       string `json:"error,omitempty"`
	// LogStart and LogEnd delimit the attempt's output in its worker process's log (byte
	// offsets; both 0: not known, for a task that has not ended or a process that does
	// not log to a file). Tasks that ran at the same time in that process (a worker process
	// runs its job's tasks side by side) wrote into the same range.
	LogStart int64 `json:"log_start,omitempty"`
	LogEnd   int64 `json:"log_end,omitempty"`
}

// Latest is the last time known of the event (for newest-first order).
func (t *TaskEvent) Latest() int64 {
	return max(t.Ended, t.Started, t.Dispatched, t.Ready, t.Submitted)
}

// TaskEdge says Consumer used Producer's result.
type TaskEdge struct {
	Producer string `json:"producer"`
	Consumer string `json:"consumer"`
}

// TaskCount is how many matching tasks have one function and state.
type TaskCount struct {
	Function string `json:"name"`
	State    string `json:"state"`
	Count    int    `json:"count"`
}

// TaskReport is a query's answer.
type TaskReport struct {
	Tasks   []TaskEvent `json:"tasks"`
	Total   int         `json:"total"` // matches, whatever Limit
	Edges   []TaskEdge  `json:"edges,omitempty"`
	Summary []TaskCount `json:"summary,omitempty"`
	// Dropped is how many records this process no longer keeps (its retention was reached).
	Dropped int64 `json:"dropped,omitempty"`
}

// taskQuery is a shard's query message.
type taskQuery struct {
	q     *TaskQuery
	reply chan<- TaskReport
	// actorNodes: with q.Node, the node of each incarnation of each actor this process
	// called, resolved outside the shards (the actor table may need a GCS read).
	actorNodes map[actorInc]string
}

// actorInc names an incarnation of an actor (by the actor's hex ID).
type actorInc struct {
	hex string
	inc uint16
}

func incOf(inc uint64) uint16 { return uint16(min(inc, maxInc)) }

// Tasks answers q from every shard of this runtime: the newest q.Limit matches, newest
// first, and the number of matches.
func (c *Core) Tasks(ctx context.Context, q TaskQuery) (TaskReport, error) {
	reply := make(chan TaskReport, len(c.shards))
	var actorNodes map[actorInc]string
	if q.Node != "" {
		actorNodes = c.calledActorNodes()
	}
	for _, s := range c.shards {
		s.send(taskQuery{q: &q, reply: reply, actorNodes: actorNodes})
	}
	var out TaskReport
	counts := map[[2]string]int{}
	for range c.shards {
		select {
		case r := <-reply:
			out.Tasks = append(out.Tasks, r.Tasks...)
			out.Total += r.Total
			out.Edges = append(out.Edges, r.Edges...)
			out.Dropped += r.Dropped
			for _, tc := range r.Summary {
				counts[[2]string{tc.Function, tc.State}] += tc.Count
			}
		case <-ctx.Done():
			return TaskReport{}, ctx.Err()
		case <-c.closed:
			return TaskReport{}, ErrShutdown
		}
	}
	SortNewest(out.Tasks)
	if q.Limit > 0 && len(out.Tasks) > q.Limit {
		out.Tasks = out.Tasks[:q.Limit]
	}
	if q.Summary || q.Counts {
		out.Summary = SummaryOf(counts)
	}
	c.actorNodes(out.Tasks)
	return out, nil
}

// actorNodes fills in the node of actor calls' events, which their records leave out (a
// call's result does not say where it ran, and the shard that records it must not wait
// for the actor table): the node of the incarnation the call was sent to (Incarnation),
// as this process saw it (actorIncNode). Done once per query, outside the shards, once
// per incarnation.
func (c *Core) actorNodes(evs []TaskEvent) {
	if c.cfg.Actors == nil || c.cfg.Actors.Info == nil {
		return
	}
	nodes := map[actorInc]string{}
	for i := range evs {
		e := &evs[i]
		if !e.Actor || e.Node != "" || e.Worker == "" {
			continue
		}
		k := actorInc{e.Worker, uint16(e.Incarnation)}
		n, ok := nodes[k]
		if !ok {
			n = c.actorIncNode(k)
			nodes[k] = n
		}
		e.Node = n
	}
}

// actorIncNode is the node of an incarnation of an actor: the actor table's, as this
// process last saw it, when that is the incarnation and names one; else the node this
// process's callers of the actor noted for it (actorCaller.noteNode), or its forgotten
// callers did (goneNodes); "" when none knows it (a call is not shown on the node of
// another incarnation).
func (c *Core) actorIncNode(k actorInc) string {
	info, found := c.cfg.Actors.Info(k.hex)
	if found && incOf(info.GetIncarnation()) == k.inc && info.GetNode() != "" {
		return info.GetNode() // (a dead actor's record names no node)
	}
	id, err := ids.ParseActorID(k.hex)
	if err != nil {
		return ""
	}
	for _, ac := range c.callersOf(id) {
		ac.mu.Lock()
		n := ac.nodeOf(k.inc)
		ac.mu.Unlock()
		if n != "" {
			return n
		}
	}
	return c.gone.node(k)
}

// calledActorNodes maps the incarnations of the actors this process called to their
// nodes (actorIncNode): what actorNodes shows, so that a query's node filter matches
// actor calls by the node they show.
func (c *Core) calledActorNodes() map[actorInc]string {
	out := map[actorInc]string{}
	if c.cfg.Actors == nil || c.cfg.Actors.Info == nil {
		return out
	}
	c.callers.Range(func(_, v any) bool {
		ac := v.(*actorCaller)
		ac.mu.Lock()
		for _, in := range ac.incNodes {
			out[actorInc{ac.hex, in.inc}] = in.node
		}
		ac.mu.Unlock()
		if info, found := c.cfg.Actors.Info(ac.hex); found && info.GetNode() != "" {
			out[actorInc{ac.hex, incOf(info.GetIncarnation())}] = info.GetNode()
		}
		return true
	})
	c.gone.addTo(out)
	return out
}

// NewerThan is SortNewest's order: a comes before b.
func NewerThan(a, b *TaskEvent) bool {
	x, y := a.Latest(), b.Latest()
	if x != y {
		return x > y
	}
	if a.TaskID != b.TaskID {
		return a.TaskID < b.TaskID
	}
	return a.Attempt > b.Attempt
}

// SortNewest sorts events newest first (ties by task ID, then attempt). It sorts an
// index by each event's latest time, then moves each event once: an event is ~230 bytes,
// and sorting the events themselves moved them O(n log n) times (a third of a 100,000-task
// timeline's CPU in rayctl).
func SortNewest(ev []TaskEvent) {
	if len(ev) < 2 {
		return
	}
	type key struct {
		latest int64
		i      int32
	}
	keys := make([]key, len(ev))
	for i := range ev {
		keys[i] = key{ev[i].Latest(), int32(i)}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.latest != b.latest {
			return cmp.Compare(b.latest, a.latest)
		}
		x, y := &ev[a.i], &ev[b.i]
		if c := strings.Compare(x.TaskID, y.TaskID); c != 0 {
			return c
		}
		return cmp.Compare(y.Attempt, x.Attempt)
	})
	sorted := make([]TaskEvent, len(ev))
	for i, k := range keys {
		sorted[i] = ev[k.i]
	}
	copy(ev, sorted)
}

// SummaryOf turns counts by (function, state) into a sorted list.
func SummaryOf(counts map[[2]string]int) []TaskCount {
	out := make([]TaskCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, TaskCount{Function: k[0], State: k[1], Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Function != out[j].Function {
			return out[i].Function < out[j].Function
		}
		return out[i].State < out[j].State
	})
	return out
}

// matcher is a query compiled against one shard's interned names.
type matcher struct {
	q      *TaskQuery
	fnOK   []bool // by fn index (nil: any)
	whOK   []bool // by where index (nil: any); false for an actor's (actorOK decides)
	wkOK   []bool // by where index: its worker is q.Worker (nil: any)
	tidHex string
	// actorNodes: the node of each incarnation of the actors called (with q.Node)
	actorNodes map[actorInc]string
}

func (s *shard) compile(q *TaskQuery, actorNodes map[actorInc]string) matcher {
	e := &s.ev
	m := matcher{q: q, tidHex: strings.ToLower(q.TaskID), actorNodes: actorNodes}
	if q.Function != "" {
		m.fnOK = make([]bool, len(e.fns))
		for i, f := range e.fns {
			m.fnOK[i] = f == q.Function
		}
	}
	if q.Worker != "" {
		m.wkOK = make([]bool, len(e.wheres))
		for i, w := range e.wheres {
			m.wkOK[i] = w.worker == q.Worker
		}
	}
	if q.Node != "" {
		m.whOK = make([]bool, len(e.wheres))
		for i, w := range e.wheres {
			m.whOK[i] = w.node != "" && NodeMatches(w.node, q.Node)
		}
	}
	return m
}

// NodeMatches is the rule for TaskQuery.Node: node is want, or want is a prefix of node of at
// least 6 characters (as `rayctl list --filter node_id=` takes a short ID).
func NodeMatches(node, want string) bool {
	return node == want || (len(want) >= 6 && strings.HasPrefix(node, want))
}

// where matches a record's place: a task's node, or an actor call's incarnation's.
func (m *matcher) where(e *shardEvents, rec *eventRec) bool {
	if m.wkOK != nil && !m.wkOK[rec.where] {
		return false
	}
	if m.whOK == nil || m.whOK[rec.where] {
		return true
	}
	return rec.actor && m.actorOK(e.wheres[rec.where].worker, rec.inc)
}

func (m *matcher) actorOK(hex string, inc uint16) bool {
	return NodeMatches(m.actorNodes[actorInc{hex, inc}], m.q.Node)
}

func (m *matcher) tid(t ids.TaskID) bool {
	if m.tidHex == "" {
		return true
	}
	h := t.String()
	return h == m.tidHex || strings.HasPrefix(h, m.tidHex)
}

// counts answers a counts query (TaskQuery.Counts): the ended attempts' counters and the
// live tasks by state.
func (s *shard) counts() TaskReport {
	e := &s.ev
	counts := map[[2]string]int{}
	for fn, byState := range e.ended {
		for st, n := range byState {
			if n > 0 {
				counts[[2]string{e.fns[fn], stateNames[st]}] += int(n)
			}
		}
	}
	for _, p := range s.tasks {
		if !p.finished {
			counts[[2]string{p.spec.Function, s.liveState(p)}]++
		}
	}
	var out TaskReport
	for _, n := range counts {
		out.Total += n
	}
	out.Summary = SummaryOf(counts)
	return out
}

// answer handles a query: live tasks first, then the ring newest first.
func (s *shard) answer(q *TaskQuery, actorNodes map[actorInc]string) TaskReport {
	if q.Counts {
		return s.counts()
	}
	e := &s.ev
	m := s.compile(q, actorNodes)
	var out TaskReport
	var counts map[[2]string]int
	if q.Summary {
		counts = map[[2]string]int{}
	}
	limit := q.Limit
	keep := func() bool { return limit <= 0 || len(out.Tasks) < limit }
	var live []*pending
	for _, p := range s.tasks {
		if p.finished {
			continue
		}
		st := s.liveState(p)
		if (q.State != "" && q.State != st) || (q.Function != "" && p.spec.Function != q.Function) || !m.tid(p.tid) {
			continue
		}
		if q.Worker != "" && !((p.worker != nil && p.worker.Id == q.Worker) || (p.worker == nil && p.actor != nil && p.actor.hex == q.Worker)) {
			continue
		}
		if q.Node != "" {
			node := string(s.liveNode(p))
			if p.actor != nil {
				if !m.actorOK(p.actor.hex, p.ev.inc) {
					continue
				}
			} else if !NodeMatches(node, q.Node) {
				continue
			}
		}
		out.Total++
		if counts != nil {
			counts[[2]string{p.spec.Function, st}]++
		}
		live = append(live, p)
	}
	// The newest live tasks (by their last time), then the records newest first: a live
	// task's last change is mostly newer than any ended attempt's.
	if limit > 0 && len(live) > limit {
		last := func(p *pending) int64 { return max(p.ev.dispatch, p.ev.ready, p.ev.submit) }
		sort.Slice(live, func(i, j int) bool { return last(live[i]) > last(live[j]) })
		live = live[:limit]
	}
	for _, p := range live {
		ev := TaskEvent{TaskID: p.tid.String(), Attempt: int(p.spec.Attempt), Function: p.spec.Function, State: s.liveState(p),
			Job: string(s.c.cfg.Job), Actor: p.actor != nil, Node: string(s.liveNode(p)), Owner: string(s.c.cfg.Node),
			Submitted: p.ev.submit, Ready: p.ev.ready, Dispatched: p.ev.dispatch}
		if ev.State == StateRunning {
			// Running since it was pushed to its worker (or sent to its actor), as far as
			// the owner knows: Ray's start_time_ms of a RUNNING task.
			ev.Started = p.ev.dispatch
		}
		if p.worker != nil {
			ev.Worker = p.worker.Id
		} else if p.actor != nil {
			ev.Worker, ev.Incarnation = p.actor.hex, int(p.ev.inc)
		}
		out.Tasks = append(out.Tasks, ev)
	}
	SortNewest(out.Tasks)
	var want map[ids.TaskID]bool
	if q.Edges {
		want = map[ids.TaskID]bool{}
	}
	r := &e.recs
	out.Dropped = int64(r.oldest())
	for i := r.n; i > r.oldest(); i-- {
		rec := r.at(i - 1)
		st := stateNames[rec.state]
		if (q.State != "" && q.State != st) || (m.fnOK != nil && !m.fnOK[rec.fn]) || !m.where(e, rec) || !m.tid(rec.tid) {
			continue
		}
		out.Total++
		if counts != nil {
			counts[[2]string{e.fns[rec.fn], st}]++
		}
		if !keep() {
			continue
		}
		w := e.wheres[rec.where]
		ev := TaskEvent{TaskID: rec.tid.String(), Attempt: int(rec.attempt), Function: e.fns[rec.fn], State: st,
			Job: string(s.c.cfg.Job), Actor: rec.actor, Node: w.node, Worker: w.worker, Owner: string(s.c.cfg.Node),
			Submitted: rec.submit, Ready: rec.ready, Dispatched: rec.dispatch, Started: rec.start, Ended: rec.end,
			LogStart: rec.logStart, LogEnd: rec.logEnd}
		if rec.actor {
			ev.Incarnation = int(rec.inc)
		}
		if rec.errKind != 0 || rec.state == stateCodeFailed || rec.state == stateCodeRetried || rec.state == stateCodeCancel {
			ev.ErrorKind = pb.ErrorInfo_Kind(rec.errKind).String()
			ev.Error = e.errorOf(i - 1)
		}
		out.Tasks = append(out.Tasks, ev)
		if want != nil {
			want[rec.tid] = true
		}
	}
	if want != nil {
		for i := e.edges.n; i > e.edges.oldest(); i-- {
			ed := e.edges.at(i - 1)
			if want[ed.consumer] {
				out.Edges = append(out.Edges, TaskEdge{Producer: ed.producer.String(), Consumer: ed.consumer.String()})
			}
		}
	}
	if counts != nil {
		out.Summary = SummaryOf(counts)
	}
	return out
}

// liveNode is where a task that has not ended was sent ("" while it waits).
func (s *shard) liveNode(p *pending) ids.NodeID {
	if p.node == "" && p.worker != nil {
		return s.c.cfg.Node
	}
	return p.node
}

// liveState is the state of a task that has not ended.
func (s *shard) liveState(p *pending) string {
	switch {
	case p.worker != nil || (p.actor != nil && p.dispatched):
		return StateRunning
	case !p.dispatched && p.waiting.Load() > 0:
		return StatePendingArgs
	default:
		return StatePendingNode
	}
}

// String names a state code (tests).
func stateName(code uint8) string {
	if int(code) < len(stateNames) {
		return stateNames[code]
	}
	return fmt.Sprintf("state(%d)", code)
}
