package data

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/ray-go/ray"
	"github.com/ray-go/ray/data/internal/formats"
)

// outBlock is a block flowing between operators: a ref the driver owns and its metadata.
type outBlock struct {
	ref   ray.ObjectRef[arrow.Record]
	rows  int64
	size  int64  // bytes counted against the budget (the object's stored size)
	fp    uint64 // schema fingerprint; 0 unknown
	sch   string
	owned bool    // produced by this execution: counted in usage, released when consumed
	parts []int64 // a fused exchange map's output: rows per partition
	// redo: the reduce that made this block, for the consumer to run again if the block
	// is lost before it reads it (redoBlock); the blocks the reduce read stay held until
	// the consumer releases this one.
	redo *workItem
	// schema is the block's schema from its metadata (nil: unknown). want is the schema of
	// the dataset as known when the block is handed to the consumer: the block's null
	// columns are cast to it (see unify.go).
	schema *arrow.Schema
	want   *arrow.Schema
}

// task is one running task (or actor call) of an operator.
type task struct {
	seq   int
	ref   ray.ObjectRef[arrow.Record]
	in    *outBlock
	est   int64
	actor *actorSlot
	start time.Time
	zip   []*zipRight // Zip: the right blocks the task reads
	role  int         // exchange: roleSample, roleMap, ... (roleBlock otherwise)
	idx   int         // exchange: the sample's input, the map's index, the merge's group
	srcs  []*xSrc     // exchange: the held blocks the task reads
	item  workItem    // what was queued, to queue again (retryLost)
}

type workItem struct {
	seq  int
	spec execSpec // source operators
	in   *outBlock
	est  int64 // a guess of the output size before any output is seen
	zip  []*zipRight
	role int
	idx  int
	srcs []*xSrc
	arg  *ray.ObjectRef[arrow.Record] // exchange: the input block argument (held by srcs)
	lost int                          // runs that failed because a block they read was lost (retryLost)
}

// zipRight is a block of Zip's right input: released once every row is paired and the
// tasks that read it are done.
type zipRight struct {
	b     outBlock
	off   int64 // rows paired so far
	users int   // tasks running that read it
}

type actorSlot struct {
	h    ray.ActorHandle[poolActor]
	cpus float64 // CPUs reserved in the cluster (0: the actor runs on borrowed CPUs)
	busy bool
	used bool
	idle time.Time // when it last became idle
}

// actorIdleTimeout is how long an actor beyond a pool's min may stay idle with no blocks
// waiting before the pool shrinks.
const actorIdleTimeout = 2 * time.Second

// opState is the executor's state of one physical operator.
type opState struct {
	p           *pop
	name        string
	down        *opState
	downIdx     int
	ups         []*opState
	pending     []workItem
	inputsDone  bool
	nextSeq     int
	inflight    map[int]*task
	done        map[int]outBlock
	dropped     map[int]bool // sequence numbers whose output was dropped
	nextOut     int
	finished    bool
	stopped     bool
	maxOut      int64 // largest output seen (the estimate of the next output)
	seenOut     bool
	stats       *opStats
	actors      []*actorSlot
	rowsSeen    int64 // limit
	reached     bool  // limit
	unionQ      [][]outBlock
	unionDone   []bool
	unionCur    int
	unionFP     uint64
	unionSch    string
	unionFirst  int
	unionSchema *arrow.Schema
	barrier     []outBlock // RandomizeBlockOrder: the input blocks
	zipLeft     []outBlock // Zip: left blocks waiting for right rows
	zipRight    []*zipRight
	zipRows     [2]int64 // Zip: rows received per input
	zipDone     [2]bool
	x           *xState // an all-to-all operator
	xfuse       *xState // its tasks run the map of this exchange (pop.xmap)
}

// executor runs a physical plan: operators run concurrently, blocks flow downstream as soon
// as they exist, and the number of tasks and the bytes of blocks held are bounded.
type executor struct {
	ctx        context.Context
	cancel     context.CancelFunc
	cpus       float64    // the cluster's CPUs
	ops        []*opState // priority order: downstream first, earlier union inputs first
	sink       *opState
	budget     int64
	maxTasks   int
	usage      int64 // bytes of owned blocks not yet consumed + estimates of running tasks
	peak       int64
	inflight   int
	sinkQ      []outBlock
	sinkFP     uint64
	sinkSch    string
	sinkSchema *arrow.Schema            // the unified schema of the blocks for the consumer so far
	holdOff    bool                     // hand out the head block even if its null columns are unresolved
	schemas    map[uint64]*arrow.Schema // decoded block schemas by fingerprint
	out        chan outBlock
	kick       chan struct{}
	consumed   atomic.Int64
	seenCons   int64
	handed     int64        // bytes of owned blocks handed to the consumer
	handedN    int64        // blocks handed to the consumer
	releaseN   atomic.Int64 // blocks the consumer released
	err        error
	stats      *execStats
	progress   bool
	lastDraw   time.Time
	drawn      int
	hasX       bool      // the plan has an all-to-all operator
	lastSpill  time.Time // the last sample of the stores' spilled bytes
	wg         sync.WaitGroup

	// Blocks read by reduces whose outputs the consumer holds (outBlock.redo): released
	// by the loop once the consumer releases those outputs (unuse), or by release itself
	// once the loop has ended.
	unuseMu   sync.Mutex
	unuse     [][]*xSrc
	loopEnded bool
}

// clusterCPUs sums the CPUs of the cluster's nodes (at least 1).
func clusterCPUs(ctx context.Context) int { return max(1, int(clusterCPUsFloat(ctx))) }

func clusterCPUsFloat(ctx context.Context) float64 {
	nodes, err := ray.Nodes(ctx)
	if err != nil {
		return 1
	}
	var n float64
	for _, nd := range nodes.Alive() {
		n += nd.Resources["CPU"]
	}
	return n
}

func clusterStoreBytes(ctx context.Context) int64 {
	nodes, err := ray.Nodes(ctx)
	if err != nil {
		return 0
	}
	var n int64
	for _, nd := range nodes.Alive() {
		n += nd.ObjectStoreBytes
	}
	return n
}

func newExecutor(ctx context.Context, plan *pop, o options) (*executor, error) {
	e := &executor{out: make(chan outBlock), kick: make(chan struct{}, 1)}
	e.ctx, e.cancel = context.WithCancel(ctx)
	s := DefaultSettings()
	e.budget = o.budget
	if e.budget <= 0 {
		e.budget = int64(float64(clusterStoreBytes(ctx)) * s.ObjectStoreFraction)
		if e.budget <= 0 {
			e.budget = 1 << 30
		}
	}
	e.cpus = clusterCPUsFloat(ctx)
	e.maxTasks = o.maxTasks
	if e.maxTasks <= 0 {
		e.maxTasks = max(1, int(e.cpus))
	}
	if o.progress != nil {
		e.progress = *o.progress
	} else if !s.NoProgress {
		if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			e.progress = true
		}
	}
	e.stats = &execStats{start: time.Now(), budget: e.budget}
	// e.ops is filled in pre-order: downstream operators first, and the inputs of a Union
	// in order (the first input's blocks are needed first); the statistics list operators
	// in post-order (upstream first).
	e.sink = e.build(plan, nil, 0)
	for _, op := range e.ops {
		if err := e.prepare(op); err != nil {
			e.cancel()
			return nil, err
		}
	}
	for _, op := range e.ops {
		if op.p.kind == pAllToAll {
			e.xInit(op)
			e.hasX = true
		}
	}
	return e, nil
}

func (e *executor) build(p *pop, down *opState, idx int) *opState {
	op := &opState{p: p, name: p.name(), down: down, downIdx: idx, inflight: map[int]*task{}, done: map[int]outBlock{}, dropped: map[int]bool{}}
	op.stats = &opStats{name: op.name}
	e.ops = append(e.ops, op)
	for i, in := range p.inputs {
		op.ups = append(op.ups, e.build(in, op, i))
	}
	e.stats.ops = append(e.stats.ops, op.stats)
	if p.kind == pUnion {
		op.unionQ = make([][]outBlock, len(p.inputs))
		op.unionDone = make([]bool, len(p.inputs))
		op.unionFirst = -1
	}
	return op
}

// prepare fills the work of source operators and emits the blocks of inputs.
func (e *executor) prepare(op *opState) error {
	switch op.p.kind {
	case pSource:
		items, err := planSource(e.ctx, op.p.source)
		if err != nil {
			return err
		}
		for _, it := range items {
			it.spec.Op = op.name
			it.spec.Stages = op.p.stages
			it.seq = op.nextSeq
			op.nextSeq++
			op.pending = append(op.pending, it)
		}
		op.inputsDone = true
	case pInput:
		op.inputsDone = true
	case pLimit:
		if op.p.limit == 0 {
			op.reached = true
		}
	}
	return nil
}

// planSource splits a source into the inputs of its read tasks.
func planSource(ctx context.Context, s *sourceSpec) ([]workItem, error) {
	par := s.Parallelism
	if par <= 0 {
		par = clusterCPUs(ctx)
	}
	target := s.Read.TargetBytes
	if target <= 0 {
		target = DefaultSettings().TargetMaxBlockSize
	}
	if s.Kind == "range" {
		if s.N == 0 {
			return nil, nil
		}
		n := int64(par)
		// Blocks of at most the target size (8 bytes per id).
		if minTasks := (s.N*8 + target - 1) / target; minTasks > n {
			n = minTasks
		}
		n = min(n, s.N)
		items := make([]workItem, 0, n)
		for i := int64(0); i < n; i++ {
			start, end := s.N*i/n, s.N*(i+1)/n
			items = append(items, workItem{spec: execSpec{Source: s, Start: start, End: end}, est: (end - start) * 8})
		}
		return items, nil
	}
	if s.Kind == "ipc" {
		items := make([]workItem, len(s.Blocks))
		for i := range s.Blocks {
			one := *s
			one.Blocks, one.Rows = [][]byte{s.Blocks[i]}, nil
			items[i] = workItem{spec: execSpec{Source: &one}, est: int64(len(s.Blocks[i]))}
		}
		return items, nil
	}
	f := formats.Format(s.Format)
	units, err := formats.Plan(f, s.Paths, par)
	if err != nil {
		return nil, err
	}
	items := make([]workItem, len(units))
	one := *s
	one.Paths = nil
	for i, u := range units {
		est := u.ArrowBytes // from the Parquet metadata
		if est <= 0 {
			est = u.Bytes
		}
		if est <= 0 {
			est = 1 << 20
		}
		items[i] = workItem{spec: execSpec{Source: &one, Unit: u}, est: est}
	}
	return items, nil
}

func extsOf(f formats.Format) []string {
	if f.Ext() == "" {
		return nil
	}
	exts := []string{f.Ext()}
	if f == formats.JSON {
		exts = append(exts, ".jsonl", ".ndjson")
	}
	return exts
}

func (e *executor) start() {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.err = e.loop()
		e.sampleSpill(true)
		e.cleanup()
		e.stats.total = time.Since(e.stats.start)
		e.stats.peakBytes = e.peak
		if e.progress {
			e.draw(true)
		}
		close(e.out)
	}()
}

// next returns the next block of the dataset, in order; ok is false at the end (err says
// whether the execution failed).
func (e *executor) next(ctx context.Context) (outBlock, bool, error) {
	select {
	case ob, ok := <-e.out:
		if !ok {
			return outBlock{}, false, e.err
		}
		return ob, true, nil
	case <-ctx.Done():
		return outBlock{}, false, ctx.Err()
	}
}

// release tells the executor the consumer is done with b; drop frees the block too.
func (e *executor) release(b outBlock, drop bool) {
	if drop && b.owned {
		b.ref.Release()
	}
	if b.owned {
		e.consumed.Add(b.size)
	}
	if b.redo != nil {
		e.unuseMu.Lock()
		if e.loopEnded {
			for _, s := range b.redo.srcs {
				e.xUnuse(s)
			}
		} else {
			e.unuse = append(e.unuse, b.redo.srcs)
		}
		e.unuseMu.Unlock()
	}
	e.releaseN.Add(1)
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// stop ends the execution early (the consumer stopped) and waits for the loop to exit.
func (e *executor) stop() {
	e.cancel()
	go func() {
		for range e.out {
		}
	}()
	e.wg.Wait()
}

func (e *executor) loop() error {
	for _, op := range e.ops {
		if op.p.kind == pInput {
			for i, b := range op.p.blocks {
				ob := outBlock{ref: b.Ref, rows: b.Rows, size: b.Bytes}
				if info, err := ray.RefInfo(e.ctx, b.Ref); err == nil && info.Ready && info.Err == nil {
					var m blockMeta
					if json.Unmarshal(info.Metadata, &m) == nil {
						ob.fp, ob.sch, ob.schema = m.Schema, m.SchemaStr, e.schemaOf(m)
					}
				}
				op.done[i] = ob
			}
			op.nextSeq = len(op.p.blocks)
			if err := e.flush(op); err != nil {
				return err
			}
		}
	}
	for {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		if d := e.consumed.Load(); d != e.seenCons {
			e.usage -= d - e.seenCons
			e.seenCons = d
		}
		e.unuseMu.Lock()
		for _, srcs := range e.unuse {
			for _, s := range srcs {
				e.xUnuse(s)
			}
		}
		e.unuse = nil
		e.unuseMu.Unlock()
		if err := e.checkFinished(); err != nil {
			return err
		}
		if err := e.launch(); err != nil {
			return err
		}
		if e.progress && time.Since(e.lastDraw) > 250*time.Millisecond {
			e.draw(false)
		}
		e.sampleSpill(false)
		// Hand the next block to the consumer, or wait for work to finish.
		if len(e.sinkQ) > 0 && e.headReady() {
			select {
			case e.out <- e.head():
				e.handOut()
				continue
			default:
			}
		} else if len(e.sinkQ) == 0 && e.sink.finished {
			return nil
		}
		if e.inflight == 0 {
			if len(e.sinkQ) > 0 && !e.headReady() {
				// The head block waits for a block that types its null columns, and
				// nothing runs: run something, or give up waiting.
				ok, err := e.forceLaunch()
				if err != nil {
					return err
				}
				if !ok {
					e.holdOff = true
				}
				continue
			}
			if len(e.sinkQ) > 0 {
				select {
				case e.out <- e.head():
					e.handOut()
				case <-e.kick:
				case <-e.ctx.Done():
					return e.ctx.Err()
				}
				continue
			}
			if e.handed > e.seenCons {
				// The consumer holds blocks: wait for it to let go of some.
				select {
				case <-e.kick:
				case <-time.After(50 * time.Millisecond):
				case <-e.ctx.Done():
					return e.ctx.Err()
				}
				continue
			}
			if stuck, err := e.stuck(); err != nil || stuck {
				if err == nil {
					err = errors.New("data: internal error: the executor has no work in flight and cannot launch any")
				}
				return err
			}
			continue
		}
		if err := e.poll(); err != nil {
			return err
		}
	}
}

func (e *executor) handOut() {
	if b := e.sinkQ[0]; b.owned {
		e.handed += b.size
	}
	e.handedN++
	e.sinkQ = e.sinkQ[1:]
	e.holdOff = false
}

// head is the next block for the consumer, with the dataset's schema as known now.
func (e *executor) head() outBlock {
	b := e.sinkQ[0]
	b.want = e.sinkSchema
	return b
}

// headReady says whether the next block may go to the consumer. A block with null-typed
// columns (see unify.go) waits until a block of the dataset gives those columns a type, so
// that the consumer sees them typed: until then, up to one block more than the tasks that
// run at once queue behind it (the output backpressure's bound), or the execution ends, or
// nothing else can run. A column null in the whole dataset so costs a short delay, not a
// barrier.
func (e *executor) headReady() bool {
	b := e.sinkQ[0]
	if e.holdOff || e.sink.finished || b.schema == nil || b.rows == 0 || len(e.sinkQ) > e.maxTasks {
		return true
	}
	u := e.sinkSchema
	if u == nil || u.NumFields() != b.schema.NumFields() {
		return true
	}
	for i, f := range b.schema.Fields() {
		if hasNull(f.Type) && hasNull(u.Field(i).Type) {
			return false
		}
	}
	return true
}

// schemaOf decodes the schema in a block's metadata (cached by fingerprint); nil if absent.
func (e *executor) schemaOf(m blockMeta) *arrow.Schema {
	if len(m.SchemaIPC) == 0 {
		return nil
	}
	if s, ok := e.schemas[m.Schema]; ok {
		return s
	}
	s, err := decodeSchema(m.SchemaIPC)
	if err != nil {
		return nil
	}
	if e.schemas == nil {
		e.schemas = map[uint64]*arrow.Schema{}
	}
	e.schemas[m.Schema] = s
	return s
}

// stuck reports that nothing runs and nothing can be launched though work is left.
func (e *executor) stuck() (bool, error) {
	for _, op := range e.ops {
		if !op.finished {
			ok, err := e.forceLaunch()
			return !ok, err
		}
	}
	return false, nil
}

// poll waits briefly for running tasks and processes every finished one.
func (e *executor) poll() error {
	refs := make([]ray.Ref, 0, e.inflight)
	type at struct {
		op *opState
		t  *task
	}
	var all []at
	for _, op := range e.ops {
		for _, t := range op.inflight {
			refs = append(refs, t.ref)
			all = append(all, at{op, t})
		}
	}
	wait := 20 * time.Millisecond
	if len(e.sinkQ) > 0 {
		wait = 2 * time.Millisecond
	}
	if _, _, err := ray.WaitAny(e.ctx, refs, ray.NumReady(1), ray.Timeout(wait)); err != nil && e.ctx.Err() != nil {
		return e.ctx.Err()
	}
	for _, a := range all {
		info, err := ray.RefInfo(e.ctx, a.t.ref)
		if err != nil {
			return fmt.Errorf("data: operator %s: %w", a.op.name, err)
		}
		if !info.Ready {
			continue
		}
		if err := e.complete(a.op, a.t, info); err != nil {
			return err
		}
	}
	return nil
}

func (e *executor) complete(op *opState, t *task, info ray.ObjectInfo) error {
	if retried, err := e.retryLost(op, t, info); retried || err != nil {
		return err
	}
	if t.role != roleBlock && t.role != roleReduce {
		return e.xComplete(op, t, info)
	}
	delete(op.inflight, t.seq)
	e.inflight--
	e.usage -= t.est
	if t.actor != nil {
		t.actor.busy, t.actor.idle = false, time.Now()
	}
	if t.in != nil && t.in.owned {
		t.in.ref.Release()
		e.usage -= t.in.size
	}
	for _, r := range t.zip {
		r.users--
		e.zipRelease(r)
	}
	// A reduce's output that goes to the consumer keeps the blocks it read held until
	// the consumer releases it: if it is lost before, the consumer runs the reduce again.
	hold := t.role == roleReduce && op.down == nil && len(t.srcs) > 0 && !op.stopped && info.Err == nil
	if !hold {
		for _, s := range t.srcs {
			e.xUnuse(s)
		}
	}
	if op.stopped {
		t.ref.Release()
		return nil
	}
	if info.Err != nil {
		return fmt.Errorf("data: operator %s failed: %w%s", op.name, info.Err, tooLargeHint(op, t.role, info.Err))
	}
	unhold := func() {
		if hold {
			for _, s := range t.srcs {
				e.xUnuse(s)
			}
		}
	}
	var m blockMeta
	if err := json.Unmarshal(info.Metadata, &m); err != nil || len(info.Metadata) == 0 {
		unhold()
		if _, gerr := ray.Get(e.ctx, t.ref); gerr != nil {
			return fmt.Errorf("data: operator %s failed: %w", op.name, gerr)
		}
		return fmt.Errorf("data: operator %s: a block came without its metadata", op.name)
	}
	if t.role == roleReduce && m.Rows == 0 && op.x != nil && op.x.early && op.x.x.Kind != xRepartition {
		unhold()
		// An early reduce (see xEarlyReduces) of a partition that got no rows: as a
		// reduce queued after the maps would not have run, it makes no block.
		t.ref.Release()
		op.dropped[t.seq] = true
		return e.flush(op)
	}
	size := info.Size
	if size <= 0 {
		size = max(m.Bytes, 1)
	}
	ob := outBlock{ref: t.ref, rows: m.Rows, size: size, fp: m.Schema, sch: m.SchemaStr, schema: e.schemaOf(m), owned: true, parts: m.Parts}
	if hold {
		it := t.item
		ob.redo = &it
	}
	if x := op.xfuse; x != nil {
		x.phases[roleMap].add(m, time.Since(t.start))
		x.phases[roleMap].tasks++
	}
	e.usage += size
	e.peak = max(e.peak, e.usage)
	op.maxOut = max(op.maxOut, size)
	op.seenOut = true
	op.stats.add(m, time.Since(t.start))
	op.done[t.seq] = ob
	return e.flush(op)
}

func (e *executor) drop(b outBlock) {
	if b.owned {
		b.ref.Release()
		e.usage -= b.size
	}
}

// flush emits op's finished outputs in order.
func (e *executor) flush(op *opState) error {
	for {
		if op.dropped[op.nextOut] {
			delete(op.dropped, op.nextOut)
			op.nextOut++
			continue
		}
		b, ok := op.done[op.nextOut]
		if !ok {
			return nil
		}
		delete(op.done, op.nextOut)
		op.nextOut++
		if err := e.emit(op, b); err != nil {
			return err
		}
	}
}

// emit passes b to op's downstream operator (or the consumer).
func (e *executor) emit(op *opState, b outBlock) error {
	d := op.down
	if d == nil {
		if b.fp != 0 && b.rows > 0 {
			u, ok := unifyBlock(e.sinkSchema, e.sinkFP, b)
			if !ok {
				return fmt.Errorf("data: schema mismatch: a block of %s has schema %s but earlier blocks have %s (all blocks of a dataset need the same columns and types; a column null in every row of a block takes the others' type, no other type is promoted)", op.name, b.sch, e.sinkSch)
			}
			if e.sinkFP == 0 || u != e.sinkSchema {
				e.sinkFP, e.sinkSch, e.sinkSchema = b.fp, b.sch, u
				if u != nil {
					e.sinkSch = schemaString(u)
				}
			}
		}
		e.sinkQ = append(e.sinkQ, b)
		return nil
	}
	if d.stopped {
		e.drop(b)
		return nil
	}
	switch d.p.kind {
	case pMap:
		d.pending = append(d.pending, workItem{seq: d.nextSeq, in: &b})
		d.nextSeq++
	case pLimit:
		return e.limitReceive(d, b)
	case pRandBlocks:
		d.barrier = append(d.barrier, b)
	case pAllToAll:
		return e.xReceive(d, b)
	case pZip:
		d.zipRows[op.downIdx] += b.rows
		if op.downIdx == 0 {
			d.zipLeft = append(d.zipLeft, b)
		} else {
			d.zipRight = append(d.zipRight, &zipRight{b: b})
		}
		e.zipPair(d)
	case pUnion:
		if b.fp != 0 && b.rows > 0 {
			u, ok := unifyBlock(d.unionSchema, d.unionFP, b)
			if !ok {
				return fmt.Errorf("data: Union: schema mismatch: input %d has schema %s but input %d has %s (Union needs inputs with the same columns and types, a column null in every row of a block taking the others' type; use SelectColumns or a map to align them)",
					op.downIdx+1, b.sch, d.unionFirst+1, d.unionSch)
			}
			if d.unionFirst < 0 {
				d.unionFP, d.unionSch, d.unionFirst = b.fp, b.sch, op.downIdx
			}
			if u != nil && u != d.unionSchema {
				d.unionSchema, d.unionSch = u, schemaString(u)
			}
		}
		d.unionQ[op.downIdx] = append(d.unionQ[op.downIdx], b)
		return e.unionFlush(d)
	}
	return nil
}

// randomizeBlocks emits the blocks op collected in a random order (RandomizeBlockOrder),
// drawn from the operator's seed.
func (e *executor) randomizeBlocks(op *opState) error {
	bs := op.barrier
	op.barrier = nil
	rng := rand.New(rand.NewPCG(uint64(op.p.seed), 0x5eed))
	rng.Shuffle(len(bs), func(i, j int) { bs[i], bs[j] = bs[j], bs[i] })
	for _, b := range bs {
		if err := e.emit(op, b); err != nil {
			return err
		}
	}
	return nil
}

// zipPair queues a Zip task for each left block whose rows the right blocks received so
// far cover: the task gets the left block and the slices of right blocks that pair with it.
func (e *executor) zipPair(d *opState) {
	for len(d.zipLeft) > 0 {
		l := d.zipLeft[0]
		var avail int64
		for _, r := range d.zipRight {
			avail += r.b.rows - r.off
		}
		if avail < l.rows {
			return
		}
		d.zipLeft = d.zipLeft[1:]
		if l.rows == 0 {
			e.drop(l)
			continue
		}
		var pieces []zipPiece
		var used []*zipRight
		for need := l.rows; need > 0; {
			r := d.zipRight[0]
			take := min(need, r.b.rows-r.off)
			if take > 0 {
				pieces = append(pieces, zipPiece{Ref: r.b.ref, Off: r.off, N: take})
				used = append(used, r)
				r.users++
				r.off += take
				need -= take
			}
			if r.off == r.b.rows {
				e.zipRelease(r) // an empty block; else its tasks release it
				d.zipRight = d.zipRight[1:]
			}
		}
		// Right blocks used up by earlier tasks and empty ones are let go of.
		for len(d.zipRight) > 0 && d.zipRight[0].off == d.zipRight[0].b.rows {
			e.zipRelease(d.zipRight[0])
			d.zipRight = d.zipRight[1:]
		}
		lb := l
		d.pending = append(d.pending, workItem{seq: d.nextSeq, in: &lb, zip: used,
			spec: execSpec{Op: d.name, Stages: d.p.stages, Zip: pieces}})
		d.nextSeq++
	}
}

// zipRelease frees a right block of Zip once it is paired and no task reads it.
func (e *executor) zipRelease(r *zipRight) {
	if r.users == 0 && r.off == r.b.rows {
		e.drop(r.b)
		r.users = -1 // released
	}
}

// unifyBlock unifies the schema known so far (u, of fingerprint fp; both zero at first)
// with block b's: by schema when both are known, else by fingerprint.
func unifyBlock(u *arrow.Schema, fp uint64, b outBlock) (*arrow.Schema, bool) {
	if fp == 0 {
		return b.schema, true
	}
	if u != nil && b.schema != nil {
		return unifySchemas(u, b.schema)
	}
	return u, b.fp == fp
}

func (e *executor) unionFlush(d *opState) error {
	for d.unionCur < len(d.unionQ) {
		for len(d.unionQ[d.unionCur]) > 0 {
			b := d.unionQ[d.unionCur][0]
			d.unionQ[d.unionCur] = d.unionQ[d.unionCur][1:]
			if err := e.emit(d, b); err != nil {
				return err
			}
		}
		if !d.unionDone[d.unionCur] {
			return nil
		}
		d.unionCur++
	}
	return nil
}

func (e *executor) limitReceive(d *opState, b outBlock) error {
	if d.reached {
		e.drop(b)
		return nil
	}
	left := d.p.limit - d.rowsSeen
	if b.rows <= left {
		d.rowsSeen += b.rows
		if d.rowsSeen == d.p.limit {
			e.limitReached(d)
		}
		return e.emit(d, b)
	}
	// Truncate the last block with a task (blocks are always task results).
	d.rowsSeen = d.p.limit
	d.pending = append(d.pending, workItem{seq: d.nextSeq, in: &b, spec: execSpec{Op: d.name, Stages: []stage{{Kind: "slice", N: left}}}})
	d.nextSeq++
	e.limitReached(d)
	return nil
}

// limitReached stops everything upstream of a Limit: no new tasks, running ones cancelled,
// their outputs dropped.
func (e *executor) limitReached(d *opState) {
	d.reached = true
	var stop func(op *opState)
	stop = func(op *opState) {
		if op.x != nil {
			e.xDrop(op)
		}
		op.stopped = true
		for _, it := range op.pending {
			if it.in != nil {
				e.drop(*it.in)
			}
		}
		op.pending = nil
		for _, t := range op.inflight {
			_ = ray.Cancel(e.ctx, t.ref)
		}
		for seq, b := range op.done {
			e.drop(b)
			delete(op.done, seq)
		}
		for i := range op.unionQ {
			for _, b := range op.unionQ[i] {
				e.drop(b)
			}
			op.unionQ[i] = nil
		}
		for _, b := range op.barrier {
			e.drop(b)
		}
		op.barrier = nil
		for _, b := range op.zipLeft {
			e.drop(b)
		}
		op.zipLeft = nil
		for _, r := range op.zipRight {
			r.off = r.b.rows
			e.zipRelease(r)
		}
		op.zipRight = nil
		for _, u := range op.ups {
			stop(u)
		}
	}
	for _, u := range d.ups {
		stop(u)
	}
}

// checkFinished marks operators whose work is over and tells their downstream.
func (e *executor) checkFinished() error {
	for changed := true; changed; {
		changed = false
		for _, op := range e.ops {
			if op.finished {
				continue
			}
			var fin bool
			switch {
			case op.stopped:
				fin = len(op.inflight) == 0
			case op.p.kind == pUnion:
				fin = op.unionCur == len(op.unionQ)
			case op.p.kind == pLimit:
				fin = (op.inputsDone || op.reached) && len(op.pending) == 0 && len(op.inflight) == 0
			case op.p.kind == pAllToAll:
				var err error
				if fin, err = e.xAdvance(op); err != nil {
					return err
				}
			case op.p.kind == pRandBlocks:
				if fin = op.inputsDone; fin {
					if err := e.randomizeBlocks(op); err != nil {
						return err
					}
				}
			default:
				fin = op.inputsDone && len(op.pending) == 0 && len(op.inflight) == 0 && len(op.done) == 0
			}
			if !fin {
				continue
			}
			op.finished, changed = true, true
			op.stats.end = time.Now()
			e.retireActors(op)
			if d := op.down; d != nil {
				switch d.p.kind {
				case pUnion:
					d.unionDone[op.downIdx] = true
					if err := e.unionFlush(d); err != nil {
						return err
					}
				case pZip:
					d.zipDone[op.downIdx] = true
					if d.zipDone[0] && d.zipDone[1] {
						// A Zip stopped by a Limit after it had its inputs stopped
						// early: their row counts are partial, not a mismatch.
						if !d.stopped && d.zipRows[0] != d.zipRows[1] {
							return zipCountErr(d.zipRows[0], d.zipRows[1])
						}
						d.inputsDone = true
					}
				default:
					d.inputsDone = true
				}
			}
		}
	}
	return nil
}

func (e *executor) retireActors(op *opState) {
	for _, a := range op.actors {
		_ = ray.Kill(e.ctx, a.h, true)
	}
	op.actors = nil
}

// estimate is the expected output size of op's next task.
func (e *executor) estimate(op *opState, it workItem) int64 {
	if op.p.kind == pAllToAll {
		return max(it.est, 1)
	}
	if op.seenOut {
		return op.maxOut
	}
	if it.in != nil {
		return it.in.size
	}
	return max(it.est, 1)
}

// reserve is what sources leave free for the operators downstream of them: one output of
// each non-source operator, so that the pipeline can always drain.
func (e *executor) reserve() int64 {
	var r int64
	for _, op := range e.ops {
		if op.p.kind == pMap && !op.finished {
			if op.seenOut {
				r += op.maxOut
			} else {
				for _, u := range op.ups {
					r += u.maxOut
				}
			}
		}
	}
	return r
}

// First wave: before an operator's first output is known, its tasks after the first start
// only while firstWaveMargin times their estimate (at least firstWaveMinEst: a map can turn a
// small input into a large block) still fits the budget for each of them. With blocks far
// below the budget (the usual case: Parquet footers and read units give the sizes) the first
// tasks all start at once; near the budget, the first task runs alone and its output size is
// the estimate of the rest.
const (
	firstWaveMargin = 4
	firstWaveMinEst = 1 << 20
)

// launch starts every task the limits allow, downstream operators first.
func (e *executor) launch() error {
	reserve := e.reserve()
	for _, op := range e.ops {
		e.startPoolMin(op)
		for len(op.pending) > 0 && !op.stopped && e.inflight < e.maxTasks && len(op.inflight) < e.maxTasks {
			it := op.pending[0]
			est := e.estimate(op, it)
			limit := e.budget
			if op.p.kind == pSource {
				limit -= reserve
			}
			if !op.seenOut && len(op.inflight) > 0 {
				// Unknown output size: start more only if even outputs several times the
				// estimate would fit.
				guess := firstWaveMargin * max(est, firstWaveMinEst)
				if e.usage+guess*int64(len(op.inflight)+1) > limit {
					break
				}
			}
			if e.usage+est > limit {
				break
			}
			if op.down == nil && e.outputQueue(op) >= e.maxTasks+1 {
				break
			}
			ok, err := e.start1(op, est)
			if err != nil {
				return err
			}
			if !ok {
				break // every actor of the pool is busy
			}
		}
		e.shrinkPool(op)
	}
	return nil
}

// outputQueue is how many outputs of op, the operator that feeds the consumer, exist or
// are being made and the consumer has not released yet: op's running tasks, its outputs
// waiting for an earlier one, the blocks queued for the consumer, and the blocks it holds.
// launch keeps it at most one more than the tasks that can run at once (Ray's streaming
// output backpressure): the consumer has the next block ready when it needs it, and
// blocks do not pile up in memory ahead of a consumer that is slower than the tasks. Each
// held block is memory the process must have (a block and, while its task encodes it,
// its copy): on a machine where the consumer shares the cores with the tasks, a queue of
// blocks only costs memory (and the page faults of touching it), never throughput.
func (e *executor) outputQueue(op *opState) int {
	return len(op.inflight) + len(op.done) + len(e.sinkQ) + int(e.handedN-e.releaseN.Load())
}

// shrinkPool kills actors beyond the pool's min that have been idle a while with no blocks
// waiting.
func (e *executor) shrinkPool(op *opState) {
	if len(op.pending) > 0 || len(op.actors) <= op.p.compute.PoolMin {
		return
	}
	keep := op.actors[:0]
	n := len(op.actors)
	for _, a := range op.actors {
		if n > op.p.compute.PoolMin && !a.busy && !a.idle.IsZero() && time.Since(a.idle) > actorIdleTimeout {
			_ = ray.Kill(e.ctx, a.h, true)
			n--
			continue
		}
		keep = append(keep, a)
	}
	op.actors = keep
}

// forceLaunch starts one task of the most downstream operator that has work when nothing
// runs (the budget is smaller than the blocks): progress beats the bound.
func (e *executor) forceLaunch() (bool, error) {
	for _, op := range e.ops {
		if len(op.pending) > 0 && !op.stopped {
			return e.start1(op, e.estimate(op, op.pending[0]))
		}
	}
	return false, nil
}

// start1 launches op's first pending item.
func (e *executor) start1(op *opState, est int64) (bool, error) {
	it := op.pending[0]
	t := &task{seq: it.seq, in: it.in, est: est, start: time.Now(), zip: it.zip, role: it.role, idx: it.idx, srcs: it.srcs, item: it}
	spec := it.spec
	if spec.Op == "" {
		spec = execSpec{Op: op.name, Stages: op.p.stages}
	}
	if x := op.xfuse; x != nil && it.role == roleBlock {
		// The exchange's map, fused: its random stream is the block's place in the
		// dataset, as when the exchange's own map task gets the block.
		spec.XMap = &xTask{Phase: "map", X: x.x, Index: it.seq, N: x.n, Bounds: x.bounds}
	}
	var in ray.Arg[arrow.Record] = ray.V[arrow.Record](nil)
	if it.in != nil {
		in = it.in.ref
	} else if it.arg != nil {
		in = *it.arg
	}
	if op.p.kind == pMap && op.p.compute.PoolMax > 0 {
		a := e.idleActor(op)
		if a == nil {
			return false, nil
		}
		a.busy, a.used = true, true
		t.actor = a
		t.ref = poolRun.Remote(e.ctx, a.h, ray.V(spec), in)
	} else {
		f := execTask
		if op.p.kind != pLimit {
			f = execTask.Options(op.p.res.taskOptions()...)
		}
		t.ref = f.Remote(e.ctx, ray.V(spec), in)
	}
	op.pending = op.pending[1:]
	op.inflight[t.seq] = t
	e.inflight++
	e.usage += est
	e.peak = max(e.peak, e.usage)
	op.stats.tasks++
	if op.stats.start.IsZero() {
		op.stats.start = time.Now()
	}
	return true, nil
}

// idleActor returns an idle actor of op's pool, starting one when all are busy and the pool
// may grow.
func (e *executor) idleActor(op *opState) *actorSlot {
	for len(op.actors) < op.p.compute.PoolMin {
		e.addActor(op)
	}
	for _, a := range op.actors {
		if !a.busy {
			return a
		}
	}
	if len(op.actors) < op.p.compute.PoolMax && len(op.pending) > 0 {
		return e.addActor(op)
	}
	return nil
}

// startPoolMin starts the min actors of op's pool at once, when the operator starts, so
// that their setups run in parallel with each other and with the operators upstream.
func (e *executor) startPoolMin(op *opState) {
	if op.p.kind != pMap || op.p.compute.PoolMax == 0 || op.finished || op.stopped {
		return
	}
	for len(op.actors) < op.p.compute.PoolMin {
		e.addActor(op)
	}
}

// poolCPUsFree is how many CPUs a new pool actor may reserve: the cluster's CPUs less what
// the live pool actors reserve and less one task's CPUs for every unfinished operator that
// runs tasks. Actors hold their CPUs as long as they live, and a pool lives until its
// inputs are done: if its actors held every CPU, the read (or other task) operators feeding
// it, or consuming its output, could never run (Ray Data reserves resources for the same
// reason). Other work in the cluster is not counted.
func (e *executor) poolCPUsFree() float64 {
	free := e.cpus
	for _, o := range e.ops {
		for _, a := range o.actors {
			free -= a.cpus
		}
		if o.finished || o.stopped {
			continue
		}
		switch {
		case o.p.kind == pSource, o.p.kind == pMap && o.p.compute.PoolMax == 0:
			free -= o.p.res.cpus()
		case o.p.kind == pLimit, o.p.kind == pAllToAll: // tasks of 1 CPU
			free--
		}
	}
	return free
}

// addActor starts an actor of op's pool. It reserves the CPUs the transform asks for when
// poolCPUsFree allows; otherwise it reserves none and runs on borrowed CPUs: the executor
// still runs at most maxTasks (the cluster's CPUs) tasks and actor calls at a time, so the
// execution as a whole does not use more CPUs than the cluster has. (GPUs and custom
// resources are always reserved: task operators do not need them.)
func (e *executor) addActor(op *opState) *actorSlot {
	r := op.p.res
	cpus := r.cpus()
	if cpus > 0 && e.poolCPUsFree() < cpus {
		cpus = 0
		op.stats.borrowed++
	}
	opts := []ray.TaskOption{ray.NumCPUs(cpus), ray.AtMostOnce()}
	if r.GPUs > 0 {
		opts = append(opts, ray.NumGPUs(r.GPUs))
	}
	if len(r.Custom) > 0 {
		opts = append(opts, ray.Resources(r.Custom))
	}
	a := &actorSlot{h: poolClass.Remote(e.ctx, ray.V(op.p.stages), opts...), cpus: cpus}
	op.actors = append(op.actors, a)
	op.stats.actors = max(op.stats.actors, len(op.actors))
	return a
}

// cleanup cancels what still runs and frees every block the execution holds.
func (e *executor) cleanup() {
	ctx := context.WithoutCancel(e.ctx)
	for _, op := range e.ops {
		if op.stats.end.IsZero() && !op.stats.start.IsZero() {
			op.stats.end = time.Now()
		}
		for _, t := range op.inflight {
			_ = ray.Cancel(ctx, t.ref)
			t.ref.Release()
			for _, r := range t.zip {
				if r.b.owned && r.users >= 0 {
					r.b.ref.Release()
					r.users = -1
				}
			}
		}
		for _, it := range op.pending {
			if it.in != nil && it.in.owned {
				it.in.ref.Release()
			}
		}
		for _, b := range op.done {
			if b.owned {
				b.ref.Release()
			}
		}
		for _, q := range op.unionQ {
			for _, b := range q {
				if b.owned {
					b.ref.Release()
				}
			}
		}
		for _, b := range op.barrier {
			if b.owned {
				b.ref.Release()
			}
		}
		for _, b := range op.zipLeft {
			if b.owned {
				b.ref.Release()
			}
		}
		for _, r := range op.zipRight {
			if r.b.owned && r.users >= 0 {
				r.b.ref.Release()
				r.users = -1
			}
		}
		for _, a := range op.actors {
			_ = ray.Kill(ctx, a.h, true)
		}
		op.actors = nil
		if op.x != nil {
			e.xCleanup(op)
		}
	}
	if e.err != nil || e.ctx.Err() != nil {
		for _, b := range e.sinkQ {
			if b.owned {
				b.ref.Release()
			}
		}
		e.sinkQ = nil
	}
}

// tooLargeHint explains a reduce block refused as larger than the object store when the
// operator keeps the rows of one key together (Sort, MapGroups): the usual cause is a key
// value that holds most rows.
func tooLargeHint(op *opState, role int, err error) string {
	if role != roleReduce || op.x == nil || !errors.Is(err, ray.ErrObjectTooLarge) {
		return ""
	}
	switch op.x.x.Kind {
	case xSort:
		return " (Sort keeps the rows of one key value in one output block, one per reduce task: a key value that holds most rows makes a block of most of the dataset; give the nodes a larger object store, or sort by more keys so that those rows spread)"
	case xMapGroups:
		return " (MapGroups returns what the function made of every group of a partition as one block, one per reduce task: a group that holds most rows makes a block of most of the dataset; give the nodes a larger object store, or group by more keys so that those rows spread)"
	}
	return ""
}
