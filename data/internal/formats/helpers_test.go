package formats

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// checkedMem returns an allocator that fails the test if anything is left allocated.
func checkedMem(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// writeString writes a file under dir and returns its path.
func writeString(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// recordFromJSON builds a record from a JSON array of objects.
func recordFromJSON(t testing.TB, mem memory.Allocator, schema *arrow.Schema, js string) arrow.Record {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, schema, strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// readUnits reads every unit of files and returns the blocks (to release by the caller).
func readUnits(t testing.TB, f Format, files []string, opt ReadOptions, mem memory.Allocator) ([]arrow.Record, error) {
	t.Helper()
	units, err := Plan(f, files, 1)
	if err != nil {
		return nil, err
	}
	opt.Format = f
	var out []arrow.Record
	for _, u := range units {
		err := Read(context.Background(), u, opt, mem, func(r arrow.Record) error {
			out = append(out, r)
			return nil
		})
		if err != nil {
			releaseAll(out)
			return nil, err
		}
	}
	return out, nil
}

// readOne reads one file as one concatenated record.
func readOne(t testing.TB, f Format, path string, opt ReadOptions, mem memory.Allocator) (arrow.Record, error) {
	t.Helper()
	blocks, err := readUnits(t, f, []string{path}, opt, mem)
	if err != nil {
		return nil, err
	}
	defer releaseAll(blocks)
	if len(blocks) == 0 {
		t.Fatalf("no blocks read from %s", path)
	}
	return concatRecords(blocks[0].Schema(), blocks, mem)
}

func releaseAll(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}

// writeParquetGroups writes rows rows of (i int64, f float64) in row groups of groupRows rows.
func writeParquetGroups(t testing.TB, path string, rows, groupRows int) {
	t.Helper()
	rec := seqRecord(t, memory.DefaultAllocator, rows)
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(groupRows)), parquet.WithCompression(compress.Codecs.Snappy))
	fw, err := pqarrow.NewFileWriter(rec.Schema(), f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

var seqSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int64},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// seqRecord is rows rows of i = row, f = row/2.
func seqRecord(t testing.TB, mem memory.Allocator, rows int) arrow.Record {
	b := array.NewRecordBuilder(mem, seqSchema)
	defer b.Release()
	ib := b.Field(0).(*array.Int64Builder)
	fb := b.Field(1).(*array.Float64Builder)
	ib.Reserve(rows)
	fb.Reserve(rows)
	for i := 0; i < rows; i++ {
		ib.UnsafeAppend(int64(i))
		fb.UnsafeAppend(float64(i) / 2)
	}
	return b.NewRecord()
}
