package data

import (
	"fmt"
	"maps"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/ray-go/ray"
)

// Logical operator kinds.
const (
	kRead       = "Read"
	kInput      = "InputData"
	kMap        = "Map"
	kMapBatches = "MapBatches"
	kFlatMap    = "FlatMap"
	kFilter     = "Filter"
	kAddColumn  = "AddColumn"
	kSelect     = "SelectColumns"
	kDrop       = "DropColumns"
	kLimit      = "Limit"
	kUnion      = "Union"
	kRename     = "RenameColumns"
	kAggregate  = "Aggregate" // per-block partial aggregates (Sum, Min, ..., Unique)
	kRandBlocks = "RandomizeBlockOrder"
	kZip        = "Zip"
)

// blockRef is one materialized block: its ref (the result of a task, or a driver Put for
// in-memory sources) and what its metadata says.
type blockRef struct {
	Ref   ray.ObjectRef[arrow.Record]
	Rows  int64
	Bytes int64
}

// computeSpec is how a map runs: tasks (PoolMax 0) or an actor pool.
type computeSpec struct {
	PoolMin, PoolMax int
}

func (c computeSpec) String() string {
	if c.PoolMax == 0 {
		return "tasks"
	}
	return fmt.Sprintf("ActorPool(min=%d, max=%d)", c.PoolMin, c.PoolMax)
}

// resSpec is what each task or actor of a map asks for.
type resSpec struct {
	CPUs    float64
	CPUsSet bool
	GPUs    float64
	Custom  map[string]float64
}

func (r resSpec) equal(o resSpec) bool {
	return r.cpus() == o.cpus() && r.GPUs == o.GPUs && maps.Equal(r.Custom, o.Custom)
}

func (r resSpec) cpus() float64 {
	if r.CPUsSet {
		return r.CPUs
	}
	return 1
}

func (r resSpec) taskOptions() []ray.TaskOption {
	o := []ray.TaskOption{ray.NumCPUs(r.cpus())}
	if r.GPUs > 0 {
		o = append(o, ray.NumGPUs(r.GPUs))
	}
	if len(r.Custom) > 0 {
		o = append(o, ray.Resources(r.Custom))
	}
	return o
}

// sourceSpec describes a lazy source: Range or files. It is expanded into read units at
// execution time, when the cluster's size is known.
type sourceSpec struct {
	Kind        string   // "range", "files" or "ipc" (in-memory records)
	Name        string   // ipc: FromItems or FromArrow
	N           int64    // range
	Blocks      [][]byte // ipc: one Arrow IPC stream per block
	Rows        []int64  // ipc: rows per block
	Parallelism int
	Format      int      // formats.Format
	Paths       []string // files
	Read        readCfg
}

// readCfg is formats.ReadOptions in a form that encodes (the schema as Arrow IPC).
type readCfg struct {
	Columns     []string
	SchemaIPC   []byte
	Delimiter   rune
	NoHeader    bool
	IncludePath bool
	TargetBytes int64
}

// lnode is a logical operator. Its fields are exported so that a Dataset encodes (and can be
// passed to tasks and actors): the plan is data, functions are referred to by name.
type lnode struct {
	Kind      string
	Source    *sourceSpec
	Blocks    []blockRef
	Fn        string
	Col       string
	Cols      []string
	N         int64
	BatchSize int
	Compute   computeSpec
	Res       resSpec
	X         *exchange // all-to-all operators
	Inputs    []*lnode
}

// Dataset is a lazy, ordered collection of blocks (Arrow records held as ray objects) and
// the plan that makes them: sources and transforms build plans, consuming calls (IterBatches,
// Take, Count, Materialize, Write...) run them with the streaming executor. A Dataset is a
// value: transforms return new Datasets and never change their receiver. It can be passed to
// tasks and actors (encoded with the ray codec); a materialized Dataset carries its block refs,
// which keep the blocks alive.
type Dataset struct {
	// Plan is the dataset's logical plan. It is exported only so that the ray codec can
	// encode a Dataset; treat it as opaque.
	Plan *lnode
	// Err is an error found while building the plan (a bad option or argument); every
	// consuming call returns it. Exported for the codec, like Plan.
	Err string

	stats atomic.Pointer[execStats] `cbor:"-"` // the last execution's statistics (this process's: not sent)
}

func newDataset(n *lnode, err error) *Dataset {
	d := &Dataset{Plan: n}
	if err != nil {
		d.Err = err.Error()
	}
	return d
}

func (d *Dataset) planErr() error {
	if d == nil || d.Plan == nil {
		return fmt.Errorf("data: nil or zero Dataset (make one with Range, FromItems, FromArrow or Read*)")
	}
	if d.Err != "" {
		return fmt.Errorf("%s", d.Err)
	}
	return nil
}

func (d *Dataset) derive(n *lnode, err error) *Dataset {
	if d.Err != "" {
		return newDataset(n, fmt.Errorf("%s", d.Err))
	}
	return newDataset(n, err)
}

func mapRes(o options) resSpec {
	r := resSpec{CPUs: o.cpus, CPUsSet: o.cpusSet, GPUs: o.gpus}
	if len(o.resources) > 0 {
		r.Custom = o.resources
	}
	return r
}

func (d *Dataset) mapLike(kind, fn string, fnNil bool, opts []Option, edit func(*lnode) error) *Dataset {
	o := collect(opts)
	n := &lnode{Kind: kind, Fn: fn, Res: mapRes(o), Inputs: []*lnode{d.Plan}}
	var err error
	switch {
	case fnNil:
		err = fmt.Errorf("data: %s: the function is nil (make it with the package-level registration functions)", kind)
	case o.cpus < 0 || o.gpus < 0:
		err = fmt.Errorf("data: %s(%s): negative resources", kind, fn)
	}
	if err == nil && edit != nil {
		err = edit(n)
	}
	if err == nil && o.poolMax != 0 && kind != kMapBatches {
		err = fmt.Errorf("data: %s(%s): ActorPool applies to MapBatches only", kind, fn)
	}
	return d.derive(n, err)
}

// Map applies f to each row (Ray's Dataset.map). Options: NumCPUs, NumGPUs, Resources.
func (d *Dataset) Map(f *RowFn, opts ...Option) *Dataset {
	name := ""
	if f != nil {
		name = f.name
	}
	return d.mapLike(kMap, name, f == nil, opts, nil)
}

// MapBatches applies f to batches of rows (Ray's Dataset.map_batches). Options: BatchSize
// (rows per call; default the whole block), ActorPool (default: tasks), NumCPUs, NumGPUs,
// Resources. A BatchClass needs ActorPool to run its setup once per actor; with tasks, every
// task runs setup once. Output blocks are what f returns: a function that grows data makes
// bigger blocks (they are not split).
func (d *Dataset) MapBatches(f *BatchFn, opts ...Option) *Dataset {
	name := ""
	if f != nil {
		name = f.name
	}
	o := collect(opts)
	return d.mapLike(kMapBatches, name, f == nil, opts, func(n *lnode) error {
		if o.batchSize < 0 {
			return fmt.Errorf("data: MapBatches(%s): BatchSize(%d) must be positive", name, o.batchSize)
		}
		if o.poolMax != 0 && (o.poolMin < 1 || o.poolMax < o.poolMin) {
			return fmt.Errorf("data: MapBatches(%s): ActorPool(%d, %d): need 1 <= min <= max", name, o.poolMin, o.poolMax)
		}
		n.BatchSize = o.batchSize
		n.Compute = computeSpec{PoolMin: o.poolMin, PoolMax: o.poolMax}
		return nil
	})
}

// FlatMap applies f to each row; each row becomes the rows f returns (Ray's flat_map).
// Options: NumCPUs, NumGPUs, Resources.
func (d *Dataset) FlatMap(f *FlatRowFn, opts ...Option) *Dataset {
	name := ""
	if f != nil {
		name = f.name
	}
	return d.mapLike(kFlatMap, name, f == nil, opts, nil)
}

// Filter keeps the rows for which f returns true. Options: NumCPUs, NumGPUs, Resources.
func (d *Dataset) Filter(f *PredicateFn, opts ...Option) *Dataset {
	name := ""
	if f != nil {
		name = f.name
	}
	return d.mapLike(kFilter, name, f == nil, opts, nil)
}

// AddColumn adds (or replaces) column col with what f computes from each batch. Options:
// NumCPUs, NumGPUs, Resources.
func (d *Dataset) AddColumn(col string, f *ColumnFn, opts ...Option) *Dataset {
	name := ""
	if f != nil {
		name = f.name
	}
	return d.mapLike(kAddColumn, name, f == nil, opts, func(n *lnode) error {
		if col == "" {
			return fmt.Errorf("data: AddColumn(%s): empty column name", name)
		}
		n.Col = col
		return nil
	})
}

// SelectColumns keeps only cols, in that order. A column the data does not have fails the
// consuming call with an error listing the columns there are.
func (d *Dataset) SelectColumns(cols ...string) *Dataset {
	return d.mapLike(kSelect, "", false, nil, func(n *lnode) error {
		if len(cols) == 0 {
			return fmt.Errorf("data: SelectColumns: no columns given")
		}
		n.Cols = append([]string(nil), cols...)
		return nil
	})
}

// DropColumns removes cols. A column the data does not have fails the consuming call.
func (d *Dataset) DropColumns(cols ...string) *Dataset {
	return d.mapLike(kDrop, "", false, nil, func(n *lnode) error {
		n.Cols = append([]string(nil), cols...)
		return nil
	})
}

// Limit keeps the first n rows. Execution stops launching upstream work once n rows exist
// and truncates the last block.
func (d *Dataset) Limit(n int) *Dataset {
	var err error
	if n < 0 {
		err = fmt.Errorf("data: Limit(%d): negative", n)
	}
	return d.derive(&lnode{Kind: kLimit, N: int64(n), Inputs: []*lnode{d.Plan}}, err)
}

// Union concatenates d and others: every block of d in order, then every block of the
// first other, and so on. All must have the same schema (checked when it runs).
func (d *Dataset) Union(others ...*Dataset) *Dataset {
	n := &lnode{Kind: kUnion, Inputs: []*lnode{d.Plan}}
	var err error
	for i, o := range others {
		if e := o.planErr(); e != nil {
			err = fmt.Errorf("data: Union: dataset %d: %w", i+1, e)
			break
		}
		n.Inputs = append(n.Inputs, o.Plan)
	}
	return d.derive(n, err)
}

// ---- physical plan and fusion ----

const (
	pSource = iota // read tasks (Range or files) with fused maps
	pInput         // materialized blocks
	pMap           // map tasks or actor pool over upstream blocks
	pLimit
	pUnion
	pRandBlocks // a barrier: all input blocks, then emitted in a random order
	pZip        // two inputs zipped row by row, by tasks aligned on the left's blocks
	pAllToAll   // a barrier run as a map-reduce (RandomShuffle, Sort, GroupBy, Repartition)
)

// stage is one fused transform, run in order inside a task.
type stage struct {
	Kind      string
	Fn        string
	Col       string
	Cols      []string
	BatchSize int
	Off       int64 // "slice": rows [Off, Off+N)
	N         int64
}

// pop is a physical operator.
type pop struct {
	kind    int
	names   []string // the fused parts, e.g. ["ReadRange", "MapBatches(double)"]
	source  *sourceSpec
	blocks  []blockRef
	stages  []stage
	compute computeSpec
	res     resSpec
	limit   int64
	seed    int64 // pRandBlocks
	x       *exchange
	inputs  []*pop
	// xmap: (a source or map operator) its tasks also run the map stage of the all-to-all
	// operator downstream (fusedMap on that operator), returning partitioned blocks.
	xmap     bool
	fusedMap bool
}

func (p *pop) name() string {
	switch p.kind {
	case pUnion:
		return "Union"
	case pZip:
		return "Zip"
	}
	return strings.Join(p.names, "->")
}

func sourceName(s *sourceSpec) string {
	switch s.Kind {
	case "range":
		return "ReadRange"
	case "ipc":
		return s.Name
	}
	return "Read" + formatName(s.Format)
}

func stageName(n *lnode) string {
	switch n.Kind {
	case kSelect, kDrop:
		return fmt.Sprintf("%s(%s)", n.Kind, strings.Join(n.Cols, ", "))
	case kAddColumn:
		return fmt.Sprintf("%s(%s=%s)", n.Kind, n.Col, n.Fn)
	case kRename:
		return fmt.Sprintf("%s(%s)", n.Kind, renames(n.Cols))
	case kAggregate:
		return fmt.Sprintf("%s(%s(%s))", n.Kind, n.Fn, n.Col)
	}
	return fmt.Sprintf("%s(%s)", n.Kind, n.Fn)
}

// renames shows RenameColumns' pairs (old, new, old, new...) as "old->new, ...".
func renames(pairs []string) string {
	parts := make([]string, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		parts = append(parts, pairs[i]+"->"+pairs[i+1])
	}
	return strings.Join(parts, ", ")
}

// optimize turns a logical plan into a physical one, fusing by Ray's rules: consecutive
// map-like operators fuse when they have the same compute strategy (tasks, or actor pools of
// the same size) and the same resources; a read fuses with the maps that follow it (when
// they run as tasks with default resources); Limit, Union and InputData are never fused.
func optimize(n *lnode) *pop {
	if n.X != nil {
		in := optimize(n.Inputs[0])
		p := &pop{kind: pAllToAll, names: []string{n.X.name()}, x: n.X, inputs: []*pop{in}}
		if fusesMap(in, n.X) {
			// Ray's MapOperator -> AllToAllOperator fusion: the exchange's map runs in the
			// tasks of the operator before it (no task, and no block written, per input).
			in.names = append(in.names, n.X.name()+".map")
			in.xmap, p.fusedMap = true, true
		}
		return p
	}
	switch n.Kind {
	case kRead:
		return &pop{kind: pSource, names: []string{sourceName(n.Source)}, source: n.Source}
	case kInput:
		return &pop{kind: pInput, names: []string{"Input"}, blocks: n.Blocks}
	case kLimit:
		return &pop{kind: pLimit, names: []string{fmt.Sprintf("Limit[%d]", n.N)}, limit: n.N, inputs: []*pop{optimize(n.Inputs[0])}}
	case kUnion, kZip:
		p := &pop{kind: pUnion, names: []string{"Union"}}
		if n.Kind == kZip {
			p = &pop{kind: pZip, names: []string{"Zip"}}
		}
		for _, in := range n.Inputs {
			p.inputs = append(p.inputs, optimize(in))
		}
		return p
	case kRandBlocks:
		return &pop{kind: pRandBlocks, names: []string{kRandBlocks}, seed: n.N, inputs: []*pop{optimize(n.Inputs[0])}}
	}
	in := optimize(n.Inputs[0])
	st := stage{Kind: n.Kind, Fn: n.Fn, Col: n.Col, Cols: n.Cols, BatchSize: n.BatchSize}
	if fusable(in, n) {
		in.names = append(in.names, stageName(n))
		in.stages = append(in.stages, st)
		if in.kind == pSource {
			// A read fused with maps: the read stays a task with default resources.
			in.res = n.Res
		}
		return in
	}
	return &pop{kind: pMap, names: []string{stageName(n)}, stages: []stage{st}, compute: n.Compute, res: n.Res, inputs: []*pop{in}}
}

// fusesMap says whether an exchange's map stage runs in the tasks of the source or map
// operator before it: when its maps stream (the partitions are known before the first
// input block, see xInit) and that operator is not already an exchange's.
func fusesMap(up *pop, x *exchange) bool {
	if !x.streams() || up.xmap || (up.kind != pSource && up.kind != pMap) {
		return false
	}
	return x.N > 0 || blocksKnown(up)
}

// blocksKnown says whether the number of blocks p emits is known once the execution is
// prepared (expectBlocks >= 0).
func blocksKnown(p *pop) bool {
	switch p.kind {
	case pSource, pInput:
		return true
	case pMap:
		return blocksKnown(p.inputs[0])
	case pUnion:
		for _, in := range p.inputs {
			if !blocksKnown(in) {
				return false
			}
		}
		return true
	}
	return false
}

func fusable(up *pop, n *lnode) bool {
	if up.xmap {
		return false // its tasks return partitioned blocks
	}
	switch up.kind {
	case pSource:
		return n.Compute.PoolMax == 0 && up.res.equal(n.Res)
	case pMap:
		return up.compute == n.Compute && up.res.equal(n.Res)
	}
	return false
}

func logicalName(n *lnode) string {
	if n.X != nil {
		return n.X.name()
	}
	switch n.Kind {
	case kRead:
		return fmt.Sprintf("Read[%s]", sourceName(n.Source))
	case kInput:
		return fmt.Sprintf("InputData[%d blocks]", len(n.Blocks))
	case kLimit:
		return fmt.Sprintf("Limit[%d]", n.N)
	case kSelect, kDrop:
		return fmt.Sprintf("%s[%s]", n.Kind, strings.Join(n.Cols, ", "))
	case kAddColumn:
		return fmt.Sprintf("%s[%s=%s]", n.Kind, n.Col, n.Fn)
	case kRename:
		return fmt.Sprintf("%s[%s]", n.Kind, renames(n.Cols))
	case kAggregate:
		return fmt.Sprintf("%s[%s(%s)]", n.Kind, n.Fn, n.Col)
	case kRandBlocks:
		return fmt.Sprintf("%s[seed=%d]", n.Kind, n.N)
	}
	return fmt.Sprintf("%s[%s]", n.Kind, n.Fn)
}

func renderLogical(n *lnode) string {
	if n.Kind == kUnion || n.Kind == kZip {
		parts := make([]string, len(n.Inputs))
		for i, in := range n.Inputs {
			parts[i] = renderLogical(in)
		}
		return n.Kind + "[" + strings.Join(parts, ", ") + "]"
	}
	if len(n.Inputs) == 0 {
		return logicalName(n)
	}
	return renderLogical(n.Inputs[0]) + " -> " + logicalName(n)
}

func renderPhysical(p *pop) string {
	if p.kind == pUnion || p.kind == pZip {
		parts := make([]string, len(p.inputs))
		for i, in := range p.inputs {
			parts[i] = renderPhysical(in)
		}
		return p.name() + "(" + strings.Join(parts, ", ") + ")"
	}
	s := p.name()
	if p.kind == pMap && p.compute.PoolMax > 0 {
		s += "[" + p.compute.String() + "]"
	}
	if p.kind == pAllToAll {
		s += "(" + p.x.stagesDesc(p.fusedMap) + ")"
	}
	if len(p.inputs) == 0 {
		return s
	}
	return renderPhysical(p.inputs[0]) + " -> " + s
}

// Explain returns the plan before and after optimisation, e.g.
//
//	Logical plan:  Read[ReadParquet] -> MapBatches[double] -> Filter[even]
//	Physical plan: ReadParquet->MapBatches(double)->Filter(even)
//
// In the physical plan "->" joins fused parts of one operator and " -> " separates operators.
func (d *Dataset) Explain() string {
	if err := d.planErr(); err != nil {
		return "invalid plan: " + err.Error()
	}
	return "Logical plan:  " + renderLogical(d.Plan) + "\nPhysical plan: " + renderPhysical(optimize(d.Plan))
}
