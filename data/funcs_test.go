package data

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/ray-go/ray"
)

// Functions of the tests, registered at package level like users do.
var (
	isEven = Predicate("test.even", func(_ context.Context, r Row) (bool, error) { return r["id"].(int64)%2 == 0, nil })
	double = BatchFunc("test.double", func(_ context.Context, b arrow.Record) (arrow.Record, error) {
		return int64Record("id", b.NumRows(), func(i int) int64 { return b.Column(0).(*array.Int64).Value(i) * 2 }), nil
	})
	plus100 = RowFunc("test.plus100", func(_ context.Context, r Row) (Row, error) {
		return Row{"id": r["id"].(int64) + 100}, nil
	})
	withName = RowFunc("test.withName", func(_ context.Context, r Row) (Row, error) {
		id := r["id"].(int64)
		return Row{"id": id, "name": fmt.Sprintf("n%d", id), "score": float64(id) / 2}, nil
	})
	twice = FlatRowFunc("test.twice", func(_ context.Context, r Row) ([]Row, error) {
		return []Row{r, {"id": r["id"].(int64) + 1000}}, nil
	})
	squareCol = ColumnFunc("test.square", func(_ context.Context, b arrow.Record) (arrow.Array, error) {
		ids := b.Column(0).(*array.Int64)
		bld := array.NewInt64Builder(mem)
		defer bld.Release()
		for i := 0; i < ids.Len(); i++ {
			bld.Append(ids.Value(i) * ids.Value(i))
		}
		return bld.NewArray(), nil
	})
	errBoom = errors.New("boom at id 7")
	failAt7 = RowFunc("test.failAt7", func(_ context.Context, r Row) (Row, error) {
		if r["id"].(int64) == 7 {
			return nil, errBoom
		}
		return r, nil
	})
	// nilEvens returns a nil Row for even ids; noColumns a Row without columns.
	nilEvens = RowFunc("test.nilEvens", func(_ context.Context, r Row) (Row, error) {
		if r["id"].(int64)%2 == 0 {
			return nil, nil
		}
		return r, nil
	})
	noColumns = RowFunc("test.noColumns", func(_ context.Context, r Row) (Row, error) { return Row{}, nil })
	// nanEvery3 is "v": NaN for every third id, else id%2 as a float.
	nanEvery3 = RowFunc("test.nanEvery3", func(_ context.Context, r Row) (Row, error) {
		id := r["id"].(int64)
		if id%3 == 0 {
			return Row{"v": math.NaN()}, nil
		}
		return Row{"v": float64(id % 2)}, nil
	})
	// stringID turns "id" into a string column: a Union with an int64 dataset mismatches.
	stringID = RowFunc("test.stringID", func(_ context.Context, r Row) (Row, error) {
		return Row{"id": fmt.Sprint(r["id"])}, nil
	})
	// batchSizes records the sizes of the batches MapBatches passes.
	batchSizesMu sync.Mutex
	batchSizes   []int64
	recordSizes  = BatchFunc("test.recordSizes", func(_ context.Context, b arrow.Record) (arrow.Record, error) {
		batchSizesMu.Lock()
		batchSizes = append(batchSizes, b.NumRows())
		batchSizesMu.Unlock()
		b.Retain()
		return b, nil
	})
	// slowCalls counts calls of slowID, which takes 20 ms per block.
	slowCalls atomic.Int64
	slowID    = BatchFunc("test.slowID", func(ctx context.Context, b arrow.Record) (arrow.Record, error) {
		slowCalls.Add(1)
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		b.Retain()
		return b, nil
	})
	// The actor-pool class: setup numbers each actor; the batch function tags rows with it.
	setups     atomic.Int64
	tagByActor = BatchClass("test.tagByActor", func(context.Context) (func(context.Context, arrow.Record) (arrow.Record, error), error) {
		me := setups.Add(1)
		return func(ctx context.Context, b arrow.Record) (arrow.Record, error) {
			time.Sleep(40 * time.Millisecond)
			col := int64Array(int(b.NumRows()), func(int) int64 { return me })
			defer col.Release()
			return withColumn(b, "actor", col), nil
		}, nil
	})
	// grow makes a block of blockFloats float64 values (2 MiB) from each input block.
	grow = BatchFunc("test.grow", func(_ context.Context, b arrow.Record) (arrow.Record, error) {
		bld := array.NewFloat64Builder(mem)
		defer bld.Release()
		bld.Reserve(blockFloats)
		base := float64(b.Column(0).(*array.Int64).Value(0))
		for i := 0; i < blockFloats; i++ {
			bld.UnsafeAppend(base + float64(i))
		}
		col := bld.NewArray()
		defer col.Release()
		schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}}, nil)
		return array.NewRecord(schema, []arrow.Array{col}, int64(blockFloats)), nil
	})
	// sumDataset runs a Dataset inside a task: Datasets travel as values.
	sumDataset = ray.Task1("test.sumDataset", func(ctx context.Context, d *Dataset) ([]int64, error) {
		rows, err := d.TakeAll(ctx)
		if err != nil {
			return nil, err
		}
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r["id"].(int64)
		}
		return ids, nil
	})
)

const blockFloats = 256 << 10 // 2 MiB of float64

func int64Array(n int, f func(int) int64) arrow.Array {
	bld := array.NewInt64Builder(mem)
	defer bld.Release()
	for i := 0; i < n; i++ {
		bld.Append(f(i))
	}
	return bld.NewArray()
}

func int64Record(name string, n int64, f func(int) int64) arrow.Record {
	col := int64Array(int(n), f)
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: name, Type: arrow.PrimitiveTypes.Int64}}, nil)
	return array.NewRecord(schema, []arrow.Array{col}, n)
}

// idsOfSplit consumes one StreamingSplit share inside a task.
var idsOfSplit = ray.Task1("test.idsOfSplit", func(ctx context.Context, s SplitIterator) ([]int64, error) {
	var out []int64
	for r, err := range s.IterRows(ctx, BatchSize(7)) {
		if err != nil {
			return nil, err
		}
		out = append(out, r["id"].(int64))
	}
	return out, nil
})
