package actors

import (
	"context"
	"fmt"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
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
		res, _ := runCall(ctx, &runner, nil, g.contextFor(inc, r.resources), class, inst, e.Spec)
		g.env.Stats.Replayed.Add(g.slot, 1)
		r.replayed++
		if rec, ok := p.recorded[resultKey{e.CallerId, e.Seq}]; ok && rec != digest(res) {
			g.env.Stats.Divergent.Add(g.slot, 1)
			g.env.Logger.Warn("actors: a replayed call gave a different result than its first run; a method is not deterministic given the state and arguments (see package actors)",
				"actor", g.id, "method", e.Spec.Function, "caller", e.CallerId, "seq", e.Seq)
		}
		cs.keep(e.Seq, res)
	}
	return nil
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
				break
			}
			if ctx.Err() != nil || attempt >= 20 {
				if err == nil {
					err = fmt.Errorf("the actor record keeps changing")
				}
				return fmt.Errorf("delete method log batches after a hole: %w", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(min(time.Duration(attempt+1)*50*time.Millisecond, time.Second)):
			}
		}
		orphans = orphans[n:]
	}
	return nil
}
