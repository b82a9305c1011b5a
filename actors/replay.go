package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/worker"
)

// The method log is contiguous in index: accept gives every call the next index and every
// entry is logged, in batches whose entries are consecutive. Group commits run
// concurrently (maxCommitsInFlight) and may land out of order, so an instance that dies
// with commits in flight can leave a hole: a batch that never landed while later ones
// did. The entries after a hole never ran (the executor runs batches in log order, each
// only once the ones before it are committed) and were never answered, so their callers
// resend them. Replay therefore stops at the first hole, and the batches after it
// (orphans) are deleted before the new instance serves: replaying them would skip the
// calls of the lost batch, whose callers' sequence numbers they pass (a chaos-suite
// defect: 13 calls never answered, every later sum short by exactly their addends).

// A logged call that was running when its host died is replayed by the restarted
// instance, and if it is what killed the host (it calls os.Exit, or crashes the process)
// the replay kills the new host too, and the next one, until the restarts are used up,
// taking with it every other actor of each worker process it runs in. The log cannot tell
// which call was running at a death: a call's result digest is recorded only with the
// next commit, so the calls without one are those that ran last, those that waited, and
// the one running (recording the running call in the live run would cost a GCS write a
// call). So a call the log holds no result for is replayed at most once: before running
// such a call, replay records it in the actor's replay guard (gcs.ActorReplayKey), a
// fenced write; when replay ends, the guard is cleared in the same write that records the
// digests of the calls it ran. An instance that finds the guard naming a call, left by an
// earlier incarnation, knows that incarnation died while replaying it: the call was
// running when its host died twice (its first run, if it ran, and its replay), and is
// taken as the cause. It is not run again: it fails with an ACTOR_DIED error saying so
// (suspectMessage), which the guard keeps (Results) for later replays until a checkpoint
// covers the call, and the actor goes on without it, each host death having used one
// restart as any does. A call merely queued or in flight through a death that is not its
// own (a node killed) replays once and completes, exactly once, as before. A death that
// happens while replay runs such a call for another reason (the node killed at that very
// moment) fails the call as well: the rule errs on the side of not killing one more
// process.

// maxLogNumber bounds the batch numbers and indexes a method log may hold.
const maxLogNumber = 1 << 63

// resultKey names a call: its caller and sequence number.
type resultKey struct {
	caller string
	seq    uint64
}

// replayPlan is what the method log says a new instance must do.
type replayPlan struct {
	entries   []*pb.ActorLogEntry  // to apply, in index order (after the checkpoint, up to the first hole)
	recorded  map[resultKey]uint64 // result digests recorded by the previous instances
	keys      []logKey             // the batches kept (those the next checkpoint may delete)
	orphans   []uint64             // batches after a hole: to delete before serving
	nextBatch uint64               // the first batch number not in the log
	hole      uint64               // the first missing index (0: none)
	guard     *pb.ActorLogBatch    // the replay guard (nil: none)
}

// planReplay reads a listing of an actor's method log. after is the index the checkpoint
// covers (0: none); entries up to it are left out.
func planReplay(kvs []gcs.KV, after uint64) (*replayPlan, error) {
	type batch struct {
		b        *pb.ActorLogBatch
		minIndex uint64
		maxIndex uint64
	}
	p := &replayPlan{recorded: map[resultKey]uint64{}, nextBatch: 1}
	batches := make([]batch, 0, len(kvs))
	var entries []*pb.ActorLogEntry
	for _, kv := range kvs {
		b := &pb.ActorLogBatch{}
		if err := proto.Unmarshal(kv.Value, b); err != nil {
			return nil, fmt.Errorf("method log key %s is corrupt: %w", kv.Key, err)
		}
		if strings.HasSuffix(kv.Key, "/"+replayKeyName) {
			p.guard = b
			continue
		}
		// The batch number decides which key a hole's orphans delete, and replay runs each
		// entry's call: a batch under another number's key, or an entry without a call,
		// is refused rather than acted on.
		// Numbers near 2^64 would wrap the next batch or index to reuse old ones; counted
		// up from 1, they never come near 2^63.
		if _, n, err := gcs.ParseActorLogKey(kv.Key); err != nil || n != b.Batch || b.Batch >= maxLogNumber {
			return nil, fmt.Errorf("method log key %s is corrupt: it holds batch %d", kv.Key, b.Batch)
		}
		bt := batch{b: b}
		for i, e := range b.Entries {
			if e.Spec == nil && !e.Skip {
				return nil, fmt.Errorf("method log key %s is corrupt: entry %d (index %d) has no call", kv.Key, i, e.Index)
			}
			if e.Index >= maxLogNumber {
				return nil, fmt.Errorf("method log key %s is corrupt: entry %d has index %d", kv.Key, i, e.Index)
			}
			if i == 0 || e.Index < bt.minIndex {
				bt.minIndex = e.Index
			}
			bt.maxIndex = max(bt.maxIndex, e.Index)
			if e.Index > after {
				entries = append(entries, e)
			}
		}
		batches = append(batches, bt)
		p.nextBatch = max(p.nextBatch, b.Batch+1)
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Index < entries[j].Index })
	next := after + 1
	for _, e := range entries {
		switch {
		case e.Index < next:
			continue // the same entry twice (a retried write); already taken
		case e.Index > next:
			p.hole = next
		default:
			p.entries = append(p.entries, e)
			next++
			continue
		}
		break
	}
	for _, bt := range batches {
		if p.hole != 0 && len(bt.b.Entries) > 0 && bt.maxIndex >= p.hole {
			if bt.minIndex < p.hole {
				// A batch's entries are consecutive: one cannot straddle a hole.
				return nil, fmt.Errorf("method log batch %d holds indexes %d..%d around missing index %d: the log is inconsistent",
					bt.b.Batch, bt.minIndex, bt.maxIndex, p.hole)
			}
			p.orphans = append(p.orphans, bt.b.Batch)
			continue
		}
		k := logKey{batch: bt.b.Batch, maxIndex: bt.maxIndex}
		for _, res := range bt.b.Results {
			k.maxIndex = max(k.maxIndex, res.Index)
			p.recorded[resultKey{res.CallerId, res.Seq}] = res.Digest
		}
		p.keys = append(p.keys, k)
	}
	return p, nil
}

// replay reads the method log and runs every call after the checkpoint, in log order,
// answering no one; recorded results are kept as the answers to retried calls.
func (g *grain) replay(ctx context.Context, r *recovered, class *Class, after, inc uint64) error {
	kvs, _, err := g.env.Table.Store.List(ctx, gcs.ActorLogActorPrefix(g.id))
	if err != nil {
		return fmt.Errorf("read the method log: %w", err)
	}
	p, err := planReplay(kvs, after)
	if err != nil {
		return err
	}
	r.keys, r.orphans = p.keys, p.orphans
	r.nextBatch = max(r.nextBatch, p.nextBatch)
	if p.hole != 0 {
		g.env.Logger.Warn("actors: the method log has a hole (the previous instance died with commits in flight); replay stops there and the batches after it are dropped, their calls are resent by their callers",
			"actor", g.id, "missing index", p.hole, "dropped batches", len(p.orphans))
	}
	inst := r.inst
	runner := g.env.Runner
	runner.Root = g.root
	gd := newGuardState(p.guard, after, inc, gcs.ActorReplayKey(g.id))
	var ran []*pb.ActorResultRecord // digests of the calls run that had none recorded
	for _, e := range p.entries {
		cs := r.callers.get(e.CallerId)
		if cs == nil {
			cs = newCallerState(e.Seq)
			r.callers.put(e.CallerId, cs)
		}
		r.nextIndex = e.Index + 1
		if e.Seq < cs.next {
			continue
		}
		cs.next, cs.applied = e.Seq+1, e.Seq
		if e.Skip {
			continue
		}
		if v := gd.verdict(e); v != nil {
			cs.keep(e.Seq, v) // found to kill its host before: fails, not run
			continue
		}
		_, recorded := p.recorded[resultKey{e.CallerId, e.Seq}]
		if !recorded {
			if gd.suspect(e) {
				res := worker.Fail(e.Spec, pb.ErrorInfo_ACTOR_DIED, suspectMessage(e.Spec.Function), "", g.env.Node)
				gd.convict(e, res)
				g.env.Logger.Warn("actors: a logged call was running when its host died, and again when a restart replayed it: it is taken as the cause, fails and is not run again",
					"actor", g.id, "method", e.Spec.Function, "caller", e.CallerId, "seq", e.Seq, "index", e.Index)
				cs.keep(e.Seq, res)
				continue
			}
			if err := g.fencedTxn(ctx, inc, []gcs.Op{gd.put(e)}); err != nil {
				return fmt.Errorf("record the call replay runs: %w", err)
			}
		}
		res, _ := runCall(ctx, &runner, nil, g.contextFor(inc, r.resources), class, inst, e.Spec)
		if !recorded {
			ran = append(ran, &pb.ActorResultRecord{CallerId: e.CallerId, Seq: e.Seq, Index: e.Index, Digest: digest(res)})
		}
		g.env.Stats.Replayed.Add(g.slot, 1)
		r.replayed++
		if rec, ok := p.recorded[resultKey{e.CallerId, e.Seq}]; ok && rec != digest(res) {
			g.env.Stats.Divergent.Add(g.slot, 1)
			g.env.Logger.Warn("actors: a replayed call gave a different result than its first run; a method is not deterministic given the state and arguments (see package actors)",
				"actor", g.id, "method", e.Spec.Function, "caller", e.CallerId, "seq", e.Seq)
		}
		cs.keep(e.Seq, res)
	}
	// Replay is over: clear the guard (keeping the verdicts), and record the digests of
	// the calls it ran that had none, so that a later restart does not guard them again.
	if !gd.dirty() && len(ran) == 0 {
		return nil
	}
	ops := []gcs.Op{gd.final()}
	if len(ran) > 0 {
		b := &pb.ActorLogBatch{Batch: r.nextBatch, Incarnation: inc, Results: ran}
		val, err := proto.Marshal(b)
		if err != nil {
			return fmt.Errorf("encode the replayed calls' results: %w", err)
		}
		ops = append(ops, gcs.Op{Kind: gcs.OpPut, Key: gcs.ActorLogKey(g.id, b.Batch), Value: val})
		k := logKey{batch: b.Batch}
		for _, res := range ran {
			k.maxIndex = max(k.maxIndex, res.Index)
		}
		r.keys = append(r.keys, k)
		r.nextBatch++
	}
	if err := g.fencedTxn(ctx, inc, ops); err != nil {
		return fmt.Errorf("record the end of replay: %w", err)
	}
	return nil
}

// replayKeyName is the last element of gcs.ActorReplayKey.
const replayKeyName = "replay"

// suspectMessage is the error of a logged call taken as the cause of its host's deaths.
func suspectMessage(method string) string {
	return fmt.Sprintf("actors: the call %s did not complete: it was running when the actor's host died, and again "+
		"when the restarted instance replayed it (2 host deaths): it is taken as their cause (a method that exits "+
		"or crashes its process) and is not run again; the actor restarted without it. An exactly-once actor "+
		"replays a call that was running when its host died at most once", method)
}

// guardState is what replay knows and writes of the replay guard (gcs.ActorReplayKey), a
// pb.ActorLogBatch: Incarnation is the incarnation that wrote it, Entries at most one
// call (its index, caller and seq; no spec): the one that incarnation was replaying, and
// Results the calls found to kill their host, each with the error it fails with.
type guardState struct {
	key      string
	inc      uint64
	suspectE *pb.ActorLogEntry                // left by an earlier incarnation that died replaying it
	verdicts map[uint64]*pb.ActorResultRecord // by log index
	marked   bool                             // it names a call (this incarnation's or an earlier one's)
	changed  bool                             // verdicts dropped or added
}

func newGuardState(b *pb.ActorLogBatch, after, inc uint64, key string) *guardState {
	gd := &guardState{key: key, inc: inc, verdicts: map[uint64]*pb.ActorResultRecord{}}
	if b == nil {
		return gd
	}
	gd.marked = len(b.Entries) > 0
	if len(b.Entries) == 1 && b.Incarnation < inc {
		gd.suspectE = b.Entries[0]
	}
	for _, v := range b.Results {
		if v.Index <= after || v.Result == nil {
			gd.changed = true // a checkpoint covers it (and holds its answer)
			continue
		}
		gd.verdicts[v.Index] = v
	}
	return gd
}

// verdict is the failure of call e if it was found to kill its host, else nil.
func (gd *guardState) verdict(e *pb.ActorLogEntry) *pb.TaskResult {
	if v := gd.verdicts[e.Index]; v != nil && v.CallerId == e.CallerId && v.Seq == e.Seq {
		return v.Result
	}
	return nil
}

// suspect reports whether an earlier incarnation died while replaying e.
func (gd *guardState) suspect(e *pb.ActorLogEntry) bool {
	s := gd.suspectE
	return s != nil && s.Index == e.Index && s.CallerId == e.CallerId && s.Seq == e.Seq
}

// convict records that e fails with res and is not run.
func (gd *guardState) convict(e *pb.ActorLogEntry, res *pb.TaskResult) {
	gd.verdicts[e.Index] = &pb.ActorResultRecord{CallerId: e.CallerId, Seq: e.Seq, Index: e.Index, Result: res}
	gd.changed = true
}

// put is the write that names e as the call replay runs now.
func (gd *guardState) put(e *pb.ActorLogEntry) gcs.Op {
	gd.marked = true
	return gd.op(&pb.ActorLogEntry{Index: e.Index, CallerId: e.CallerId, Seq: e.Seq, Skip: true})
}

// dirty reports whether the guard in the GCS differs from what final writes.
func (gd *guardState) dirty() bool { return gd.marked || gd.changed }

// final is the write that ends replay: the guard with its verdicts and no call, or none.
func (gd *guardState) final() gcs.Op {
	gd.marked = false
	if len(gd.verdicts) == 0 {
		return gcs.Op{Kind: gcs.OpDelete, Key: gd.key}
	}
	return gd.op(nil)
}

func (gd *guardState) op(e *pb.ActorLogEntry) gcs.Op {
	b := &pb.ActorLogBatch{Incarnation: gd.inc}
	if e != nil {
		b.Entries = []*pb.ActorLogEntry{e}
	}
	idx := make([]uint64, 0, len(gd.verdicts))
	for i := range gd.verdicts {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		b.Results = append(b.Results, gd.verdicts[i])
	}
	val, _ := proto.Marshal(b) // (a message of plain fields: it encodes)
	return gcs.Op{Kind: gcs.OpPut, Key: gd.key, Value: val}
}

// contextFor is Env.Context for the calls an instance of incarnation inc, holding
// resources, runs.
func (g *grain) contextFor(inc uint64, resources []*pb.ResourceQty) func(context.Context, *pb.TaskSpec) context.Context {
	return func(parent context.Context, spec *pb.TaskSpec) context.Context {
		return g.env.Context(parent, spec, g.id, inc, resources)
	}
}

// errSuperseded: the actor record moved to another incarnation or node, or the actor died.
var errSuperseded = fmt.Errorf("superseded while starting")

// deleteOrphans deletes the log batches after a hole, fenced on the actor record like a
// log write, before the instance serves (and so before it writes a batch of its own).
func (g *grain) deleteOrphans(ctx context.Context, inc uint64, orphans []uint64) error {
	for len(orphans) > 0 {
		n := min(len(orphans), maxDeletesPerTxn)
		ops := make([]gcs.Op, n)
		for i, b := range orphans[:n] {
			ops[i] = gcs.Op{Kind: gcs.OpDelete, Key: gcs.ActorLogKey(g.id, b)}
		}
		if err := g.fencedTxn(ctx, inc, ops); err != nil {
			if errors.Is(err, errSuperseded) {
				return err
			}
			return fmt.Errorf("delete method log batches after a hole: %w", err)
		}
		orphans = orphans[n:]
	}
	return nil
}

// fencedTxn commits ops if the actor record is still at the revision the instance knows
// (g.rev), as a log write is, retrying a failed or fenced attempt a bounded number of
// times; errSuperseded if the record moved to another incarnation or node, or the actor
// died.
func (g *grain) fencedTxn(ctx context.Context, inc uint64, ops []gcs.Op) error {
	for attempt := 0; ; attempt++ {
		tctx, cancel := context.WithTimeout(ctx, logAttemptTimeout)
		ok, _, err := g.env.Table.Store.Txn(tctx, []gcs.Cmp{{Key: gcs.ActorKey(g.id), ModRev: g.rev.Load()}}, ops)
		if err == nil && !ok {
			info, rev, gerr := g.env.Table.Get(tctx, g.id)
			if gerr == nil && (info.Incarnation != inc || info.Node != string(g.env.Node) || lifecycle.Phase(info.Phase) == lifecycle.Dead) {
				cancel()
				return errSuperseded
			}
			if gerr == nil {
				g.rev.Store(rev)
			}
		}
		cancel()
		if err == nil && ok {
			return nil
		}
		if ctx.Err() != nil || attempt >= 20 {
			if err == nil {
				err = fmt.Errorf("the actor record keeps changing")
			}
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(time.Duration(attempt+1)*50*time.Millisecond, time.Second)):
		}
	}
}
