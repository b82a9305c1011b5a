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
	"github.com/apache/arrow/go/v15/parquet/metadata"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// readParquet reads the row groups of u, only the leaf columns of opt.Columns.
// With autoBatch (the caller left ReadOptions.BatchRows at its default), consecutive row
// groups are decoded by one reader in batches of about a block (see unitBatchRows).
func readParquet(ctx context.Context, u Unit, opt ReadOptions, autoBatch bool, mem memory.Allocator, sink func(arrow.Record) error) (err error) {
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
	// Column chunks are read through a 1 MiB buffer (a page at a time), not whole into
	// memory: without it arrow reads each chunk into a buffer of its size and copies it
	// into a second one of the same size.
	props.BufferedStreamEnabled = true
	props.BufferSize = pqBufferSize
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
		if g < 0 || g >= rdr.NumRowGroups() {
			return pqErr(u.Path, g, fmt.Errorf("no such row group: the file has %d", rdr.NumRowGroups()))
		}
	}
	if !autoBatch || !consecutive(groups) {
		for _, g := range groups {
			rg = g
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := readRowGroups(ctx, fr, leaves, []int{g}, u.Path, sink, &rg); err != nil {
				return err
			}
		}
		return nil
	}
	// One reader over all the unit's row groups, in batches as large as a block: a unit
	// that fits one block is decoded as one batch, which the pipeline emits as is (no
	// concatenation of 64 Ki-row batches).
	fr.Props.BatchSize = unitBatchRows(rdr.MetaData(), groups, leaves, opt.TargetBlockBytes)
	rg = groups[0]
	return readRowGroups(ctx, fr, leaves, groups, u.Path, sink, &rg)
}

// pqBufferSize is the read buffer of a column chunk's stream (Parquet writers make pages
// of about 1 MiB; a larger page grows the buffer).
const pqBufferSize = 1 << 20

// maxUnitBatchRows bounds the batches of unitBatchRows: the size estimate comes from the
// Parquet metadata, which can underestimate the Arrow size (dictionary-encoded columns), and
// a batch larger than the target costs memory before the pipeline cuts it.
const maxUnitBatchRows = 1 << 20

// unitBatchRows is the batch size that decodes the row groups of a unit in batches of about
// target bytes in Arrow: the unit's rows when they fit, else the rows of target bytes as
// estimated from the column chunks' uncompressed sizes (at least each fixed-width column's
// width, at least DefaultBatchRows).
func unitBatchRows(md *metadata.FileMetaData, groups, leaves []int, target int64) int64 {
	var rows, bytes int64
	for _, g := range groups {
		rows += md.RowGroup(g).NumRows()
		bytes += rowGroupArrowBytes(md, g, leaves)
	}
	if rows <= 0 {
		return DefaultBatchRows
	}
	batch := rows
	if bytes > target {
		batch = max(DefaultBatchRows, int64(float64(rows)*float64(target)/float64(bytes)))
	}
	return min(batch, rows, maxUnitBatchRows)
}

// rowGroupArrowBytes estimates the Arrow size of the leaf columns (nil: all) of row group g:
// each column chunk's uncompressed size, at least its fixed-width values' size.
func rowGroupArrowBytes(md *metadata.FileMetaData, g int, leaves []int) int64 {
	rgm := md.RowGroup(g)
	n := rgm.NumRows()
	var bytes int64
	col := func(c int) {
		cc, err := rgm.ColumnChunk(c)
		if err != nil {
			bytes += 8 * n
			return
		}
		b := cc.TotalUncompressedSize()
		if c < md.Schema.NumColumns() { // (a corrupt footer may disagree with itself)
			if w := physicalWidth(md.Schema.Column(c).PhysicalType()); w*n > b {
				b = w * n
			}
		}
		bytes += b
	}
	if leaves == nil {
		for c := 0; c < rgm.NumColumns(); c++ {
			col(c)
		}
	} else {
		for _, c := range leaves {
			col(c)
		}
	}
	return bytes
}

// physicalWidth is the Arrow width of a Parquet physical type's values (0 for byte arrays).
func physicalWidth(t parquet.Type) int64 {
	switch t {
	case parquet.Types.Int32, parquet.Types.Float:
		return 4
	case parquet.Types.Int64, parquet.Types.Double:
		return 8
	case parquet.Types.Int96:
		return 12
	}
	return 0
}

func consecutive(groups []int) bool {
	for i := 1; i < len(groups); i++ {
		if groups[i] != groups[i-1]+1 {
			return false
		}
	}
	return len(groups) > 0
}

// readRowGroups reads row groups (consecutive, when more than one); the reader's buffers are
// freed even if the decoder panics. *rg is set to the row group where each batch starts (for
// errors).
func readRowGroups(ctx context.Context, fr *pqarrow.FileReader, leaves, groups []int, path string, sink func(arrow.Record) error, rg *int) error {
	rr, err := fr.GetRecordReader(ctx, leaves, groups)
	if err != nil {
		return pqErr(path, groups[0], err)
	}
	defer rr.Release()
	md := fr.ParquetReader().MetaData()
	var start, end int64 // rows read; the end of groups[gi]
	gi := 0
	end = md.RowGroup(groups[0]).NumRows()
	for rr.Next() {
		rec := rr.Record()
		rec.Retain()
		start += rec.NumRows()
		for gi < len(groups)-1 && start >= end {
			gi++
			end += md.RowGroup(groups[gi]).NumRows()
		}
		if err := sink(rec); err != nil {
			return err
		}
		*rg = groups[gi] // where the next batch starts
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return pqErr(path, *rg, err)
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
