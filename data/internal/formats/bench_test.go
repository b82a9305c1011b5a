package formats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

const benchRows = 1 << 20

var (
	benchOnce sync.Once
	benchDir  string
	benchErr  error
)

// benchFiles writes the benchmark files once: 1 Mi rows of (i int64, f float64, s string) as
// Parquet (one row group, snappy) and as JSON lines.
func benchFiles(b *testing.B) (pq, js string) {
	benchOnce.Do(func() {
		benchDir, benchErr = os.MkdirTemp("", "formats-bench-")
		if benchErr != nil {
			return
		}
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
			{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		}, nil)
		bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer bld.Release()
		for i := 0; i < benchRows; i++ {
			bld.Field(0).(*array.Int64Builder).Append(int64(i))
			bld.Field(1).(*array.Float64Builder).Append(float64(i) * 0.25)
			bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", i%1000))
		}
		rec := bld.NewRecord()
		defer rec.Release()
		if _, benchErr = WriteFile(filepath.Join(benchDir, "b.parquet"), schema, []arrow.Record{rec}, WriteOptions{Format: Parquet}); benchErr != nil {
			return
		}
		_, benchErr = WriteFile(filepath.Join(benchDir, "b.json"), schema, []arrow.Record{rec}, WriteOptions{Format: JSON})
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return filepath.Join(benchDir, "b.parquet"), filepath.Join(benchDir, "b.json")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

func reportRows(b *testing.B, rows int64) {
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkReadParquet reads 1 Mi rows with Read (default block size: one block).
func BenchmarkReadParquet(b *testing.B) {
	pq, _ := benchFiles(b)
	var rows int64
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		err := Read(context.Background(), Unit{Path: pq, Rows: -1}, ReadOptions{Format: Parquet}, memory.DefaultAllocator, func(r arrow.Record) error {
			rows += r.NumRows()
			r.Release()
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	reportRows(b, rows)
}

// BenchmarkReadParquetBlocks8MiB is Read cutting 8 MiB blocks (slices, no concatenation).
func BenchmarkReadParquetBlocks8MiB(b *testing.B) {
	pq, _ := benchFiles(b)
	var rows int64
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		err := Read(context.Background(), Unit{Path: pq, Rows: -1}, ReadOptions{Format: Parquet, TargetBlockBytes: 8 << 20}, memory.DefaultAllocator, func(r arrow.Record) error {
			rows += r.NumRows()
			r.Release()
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	reportRows(b, rows)
}

// BenchmarkPlainPqarrow reads the same file with pqarrow alone (same batch size), the baseline.
func BenchmarkPlainPqarrow(b *testing.B) {
	pq, _ := benchFiles(b)
	var rows int64
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		f, err := os.Open(pq)
		if err != nil {
			b.Fatal(err)
		}
		rdr, err := file.NewParquetReader(f)
		if err != nil {
			b.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: DefaultBatchRows}, memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		rr, err := fr.GetRecordReader(context.Background(), nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		for rr.Next() {
			rows += rr.Record().NumRows()
		}
		if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
			b.Fatal(err)
		}
		rr.Release()
		rdr.Close()
	}
	reportRows(b, rows)
}

// BenchmarkReadJSON reads 1 Mi JSON lines with Read (schema inferred).
func BenchmarkReadJSON(b *testing.B) {
	_, js := benchFiles(b)
	var rows int64
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		err := Read(context.Background(), Unit{Path: js, Rows: -1}, ReadOptions{Format: JSON}, memory.DefaultAllocator, func(r arrow.Record) error {
			rows += r.NumRows()
			r.Release()
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	reportRows(b, rows)
}

// BenchmarkPlainJSONReader reads the same lines with array.NewJSONReader, the baseline.
func BenchmarkPlainJSONReader(b *testing.B) {
	_, js := benchFiles(b)
	schema, err := inferJSON(js)
	if err != nil {
		b.Fatal(err)
	}
	var rows int64
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		data, err := os.ReadFile(js)
		if err != nil {
			b.Fatal(err)
		}
		jr := array.NewJSONReader(strings.NewReader(string(data)), schema, array.WithChunk(DefaultBatchRows))
		for jr.Next() {
			rows += jr.Record().NumRows()
		}
		if err := jr.Err(); err != nil {
			b.Fatal(err)
		}
		jr.Release()
	}
	reportRows(b, rows)
}
