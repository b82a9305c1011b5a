package data

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/ray-go/ray"
	"github.com/ray-go/ray/data/internal/formats"
)

// execSpec is the input of one task of a physical operator: the fused stages to run, and
// for a source operator what to read.
type execSpec struct {
	Op     string // the operator's name, for errors
	Source *sourceSpec
	Start  int64 // range: rows [Start, End)
	End    int64
	Unit   formats.Unit
	Stages []stage
	Zip    []zipPiece // Zip: the rows of the right input that pair with the input block
	X      *xTask     // a task of an all-to-all operator
	XMap   *xTask     // the map of the all-to-all operator downstream, run after Stages (fused)
}

// zipPiece is rows [Off, Off+N) of a block of Zip's right input.
type zipPiece struct {
	Ref    ray.ObjectRef[arrow.Record]
	Off, N int64
}

// blockMeta is what every task attaches to its block (ray.SetResultMetadata).
type blockMeta struct {
	Rows      int64   `json:"rows"`
	Bytes     int64   `json:"bytes"`
	Schema    uint64  `json:"schema"`
	SchemaStr string  `json:"schema_str,omitempty"`
	SchemaIPC []byte  `json:"schema_ipc,omitempty"` // the schema (Arrow IPC), unless very large
	WallNs    int64   `json:"wall_ns"`
	CPUNs     int64   `json:"cpu_ns"`          // the task thread's CPU time (RUSAGE_THREAD, thread locked)
	Parts     []int64 `json:"parts,omitempty"` // exchange map and merge outputs: rows per partition
}

// execTask is the one task of the package: it runs a fused operator on one input (a read
// unit, a range of ids, or a block) and returns one block.
var execTask = ray.Task2("ray.data.exec", func(ctx context.Context, spec execSpec, in arrow.Record) (arrow.Record, error) {
	return runSpec(ctx, spec, in, nil)
})

// poolActor runs a fused operator that contains BatchClass stages: their setup ran once in
// the constructor.
type poolActor struct {
	fns map[string]batchCall
}

type batchCall = func(ctx context.Context, batch arrow.Record) (arrow.Record, error)

var poolClass = ray.Actor1("ray.data.pool", func(ctx context.Context, stages []stage) (*poolActor, error) {
	p := &poolActor{fns: map[string]batchCall{}}
	for _, st := range stages {
		if st.Kind != kMapBatches {
			continue
		}
		f, err := lookup[*BatchFn](st.Fn)
		if err != nil {
			return nil, err
		}
		if f.setup != nil && p.fns[st.Fn] == nil {
			call, err := f.setup(ctx)
			if err != nil {
				return nil, fmt.Errorf("data: setup of %s: %w", st.Fn, err)
			}
			p.fns[st.Fn] = call
		}
	}
	return p, nil
})

var poolRun = ray.Method2(poolClass, "Run", func(p *poolActor, ctx context.Context, spec execSpec, in arrow.Record) (arrow.Record, error) {
	return runSpec(ctx, spec, in, p.fns)
})

func threadCPU() int64 {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD (Linux)
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func runSpec(ctx context.Context, spec execSpec, in arrow.Record, fns map[string]batchCall) (arrow.Record, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, cpu0 := time.Now(), threadCPU()
	var rec arrow.Record
	var parts []int64
	var err error
	if spec.X != nil {
		rec, parts, err = runExchange(ctx, spec.X, in)
		if err != nil {
			return nil, fmt.Errorf("data: operator %s (%s task): %w", spec.Op, spec.X.Phase, err)
		}
	} else if spec.Source != nil {
		rec, err = readSource(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("data: operator %s: %w", spec.Op, err)
		}
	} else {
		if in == nil {
			return nil, fmt.Errorf("data: operator %s: no input block", spec.Op)
		}
		rec = in
	}
	if len(spec.Zip) > 0 {
		out, err := zipWith(ctx, rec, spec.Zip)
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("data: operator %s: %w", spec.Op, err)
		}
		rec = out
	}
	for _, st := range spec.Stages {
		out, err := runStage(ctx, st, rec, fns)
		rec.Release()
		if err != nil {
			name := st.Fn
			if name == "" {
				name = st.Kind
			}
			return nil, fmt.Errorf("data: operator %s: %s(%s): %w", spec.Op, st.Kind, name, err)
		}
		rec = out
	}
	if spec.XMap != nil {
		out, p, err := mapPartition(rec, spec.XMap)
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("data: operator %s (fused map task): %w", spec.Op, err)
		}
		rec, parts = out, p
	}
	m := blockMeta{Rows: rec.NumRows(), Bytes: recBytes(rec), Schema: fingerprint(rec.Schema()),
		WallNs: time.Since(start).Nanoseconds(), CPUNs: threadCPU() - cpu0, Parts: parts}
	if s := schemaString(rec.Schema()); len(s) < 8<<10 {
		m.SchemaStr = s
		m.SchemaIPC = encodeSchema(rec.Schema())
	}
	b, _ := json.Marshal(m)
	if err := ray.SetResultMetadata(ctx, b); err != nil {
		return nil, err
	}
	return rec, nil
}

func readSource(ctx context.Context, spec execSpec) (arrow.Record, error) {
	s := spec.Source
	if s.Kind == "range" {
		// The values written straight into their buffer (a builder's append also sets
		// a validity bit per row, which a column without nulls does not need).
		vals := make([]int64, max(spec.End-spec.Start, 0))
		for i := range vals {
			vals[i] = spec.Start + int64(i)
		}
		col := newArray(arrow.PrimitiveTypes.Int64, len(vals), nil, 0, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(vals)))
		defer col.Release()
		schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
		return array.NewRecord(schema, []arrow.Array{col}, int64(col.Len())), nil
	}
	if s.Kind == "ipc" {
		return decodeRecord(s.Blocks[0])
	}
	opt := formats.ReadOptions{Format: formats.Format(s.Format), Columns: s.Read.Columns, Delimiter: s.Read.Delimiter,
		NoHeader: s.Read.NoHeader, IncludePath: s.Read.IncludePath, TargetBlockBytes: s.Read.TargetBytes}
	if len(s.Read.SchemaIPC) > 0 {
		sc, err := decodeSchema(s.Read.SchemaIPC)
		if err != nil {
			return nil, err
		}
		opt.Schema = sc
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
			}
		}
		var recs []arrow.Record
		err := formats.Read(ctx, spec.Unit, opt, mem, func(r arrow.Record) error {
			recs = append(recs, r)
			return nil
		})
		if err == nil {
			// One task returns one block: the unit's blocks are concatenated (units are
			// planned to be about the target block size).
			if len(recs) == 0 {
				return nil, fmt.Errorf("data: reading %s: no data and no schema", spec.Unit.Path)
			}
			out, err := concatRecords(recs)
			for _, r := range recs {
				r.Release()
			}
			return out, err
		}
		for _, r := range recs {
			r.Release()
		}
		lastErr = err
		if !formats.IsTransient(err) {
			break
		}
	}
	return nil, lastErr
}

func encodeSchema(s *arrow.Schema) []byte {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	w.Close()
	return buf.Bytes()
}

func decodeSchema(b []byte) (*arrow.Schema, error) {
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("data: decoding schema: %w", err)
	}
	defer r.Release()
	return r.Schema(), nil
}

func runStage(ctx context.Context, st stage, rec arrow.Record, fns map[string]batchCall) (arrow.Record, error) {
	switch st.Kind {
	case kMap:
		f, err := lookup[*RowFn](st.Fn)
		if err != nil {
			return nil, err
		}
		rows := rowsOf(rec)
		out := make([]Row, len(rows))
		for i, r := range rows {
			if out[i], err = f.fn(ctx, r); err != nil {
				return nil, err
			}
			if out[i] == nil { // as Ray, which refuses a map function's None
				return nil, fmt.Errorf("returned a nil Row for the row %v: a Map gives one row per row (drop rows with Filter; give zero or more with FlatMap)", r)
			}
		}
		return rowsToRecord(out, rec.Schema())
	case kFlatMap:
		f, err := lookup[*FlatRowFn](st.Fn)
		if err != nil {
			return nil, err
		}
		var out []Row
		for _, r := range rowsOf(rec) {
			more, err := f.fn(ctx, r)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
		if len(out) == 0 {
			return rec.NewSlice(0, 0), nil
		}
		return rowsToRecord(out, rec.Schema())
	case kFilter:
		f, err := lookup[*PredicateFn](st.Fn)
		if err != nil {
			return nil, err
		}
		keep := make([]bool, rec.NumRows())
		for i, r := range rowsOf(rec) {
			if keep[i], err = f.fn(ctx, r); err != nil {
				return nil, err
			}
		}
		return filterRecord(rec, keep)
	case kMapBatches:
		f, err := lookup[*BatchFn](st.Fn)
		if err != nil {
			return nil, err
		}
		call := f.fn
		if call == nil {
			if call = fns[st.Fn]; call == nil {
				if call, err = f.setup(ctx); err != nil {
					return nil, fmt.Errorf("setup: %w", err)
				}
			}
		}
		return mapBatches(ctx, rec, st.BatchSize, call)
	case kAddColumn:
		f, err := lookup[*ColumnFn](st.Fn)
		if err != nil {
			return nil, err
		}
		col, err := f.fn(ctx, rec)
		if err != nil {
			return nil, err
		}
		defer col.Release()
		if int64(col.Len()) != rec.NumRows() {
			return nil, fmt.Errorf("the column has %d values for a batch of %d rows", col.Len(), rec.NumRows())
		}
		return withColumn(rec, st.Col, col), nil
	case kSelect:
		return selectColumns(rec, st.Cols)
	case kDrop:
		return dropColumns(rec, st.Cols)
	case kRename:
		return renameColumns(rec, st.Cols)
	case kAggregate:
		return partialAggregate(rec, st.Fn, st.Col)
	case "slice":
		off := min(st.Off, rec.NumRows())
		return rec.NewSlice(off, min(off+st.N, rec.NumRows())), nil
	}
	return nil, fmt.Errorf("unknown stage %q", st.Kind)
}

func filterRecord(rec arrow.Record, keep []bool) (arrow.Record, error) {
	var parts []arrow.Record
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for i := 0; i < len(keep); {
		if !keep[i] {
			i++
			continue
		}
		j := i
		for j < len(keep) && keep[j] {
			j++
		}
		parts = append(parts, rec.NewSlice(int64(i), int64(j)))
		i = j
	}
	if len(parts) == 0 {
		return rec.NewSlice(0, 0), nil
	}
	return concatRecords(parts)
}

func mapBatches(ctx context.Context, rec arrow.Record, size int, call batchCall) (arrow.Record, error) {
	n := rec.NumRows()
	if size <= 0 || int64(size) >= n {
		out, err := call(ctx, rec)
		if err == nil && out == nil {
			err = errors.New("the batch function returned a nil record")
		}
		return out, err
	}
	var outs []arrow.Record
	defer func() {
		for _, o := range outs {
			o.Release()
		}
	}()
	for off := int64(0); off < n; off += int64(size) {
		b := rec.NewSlice(off, min(off+int64(size), n))
		out, err := call(ctx, b)
		b.Release()
		if err != nil {
			return nil, err
		}
		if out == nil {
			return nil, errors.New("the batch function returned a nil record")
		}
		outs = append(outs, out)
	}
	return concatRecords(outs)
}
