package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/arrow/util"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// shape is the generated input: rows split evenly over files, each written in row groups of
// rgRows rows, snappy-compressed, columns id int64, x float64, s string (16 bytes), all
// required (no nulls).
type shape struct {
	Rows       int64 `json:"rows"`
	Files      int   `json:"files"`
	RGRows     int64 `json:"row_group_rows"`
	ArrowBytes int64 `json:"arrow_bytes"` // in-memory Arrow size of all rows (buffers)
	FileBytes  int64 `json:"file_bytes"`  // Parquet bytes on disk
}

const manifestName = "databench.json"

var inputSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64},
	{Name: "s", Type: arrow.BinaryTypes.String},
}, nil)

// prepare makes sure dir holds the input of the given shape: it reuses what an earlier run
// wrote there (same rows, files and row groups, per the manifest) or writes it.
func prepare(dir string, want shape) (shape, []string, error) {
	if b, err := os.ReadFile(filepath.Join(dir, manifestName)); err == nil {
		var have shape
		if json.Unmarshal(b, &have) == nil && have.Rows == want.Rows && have.Files == want.Files && have.RGRows == want.RGRows {
			files := make([]string, have.Files)
			ok := true
			for i := range files {
				files[i] = filepath.Join(dir, fileName(i))
				if _, err := os.Stat(files[i]); err != nil {
					ok = false
				}
			}
			if ok {
				return have, files, nil
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return want, nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return want, nil, err
	}
	// Start from a clean directory of ours: remove old inputs so ReadParquet(dir) sees
	// exactly these files.
	old, _ := filepath.Glob(filepath.Join(dir, "part-*.parquet"))
	for _, p := range old {
		os.Remove(p)
	}
	os.Remove(filepath.Join(dir, manifestName))

	files := make([]string, want.Files)
	arrowBytes := make([]int64, want.Files)
	errs := make([]error, want.Files)
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, numCPU()))
	for i := range files {
		files[i] = filepath.Join(dir, fileName(i))
		lo, hi := want.Rows*int64(i)/int64(want.Files), want.Rows*int64(i+1)/int64(want.Files)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			arrowBytes[i], errs[i] = writeFile(files[i], lo, hi, want.RGRows)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return want, nil, err
	}
	for i, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return want, nil, err
		}
		want.FileBytes += fi.Size()
		want.ArrowBytes += arrowBytes[i]
	}
	b, _ := json.MarshalIndent(want, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, manifestName), b, 0o644); err != nil {
		return want, nil, err
	}
	return want, files, nil
}

func fileName(i int) string { return fmt.Sprintf("part-%03d.parquet", i) }

// writeFile writes rows [lo, hi) to path in row groups of rgRows rows; it returns their
// in-memory Arrow size.
func writeFile(path string, lo, hi, rgRows int64) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(rgRows), parquet.WithDictionaryDefault(false))
	w, err := pqarrow.NewFileWriter(inputSchema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		f.Close()
		return 0, err
	}
	var total int64
	for start := lo; start < hi; start += rgRows {
		rec := makeRows(memory.DefaultAllocator, start, min(start+rgRows, hi))
		total += util.TotalRecordSize(rec)
		err := w.Write(rec) // one row group per record (rgRows rows at most)
		rec.Release()
		if err != nil {
			w.Close()
			return 0, err
		}
	}
	if err := w.Close(); err != nil { // closes f
		return 0, err
	}
	return total, nil
}

// makeRows makes rows [lo, hi): id, x = a pseudo-random float in [0, 1000), s = a 16-byte
// string ("u-" and 14 hex digits of a hash of id).
func makeRows(mem memory.Allocator, lo, hi int64) arrow.Record {
	b := array.NewRecordBuilder(mem, inputSchema)
	defer b.Release()
	n := int(hi - lo)
	ids := b.Field(0).(*array.Int64Builder)
	xs := b.Field(1).(*array.Float64Builder)
	ss := b.Field(2).(*array.StringBuilder)
	ids.Reserve(n)
	xs.Reserve(n)
	ss.Reserve(n)
	ss.ReserveData(16 * n)
	buf := make([]byte, 0, 16)
	for id := lo; id < hi; id++ {
		h := mix(uint64(id))
		ids.UnsafeAppend(id)
		xs.UnsafeAppend(float64(h>>11) / float64(1<<53) * 1000)
		buf = append(buf[:0], "u-"...)
		hex := strconv.AppendUint(make([]byte, 0, 16), h|1<<60, 16) // 16 hex digits
		buf = append(buf, hex[2:]...)
		ss.Append(string(buf))
	}
	return b.NewRecord()
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
