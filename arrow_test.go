package ray

import (
	"context"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

var (
	rowCount = Task1("test.rows", func(_ context.Context, r arrow.Record) (int64, error) {
		defer r.Release()
		return r.NumRows(), nil
	})
	makeRecord = Task1("test.makeRecord", func(_ context.Context, n int) (arrow.Record, error) {
		return buildRecord(memory.DefaultAllocator, n), nil
	})
)

func buildRecord(mem memory.Allocator, n int) arrow.Record {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("row")
	}
	return b.NewRecord()
}

// TestArrowRecords sends Arrow records through Put, task arguments and task results
// (Arrow IPC on the wire).
func TestArrowRecords(t *testing.T) {
	ctx := timeout(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rec := buildRecord(mem, 50_000) // ~1 MiB: through the store shard
	ref, err := Put(ctx, rec)
	rec.Release()
	mem.AssertSize(t, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := mustGet(t, ctx, rowCount.Remote(ctx, ref)); n != 50_000 {
		t.Fatalf("rows seen by the task: %d", n)
	}
	back := mustGet(t, ctx, makeRecord.Remote(ctx, V(3)))
	defer back.Release()
	if back.NumRows() != 3 || back.NumCols() != 2 || back.Column(0).(*array.Int64).Value(2) != 2 || back.Column(1).(*array.String).Value(0) != "row" {
		t.Fatalf("record from a task: %v", back)
	}
}
