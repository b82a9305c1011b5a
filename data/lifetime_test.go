package data

import (
	"runtime"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// TestBatchesOutliveBlocks: IterBatches' blocks are built over the stored bytes (no
// copy) and their encode buffers are recycled once garbage, so batches kept past their
// block's release, while later blocks are encoded, released and collected, must keep
// their values (a buffer freed or reused too early would show here as wrong ids).
func TestBatchesOutliveBlocks(t *testing.T) {
	ctx := timeout(t)
	const n, blocks, size = 1_200_000, 8, 50_000 // blocks of 1.2 MiB: recycled buffers
	d := Range(n, Parallelism(blocks)).MapBatches(double)
	var kept []arrow.Record
	var starts []int64
	next := int64(0)
	for b, err := range d.IterBatches(ctx, BatchSize(size), Prefetch(1)) {
		if err != nil {
			t.Fatal(err)
		}
		ids := b.Column(0).(*array.Int64)
		if ids.Value(0) != 2*next {
			t.Fatalf("batch at row %d starts with %d", next, ids.Value(0))
		}
		if next/size%3 == 0 {
			b.Retain()
			kept = append(kept, b)
			starts = append(starts, next)
		}
		next += b.NumRows()
		runtime.GC() // collect released blocks: their buffers go back to the pool
	}
	if next != n {
		t.Fatalf("%d rows, want %d", next, n)
	}
	for i, b := range kept {
		ids := b.Column(0).(*array.Int64).Int64Values()
		for j, v := range ids {
			if want := 2 * (starts[i] + int64(j)); v != want {
				t.Fatalf("kept batch %d (rows from %d): row %d is %d, want %d", i, starts[i], j, v, want)
			}
		}
		b.Release()
	}
}
