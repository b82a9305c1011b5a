package actors

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"
	"unique"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/seqring"
	"github.com/ray-go/ray/internal/base/slab"
	"github.com/ray-go/ray/internal/base/stripe"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
	"github.com/ray-go/ray/tasks/worker"
)

// DefaultCheckpointEvery is how many calls a checkpointable, logged actor runs between
// automatic checkpoints when its creator did not say.
const DefaultCheckpointEvery = 1000

// checkpointLogBytes is how much method log a checkpointable, logged actor writes before it
// checkpoints, however few calls that was (large arguments log large entries).
const checkpointLogBytes = 8 << 20

// maxBatchBytes bounds one group commit of the method log (etcd takes 1.5 MiB a request).
const maxBatchBytes = 1 << 20

// maxCommitsInFlight is how many method log group commits may be in flight at once: calls
// that arrive during a commit need not wait for it to finish before theirs starts.
const maxCommitsInFlight = 4

// maxDeletesPerTxn bounds the log keys one truncation transaction deletes.
const maxDeletesPerTxn = 100

// Env is what an actor grain needs from its node.
type Env struct {
	Node  ids.NodeID
	Table *Table
	// Runner runs method bodies (arguments, panics, large results); its Root is set by
	// the grain.
	Runner worker.Runner
	// Context builds the context a method runs with (it carries the runtime so the method
	// can submit tasks, call actors and Get). actorID is the actor's (hex); incarnation is
	// the instance's: a call run again by a later incarnation (replay) must create tasks
	// and objects with new IDs. resources are what the actor holds (its record's), which
	// the runtime context reports.
	Context func(parent context.Context, spec *pb.TaskSpec, actorID string, incarnation uint64, resources []*pb.ResourceQty) context.Context
	// Raylet returns the node's scheduler, which holds the resources an actor asks for
	// while its instance lives (nil: resources are not held).
	Raylet func() *actor.PID
	// NodeResources (optional) returns the node's total resources and those free now,
	// ok false when they cannot be read: an instance whose resources are in use says so
	// in its record (lifecycle.Waiting).
	NodeResources func() (total, available sched.Resources, ok bool)
	// Local (optional) returns, for the owner of a call's result (TaskSpec.ResultTo) that
	// is a caller of actor in this process, the function that takes that caller's results
	// (nil: they go to owner as messages). The executor calls it on its own goroutine with
	// the results it holds for that owner (rs[i] the result of call seqs[i], in the order
	// the calls ran; the slices are the executor's, for the length of the call), instead
	// of a message to the caller's mailbox (one goroutine wake-up fewer per call): it must
	// not block, and a result it cannot take it sends to owner itself. The executor asks
	// once per owner it answers.
	Local  func(owner *pb.PID, actor ids.ActorID) func(seqs []uint64, rs []*pb.TaskResult)
	Logger *slog.Logger
	Stats  *Stats
}

// Validate checks that every required field is set.
func (e *Env) Validate() error {
	switch {
	case e.Table == nil || e.Table.Store == nil:
		return errors.New("actors: Env.Table is required")
	case e.Runner.Store == nil || e.Runner.Fetch == nil:
		return errors.New("actors: Env.Runner needs Store and Fetch")
	case e.Context == nil:
		return errors.New("actors: Env.Context is required")
	}
	return nil
}

// Stats counts what the actor grains of a node did. The counters are striped: each grain
// adds to its own stripe, so actors running calls on different cores share no cache line
// through them.
type Stats struct {
	Calls       stripe.Counter // method calls run (not counting replay)
	Replayed    stripe.Counter // logged calls run again to rebuild state after a restart
	Duplicates  stripe.Counter // calls received again and answered without running
	Commits     stripe.Counter // method log group commits
	Logged      stripe.Counter // calls written to the method log
	Checkpoints stripe.Counter
	Divergent   stripe.Counter // replayed calls whose result differs from the recorded one
	Restored    stripe.Counter // instances brought back from a checkpoint and/or the log
	// NoSpace counts calls failed, not run, because their method log write found the
	// GCS at its space quota (gcs.ErrNoSpace).
	NoSpace stripe.Counter
}

// Props returns the props of the actor grain kind.
func Props(env Env) *actor.Props {
	if env.Logger == nil {
		env.Logger = slog.Default()
	}
	if env.Stats == nil {
		env.Stats = &Stats{}
	}
	shared := &env // one copy for every grain (issue 21: 144 bytes less per actor)
	return actor.PropsFromProducer(func() actor.Actor { return &grain{env: shared, slot: stripe.NextSlot()} })
}

// callerState is what an instance knows of one caller.
type callerState struct {
	next     uint64                      // next seq to accept
	applied  uint64                      // highest seq run (or skipped)
	acked    uint64                      // results up to here may be forgotten
	buffered map[uint64]*pb.ActorCall    // made when a call comes ahead of its predecessors
	results  seqring.Map[*pb.TaskResult] // finished, not acked: seqs in (acked, applied]
}

func newCallerState(next uint64) *callerState {
	if next == 0 {
		next = 1
	}
	return &callerState{next: next, applied: next - 1}
}

// callerTable is an instance's callerStates by caller ID. Most actors have one caller (the
// process that created them), so the first is held inline and a map is made only for a
// second (issue 21: a one-entry map cost ~200 bytes per idle actor).
type callerTable struct {
	first   string
	firstSt *callerState
	more    map[string]*callerState
}

func (t *callerTable) get(id string) *callerState {
	if t.firstSt != nil && t.first == id {
		return t.firstSt
	}
	return t.more[id]
}

func (t *callerTable) put(id string, st *callerState) {
	id = unique.Make(id).Value() // one process's callers call many actors: one copy of the ID
	switch {
	case t.firstSt == nil || t.first == id:
		t.first, t.firstSt = id, st
	default:
		if t.more == nil {
			t.more = make(map[string]*callerState)
		}
		t.more[id] = st
	}
}

// all yields every caller and its state.
func (t *callerTable) all() iter.Seq2[string, *callerState] {
	return func(yield func(string, *callerState) bool) {
		if t.firstSt != nil && !yield(t.first, t.firstSt) {
			return
		}
		for id, st := range t.more {
			if !yield(id, st) {
				return
			}
		}
	}
}

// keep holds the result of call seq until the caller acknowledges it (none below acked).
func (st *callerState) keep(seq uint64, res *pb.TaskResult) {
	if seq > st.acked {
		st.results.Put(seq, st.acked+1, res)
	}
}

func (st *callerState) ack(upto uint64) {
	for s := st.acked + 1; s <= upto && s <= st.applied; s++ {
		st.results.Delete(s)
	}
	if upto > st.acked {
		st.acked = min(upto, st.applied)
	}
}

// logKey is one method log key the instance knows of, with the highest log index it holds.
type logKey struct {
	batch    uint64
	maxIndex uint64
}

// Local messages of the grain (never cross a process).
type (
	recovered struct {
		inst      any
		class     *Class
		info      *pb.ActorInfo
		callers   callerTable
		nextIndex uint64
		nextBatch uint64
		keys      []logKey
		orphans   []uint64          // log batches after a hole, deleted before serving
		replayed  int               // calls replayed since the checkpoint
		stop      string            // non-empty: do not serve, stop (why)
		resources []*pb.ResourceQty // what the actor holds (the runtime context reports it)
	}
	committed struct {
		batch   *pb.ActorLogBatch
		outcome commitOutcome
	}
	// noSpaceCleared: the log keys of the batches that failed at the quota (and of those
	// after them) are deleted (err nil), so their calls can be failed and the log goes on
	// from the first of them.
	noSpaceCleared struct{ err error }
	// done: a call ran (entry, result), or, ckpt set, the executor saved a checkpoint
	// after the calls reported before it.
	done struct {
		entry  *pb.ActorLogEntry
		result *pb.TaskResult // nil for a skip
		ckpt   *ckptSaved
	}
	// doneBatch: the executor has reports queued (executor.report).
	doneBatch struct{}
	ckptSaved struct {
		index uint64
		state []byte
		err   error
	}
	ckptWritten struct {
		index   uint64
		deleted []uint64
		err     error
	}
)

// grain is one actor instance. Its fields are owned by its mailbox; the recovery, commit
// and checkpoint goroutines and the executor talk to it by messages.
type grain struct {
	env  *Env // shared by the grains of one Props, read-only
	id   string
	aid  ids.ActorID
	self *actor.PID
	root *actor.RootContext

	base *stopContext // cancelled when the instance stops (basectx.go)

	// Together, so that they share one word (issue 21: the grain's size class).
	slot        uint32 // its stripe of env.Stats' counters
	ready       bool
	stopped     bool
	clearing    bool // failed batches' keys being deleted (failGCS)
	ckptRunning bool

	early   []any // calls that arrived before recovery finished
	class   *Class
	inst    any
	info    *pb.ActorInfo
	inc     uint64
	rev     atomic.Int64           // the actor record revision log writes are fenced on
	resKey  atomic.Pointer[string] // resources held (or asked for) at the raylet
	callers callerTable

	nextIndex  uint64
	nextBatch  uint64
	logQueue   []*pb.ActorLogEntry
	entries    slab.Slab[pb.ActorLogEntry]  // makes the entries of accepted calls
	results    []*pb.ActorResultRecord      // to record with the next commit
	committing int                          // commits in flight
	committed  map[uint64]*pb.ActorLogBatch // done, waiting for an earlier batch
	nextExec   uint64                       // the batch whose entries run next
	keys       []logKey
	// At the GCS quota (commitNoSpace): failFrom is the first batch that could not be
	// logged (0: none); it and every batch after it fail, and failing holds them until
	// the commits in flight are done and their keys deleted (failGCS).
	failFrom  uint64
	failing   map[uint64]*pb.ActorLogBatch
	noSpaceAt atomic.Int64 // when a full GCS was last logged (unix nanos), one line a minute

	exec      *executor
	every     int
	sinceCkpt int
	logBytes  int64 // method log written since the last checkpoint was asked for
	ckptIndex uint64
}

// Receive handles one message.
func (g *grain) Receive(ctx actor.Context) {
	if g.exec != nil && g.exec.dones.Len() > 0 {
		// What ran is known before anything that came after it: a call's duplicate, the
		// checkpoint saved after it, the caller's next call with its acknowledgement.
		g.onDone()
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		g.self, g.root = ctx.Self(), ctx.ActorSystem().Root
		g.base = newStopContext()
	case *cluster.ClusterInit:
		g.init(m)
	case *pb.ActorCallBatch:
		if !g.ready {
			if !g.stopped {
				g.early = append(g.early, m)
			}
			return
		}
		g.admitAll(m.Calls)
	case *pb.ActorCall:
		if !g.ready {
			if !g.stopped {
				g.early = append(g.early, m)
			}
			return
		}
		g.admitAll([]*pb.ActorCall{m})
	case *recovered:
		g.onRecovered(ctx, m)
	case *committed:
		g.onCommitted(ctx, m)
	case *noSpaceCleared:
		g.onNoSpaceCleared(ctx, m)
	case *doneBatch:
		// taken above
	case *pb.ActorCheckpointNow:
		if g.ready {
			g.requestCheckpoint()
		}
	case *ckptWritten:
		g.onCheckpointWritten(m)
	case *actor.Stopping:
		g.stop()
	}
}

func (g *grain) init(m *cluster.ClusterInit) {
	if m.Identity == nil || len(m.Identity.Identity) < 3 || m.Identity.Identity[:2] != "a/" {
		g.env.Logger.Error("actors: grain activated with a bad identity", "identity", m.Identity)
		return
	}
	g.id = m.Identity.Identity[2:]
	aid, err := ids.ParseActorID(g.id)
	if err != nil {
		g.env.Logger.Error("actors: grain activated with a bad actor ID", "identity", m.Identity.Identity, "err", err)
		return
	}
	g.aid = aid
	self, root, base := g.self, g.root, g.base
	go func() { root.Send(self, g.recover(base)) }()
}

// stop ends the instance: its goroutines stop, its resources go back to the raylet, and
// the grain lets go of the instance and of everything it kept for it (its callers' results,
// calls not yet run or logged, the executor). protoactor keeps the stopped grain reachable
// from its actor context, and so from every *actor.PID of it that was used to send (a PID
// caches its process), for as long as anything keeps such a PID: the grain must not keep
// the instance's state (its heap, the ObjectRefs it holds) alive with it. It runs again
// when an instance that marked itself stopped (superseded, or its failed log batches not
// deleted) is poisoned, and does what was left to do.
func (g *grain) stop() {
	g.stopped, g.ready = true, false
	if g.base != nil {
		g.base.cancel()
	}
	if g.exec != nil {
		g.exec.close() // its goroutines, once out of the calls they run, let go of it
		g.exec = nil
	}
	if k := g.resKey.Swap(nil); k != nil && g.env.Raylet != nil {
		if r := g.env.Raylet(); r != nil {
			g.root.Send(r, &pb.ReserveResources{Key: *k, Release: true})
		}
	}
	g.inst, g.class = nil, nil
	g.callers = callerTable{}
	g.early, g.logQueue, g.results, g.keys = nil, nil, nil, nil
	g.committed, g.failing = nil, nil
	g.entries = slab.Slab[pb.ActorLogEntry]{}
}

// waitingAfter is how long an instance waits for its node's raylet to grant its resources
// before it looks whether they are in use, and if so says so in its record.
const waitingAfter = 500 * time.Millisecond

// holdResources waits until the node's raylet holds the actor's resources for this
// instance (Ray: an actor that asks for resources keeps them while it lives). When they
// are not granted at once because they are in use, it calls waiting with why, once.
func (g *grain) holdResources(ctx context.Context, info *pb.ActorInfo, waiting func(reason string)) error {
	if len(info.Resources) == 0 || g.env.Raylet == nil {
		return nil
	}
	key := fmt.Sprintf("actor/%s/%d", g.id, info.Incarnation)
	g.resKey.Store(&key)
	msg := &pb.ReserveResources{Key: key, Resources: info.Resources}
	told := false
	for attempt := 0; ctx.Err() == nil; attempt++ {
		r := g.env.Raylet()
		if r == nil {
			return errors.New("no scheduler on this node")
		}
		wait := 2 * time.Second
		if !told {
			wait = min(wait, time.Duration(attempt+1)*waitingAfter)
		}
		res, err := ask.Request(g.root, r, msg, wait)
		if _, ok := res.(*pb.ReserveResourcesReply); ok && err == nil {
			return nil
		}
		if !told && ctx.Err() == nil {
			if why, busy := g.busyReason(tasks.ResourcesFromPB(info.Resources)); busy {
				waiting(why)
				told = true
			}
		}
	}
	return ctx.Err()
}

// busyReason says why resources req the raylet has not granted wait: they are in use
// (busy true), unless the node's resources cannot be read, in which case it says so
// without the figures. Free resources that fit mean the raylet is only slow: not busy.
func (g *grain) busyReason(req sched.Resources) (string, bool) {
	why := fmt.Sprintf("waiting for resources %v on node %s: they are in use by other tasks or actors", req, g.env.Node)
	if g.env.NodeResources == nil {
		return why, true
	}
	total, avail, ok := g.env.NodeResources()
	if !ok {
		return why, true
	}
	if avail.Fits(req) {
		return "", false
	}
	return fmt.Sprintf("%s (free there now %v of %v; it starts when they are given back)", why, avail, total), true
}

// recover builds the instance: construct, restore the checkpoint, replay the log after it,
// and report ConstructorSucceeded. It runs on its own goroutine and touches no grain field
// but the read-only ones.
func (g *grain) recover(ctx context.Context) *recovered {
	var info *pb.ActorInfo
	var rev int64
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		info, rev, err = g.env.Table.Get(rctx, g.id)
		cancel()
		if err == nil || errors.Is(err, ErrNoSuchActor) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
	}
	if err != nil {
		return &recovered{stop: "cannot read the actor record: " + err.Error()}
	}
	g.rev.Store(rev)
	st := StateOf(info)
	if st.Phase == lifecycle.Dead || st.Node != string(g.env.Node) || (st.Phase != lifecycle.Alive && st.Node == "") {
		return &recovered{stop: fmt.Sprintf("not placed here (%v on %q)", st.Phase, st.Node)}
	}
	inc := info.Incarnation
	// failWith(why, true): the constructor's own error, which ends the actor (no restart); fail:
	// the start failed otherwise, which uses a restart.
	failWith := func(why string, raised bool) *recovered {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, _, _, err := g.env.Table.Step(sctx, g.id, lifecycle.ConstructorFailed{Incarnation: inc, Message: why, Raised: raised}); err != nil {
			g.env.Logger.Warn("actors: cannot record a failed start", "actor", g.id, "err", err)
		}
		return &recovered{stop: why}
	}
	fail := func(why string) *recovered { return failWith(why, false) }
	class, ok := LookupClass(info.Class)
	if !ok {
		return fail(fmt.Sprintf("actor class %q is not registered in the job's worker process on node %s%s", info.Class, g.env.Node, tasks.LateRegistration))
	}
	waiting := func(reason string) {
		// The record moves on with it, so the start below is fenced on it.
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		after, _, changed, afterRev, err := g.env.Table.stepFrom(wctx, g.id, lifecycle.Waiting{Incarnation: inc, Node: string(g.env.Node), Reason: reason}, nil, info, rev)
		switch {
		case err != nil:
			g.env.Logger.Warn("actors: cannot record why the actor waits", "actor", g.id, "reason", reason, "err", err)
		case changed:
			info, rev = after, afterRev
			g.rev.Store(rev)
		}
	}
	if err := g.holdResources(ctx, info, waiting); err != nil {
		return &recovered{stop: "waiting for resources: " + err.Error()}
	}
	r := &recovered{class: class, nextIndex: 1, nextBatch: 1, resources: info.Resources}
	ctorSpec := &pb.TaskSpec{TaskId: func() []byte { t := ids.NewRootTaskID(); return t[:] }(), JobId: info.JobId, Function: info.Class + ".<constructor>"}
	args := make([][]byte, len(info.CtorArgs))
	for i, a := range info.CtorArgs {
		if !a.IsRef || a.Data != nil {
			args[i] = a.Data
			continue
		}
		if args[i], err = g.env.Runner.Fetch(ctx, a); err != nil {
			return fail(fmt.Sprintf("constructor argument %d of %s: %v", i+1, info.Class, err))
		}
	}
	if r.inst, err = construct(g.env.Context(ctx, ctorSpec, g.id, inc, info.Resources), class, args); err != nil {
		// A constructor cut short by the instance stopping did not fail on its own.
		return failWith(fmt.Sprintf("constructor of %s failed: %v", info.Class, err), ctx.Err() == nil)
	}
	var ckIndex uint64
	if info.CheckpointSeq > 0 {
		ck, err := ReadCheckpoint(ctx, g.env.Table.Store, g.id, info.CheckpointSeq)
		if err == nil && class.Restore != nil {
			err = class.Restore(ctx, r.inst, ck.State)
		}
		if err != nil {
			return fail(fmt.Sprintf("restore checkpoint %d: %v", info.CheckpointSeq, err))
		}
		ckIndex = ck.Index
		for _, c := range ck.Callers {
			cs := newCallerState(c.Next)
			cs.acked = c.Acked
			for _, u := range c.Unacked {
				cs.keep(u.Seq, u.Result)
			}
			r.callers.put(c.CallerId, cs)
		}
		r.nextIndex = ckIndex + 1
	}
	// An actor still Pending (being created: its first incarnation, which leaves Pending
	// only by recording ConstructorSucceeded) has had no instance serve, and only a serving
	// instance on the record's node writes the log (fenced on the record): there is no log
	// to read, and a new actor's start saves the listing.
	if !info.AtMostOnce && st.Phase != lifecycle.Pending {
		if err := g.replay(ctx, r, class, ckIndex, inc); err != nil {
			if errors.Is(err, errSuperseded) {
				return &recovered{stop: err.Error()}
			}
			return fail(err.Error())
		}
		if err := g.deleteOrphans(ctx, inc, r.orphans); err != nil {
			return &recovered{stop: err.Error()}
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// From the record read above: at the rate actors start, each read of the GCS here is
	// a linearizable round of etcd's (issue 21's many-actors run); a record that moved on
	// since fails the fence and is read again.
	after, _, changed, afterRev, err := g.env.Table.stepFrom(sctx, g.id, lifecycle.ConstructorSucceeded{Incarnation: inc}, nil, info, rev)
	if err != nil {
		return &recovered{stop: "cannot record the start: " + err.Error()}
	}
	if after.Incarnation != inc || after.Node != string(g.env.Node) || lifecycle.Phase(after.Phase) != lifecycle.Alive {
		return &recovered{stop: "superseded while starting"}
	}
	if info.CheckpointSeq > 0 || len(r.keys) > 0 {
		g.env.Stats.Restored.Add(g.slot, 1)
	}
	after.History = nil  // only its flags are read from now on: the state API reads the history from the GCS
	internStrings(after) // held for the instance's life
	r.info = after
	if changed {
		g.rev.Store(afterRev)
	} else if _, rev, err := g.env.Table.Get(sctx, g.id); err == nil {
		g.rev.Store(rev)
	}
	return r
}

// construct runs the class constructor, turning a panic into an error.
func construct(ctx context.Context, class *Class, args [][]byte) (inst any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return class.New(ctx, args)
}

// digest is what the method log records of a result: enough to tell whether replay gave
// the same one (FNV-1a over the outcome).
func digest(r *pb.TaskResult) uint64 {
	h := fnv.New64a()
	switch {
	case r.Error != nil:
		fmt.Fprintf(h, "e%d:%s", r.Error.Kind, r.Error.Message)
	case r.InStore:
		fmt.Fprintf(h, "s%d", r.Size)
	default:
		h.Write([]byte{'d'})
		h.Write(r.Data)
	}
	return h.Sum64()
}

func (g *grain) onRecovered(ctx actor.Context, r *recovered) {
	if g.stopped {
		return
	}
	if r.stop != "" {
		g.env.Logger.Debug("actors: instance not started", "actor", g.id, "why", r.stop)
		g.early = nil
		ctx.Poison(ctx.Self())
		return
	}
	g.class, g.inst, g.info, g.inc = r.class, r.inst, r.info, r.info.Incarnation
	g.callers, g.nextIndex, g.nextBatch, g.keys = r.callers, r.nextIndex, r.nextBatch, r.keys
	g.nextExec = r.nextBatch
	g.ckptIndex = r.info.CheckpointSeq
	g.every = int(r.info.CheckpointEvery)
	if g.every == 0 {
		g.every = DefaultCheckpointEvery
	}
	// The replayed calls count toward the next checkpoint, so that restarts in a row do
	// not let the log grow past the interval.
	g.sinceCkpt = r.replayed
	conc := int(r.info.MaxConcurrency)
	runner := g.env.Runner
	runner.Root = g.root
	// An at-most-once actor without periodic checkpoints needs its reports of what ran
	// only when its next message comes (executor.report).
	lazy := g.info.AtMostOnce && !g.periodic()
	g.exec = newExecutor(g, runner, max(conc, 1), g.nextIndex-1, lazy)
	go g.exec.loop()
	g.ready = true
	early := g.early
	g.early = nil
	for _, m := range early {
		switch m := m.(type) {
		case *pb.ActorCallBatch:
			g.admitAll(m.Calls)
		case *pb.ActorCall:
			g.admitAll([]*pb.ActorCall{m})
		}
	}
	g.flushLog()
}

// admitAll admits calls, bouncing those meant for a newer incarnation than this one.
func (g *grain) admitAll(calls []*pb.ActorCall) {
	var bounce map[string]*pb.ActorCallBounce
	var to map[string]*pb.PID
	for _, c := range calls {
		if c.Incarnation > g.inc && c.Caller != nil {
			if bounce == nil {
				bounce, to = map[string]*pb.ActorCallBounce{}, map[string]*pb.PID{}
			}
			k := c.Caller.Address + "/" + c.Caller.Id
			b := bounce[k]
			if b == nil {
				b = &pb.ActorCallBounce{ActorId: g.aid[:], Incarnation: g.inc}
				bounce[k], to[k] = b, c.Caller
			}
			if !c.Checkpoint {
				// A cancel too: the caller sends it again, with the call (caller.Bounce).
				b.Seqs = append(b.Seqs, c.Seq)
			}
			continue
		}
		g.admit(c)
	}
	for k, b := range bounce {
		g.root.Send(actor.NewPID(to[k].Address, to[k].Id), b)
	}
	g.flushLog()
}

// admit takes one call (or skip) from a caller: run it in the caller's order, buffer it
// until its predecessors came, or answer a duplicate from what is known.
func (g *grain) admit(c *pb.ActorCall) {
	if c.Checkpoint {
		g.requestCheckpoint()
		return
	}
	if c.Cancel {
		g.cancelQueued(c)
		return
	}
	st := g.callers.get(c.CallerId)
	if st == nil {
		st = newCallerState(c.First)
		g.callers.put(c.CallerId, st)
	}
	if c.Acked > st.acked {
		st.ack(c.Acked)
	}
	if c.First > st.next {
		// The caller finished (gave up on) everything before First: nothing before it
		// will come (among them calls cancelled before they came: cancelQueued).
		for s := st.next; s < c.First; s++ {
			delete(st.buffered, s)
		}
		if g.exec.cancelN.Load() > 0 {
			g.exec.dropCancels(c.CallerId, st.next, c.First)
		}
		st.next = c.First
	}
	switch {
	case c.Seq < st.next:
		g.env.Stats.Duplicates.Add(g.slot, 1)
		if res, _ := st.results.Get(c.Seq); res != nil && c.Spec != nil && c.Spec.ResultTo() != nil {
			to := c.Spec.ResultTo()
			g.root.Send(actor.NewPID(to.Address, to.Id), res)
		}
		return
	case c.Seq > st.next:
		if st.buffered == nil {
			st.buffered = make(map[uint64]*pb.ActorCall)
		}
		st.buffered[c.Seq] = c
		return
	}
	g.accept(c, st)
	for {
		b := st.buffered[st.next]
		if b == nil {
			if len(st.buffered) == 0 {
				st.buffered = nil // a map keeps its peak: an idle caller holds none
			}
			return
		}
		delete(st.buffered, st.next)
		g.accept(b, st)
	}
}

// cancelQueued: caller c.CallerId cancels its call c.Seq (an ActorCall with cancel set;
// its spec names the call and where its result goes). An at-most-once instance that has
// not started the call takes it back (executor.cancel), whether the call waits in the
// executor's queue or batch, waits here for a call before it, or has not arrived yet,
// and answers it with a CANCELLED result at once, as Ray fails the ObjectRef of a
// cancelled actor task that has not started; the executor skips it when it comes to it,
// and the calls after it run in order. A call that ran, or runs, is left to answer (a
// running method is not interrupted, as in Ray). A logged (exactly-once) actor's calls
// are in its method log before they run, and a restart replays the log: a call taken
// back would run then, so such an instance does nothing (its callers refuse those
// cancels themselves). The cancel lives in this instance only: a caller sends it again,
// before the call, to the instance it sends the call to again (caller.Caller.Cancel).
func (g *grain) cancelQueued(c *pb.ActorCall) {
	if !g.info.AtMostOnce {
		return
	}
	st := g.callers.get(c.CallerId)
	if st != nil && c.Seq <= st.applied {
		return // ran
	}
	accepted := st != nil && c.Seq < st.next
	if !g.exec.cancel(c.CallerId, c.Seq, accepted) {
		return
	}
	if c.Spec != nil {
		if to := c.Spec.ResultTo(); to != nil {
			res := worker.Fail(c.Spec, pb.ErrorInfo_CANCELLED, cancelledMessage, "", g.env.Node)
			g.root.Send(actor.NewPID(to.Address, to.Id), res)
		}
	}
}

func (g *grain) accept(c *pb.ActorCall, st *callerState) {
	st.next = c.Seq + 1
	e := g.entries.New()
	e.Index, e.CallerId, e.Seq, e.Skip, e.Spec = g.nextIndex, c.CallerId, c.Seq, c.Skip || c.Spec == nil, c.Spec
	// The entry holds the spec from now on (until the call has run: outbox.add), the
	// message not: a caller in this process makes its messages several per allocation (its
	// batches, its slab of direct calls), which live while any of them is held, and a
	// message's spec is part of the caller's record of the call.
	c.Spec = nil
	g.nextIndex++
	if g.info.AtMostOnce {
		g.exec.push(execItem{entry: e})
		return
	}
	g.logQueue = append(g.logQueue, e)
}

// flushLog starts a group commit of the queued calls unless one is in flight: calls that
// arrive meanwhile share the next one.
func (g *grain) flushLog() {
	if g.committing >= maxCommitsInFlight || len(g.logQueue) == 0 || g.stopped || g.failFrom != 0 {
		return
	}
	batch := &pb.ActorLogBatch{Batch: g.nextBatch, Incarnation: g.inc}
	size := 0
	n := 0
	for n < len(g.logQueue) {
		// An entry is logged with the values of its small stored arguments (logRefBytes).
		next := proto.Size(g.logQueue[n]) + refsToLog(g.logQueue[n].Spec)
		if n > 0 && size+next > maxBatchBytes {
			break
		}
		size += next
		n++
	}
	batch.Entries = g.logQueue[:n:n]
	g.logQueue = g.logQueue[n:]
	if len(g.logQueue) == 0 {
		g.logQueue = nil
	}
	m := 0
	for m < len(g.results) {
		next := proto.Size(g.results[m])
		if size+next > maxBatchBytes {
			break
		}
		size += next
		m++
	}
	batch.Results = g.results[:m:m]
	g.results = g.results[m:]
	g.logBytes += int64(size)
	g.nextBatch++
	g.committing++
	self, root, base := g.self, g.root, g.base
	go func() {
		outcome := g.commit(base, batch)
		if base.Err() == nil {
			root.Send(self, &committed{batch: batch, outcome: outcome})
		}
	}()
}

// logged is what the method log keeps of a batch: of each call's spec only what replay
// needs (the call's ID, method and arguments), not its owner or parent.
func logged(b *pb.ActorLogBatch) *pb.ActorLogBatch {
	out := &pb.ActorLogBatch{Batch: b.Batch, Incarnation: b.Incarnation, Results: b.Results, Entries: make([]*pb.ActorLogEntry, len(b.Entries))}
	for i, e := range b.Entries {
		le := &pb.ActorLogEntry{Index: e.Index, CallerId: e.CallerId, Seq: e.Seq, Skip: e.Skip}
		if e.Spec != nil {
			le.Spec = &pb.TaskSpec{TaskId: e.Spec.TaskId, Function: e.Spec.Function, Args: e.Spec.Args}
		}
		out.Entries[i] = le
	}
	return out
}

// logAttemptTimeout bounds one attempt to write a method log batch. When the etcd leader
// dies, a write it was proposing is only failed by the server after its request timeout
// (5 s plus two election timeouts) although a new leader is elected within ~0.2 s: a short
// attempt, retried, rides over the election instead. Retrying is safe: the batch goes to
// its own key with the same bytes, fenced on the actor record, so a write that did commit
// is just written again.
const logAttemptTimeout = time.Second

// logRefBytes is how many bytes of a call's arguments that live in an object store (refs,
// among them by-value arguments over the inline limit, which the caller put there) the
// method log records by value: replay then needs nothing but the log. Beyond it they are
// logged by reference, and a replay needs the objects to still exist (package doc).
// Together with pb.InlineArgsTotal, one entry stays below maxBatchBytes.
const logRefBytes = 256 << 10

// refsToLog is how many bytes of spec's stored arguments the log records by value: all of
// them (their sizes, known from the spec) when they total at most logRefBytes, else none.
func refsToLog(spec *pb.TaskSpec) int {
	if spec == nil {
		return 0
	}
	n := 0
	for _, a := range spec.Args {
		if a.IsRef && a.Data == nil {
			n += int(a.Size)
		}
	}
	if n > logRefBytes || n < 0 {
		return 0
	}
	return n
}

// withStoredArgs returns b with the stored arguments of its entries that refsToLog takes
// read from the store and recorded by value (new Arg messages: the specs themselves are
// shared with the executor and, in one process, with the caller). An argument that cannot
// be read stays a reference (the call holds it until answered, so this is a store failure).
func (g *grain) withStoredArgs(ctx context.Context, b *pb.ActorLogBatch) *pb.ActorLogBatch {
	for _, e := range b.Entries {
		if e.Spec == nil || refsToLog(e.Spec) == 0 {
			continue
		}
		args := make([]*pb.Arg, len(e.Spec.Args))
		for i, a := range e.Spec.Args {
			args[i] = a
			if !a.IsRef || a.Data != nil {
				continue
			}
			data, err := g.env.Runner.Fetch(ctx, a)
			if err != nil {
				g.env.Logger.Warn("actors: a call's argument is logged by reference: it could not be read from the object store", "actor", g.id, "method", e.Spec.Function, "argument", i+1, "err", err)
				continue
			}
			args[i] = &pb.Arg{Data: data, ObjectId: a.ObjectId, IsRef: true, Size: a.Size}
		}
		e.Spec = &pb.TaskSpec{TaskId: e.Spec.TaskId, Function: e.Spec.Function, Args: args}
	}
	return b
}

// commitOutcome is how a method log write ended.
type commitOutcome uint8

const (
	commitDone    commitOutcome = iota // the batch is logged
	commitFenced                       // the instance is stale (or stopping): it must not write
	commitNoSpace                      // the GCS is at its space quota: the batch is not logged
)

// noSpaceWait is how long a method log write that finds the GCS at its space quota is
// retried before its calls fail: long enough for a defragmentation that was about to run
// (etcdstore, defrag.go) or a deletion in flight to free space, short enough that a caller
// gets an error instead of a silent wait.
var noSpaceWait = 2 * time.Second

// commit writes one log batch, fenced on the actor record: if the record moved to another
// incarnation or node (or the actor died), this instance is stale and must not write.
// Failed writes are retried (an etcd election, a timeout) until they land, except at the
// GCS's space quota: after noSpaceWait of gcs.ErrNoSpace the batch is given up
// (commitNoSpace) and its calls fail (failGCS).
func (g *grain) commit(ctx context.Context, batch *pb.ActorLogBatch) commitOutcome {
	val, err := proto.Marshal(g.withStoredArgs(ctx, logged(batch)))
	if err != nil {
		g.env.Logger.Error("actors: cannot encode a method log batch", "actor", g.id, "err", err)
		return commitFenced
	}
	key := gcs.ActorLogKey(g.id, batch.Batch)
	var warned, full time.Time
	for attempt := 0; ; attempt++ {
		tctx, cancel := context.WithTimeout(ctx, logAttemptTimeout)
		ok, _, err := g.env.Table.Store.Txn(tctx, []gcs.Cmp{{Key: gcs.ActorKey(g.id), ModRev: g.rev.Load()}},
			[]gcs.Op{{Kind: gcs.OpPut, Key: key, Value: val}})
		if err == nil && !ok {
			info, rev, gerr := g.env.Table.Get(tctx, g.id)
			cancel()
			if gerr == nil && (info.Incarnation != g.inc || info.Node != string(g.env.Node) || lifecycle.Phase(info.Phase) == lifecycle.Dead) {
				return commitFenced
			}
			if gerr == nil {
				g.rev.Store(rev)
			}
			continue
		}
		cancel()
		if err == nil {
			g.env.Stats.Commits.Add(g.slot, 1)
			g.env.Stats.Logged.Add(g.slot, int64(len(batch.Entries)))
			return commitDone
		}
		if ctx.Err() != nil {
			return commitFenced
		}
		if errors.Is(err, gcs.ErrNoSpace) {
			if full.IsZero() {
				full = time.Now()
			} else if time.Since(full) >= noSpaceWait {
				return commitNoSpace
			}
		} else {
			// A timeout (the member busy rewriting its file) says nothing of space: a
			// quota seen stays the reason until a write lands.
			if time.Since(warned) >= logWarnEvery { // one line per actor a minute, not one per attempt
				warned = time.Now()
				g.env.Logger.Warn("actors: method log write failed; retrying (calls wait until they are logged)", "actor", g.id, "attempt", attempt+1, "err", err)
			}
		}
		wait := min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second)
		if !full.IsZero() {
			wait = min(wait, max(noSpaceWait/4, time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return commitFenced
		case <-time.After(wait):
		}
	}
}

// logWarnEvery is how often a method log write that keeps failing is logged, per actor.
const logWarnEvery = time.Minute

// ErrNoSpaceMessage is the error message of a call to an exactly-once actor that failed
// because its method log could not be written: the GCS is at its space quota.
const ErrNoSpaceMessage = "actors: the call did not run: the GCS is at its space quota, so it could not be written " +
	"to the actor's method log (an exactly-once call runs only once it is logged). Free GCS space (end actors and " +
	"jobs no longer needed; an exactly-once actor whose class cannot checkpoint keeps its whole log: give it a " +
	"Checkpointer, or make it AtMostOnce) or raise the quota (etcd's --quota-backend-bytes; the embedded GCS: " +
	"etcdstore.EmbedConfig.QuotaBytes, 2 GiB by default). The embedded GCS takes writes again once a " +
	"defragmentation brings its file under 90% of the quota; an external etcd needs compaction, defragmentation " +
	"and its NOSPACE alarm disarmed"

func (g *grain) onCommitted(ctx actor.Context, m *committed) {
	g.committing--
	if g.stopped {
		return
	}
	switch {
	case m.outcome == commitFenced:
		g.env.Logger.Info("actors: instance superseded; stopping it", "actor", g.id, "incarnation", g.inc)
		g.stopped = true
		ctx.Poison(ctx.Self())
		return
	case m.outcome == commitNoSpace || (g.failFrom != 0 && m.batch.Batch > g.failFrom):
		g.failGCS(ctx, m.batch)
		return
	}
	// Commits run concurrently and may finish out of order; entries run in log order. The
	// next batch, the usual case, runs without going through the map, which is made only
	// for a batch that lands ahead of its predecessor (and dropped once empty: an idle
	// actor holds none).
	b := m.batch
	if b.Batch != g.nextExec {
		if g.committed == nil {
			g.committed = make(map[uint64]*pb.ActorLogBatch)
		}
		g.committed[b.Batch] = b
		b = nil
	}
	for {
		if b == nil {
			if b = g.committed[g.nextExec]; b == nil {
				break
			}
			delete(g.committed, g.nextExec)
		}
		g.nextExec++
		k := logKey{batch: b.Batch}
		for _, e := range b.Entries {
			k.maxIndex = max(k.maxIndex, e.Index)
			g.exec.push(execItem{entry: e})
		}
		for _, r := range b.Results {
			k.maxIndex = max(k.maxIndex, r.Index)
		}
		g.keys = append(g.keys, k)
		b = nil
	}
	if len(g.committed) == 0 {
		g.committed = nil
	}
	g.clearFailed(ctx)
	g.flushLog()
}

// failGCS handles a batch that could not be logged because the GCS is at its space quota
// (or a batch after such a one: it can be logged only after it). None of their calls ran
// (a batch runs only once it and every one before it are logged), so they fail instead,
// and the log must go on without a hole: once no commit is in flight (a later batch may
// still land), the keys of every batch from the first failed one on are deleted, fenced on
// the actor record (deletes are allowed at the quota; a write given up may still have
// landed), then the calls are answered with ErrNoSpaceMessage and the log continues from
// that batch and index. Calls accepted meanwhile, not yet written, fail with them. If the
// keys cannot be deleted the instance stops without answering: the next one finds the
// hole, drops the batches after it, and their callers resend the calls (replay.go).
func (g *grain) failGCS(ctx actor.Context, b *pb.ActorLogBatch) {
	if g.failFrom == 0 || b.Batch < g.failFrom {
		g.failFrom = b.Batch
		now := time.Now().UnixNano()
		if last := g.noSpaceAt.Load(); last == 0 || time.Duration(now-last) >= logWarnEvery {
			g.noSpaceAt.Store(now)
			g.env.Logger.Error("actors: the GCS is at its space quota: calls to this actor fail until it has space (see the calls' error)",
				"actor", g.id, "batch", b.Batch)
		}
	}
	if g.failing == nil {
		g.failing = map[uint64]*pb.ActorLogBatch{}
	}
	g.failing[b.Batch] = b
	g.clearFailed(ctx)
}

// clearFailed starts deleting the failed batches' keys once no commit is in flight.
func (g *grain) clearFailed(ctx actor.Context) {
	if g.failFrom == 0 || g.committing > 0 || g.clearing {
		return
	}
	for n, b := range g.committed { // landed after a batch before them failed
		if n >= g.failFrom {
			g.failing[n] = b
			delete(g.committed, n)
		}
	}
	var keys []uint64
	for n := g.failFrom; n < g.nextBatch; n++ {
		keys = append(keys, n)
	}
	g.clearing = true
	self, root, base, inc := ctx.Self(), g.root, g.base, g.inc
	go func() {
		err := g.deleteOrphans(base, inc, keys)
		if base.Err() == nil {
			root.Send(self, &noSpaceCleared{err: err})
		}
	}()
}

func (g *grain) onNoSpaceCleared(ctx actor.Context, m *noSpaceCleared) {
	g.clearing = false
	if g.stopped {
		return
	}
	if m.err != nil {
		g.env.Logger.Warn("actors: cannot delete the method log batches that failed at the GCS quota; stopping the instance (the next one drops them and their callers resend the calls)",
			"actor", g.id, "err", m.err)
		g.stopped = true
		ctx.Poison(ctx.Self())
		return
	}
	var entries []*pb.ActorLogEntry
	var results []*pb.ActorResultRecord
	first := uint64(0)
	for n := g.failFrom; n < g.nextBatch; n++ {
		b := g.failing[n]
		if b == nil {
			continue
		}
		for _, e := range b.Entries {
			if first == 0 || e.Index < first {
				first = e.Index
			}
		}
		entries = append(entries, b.Entries...)
		results = append(results, b.Results...)
	}
	entries = append(entries, g.logQueue...)
	for _, e := range g.logQueue {
		if first == 0 || e.Index < first {
			first = e.Index
		}
	}
	g.logQueue = nil
	// The digests of results recorded with the failed batches go with the next one.
	g.results = append(results, g.results...)
	for _, e := range entries {
		st := g.callers.get(e.CallerId)
		if st == nil {
			continue
		}
		st.applied = max(st.applied, e.Seq)
		if e.Skip || e.Spec == nil {
			continue
		}
		g.env.Stats.NoSpace.Add(g.slot, 1)
		res := worker.Fail(e.Spec, pb.ErrorInfo_GCS_FULL, ErrNoSpaceMessage, "", g.env.Node)
		st.keep(e.Seq, res)
		if to := e.Spec.ResultTo(); to != nil {
			g.root.Send(actor.NewPID(to.Address, to.Id), res)
		}
	}
	g.nextBatch, g.nextExec = g.failFrom, g.failFrom
	if first != 0 {
		g.nextIndex = first
	}
	g.failFrom, g.failing = 0, nil
	g.flushLog()
}

// onDone applies the executor's reports of what ran.
func (g *grain) onDone() {
	q := g.exec.takeDone()
	defer g.exec.doneTaken(q)
	for _, d := range q {
		if d.ckpt != nil {
			g.onCheckpointSaved(d.ckpt)
			continue
		}
		g.ran(d) // (the entry holds its spec no more: outbox.add took it)
	}
	g.checkpointIfDue()
}

// ran takes what the executor reports of a call that ran (or was skipped: no result).
func (g *grain) ran(d done) {
	st := g.callers.get(d.entry.CallerId)
	if st == nil {
		return
	}
	st.applied = max(st.applied, d.entry.Seq)
	if d.result == nil {
		return
	}
	st.keep(d.entry.Seq, d.result)
	if !g.info.AtMostOnce {
		g.results = append(g.results, &pb.ActorResultRecord{CallerId: d.entry.CallerId, Seq: d.entry.Seq, Index: d.entry.Index, Digest: digest(d.result)})
	}
	g.sinceCkpt++
}

// checkpointIfDue asks for a periodic checkpoint if one is due.
func (g *grain) checkpointIfDue() {
	if !g.stopped && g.periodic() && (g.sinceCkpt >= g.every || g.logBytes >= checkpointLogBytes) {
		g.requestCheckpoint()
	}
}

// periodic reports whether the actor takes checkpoints every g.every calls by itself. A
// logged actor that can checkpoint does, to bound its method log. An at-most-once actor has
// no log to bound and restarts from its constructor, as Ray's do, so it checkpoints on
// ray.Checkpoint, and every CheckpointEvery calls only when that option was given: a
// periodic checkpoint is a GCS write that Ray's default actors do not pay.
func (g *grain) periodic() bool {
	if !g.class.CanCheckpoint() {
		return false
	}
	return !g.info.AtMostOnce || g.info.CheckpointEvery > 0
}

func (g *grain) requestCheckpoint() {
	if !g.class.CanCheckpoint() {
		g.env.Logger.Warn("actors: checkpoint requested, but the class cannot checkpoint (implement ray.Checkpointer)", "actor", g.id, "class", g.class.Name)
		return
	}
	if g.ckptRunning || g.stopped {
		return
	}
	g.ckptRunning = true
	g.sinceCkpt, g.logBytes = 0, 0
	g.exec.checkpointSoon()
}

func (g *grain) onCheckpointSaved(m *ckptSaved) {
	if m.err != nil || m.index <= g.ckptIndex || g.stopped {
		if m.err != nil {
			g.env.Logger.Warn("actors: checkpoint failed; the log is kept", "actor", g.id, "err", m.err)
		}
		g.ckptRunning = false
		return
	}
	ck := &pb.ActorCheckpoint{Index: m.index, State: m.state, Incarnation: g.inc}
	for id, st := range g.callers.all() {
		cs := &pb.ActorCallerState{CallerId: id, Next: st.applied + 1, Acked: st.acked}
		for s := st.acked + 1; s <= st.applied; s++ {
			if r, _ := st.results.Get(s); r != nil {
				cs.Unacked = append(cs.Unacked, &pb.ActorResultRecord{CallerId: id, Seq: s, Result: r})
			}
		}
		ck.Callers = append(ck.Callers, cs)
	}
	sort.Slice(ck.Callers, func(i, j int) bool { return ck.Callers[i].CallerId < ck.Callers[j].CallerId })
	var covered []uint64
	for _, k := range g.keys {
		if k.maxIndex <= m.index {
			covered = append(covered, k.batch)
		}
	}
	prev, inc, self, root, base := g.ckptIndex, g.inc, g.self, g.root, g.base
	go func() {
		deleted, err := g.writeCheckpoint(base, ck, prev, inc, covered)
		if base.Err() == nil {
			root.Send(self, &ckptWritten{index: ck.Index, deleted: deleted, err: err})
		}
	}()
}

// writeCheckpoint stores ck, records it in the actor record (CheckpointTaken) and then
// deletes the previous checkpoint and the log keys it covers.
func (g *grain) writeCheckpoint(ctx context.Context, ck *pb.ActorCheckpoint, prev, inc uint64, covered []uint64) ([]uint64, error) {
	data, err := proto.Marshal(ck)
	if err != nil {
		return nil, err
	}
	store := g.env.Table.Store
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for part := 0; part == 0 || part*gcs.CheckpointPartBytes < len(data); part++ {
		chunk := data[part*gcs.CheckpointPartBytes : min(len(data), (part+1)*gcs.CheckpointPartBytes)]
		if _, err := store.Put(tctx, gcs.CheckpointKey(g.id, ck.Index, part), chunk, 0); err != nil {
			return nil, fmt.Errorf("write checkpoint: %w", err)
		}
	}
	var extra []gcs.Op
	if prev > 0 {
		extra = append(extra, gcs.Op{Kind: gcs.OpDeletePrefix, Key: gcs.CheckpointVersionPrefix(g.id, prev)})
	}
	first := min(len(covered), maxDeletesPerTxn)
	for _, b := range covered[:first] {
		extra = append(extra, gcs.Op{Kind: gcs.OpDelete, Key: gcs.ActorLogKey(g.id, b)})
	}
	_, _, changed, err := g.env.Table.StepWith(tctx, g.id, lifecycle.CheckpointTaken{Incarnation: inc, Seq: ck.Index, Ref: fmt.Sprintf("gcs:%d", ck.Index)}, extra)
	if err != nil || !changed {
		// Not recorded: the parts just written are garbage.
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _, _ = store.Txn(dctx, nil, []gcs.Op{{Kind: gcs.OpDeletePrefix, Key: gcs.CheckpointVersionPrefix(g.id, ck.Index)}})
		dcancel()
		if err == nil {
			err = errors.New("checkpoint not recorded (the actor record moved on)")
		}
		return nil, err
	}
	g.env.Stats.Checkpoints.Add(g.slot, 1)
	deleted := covered[:first]
	for rest := covered[first:]; len(rest) > 0; {
		n := min(len(rest), maxDeletesPerTxn)
		ops := make([]gcs.Op, n)
		for i, b := range rest[:n] {
			ops[i] = gcs.Op{Kind: gcs.OpDelete, Key: gcs.ActorLogKey(g.id, b)}
		}
		if _, _, err := store.Txn(tctx, nil, ops); err != nil {
			break // kept keys are skipped by replay and deleted with the actor
		}
		deleted = append(deleted, rest[:n]...)
		rest = rest[n:]
	}
	return deleted, nil
}

func (g *grain) onCheckpointWritten(m *ckptWritten) {
	g.ckptRunning = false
	if m.err != nil {
		g.env.Logger.Warn("actors: checkpoint not recorded; the log is kept", "actor", g.id, "err", m.err)
		return
	}
	g.ckptIndex = m.index
	gone := make(map[uint64]bool, len(m.deleted))
	for _, b := range m.deleted {
		gone[b] = true
	}
	kept := g.keys[:0]
	for _, k := range g.keys {
		if !gone[k.batch] {
			kept = append(kept, k)
		}
	}
	g.keys = kept
	// Results recorded before the checkpoint are in it; those still queued are not needed.
	kr := g.results[:0]
	for _, r := range g.results {
		if r.Index > m.index {
			kr = append(kr, r)
		}
	}
	g.results = kr
	// A checkpoint that came due while this one was being taken (requestCheckpoint
	// drops requests meanwhile) is taken now, not at the next call's end: the log stays
	// bounded after the last call too.
	g.checkpointIfDue()
}

// ReadCheckpoint reads the checkpoint of actorID taken after log index index.
func ReadCheckpoint(ctx context.Context, store gcs.Store, actorID string, index uint64) (*pb.ActorCheckpoint, error) {
	kvs, _, err := store.List(ctx, gcs.CheckpointVersionPrefix(actorID, index))
	if err != nil {
		return nil, err
	}
	if len(kvs) == 0 {
		return nil, fmt.Errorf("checkpoint %d of actor %s is missing", index, actorID)
	}
	parts := make([][]byte, len(kvs))
	for i, kv := range kvs {
		parts[i] = kv.Value
	}
	return decodeCheckpoint(actorID, index, parts)
}

// decodeCheckpoint decodes the parts of checkpoint index of actorID, in key order.
func decodeCheckpoint(actorID string, index uint64, parts [][]byte) (*pb.ActorCheckpoint, error) {
	var data []byte
	for _, p := range parts {
		data = append(data, p...)
	}
	ck := &pb.ActorCheckpoint{}
	if err := proto.Unmarshal(data, ck); err != nil {
		return nil, fmt.Errorf("checkpoint %d of actor %s is corrupt: %w", index, actorID, err)
	}
	if ck.Index != index {
		return nil, fmt.Errorf("checkpoint %d of actor %s says it is checkpoint %d", index, actorID, ck.Index)
	}
	return ck, nil
}
