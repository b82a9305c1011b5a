package actors

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/handoff"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/slab"
	"github.com/ray-go/ray/internal/base/spin"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/worker"
)

// maxHeld bounds the results the executor holds back before sending them.
const maxHeld = 64

// sendAfterRun is how long a call must run for its result (and those held before it) to
// go when it ends: batching saves a message per result, about a microsecond of CPU between
// the two sides, which is much for a sub-microsecond call and little for a longer one,
// whose caller (pipelining calls to keep the actor busy) must not wait for the calls
// queued behind it. Results of short calls go together once the oldest has waited
// holdMax (looked at when a call ends), maxHeld are held, or the queue is empty.
const (
	sendAfterRun = 5 * time.Microsecond
	holdMax      = 100 * time.Microsecond
)

// yieldAfterRun is how long a call must run for the executor to yield its P before the
// next one (loop): long enough that the yield, a trip through the scheduler when nothing
// else waits, costs the actor little against the call.
const yieldAfterRun = sendAfterRun

// spinAfterRun is how long a call must run for the executor to poll for the next one
// before it blocks (idlePolicy).
const spinAfterRun = 2 * time.Microsecond

// idlePolicy decides how the executor waits for its next call once its queue is empty:
// poll for up to spin.For() (keeping its P, whose going idle and being woken again costs
// more than a short wait: package spin), or block at once. It polls after a call of
// spinAfterRun or more while its waits are short (spin.Policy): a caller that pipelines
// calls of some microseconds sends the next one within a few microseconds; an actor
// called now and then blocks at once after one wait that outlasted the poll. Calls
// shorter than spinAfterRun come from callers for whom the hand-off is cheap (the caller
// and the actor take turns on one P): the executor blocks at once.
type idlePolicy struct {
	lastRun time.Duration
	waits   spin.Policy
}

// ran records the run time of the call that just ended.
func (p *idlePolicy) ran(d time.Duration) { p.lastRun = d }

// polls reports whether the next wait polls first.
func (p *idlePolicy) polls() bool { return p.lastRun >= spinAfterRun && p.waits.Polls() }

// wait receives from signal, polling first when the policy says so (polls); after a call
// of spinAfterRun or more it measures the wait.
func (p *idlePolicy) wait(signal <-chan struct{}) {
	if p.lastRun < spinAfterRun {
		<-signal
		return
	}
	polls := p.polls()
	p.lastRun = 0
	if polls {
		if _, ok := spin.Recv(signal); ok {
			return
		}
	}
	start := spin.Start() // zero, measuring nothing, when polling is off
	<-signal
	p.waits.BlockedSince(start)
}

// execItem is a call (or skip) to run.
type execItem struct {
	entry *pb.ActorLogEntry
}

// executor runs an instance's calls on its own goroutine (DESIGN §2 rule 3: user code
// never runs in Receive): one at a time in log order, or up to conc at once for an actor
// with max concurrency > 1. Results go to their owners in batches; what ran is reported to
// the grain, in order, as doneBatch messages.
type executor struct {
	g *grain
	// class and inst are the grain's, given at start: the grain drops its own when it
	// stops (grain.stop), and the executor with its goroutines is then its last holder.
	class  *Class
	inst   any
	runner worker.Runner // for calls run concurrently (conc > 1)
	// single is runner for the calls run on the loop's goroutine, with results made
	// several per allocation (results: they go out in batches, and wait for their callers'
	// acknowledgements together).
	single  worker.Runner
	results slab.Slab[pb.TaskResult]
	tids    slab.Slab[ids.TaskID] // their task IDs (worker.ResultID)
	conc    int
	last    uint64 // highest log index run (the checkpoint position)

	mu    sync.Mutex
	queue []execItem
	spare []execItem // the loop's last batch given back (take): the next queue, without an allocation
	// batch is the loop's batch being run (take's last answer), for cancel to find a call
	// in; the loop only reads it, and take replaces it under mu.
	batch  []execItem
	closed bool
	signal chan struct{}

	// ckpt asks for a checkpoint before the next call (not after the queue: calls are
	// queued as fast as they are logged, and a checkpoint behind them would cover nothing
	// the queue does not already make durable).
	ckpt atomic.Bool

	// conc > 1
	sem chan struct{}
	wg  sync.WaitGroup

	// dones: what ran, for the grain, which takes it at the start of its next message
	// (grain.onDone) whatever that is; a doneBatch message wakes it only when the
	// reports must not wait for the next call (lazy false: the actor counts calls toward
	// its periodic checkpoints, or records results in its log) or maxHeld are waiting, so
	// an at-most-once actor's calls cost the grain no message of their own.
	dones handoff.Queue[done]
	lazy  bool

	// cancels: the calls (caller, seq) its callers cancelled that will not run (an
	// at-most-once actor's: cancel, grain.cancelQueued), guarded by mu; cancelN is its
	// length, the one load per call the loop pays while none is cancelled.
	cancels map[callKey]struct{}
	cancelN atomic.Int32
	// started is the log index of the call the loop has come to: stored before it looks
	// whether the call was cancelled (cancel decides against it whether a call of the
	// batch has started).
	started atomic.Uint64
}

// callKey names a call: its caller and sequence number.
type callKey struct {
	caller string
	seq    uint64
}

// maxCancels bounds executor.cancels (a cancel of a call that never comes stays).
const maxCancels = 1 << 12

// cancel takes back the call (caller, seq) if it has not started, and reports whether it
// did: the call will not run (the loop, reaching it, takes it out of cancels and reports
// it CANCELLED without sending that: takeCancel), so its caller may be answered now. A
// call the grain has accepted (pushed here) is taken back while it waits in the queue or
// in the loop's batch ahead of the call the loop has come to; one not accepted yet
// (waiting at the grain for a call before it, or not arrived) is always taken back, and
// skipped when it comes. false: it started or ran (accepted, and not waiting here), the
// executor stopped, or cancels is full.
//
// A call of the batch is decided against started: the loop stores the index of the call
// it comes to, then loads cancelN; cancel stores cancelN (with the cancel in the map),
// then loads started. Atomics are sequentially consistent, so either cancel sees that
// the loop came to the call, or the loop sees the cancel; when cancel sees it came to
// the call, the loop may or may not have seen the cancel, and whoever takes it out of
// the map first decides (takeCancel, under mu).
func (x *executor) cancel(caller string, seq uint64, accepted bool) bool {
	k := callKey{caller, seq}
	x.mu.Lock()
	if x.closed || len(x.cancels) >= maxCancels {
		x.mu.Unlock()
		return false
	}
	var index uint64 // in the loop's batch: the call's log index
	if accepted {
		queued := false
		for _, it := range x.queue {
			if e := it.entry; e != nil && e.Seq == seq && e.CallerId == caller {
				queued = true
				break
			}
		}
		if !queued {
			for _, it := range x.batch {
				if e := it.entry; e != nil && e.Seq == seq && e.CallerId == caller {
					index = e.Index
					break
				}
			}
			if index == 0 {
				x.mu.Unlock()
				return false // ran, or runs
			}
		}
	}
	if x.cancels == nil {
		x.cancels = make(map[callKey]struct{})
	}
	x.cancels[k] = struct{}{}
	x.cancelN.Store(int32(len(x.cancels)))
	x.mu.Unlock()
	if index == 0 || x.started.Load() < index {
		return true
	}
	// The loop came to it: taken back only if the loop took the cancel out first.
	return !x.takeCancel(caller, seq)
}

// takenBack is the loop's look, as it comes to call e, whether e was taken back
// (cancel), which takes the cancel out: a load of cancelN while none is cancelled.
func (x *executor) takenBack(e *pb.ActorLogEntry) bool {
	x.started.Store(e.Index) // before the load (cancel)
	return x.cancelN.Load() > 0 && x.takeCancel(e.CallerId, e.Seq)
}

// dropCancels forgets the cancels of caller's calls from seq from up to (not including)
// to: its caller finished them (ActorCall.First), and they will not come.
func (x *executor) dropCancels(caller string, from, to uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for k := range x.cancels {
		if k.caller == caller && k.seq >= from && k.seq < to {
			delete(x.cancels, k)
		}
	}
	if len(x.cancels) == 0 {
		x.cancels = nil
	}
	x.cancelN.Store(int32(len(x.cancels)))
}

// takeCancel reports whether (caller, seq) was cancelled, and forgets that.
func (x *executor) takeCancel(caller string, seq uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := callKey{caller, seq}
	if _, ok := x.cancels[k]; !ok {
		return false
	}
	delete(x.cancels, k)
	if len(x.cancels) == 0 {
		x.cancels = nil
	}
	x.cancelN.Store(int32(len(x.cancels)))
	return true
}

// cancelledMessage is the error message of an actor call cancelled while it waited at
// its actor.
const cancelledMessage = "actor call was cancelled before it ran: it was waiting at its actor behind earlier calls"

func newExecutor(g *grain, runner worker.Runner, conc int, last uint64, lazy bool) *executor {
	x := &executor{g: g, class: g.class, inst: g.inst, runner: runner, single: runner, results: slab.Slab[pb.TaskResult]{N: maxHeld}, tids: slab.Slab[ids.TaskID]{N: maxHeld}, conc: conc, last: last, signal: make(chan struct{}, 1)}
	x.lazy = lazy
	x.single.Results, x.single.IDs = &x.results, &x.tids
	if conc > 1 {
		x.sem = make(chan struct{}, conc)
	}
	return x
}

func (x *executor) push(it execItem) {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return
	}
	x.queue = append(x.queue, it)
	x.mu.Unlock()
	select {
	case x.signal <- struct{}{}:
	default:
	}
}

// checkpointSoon asks for a checkpoint before the next call.
func (x *executor) checkpointSoon() {
	x.ckpt.Store(true)
	select {
	case x.signal <- struct{}{}:
	default:
	}
}

func (x *executor) close() {
	x.mu.Lock()
	x.closed = true
	x.queue = nil
	x.mu.Unlock()
	select {
	case x.signal <- struct{}{}:
	default:
	}
}

// take returns the calls queued, and gives back prev, the batch take returned before
// (run): its array becomes the queue after next, so a caller's calls arriving one at a
// time cost no allocation each for the queue (a burst's bigger array is not kept).
func (x *executor) take(prev []execItem) ([]execItem, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	clear(prev) // under mu: cancel reads the batch
	if cap(prev) > 4*maxHeld {
		prev = nil
	}
	q := x.queue
	if len(q) > 0 {
		x.queue, x.spare = x.spare, nil
	} else {
		q = nil
	}
	x.batch = q
	if x.spare == nil && cap(prev) > 0 {
		x.spare = prev[:0]
	}
	return q, x.closed
}

// report queues what ran for the grain (before the callers get the results: a caller
// that gets its answer and calls again finds it known), and the checkpoints saved, in
// order, waking the grain if it must not wait for its next message (a checkpoint never
// waits).
func (x *executor) report(d []done) {
	if x.dones.Add(maxHeld, !x.lazy || d[len(d)-1].ckpt != nil, d...) {
		x.g.root.Send(x.g.self, &doneBatch{})
	}
}

// takeDone returns the reports queued so far; the grain hands the slice back with
// doneTaken once it has applied them.
func (x *executor) takeDone() []done { return x.dones.Take() }

// doneTaken gives back takeDone's slice for reuse.
func (x *executor) doneTaken(q []done) { x.dones.Release(q, 4*maxHeld) }

// outbox batches results per owner and done reports for the grain.
type outbox struct {
	report  func([]done)
	local   func(owner *pb.PID) func(seqs []uint64, rs []*pb.TaskResult) // Env.Local for this actor (nil: none)
	root    *actor.RootContext
	self    *actor.PID
	owners  []ownerResults
	done    []done
	pending int
	since   time.Duration // when the oldest held result was added (monoNow)
	// noEnd: the held results of calls that ran too short to read where their output ends
	// in the log (runCall); a flush reads it once for them all (logEnd, then logAt), so each
	// call has a bounded range (its output and that of the calls run since the last read),
	// at one read per flush, not per call (the loop's calls only).
	noEnd  []*pb.TaskResult
	logEnd func() int64
	logAt  *atomic.Int64
}

type ownerResults struct {
	owner   *pb.PID
	pid     *actor.PID
	results []*pb.TaskResult
	// local: the owner is a caller in this process (Env.Local), which takes its results
	// from the executor's goroutine; seqs are the results' calls.
	local func(seqs []uint64, rs []*pb.TaskResult)
	seqs  []uint64
}

// add holds call e's result res (nil: a skipped call); now is monoNow() at its end (the
// loop passes the time runCall read last, so a call costs no clock read here).
//
// It is the last to read e's spec, and takes it from e: the entry waits for the grain
// (a lazy executor reports only when the grain's next message comes), and is carved from
// a slab the grain holds, but a call's spec from a caller in this process is part of that
// caller's record of the call (internal/assembly/core's pending), which an entry holding
// it would keep alive: after the last calls of a burst, for as long as the actor is idle.
func (o *outbox) add(e *pb.ActorLogEntry, res *pb.TaskResult, now time.Duration) {
	spec := e.Spec
	e.Spec = nil
	o.done = append(o.done, done{entry: e, result: res})
	if o.pending == 0 {
		o.since = now
	}
	o.pending++
	if res == nil || spec == nil || spec.ResultTo() == nil {
		return
	}
	ow := spec.ResultTo()
	i := 0
	for i < len(o.owners) && (o.owners[i].owner.Address != ow.Address || o.owners[i].owner.Id != ow.Id) {
		i++
	}
	if i == len(o.owners) {
		b := ownerResults{owner: ow, pid: actor.NewPID(ow.Address, ow.Id)}
		if o.local != nil {
			b.local = o.local(ow)
		}
		o.owners = append(o.owners, b)
	}
	b := &o.owners[i]
	b.results = append(b.results, res)
	if b.local != nil {
		b.seqs = append(b.seqs, e.Seq)
	}
}

func (o *outbox) flush() {
	if len(o.noEnd) > 0 {
		end := o.logEnd()
		for _, r := range o.noEnd {
			r.LogEnd = max(end, r.LogStart)
		}
		if o.logAt != nil {
			o.logAt.Store(end)
		}
		clear(o.noEnd)
		o.noEnd = o.noEnd[:0]
	}
	// The grain learns what ran before the callers do: a caller that gets its answer and
	// calls again finds the result already known (and recorded with the next commit).
	if len(o.done) > 0 {
		o.report(o.done)
		clear(o.done)
		o.done = o.done[:0]
	}
	for i := range o.owners {
		b := &o.owners[i]
		if b.local != nil {
			// A caller in this process: it takes the results here, without a message.
			if len(b.results) > 0 {
				b.local(b.seqs, b.results)
			}
			clear(b.results)
			b.results, b.seqs = b.results[:0], b.seqs[:0]
			if cap(b.results) > 4*maxHeld {
				b.results, b.seqs = nil, nil // a burst's: not kept for good
			}
			continue
		}
		switch len(b.results) {
		case 0:
		case 1:
			o.root.Send(b.pid, b.results[0])
			// The slice did not leave: kept for the next flush (a call that runs long
			// sends its result alone, and costs no allocation for it).
			b.results[0] = nil
			b.results = b.results[:0]
		default:
			// One message each pb.BatchBytes of results, at most, each with a copy of its
			// run: b.results keeps its array for the next flush (one allocation per
			// batch, not the appends' growth from empty every time).
			pb.Split(b.results, pb.ResultBytes, pb.BatchBytes, func(run []*pb.TaskResult) {
				o.root.Send(b.pid, &pb.ResultBatch{Results: slices.Clone(run)})
			})
			clear(b.results)
			b.results = b.results[:0]
			if cap(b.results) > 4*maxHeld {
				b.results = nil // a burst's: not kept for good
			}
		}
	}
	o.pending = 0
}

func (x *executor) loop() {
	g := x.g
	ob := &outbox{report: x.report, root: g.root, self: g.self, logEnd: x.single.LogOffset, logAt: x.single.LogAt}
	if local := g.env.Local; local != nil {
		aid := g.aid
		ob.local = func(owner *pb.PID) func([]uint64, []*pb.TaskResult) { return local(owner, aid) }
	}
	var mu sync.Mutex // guards ob for conc > 1
	var items []execItem
	var methods methodCache // the loop's calls only
	var idle idlePolicy
	for {
		// signal alone, not a select with g.base.Done(): the grain cancels base only when it
		// stops, and then closes the executor, which signals (take reports closed). A
		// receive on one channel costs less than a select on two, once per call when the
		// actor's calls come one at a time.
		idle.wait(x.signal)
		for {
			var closed bool
			items, closed = x.take(items)
			if closed || g.base.Err() != nil {
				return
			}
			if len(items) == 0 {
				break
			}
			for _, it := range items {
				if g.base.Err() != nil {
					return
				}
				// A load first: the swap, a locked instruction, only when one is asked for.
				if x.ckpt.Load() && x.ckpt.CompareAndSwap(true, false) {
					x.runCheckpoint(ob, &mu)
				}
				e := it.entry
				x.last = max(x.last, e.Index)
				if x.takenBack(e) && !e.Skip {
					// Taken back (cancel): its caller was answered then (grain.cancelQueued);
					// the grain keeps the result, which does not go again (no spec).
					res := worker.Fail(e.Spec, pb.ErrorInfo_CANCELLED, cancelledMessage, "", x.single.Node)
					e.Spec = nil
					mu.Lock()
					ob.add(e, res, monoNow())
					mu.Unlock()
					continue
				}
				if e.Skip {
					mu.Lock()
					ob.add(e, nil, monoNow())
					mu.Unlock()
					continue
				}
				if x.conc == 1 {
					res, end := runCall(g.base, &x.single, &methods, g.contextFor(g.inc, g.info.Resources), x.class, x.inst, e.Spec)
					g.env.Stats.Calls.Add(g.slot, 1)
					if g.base.Err() != nil {
						return // stopped while it ran: the next incarnation answers
					}
					ob.add(e, res, end)
					if ob.logEnd != nil && res.LogEnd == 0 && res.RunNanos > 0 {
						ob.noEnd = append(ob.noEnd, res)
					}
					if ob.pending >= maxHeld || time.Duration(res.RunNanos) >= sendAfterRun || end-ob.since >= holdMax {
						ob.flush()
					}
					idle.ran(time.Duration(res.RunNanos))
					if time.Duration(res.RunNanos) >= yieldAfterRun {
						// Let the goroutines readied onto this P while the call ran, or by its
						// result, run before the next call: Go puts a goroutine a channel
						// wakes in the waker's run-next slot, and it runs only once this
						// goroutine blocks or yields (or after 10 ms, when the runtime
						// preempts it). With a P free elsewhere it is stolen from there
						// first; with every P busy (as many actors at work as cores) it
						// waits for every call queued here: a caller that pipelines calls,
						// woken by this result, sends the next ones only after them, and
						// its actors ran dry behind it (benchmarks/rl, 2 and 4 workers on
						// 2 cores: +23-29% with the yield at 100-step calls, +8-12% at
						// 1000 steps; 1 worker, with the other core idle, -2 to -9%).
						runtime.Gosched()
					}
					continue
				}
				x.sem <- struct{}{}
				x.wg.Add(1)
				go func() {
					defer func() { <-x.sem; x.wg.Done() }()
					res, end := runCall(g.base, &x.runner, nil, g.contextFor(g.inc, g.info.Resources), x.class, x.inst, e.Spec)
					g.env.Stats.Calls.Add(g.slot, 1)
					if g.base.Err() != nil {
						return // stopped while it ran: the next incarnation answers
					}
					mu.Lock()
					ob.add(e, res, end)
					ob.flush()
					mu.Unlock()
				}()
			}
		}
		mu.Lock()
		ob.flush()
		mu.Unlock()
		if x.ckpt.Load() && x.ckpt.CompareAndSwap(true, false) {
			x.runCheckpoint(ob, &mu)
		}
	}
}

// runCheckpoint waits for running calls, reports what ran, and saves the state.
func (x *executor) runCheckpoint(ob *outbox, mu *sync.Mutex) {
	x.wg.Wait()
	mu.Lock()
	ob.flush()
	mu.Unlock()
	x.checkpoint()
}

// checkpoint saves the instance's state after every call so far (none is running).
func (x *executor) checkpoint() {
	g := x.g
	state, err := func() (b []byte, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic in SaveCheckpoint: %v", p)
			}
		}()
		return x.class.Save(g.base, x.inst)
	}()
	// In the reports' queue, after what ran before it: the grain records its callers'
	// positions as of this checkpoint, not of calls that ran since.
	x.report([]done{{ckpt: &ckptSaved{index: x.last, state: state, err: err}}})
}

// monoStart and monoNow: a monotonic clock read once per call end (time.Since of a time
// with a monotonic reading reads the clock once; time.Now reads it twice, wall and
// monotonic).
var monoStart = time.Now()

func monoNow() time.Duration { return time.Since(monoStart) }

// methodCache is the method of the last call an executor's loop ran: a caller calling
// one method over and over finds it without a lookup in the class's methods (a string
// hash and a sync.Map read per call). A class's methods are never replaced (AddMethod),
// so a method found stays right.
type methodCache struct {
	name string
	m    *Method
}

// method finds method name of class, through mc (nil: no cache).
func (mc *methodCache) method(class *Class, name string) (*Method, bool) {
	if mc != nil && mc.m != nil && mc.name == name {
		return mc.m, true
	}
	m, ok := class.Method(name)
	if ok && mc != nil {
		mc.name, mc.m = name, m
	}
	return m, ok
}

// runCall runs one method call on inst, finding its method through mc (nil: none; the
// calls of one class only). end is monoNow() when it ended.
func runCall(base context.Context, r *worker.Runner, mc *methodCache, mk func(context.Context, *pb.TaskSpec) context.Context, class *Class, inst any, spec *pb.TaskSpec) (res *pb.TaskResult, end time.Duration) {
	m, ok := mc.method(class, spec.Function)
	if !ok {
		return worker.Fail(spec, pb.ErrorInfo_UNKNOWN_FUNCTION,
			fmt.Sprintf("actors: class %q has no method %q registered in the job's worker process on node %s%s", class.Name, spec.Function, r.Node, tasks.LateRegistration), "", r.Node), monoNow()
	}
	var logStart int64
	if r.LogOffset != nil {
		// Where the log ended at the last read: a call whose body ran under
		// worker.LogReadMin reads no end itself (the loop's next flush reads it once for
		// the results it holds, outbox.noEnd; a concurrent actor's call leaves it 0:
		// `rayctl logs` shows the process's log), so tiny calls cost no system call each;
		// a longer one reads it once.
		if r.LogAt != nil {
			logStart = r.LogAt.Load()
		}
		if logStart == 0 {
			logStart = r.LogOffset()
		}
	}
	start := monoNow()
	res = r.Run(base, mk(base, spec), spec, func(ctx context.Context, args [][]byte) ([]byte, error) {
		return m.Call(ctx, inst, args)
	})
	// How long the body ran: the caller's task record dates the call's start from it, as a
	// task's (internal/assembly/core, events.go); where its output is in the log, too.
	end = monoNow()
	res.RunNanos = int64(end - start)
	if r.LogOffset != nil {
		res.LogStart = logStart
		if time.Duration(res.RunNanos) >= worker.LogReadMin {
			res.LogEnd = r.LogOffset()
			if r.LogAt != nil {
				r.LogAt.Store(res.LogEnd)
			}
		}
	}
	return res, end
}
