package formats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// readParquet reads the row groups of u one at a time, only the leaf columns of opt.Columns.
func readParquet(ctx context.Context, u Unit, opt ReadOptions, mem memory.Allocator, sink func(arrow.Record) error) (err error) {
	f, err := open(u.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	rg := -1
	defer func() {
		// Corrupt files can make the Parquet decoder panic.
		if r := recover(); r != nil {
			err = pqErr(u.Path, rg, fmt.Errorf("corrupt Parquet data: %v", r))
		}
	}()
	props := parquet.NewReaderProperties(mem)
	rdr, err := file.NewParquetReader(f, file.WithReadProps(props))
	if err != nil {
		return footerErr(u.Path, err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: int64(opt.BatchRows), Parallel: false}, mem)
	if err != nil {
		return fmt.Errorf("data: reading %s: %w", u.Path, err)
	}
	schema, err := fr.Schema()
	if err != nil {
		return fmt.Errorf("data: reading %s: %w", u.Path, err)
	}
	var lastIn, lastOut *arrow.Schema
	rawSink := sink
	sink = func(rec arrow.Record) error {
		if rec.Schema() != lastIn {
			lastIn, lastOut = rec.Schema(), cleanSchema(rec.Schema())
		}
		if lastOut != nil && rec.NumCols() > 0 {
			rec = withSchema(rec, lastOut)
		}
		return rawSink(rec)
	}
	var leaves []int
	if opt.Columns != nil {
		byName := make(map[string]*pqarrow.SchemaField)
		for i := range fr.Manifest.Fields {
			sf := &fr.Manifest.Fields[i]
			if _, dup := byName[sf.Field.Name]; !dup {
				byName[sf.Field.Name] = sf
			}
		}
		for _, c := range opt.Columns {
			sf, ok := byName[c]
			if !ok {
				// Let the pipeline report the missing column with the file's columns.
				return sink(emptyRecord(mem, schema))
			}
			leaves = appendLeaves(leaves, sf)
		}
		leaves = sortedUnique(leaves)
	}
	groups := u.RowGroups
	if groups == nil {
		groups = make([]int, rdr.NumRowGroups())
		for i := range groups {
			groups[i] = i
		}
	}
	if err := sink(emptyRecord(mem, schema)); err != nil {
		return err
	}
	if len(leaves) == 0 && opt.Columns != nil {
		// No columns selected: only the row counts matter.
		for _, g := range groups {
			if g < 0 || g >= rdr.NumRowGroups() {
				return pqErr(u.Path, g, fmt.Errorf("no such row group: the file has %d", rdr.NumRowGroups()))
			}
			n := rdr.MetaData().RowGroup(g).NumRows()
			if err := sink(array.NewRecord(arrow.NewSchema(nil, nil), nil, n)); err != nil {
				return err
			}
		}
		return nil
	}
	for _, g := range groups {
		rg = g
		if g < 0 || g >= rdr.NumRowGroups() {
			return pqErr(u.Path, g, fmt.Errorf("no such row group: the file has %d", rdr.NumRowGroups()))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := readRowGroup(ctx, fr, leaves, g, u.Path, sink); err != nil {
			return err
		}
	}
	return nil
}

// readRowGroup reads row group g; the reader's buffers are freed even if the decoder panics.
func readRowGroup(ctx context.Context, fr *pqarrow.FileReader, leaves []int, g int, path string, sink func(arrow.Record) error) error {
	rr, err := fr.GetRecordReader(ctx, leaves, []int{g})
	if err != nil {
		return pqErr(path, g, err)
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.Record()
		rec.Retain()
		if err := sink(rec); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return pqErr(path, g, err)
	}
	return nil
}

func pqErr(path string, rg int, err error) error {
	if rg < 0 {
		return fmt.Errorf("data: reading %s: %w", path, err)
	}
	return fmt.Errorf("data: reading %s: row group %d: %w", path, rg, err)
}

func appendLeaves(out []int, sf *pqarrow.SchemaField) []int {
	if len(sf.Children) == 0 { // (IsLeaf is unreliable: pqarrow leaves ColIndex 0 on groups)
		return append(out, sf.ColIndex)
	}
	for i := range sf.Children {
		out = appendLeaves(out, &sf.Children[i])
	}
	return out
}

func sortedUnique(s []int) []int {
	slices.Sort(s)
	return slices.Compact(s)
}

// emptyRecord is a zero-row record of schema.
func emptyRecord(mem memory.Allocator, schema *arrow.Schema) arrow.Record {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	return b.NewRecord()
}

// footerErr explains a failure to read the footer of a Parquet file.
func footerErr(path string, err error) error {
	if IsTransient(err) {
		return fmt.Errorf("data: reading %s: %w", path, err)
	}
	return fmt.Errorf("data: reading %s: not a valid Parquet file (%w)", path, err)
}
