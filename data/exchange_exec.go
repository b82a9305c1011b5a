package data

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/ray-go/ray"
)

// The executor's side of an all-to-all operator (see exchange.md). The operator is a
// barrier of the streaming executor: its input blocks, the outputs of its map tasks and
// those of its merge tasks are parked (held in the object store, which spills them past its
// memory, and not counted against the execution's budget, which bounds the tasks in flight
// by their expected outputs); its reduce tasks start when every map and merge is done and
// their outputs flow downstream like any operator's, in partition order.

// Task roles inside an exchange.
const (
	roleBlock = iota // an ordinary operator's task
	roleSample
	roleMap
	roleMerge
	roleReduce
)

var roleNames = [...]string{"", "sample", "map", "merge", "reduce"}

// Exchange phases.
const (
	phaseCollect = iota // waiting for every input block
	phaseSample
	phaseMap
	phaseReduce
)

// xSeqBase numbers the tasks of an exchange that make no output block (samples, maps,
// merges) apart from its reduces, whose sequence numbers are the output's order.
const xSeqBase = 1 << 40

// xSrc is a block an exchange holds: an input block, a map output or a merge output.
type xSrc struct {
	ob       outBlock
	parts    []xPart // the partitions with rows, in order (map and merge outputs)
	users    int     // queued or running tasks that read it
	keep     bool    // later tasks may still read it
	released bool
}

// xPart is a partition with rows in a map or merge output: where its rows start and how
// many. A source keeps only these: a dense count per partition for every source was
// 16 bytes × N² on the driver (144 MB for a sort of 3000 blocks), mostly zeros when the
// blocks are small.
type xPart struct {
	p      int
	off, n int64
}

// xParts makes the non-empty partitions of a map or merge output from its rows per
// partition.
func xParts(counts []int64) []xPart {
	k := 0
	for _, n := range counts {
		if n > 0 {
			k++
		}
	}
	out := make([]xPart, 0, k)
	var off int64
	for p, n := range counts {
		if n > 0 {
			out = append(out, xPart{p: p, off: off, n: n})
		}
		off += n
	}
	return out
}

// xCursor walks the sources' partitions in partition order: at(i, p) is source i's
// partition p (n 0: no rows there), for p increasing.
type xCursor []int

func (c xCursor) at(s *xSrc, i, p int) xPart {
	for c[i] < len(s.parts) && s.parts[c[i]].p < p {
		c[i]++
	}
	if c[i] < len(s.parts) && s.parts[c[i]].p == p {
		return s.parts[c[i]]
	}
	return xPart{p: p}
}

// xState is an exchange's state in the executor.
type xState struct {
	x         exchange
	n         int // partitions (0 until known)
	expect    int // input blocks expected, -1 unknown
	phase     int
	inputs    []*xSrc // input blocks waiting for the maps (or, without maps, for the reduces)
	nIn       int     // non-empty input blocks received: one map each
	maps      []*xSrc // map outputs by map index (nil until done)
	mapsDone  int
	groups    []*xSrc // merge outputs by group of mergeFactor maps
	nextGroup int
	merging   int
	samples   []ray.ObjectRef[arrow.Record]
	sampling  int
	bounds    []byte
	seq       int
	all       []*xSrc
	phases    [5]*opStats      // per role: sample, map, merge
	fusedIn   string           // the operator whose tasks run the maps (fused), if any
	early     bool             // the reduces started before every map ended (xEarlyReduces)
	pend      map[string]*xSrc // early: the map outputs the reduces read that do not exist yet, by ref ID
	shuffled  int64            // bytes of map outputs
	merged    int64            // bytes of merge outputs
}

func randomSeed() int64 {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return int64(binary.LittleEndian.Uint64(b[:]) >> 1)
}

// expectBlocks is how many blocks op will emit, when the plan tells (-1 otherwise).
func expectBlocks(op *opState) int {
	switch op.p.kind {
	case pSource:
		return len(op.pending)
	case pInput:
		return len(op.p.blocks)
	case pMap:
		return expectBlocks(op.ups[0])
	case pUnion:
		n := 0
		for _, u := range op.ups {
			k := expectBlocks(u)
			if k < 0 {
				return -1
			}
			n += k
		}
		return n
	}
	return -1
}

// xInit sets an exchange up once every operator is prepared.
func (e *executor) xInit(op *opState) {
	st := &xState{x: *op.p.x, expect: expectBlocks(op.ups[0])}
	op.x = st
	if !st.x.Seeded {
		st.x.Seed = randomSeed()
	}
	for _, r := range []int{roleSample, roleMap, roleMerge} {
		st.phases[r] = &opStats{name: roleNames[r]}
	}
	op.stats.x = st
	st.n = st.x.N
	if st.x.streams() && (st.n > 0 || st.expect >= 0) {
		if st.n == 0 {
			st.n = max(st.expect, 1)
		}
		st.phase = phaseMap
		if op.p.fusedMap && len(op.ups) == 1 && op.ups[0].p.xmap {
			op.ups[0].xfuse = st
			st.fusedIn = op.ups[0].name
		}
	}
}

// src is the held block for b: the placeholder the early reduces read when they started
// before b existed, else a new one.
func (st *xState) src(b outBlock) *xSrc {
	if s := st.pend[b.ref.ID()]; s != nil {
		delete(st.pend, b.ref.ID())
		s.ob, s.keep = b, true
		return s
	}
	return st.track(&xSrc{ob: b, keep: true})
}

func (st *xState) track(s *xSrc) *xSrc {
	st.all = append(st.all, s)
	return s
}

// xRelease frees a held block once no task reads it and none will.
func (e *executor) xRelease(s *xSrc) {
	if s.users > 0 || s.keep || s.released {
		return
	}
	s.released = true
	if s.ob.owned {
		s.ob.ref.Release()
	}
}

func (e *executor) xUnuse(s *xSrc) {
	s.users--
	e.xRelease(s)
}

// xReceive parks an input block of the exchange (or, with the map fused into the
// operator before, a map output).
func (e *executor) xReceive(op *opState, b outBlock) error {
	st := op.x
	if b.owned {
		e.usage -= b.size // parked: the store holds it (and spills it), the budget does not
	}
	s := st.src(b)
	if b.rows == 0 {
		s.keep = false
		e.xRelease(s)
		return nil
	}
	st.nIn++
	if st.fusedIn != "" {
		return e.xMapped(op, s, b.parts, roleMap, 0)
	}
	if st.phase == phaseMap {
		e.xQueueMap(op, s)
		return nil
	}
	st.inputs = append(st.inputs, s)
	return nil
}

// xMapped records a finished map (idx unused: maps are appended in order) or merge output.
func (e *executor) xMapped(op *opState, s *xSrc, parts []int64, role, idx int) error {
	st := op.x
	if len(parts) != st.n {
		return fmt.Errorf("data: operator %s: internal error: a %s output of %d partitions, want %d", op.name, roleNames[role], len(parts), st.n)
	}
	s.parts = xParts(parts)
	s.ob.parts = nil // a fused map's dense counts: not kept
	switch role {
	case roleMap:
		if st.fusedIn != "" {
			st.maps = append(st.maps, s)
		} else {
			st.maps[idx] = s
		}
		st.mapsDone++
		st.shuffled += s.ob.size
		if st.early {
			// Every reduce is queued: only they read it.
			s.keep = false
			e.xRelease(s)
		}
	case roleMerge:
		st.groups[idx] = s
		st.merging--
		st.merged += s.ob.size
	}
	e.xTryMerge(op)
	return nil
}

func (e *executor) xItem(op *opState, role int, t *xTask, est int64, srcs []*xSrc, arg *xSrc) workItem {
	st := op.x
	it := workItem{role: role, est: max(est, 1), srcs: srcs, spec: execSpec{Op: op.name, X: t}}
	if role == roleReduce {
		it.seq = op.nextSeq
		op.nextSeq++
	} else {
		it.seq = xSeqBase + st.seq
		st.seq++
	}
	if arg != nil {
		it.arg = &arg.ob.ref
	}
	for _, s := range srcs {
		s.users++
	}
	return it
}

func (e *executor) xQueueMap(op *opState, s *xSrc) {
	st := op.x
	idx := len(st.maps)
	st.maps = append(st.maps, nil)
	s.keep = false
	t := &xTask{Phase: "map", X: st.x, Index: idx, N: st.n, Bounds: st.bounds}
	it := e.xItem(op, roleMap, t, s.ob.size, []*xSrc{s}, s)
	it.idx = idx
	op.pending = append(op.pending, it)
}

// xAdvance moves an exchange to its next phase when the current one is over, and reports
// whether the operator is finished.
func (e *executor) xAdvance(op *opState) (bool, error) {
	st := op.x
	if st.phase == phaseCollect {
		if !op.inputsDone {
			return false, nil
		}
		if st.n == 0 {
			st.n = max(len(st.inputs), 1)
		}
		switch {
		case st.x.Kind == xRepartition && !st.x.Shuffle:
			e.xQueueSplits(op)
			st.phase = phaseReduce
		case st.x.Kind == xSort && st.n > 1 && len(st.inputs) > 0:
			e.xQueueSamples(op)
			st.phase = phaseSample
		default:
			e.xMapInputs(op)
		}
	}
	if st.phase == phaseSample {
		if st.sampling > 0 {
			return false, nil
		}
		if err := e.xBounds(op); err != nil {
			return false, err
		}
		e.xMapInputs(op)
	}
	if st.phase == phaseMap {
		if !op.inputsDone || st.mapsDone < len(st.maps) || st.merging > 0 {
			if e.xEarlyReduces(op) {
				st.phase = phaseReduce
			}
			return false, nil
		}
		e.xQueueReduces(op)
		st.phase = phaseReduce
	}
	return op.inputsDone && len(op.pending) == 0 && len(op.inflight) == 0 && len(op.done) == 0, nil
}

func (e *executor) xMapInputs(op *opState) {
	st := op.x
	for _, s := range st.inputs {
		e.xQueueMap(op, s)
	}
	st.inputs = nil
	st.phase = phaseMap
}

// xQueueSamples starts a sample task per input block: together about 20 rows per
// partition (at least one per block).
func (e *executor) xQueueSamples(op *opState) {
	st := op.x
	per := min(max((20*st.n+len(st.inputs)-1)/len(st.inputs), 1), 1000)
	st.samples = make([]ray.ObjectRef[arrow.Record], len(st.inputs))
	for i, s := range st.inputs {
		t := &xTask{Phase: "sample", X: st.x, Index: i, Samples: per}
		it := e.xItem(op, roleSample, t, 1<<10, []*xSrc{s}, s)
		it.idx = i
		op.pending = append(op.pending, it)
		st.sampling++
	}
}

// xBounds picks the N-1 range boundaries from the sorted samples.
func (e *executor) xBounds(op *opState) error {
	st := op.x
	if len(st.samples) == 0 {
		return nil
	}
	recs, err := ray.GetAll(e.ctx, st.samples)
	for _, r := range st.samples {
		r.Release()
	}
	st.samples = nil
	if err != nil {
		return fmt.Errorf("data: operator %s: fetching the samples: %w", op.name, err)
	}
	all, err := concatRecords(recs)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		return fmt.Errorf("data: operator %s: %w", op.name, err)
	}
	defer all.Release()
	sorted, err := sortRecord(all, st.x.Keys, st.x.Desc)
	if err != nil {
		return fmt.Errorf("data: operator %s: %w", op.name, err)
	}
	defer sorted.Release()
	s := int(sorted.NumRows())
	idx := make([]int32, st.n-1)
	for k := range idx {
		idx[k] = int32(min((k+1)*s/st.n, s-1))
	}
	b, err := takeRows(sorted, idx)
	if err != nil {
		return err
	}
	defer b.Release()
	st.bounds, err = encodeRecord(b)
	return err
}

// xTryMerge starts a merge of each group of mergeFactor consecutive map outputs that are
// all done, while later maps exist: the last group is left to the reduces.
func (e *executor) xTryMerge(op *opState) {
	st := op.x
	g := st.x.mergeFactor()
	if g == 0 || op.stopped || st.early {
		return
	}
	for {
		lo, hi := st.nextGroup*g, (st.nextGroup+1)*g
		if len(st.maps) <= hi && st.expect <= hi {
			return // no map after this group (yet)
		}
		if len(st.maps) < hi {
			return
		}
		for _, m := range st.maps[lo:hi] {
			if m == nil {
				return
			}
		}
		srcs := st.maps[lo:hi]
		parts := make([][]zipPiece, st.n)
		var est int64
		for _, s := range srcs {
			est += s.ob.size
			for _, x := range s.parts {
				parts[x.p] = append(parts[x.p], zipPiece{Ref: s.ob.ref, Off: x.off, N: x.n})
			}
		}
		if est > e.mergeLimit() {
			// Too big to make one block of: the reduces read these maps directly.
			st.groups = append(st.groups, nil)
			st.nextGroup++
			continue
		}
		t := &xTask{Phase: "merge", X: st.x, N: st.n, Parts: parts}
		it := e.xItem(op, roleMerge, t, est, srcs, nil)
		it.idx = st.nextGroup
		for _, s := range srcs {
			s.keep = false
		}
		op.pending = append(op.pending, it)
		st.groups = append(st.groups, nil)
		st.nextGroup++
		st.merging++
	}
}

// mergeLimit is the most input bytes a merge takes (its output is one block): half the
// execution's budget, and at most the target block size.
func (e *executor) mergeLimit() int64 {
	return min(e.budget/2, DefaultSettings().TargetMaxBlockSize)
}

// xSources are the blocks the reduces read, in map order: a group's merge output in place
// of its maps (nil for a map that is not done).
func (st *xState) sources() []*xSrc {
	var out []*xSrc
	g := st.x.mergeFactor()
	for i := 0; i < len(st.maps); {
		if g > 0 && i%g == 0 && i/g < len(st.groups) && st.groups[i/g] != nil {
			out = append(out, st.groups[i/g])
			i += g
			continue
		}
		out = append(out, st.maps[i])
		i++
	}
	return out
}

func pieceEst(s *xSrc, n int64) int64 {
	if s.ob.rows == 0 {
		return 0
	}
	return s.ob.size * n / s.ob.rows
}

// xQueueReduces queues a reduce task per partition that has rows (every partition for
// Repartition, which promises n blocks).
func (e *executor) xQueueReduces(op *opState) {
	st := op.x
	srcs := st.sources()
	all := st.x.Kind == xRepartition
	var bytes int64
	for _, s := range srcs {
		bytes += s.ob.size
	}
	copyPieces := e.storeTight(bytes)
	cur := make(xCursor, len(srcs))
	for p := 0; p < st.n && len(srcs) > 0; p++ {
		var pieces []zipPiece
		var used []*xSrc
		var est int64
		for i, s := range srcs {
			if x := cur.at(s, i, p); x.n > 0 {
				pieces = append(pieces, zipPiece{Ref: s.ob.ref, Off: x.off, N: x.n})
				used = append(used, s)
				est += pieceEst(s, x.n)
			}
		}
		if len(pieces) == 0 {
			if !all {
				continue
			}
			// An empty block with the schema.
			pieces = []zipPiece{{Ref: srcs[0].ob.ref}}
			used = srcs[:1]
		}
		t := &xTask{Phase: "reduce", X: st.x, Index: p, N: st.n, Parts: [][]zipPiece{pieces}, First: p, Copy: copyPieces}
		op.pending = append(op.pending, e.xItem(op, roleReduce, t, est, used, nil))
	}
	for _, s := range srcs {
		s.keep = false
		e.xRelease(s)
	}
}

// xEarlyReduces starts the reduces of a shuffle (RandomShuffle, Repartition with shuffle)
// before its last maps end, when every map has been launched and no merge is queued or
// running: a reduce reads the map outputs that exist at their partition's offsets and the
// others (a ref of a running map task, or of a finished one not yet delivered in order) as
// "partition i of this block" (the map writes its rows per partition into the block's
// schema metadata), fetching them in map order and shuffling each in as it comes
// (shuffleReduce), so the reduces overlap the last maps instead of waiting for all of
// them. Only shuffles: their reduces combine pieces one at a time; the others need every
// piece at once. It reports whether it queued the reduces.
func (e *executor) xEarlyReduces(op *opState) bool {
	st := op.x
	if !st.x.permutes() || st.merging > 0 || op.stopped {
		return false
	}
	type later struct {
		seq int
		ref ray.ObjectRef[arrow.Record]
	}
	var late []later // map outputs that do not exist yet, in map order
	if st.fusedIn != "" {
		up := op.ups[0]
		if !up.inputsDone || len(up.pending) > 0 || up.stopped {
			return false
		}
		for seq, t := range up.inflight {
			late = append(late, later{seq, t.ref})
		}
		for seq, b := range up.done {
			late = append(late, later{seq, b.ref})
		}
		slices.SortFunc(late, func(a, b later) int { return a.seq - b.seq })
	} else {
		if !op.inputsDone || len(st.inputs) > 0 {
			return false
		}
		for _, it := range op.pending {
			if it.role != roleBlock && it.role != roleReduce {
				return false // a map or merge still queued
			}
		}
		for _, t := range op.inflight {
			if t.role == roleMap {
				late = append(late, later{t.idx, t.ref})
			}
		}
		slices.SortFunc(late, func(a, b later) int { return a.seq - b.seq })
	}
	if len(late) == 0 {
		return false // every map is done: the usual path
	}
	// The reduces read, in map order: the sources that exist, then the late ones (every
	// map in the unfused case is st.maps[i], nil while it runs; fused maps arrive in order,
	// so the late ones come after st.maps).
	type src struct {
		s    *xSrc
		late bool
	}
	var order []src
	st.pend = map[string]*xSrc{}
	lateSrc := func(l later) *xSrc {
		s := st.track(&xSrc{ob: outBlock{ref: l.ref}})
		st.pend[l.ref.ID()] = s
		return s
	}
	k := 0
	for _, s := range st.sources() { // nil: an unfused map that runs
		if s != nil {
			order = append(order, src{s: s})
			continue
		}
		if k >= len(late) {
			return false // cannot happen: a map neither done nor running
		}
		order = append(order, src{s: lateSrc(late[k]), late: true})
		k++
	}
	for ; k < len(late); k++ { // fused maps: those not delivered yet come after st.maps
		order = append(order, src{s: lateSrc(late[k]), late: true})
	}
	// Estimates: a late piece as the average piece of the outputs that exist.
	var known, knownBytes int64
	for _, o := range order {
		if !o.late {
			known++
			knownBytes += o.s.ob.size
		}
	}
	latePiece := int64(1 << 20)
	if known > 0 {
		latePiece = max(knownBytes/known/int64(st.n), 1)
	}
	st.early = true
	if earlyReducesHook != nil {
		earlyReducesHook()
	}
	cur := make(xCursor, len(order))
	for p := 0; p < st.n; p++ {
		var pieces []zipPiece
		var used []*xSrc
		var est int64
		for i, o := range order {
			if o.late {
				pieces = append(pieces, zipPiece{Ref: o.s.ob.ref, N: -1})
				est += latePiece
			} else if x := cur.at(o.s, i, p); x.n > 0 {
				pieces = append(pieces, zipPiece{Ref: o.s.ob.ref, Off: x.off, N: x.n})
				est += pieceEst(o.s, x.n)
			} else {
				continue
			}
			used = append(used, o.s)
		}
		t := &xTask{Phase: "reduce", X: st.x, Index: p, N: st.n, Parts: [][]zipPiece{pieces}, First: p}
		op.pending = append(op.pending, e.xItem(op, roleReduce, t, est, used, nil))
	}
	for _, o := range order {
		if !o.late {
			o.s.keep = false
			e.xRelease(o.s)
		}
	}
	return true
}

// earlyReducesHook, when set (by tests), is called as the reduces of a shuffle start
// before its last maps end.
var earlyReducesHook func()

// xQueueSplits queues Repartition without shuffle: output block k is rows
// [k*T/n, (k+1)*T/n) of the input, in order, cut from and concatenated of input blocks.
func (e *executor) xQueueSplits(op *opState) {
	st := op.x
	var total, bytes int64
	for _, s := range st.inputs {
		total += s.ob.rows
		bytes += s.ob.size
	}
	if len(st.inputs) > 0 {
		copyPieces := e.storeTight(bytes)
		n := int64(st.n)
		i, off := 0, int64(0) // the input block and row where the next output starts
		for k := int64(0); k < n; k++ {
			want := (k+1)*total/n - k*total/n
			var pieces []zipPiece
			var used []*xSrc
			var est int64
			for want > 0 {
				s := st.inputs[i]
				take := min(want, s.ob.rows-off)
				pieces = append(pieces, zipPiece{Ref: s.ob.ref, Off: off, N: take})
				used = append(used, s)
				est += pieceEst(s, take)
				off += take
				want -= take
				if off == s.ob.rows {
					i, off = i+1, 0
				}
			}
			if len(pieces) == 0 {
				pieces = []zipPiece{{Ref: st.inputs[0].ob.ref}}
				used = st.inputs[:1]
			}
			t := &xTask{Phase: "reduce", X: st.x, Index: int(k), N: st.n, Parts: [][]zipPiece{pieces}, First: int(k), Copy: copyPieces}
			op.pending = append(op.pending, e.xItem(op, roleReduce, t, est, used, nil))
		}
	}
	for _, s := range st.inputs {
		s.keep = false
		e.xRelease(s)
	}
	st.inputs = nil
}

// xComplete handles a finished sample, map or merge task.
func (e *executor) xComplete(op *opState, t *task, info ray.ObjectInfo) error {
	st := op.x
	delete(op.inflight, t.seq)
	e.inflight--
	e.usage -= t.est
	for _, s := range t.srcs {
		e.xUnuse(s)
	}
	if op.stopped {
		t.ref.Release()
		return nil
	}
	if info.Err != nil {
		t.ref.Release()
		return fmt.Errorf("data: operator %s failed (%s task): %w", op.name, roleNames[t.role], info.Err)
	}
	var m blockMeta
	if err := json.Unmarshal(info.Metadata, &m); err != nil || len(info.Metadata) == 0 {
		_, gerr := ray.Get(e.ctx, t.ref)
		t.ref.Release()
		if gerr != nil {
			return fmt.Errorf("data: operator %s failed (%s task): %w", op.name, roleNames[t.role], gerr)
		}
		return fmt.Errorf("data: operator %s: a %s task's output came without its metadata", op.name, roleNames[t.role])
	}
	size := info.Size
	if size <= 0 {
		size = max(m.Bytes, 1)
	}
	op.seenOut = true
	st.phases[t.role].add(m, time.Since(t.start))
	st.phases[t.role].tasks++
	if t.role == roleSample {
		st.samples[t.idx] = t.ref
		st.sampling--
		return nil
	}
	s := st.src(outBlock{ref: t.ref, rows: m.Rows, size: size, fp: m.Schema, owned: true})
	return e.xMapped(op, s, m.Parts, t.role, t.idx)
}

// xDrop lets go of what a stopped exchange holds (Limit reached downstream).
func (e *executor) xDrop(op *opState) {
	st := op.x
	for _, it := range op.pending {
		for _, s := range it.srcs {
			e.xUnuse(s)
		}
	}
	op.pending = nil
	for _, s := range st.all {
		s.keep = false
		e.xRelease(s)
	}
	st.inputs = nil
	for _, r := range st.samples {
		if r.ID() != "" {
			r.Release()
		}
	}
	st.samples = nil
}

// xCleanup frees everything at the end of the execution (running tasks are cancelled).
func (e *executor) xCleanup(op *opState) {
	st := op.x
	e.unuseMu.Lock()
	defer e.unuseMu.Unlock()
	e.loopEnded = true
	for _, srcs := range e.unuse {
		for _, s := range srcs {
			s.users--
		}
	}
	e.unuse = nil
	ok := e.err == nil && e.ctx.Err() == nil
	for _, s := range st.all {
		if ok && s.users > 0 {
			// Read by a reduce whose output the consumer holds: released with it.
			continue
		}
		if !s.released {
			s.released = true
			if s.ob.owned {
				s.ob.ref.Release()
			}
		}
	}
	for _, r := range st.samples {
		if r.ID() != "" {
			r.Release()
		}
	}
	st.samples = nil
}

// storeTight says whether the reduces of an exchange whose blocks hold bytes should copy
// out the slices they read (xTask.Copy): when an object store has spilled (a spilled block
// is restored whole into memory of its own), when the blocks are more than half of a
// store's memory, or when the stores cannot be asked (copying is the safe choice).
func (e *executor) storeTight(bytes int64) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 5*time.Second)
	defer cancel()
	rep, err := ray.Memory(ctx, 0)
	if err != nil || len(rep.Nodes) == 0 {
		return true
	}
	for _, nd := range rep.Nodes {
		if nd.SpilledBytes > 0 || nd.SpillErrors > 0 || bytes > nd.Budget/2 {
			return true
		}
	}
	return false
}

// sampleSpill records the most bytes the object stores held spilled (for Stats), at most
// every 250 ms while an exchange runs.
func (e *executor) sampleSpill(force bool) {
	if !e.hasX || !force && time.Since(e.lastSpill) < 250*time.Millisecond {
		return
	}
	e.lastSpill = time.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), time.Second)
	defer cancel()
	rep, err := ray.Memory(ctx, 0)
	if err != nil {
		return
	}
	var n int64
	for _, nd := range rep.Nodes {
		n += nd.SpilledBytes
	}
	e.stats.spilled = max(e.stats.spilled, n)
	e.stats.hasX = true
}

// inTasks is how many of the exchange operator's own tasks were not reduces (samples,
// merges, and maps unless fused into the operator before).
func (st *xState) inTasks() int {
	n := st.phases[roleSample].tasks + st.phases[roleMerge].tasks
	if st.fusedIn == "" {
		n += st.phases[roleMap].tasks
	}
	return n
}

// maxLostRetries bounds how often one exchange task runs again after failing because a
// block it reads was lost when no block of it was found lost (runs after which lost blocks
// were recreated do not count: they made progress).
const maxLostRetries = 3

// retryLost handles an exchange task (merge or reduce) that failed because a block it
// reads was lost with its node (a worker process killed, a machine gone). Those tasks read
// map and merge outputs through refs inside their spec, not as task arguments, so the
// runtime's recovery of lost arguments does not see them; but this process owns them: a
// Get here recreates a lost one through lineage (running the tasks that made it again,
// and theirs if need be). Then the task is queued again, as it was, keeping its blocks
// held. It reports whether it did; err is set when the recovery itself failed (the task's
// error then says what was lost).
func (e *executor) retryLost(op *opState, t *task, info ray.ObjectInfo) (bool, error) {
	if info.Err == nil || op.stopped || len(t.srcs) == 0 || t.item.lost >= maxLostRetries || !lostErr(info.Err) {
		return false, nil
	}
	lost, err := recreateLost(e.ctx, t.srcs, info.Err)
	if err != nil {
		return false, fmt.Errorf("data: operator %s (%s task): %w", op.name, roleNames[t.role], err)
	}
	delete(op.inflight, t.seq)
	e.inflight--
	e.usage -= t.est
	t.ref.Release()
	it := t.item
	if lost == 0 {
		it.lost++ // no progress: bounded by maxLostRetries
	}
	op.pending = append([]workItem{it}, op.pending...)
	e.stats.lostRetries++
	return true, nil
}

// lostErr says whether a task failed because an object it read was lost. The error
// crosses processes as a message: its kind when the runtime kept it, else its text.
func lostErr(err error) bool {
	return errors.Is(err, ray.ErrObjectLost) || strings.Contains(err.Error(), ray.ErrObjectLost.Error())
}

// recreateLost recreates the blocks of srcs that were lost, as the error cause of a task
// that read them says: the one it names, the others on the same node, and those on nodes
// gone from the job's list (this process may learn of a death after the task that
// failed). All at once: a reduce reads every map output, and one node held many. This
// process owns them: a Get here recreates a lost one through lineage. It returns how many
// it recreated (blocks whose node changed). Safe on any goroutine: it reads only the blocks' refs.
func recreateLost(ctx context.Context, srcs []*xSrc, cause error) (int, error) {
	nodes, err := ray.Nodes(ctx)
	if err != nil {
		return 0, err
	}
	alive := make(map[string]bool, len(nodes))
	for _, n := range nodes.Alive() {
		alive[n.ID] = true
	}
	msg := cause.Error()
	where := make([]string, len(srcs))
	dead := map[string]bool{}
	for i, s := range srcs {
		if ri, err := ray.RefInfo(ctx, s.ob.ref); err == nil {
			where[i] = ri.NodeID
		}
		if where[i] != "" && (strings.Contains(msg, s.ob.ref.ID()) || !alive[where[i]]) {
			dead[where[i]] = true
		}
	}
	var lost []ray.ObjectRef[arrow.Record]
	var was []string
	for i, s := range srcs {
		if dead[where[i]] {
			lost = append(lost, s.ob.ref)
			was = append(was, where[i])
		}
	}
	if len(lost) == 0 {
		return 0, nil
	}
	recs, err := ray.GetAll(ctx, lost)
	if err != nil {
		return 0, fmt.Errorf("blocks it reads were lost and could not be recreated: %w (the task: %v)", err, cause)
	}
	for _, r := range recs {
		if r != nil {
			r.Release()
		}
	}
	// Only a block that now lives elsewhere was recreated: one named in the error that is
	// still where it was (recreated before, on a node that lives) is no progress, and a
	// task that keeps failing on it must use up its bounded retries, not run forever.
	moved := 0
	for i, r := range lost {
		if ri, err := ray.RefInfo(ctx, r); err == nil && ri.NodeID != was[i] {
			moved++
		}
	}
	return moved, nil
}

// redoBlock runs again the reduce that made ob, a block the consumer could not read
// because it was lost (or because the reduce, run again by lineage, found the blocks it
// reads lost: they are refs inside its spec, not task arguments): it recreates the lost
// blocks the reduce reads, then runs the reduce as a new task. It returns the new block,
// which the caller releases.
func (e *executor) redoBlock(ctx context.Context, ob outBlock, cause error) (ray.ObjectRef[arrow.Record], error) {
	var none ray.ObjectRef[arrow.Record]
	if ob.redo == nil || !lostErr(cause) {
		return none, cause
	}
	if _, err := recreateLost(ctx, ob.redo.srcs, cause); err != nil {
		return none, err
	}
	return execTask.Remote(ctx, ray.V(ob.redo.spec), ray.V[arrow.Record](nil)), nil
}
