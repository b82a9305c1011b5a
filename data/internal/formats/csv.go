package formats

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	arrowcsv "github.com/apache/arrow/go/v15/arrow/csv"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// csvInferRows is how many data rows CSV schema inference looks at.
const csvInferRows = 1000

// csvNulls are the values read as null in non-string CSV columns (strings keep them).
var csvNulls = []string{"", "NULL", "null"}

func readCSV(ctx context.Context, path string, opt ReadOptions, mem memory.Allocator, sink func(arrow.Record) error) (err error) {
	schema := opt.Schema
	if schema == nil {
		schema, err = inferCSV(path, opt)
		if err != nil || schema == nil {
			return err // schema nil: an empty file
		}
	}
	f, err := open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	defer func() {
		// The Arrow CSV reader panics on some malformed rows.
		if r := recover(); r != nil {
			err = csvErr(path, opt, schema, fmt.Errorf("%v", r))
		}
	}()
	// The Arrow CSV reader accepts null columns in a schema but cannot convert to them: read
	// them as strings, check that they hold only nulls, and replace them.
	readSchema, nullCols := csvReadSchema(schema)
	rdr := arrowcsv.NewReader(bufio.NewReaderSize(f, 1<<20), readSchema,
		arrowcsv.WithComma(opt.Delimiter),
		arrowcsv.WithHeader(!opt.NoHeader),
		arrowcsv.WithChunk(opt.BatchRows),
		arrowcsv.WithAllocator(mem),
		arrowcsv.WithNullReader(false, csvNulls...),
	)
	defer rdr.Release()
	if err := sink(emptyRecord(mem, schema)); err != nil { // the schema, in case there are no rows
		return err
	}
	for rdr.Next() {
		if rdr.Err() != nil {
			break
		}
		rec := rdr.Record()
		rec.Retain()
		if len(nullCols) > 0 {
			var err error
			if rec, err = csvNullColumns(rec, schema, nullCols, path); err != nil {
				return err
			}
		}
		if err := sink(rec); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := rdr.Err(); err != nil {
		return csvErr(path, opt, schema, err)
	}
	return nil
}

// csvErr explains a CSV read error, finding the offending line by reading the file again.
func csvErr(path string, opt ReadOptions, schema *arrow.Schema, cause error) error {
	var pe *csv.ParseError
	if errors.As(cause, &pe) {
		return fmt.Errorf("data: reading %s: line %d: %w", path, pe.Line, pe.Err)
	}
	if line, msg := diagnoseCSV(path, opt, schema); line > 0 {
		return fmt.Errorf("data: reading %s: line %d: %s", path, line, msg)
	}
	return fmt.Errorf("data: reading %s: %w", path, cause)
}

func newCSVReader(r io.Reader, opt ReadOptions) *csv.Reader {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<16))
	cr.Comma = opt.Delimiter
	cr.ReuseRecord = true
	return cr
}

// diagnoseCSV finds the first line that the Arrow reader cannot convert to schema.
func diagnoseCSV(path string, opt ReadOptions, schema *arrow.Schema) (int, string) {
	f, err := open(path)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	cr := newCSVReader(f, opt)
	cr.FieldsPerRecord = -1
	first := true
	for {
		rec, err := cr.Read()
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return pe.Line, pe.Err.Error()
			}
			return 0, ""
		}
		line, _ := cr.FieldPos(0)
		if first && !opt.NoHeader {
			first = false
			if len(rec) != schema.NumFields() {
				return line, fmt.Sprintf("the header has %d columns but the schema has %d", len(rec), schema.NumFields())
			}
			continue
		}
		first = false
		if len(rec) != schema.NumFields() {
			return line, fmt.Sprintf("wrong number of fields: %d, want %d", len(rec), schema.NumFields())
		}
		for i, v := range rec {
			fld := schema.Field(i)
			if err := checkCSVValue(v, fld.Type); err != nil {
				return line, fmt.Sprintf("column %q: cannot read %q as %s: %v (pass a schema, data.Schema(...), to choose the type)", fld.Name, v, fld.Type, err)
			}
		}
	}
}

func isCSVNull(v string) bool {
	for _, n := range csvNulls {
		if v == n {
			return true
		}
	}
	return false
}

// checkCSVValue reports whether the Arrow CSV reader can convert v to dt (the common types).
func checkCSVValue(v string, dt arrow.DataType) error {
	if isCSVNull(v) {
		return nil
	}
	var err error
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		_, err = strconv.ParseInt(v, 10, dt.(arrow.FixedWidthDataType).BitWidth())
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		_, err = strconv.ParseUint(v, 10, dt.(arrow.FixedWidthDataType).BitWidth())
	case arrow.FLOAT32:
		_, err = strconv.ParseFloat(v, 32)
	case arrow.FLOAT64:
		_, err = strconv.ParseFloat(v, 64)
	case arrow.BOOL:
		_, err = strconv.ParseBool(v)
	}
	if ne, ok := err.(*strconv.NumError); ok {
		err = ne.Err
	}
	return err
}

// inferCSV reads the header and the first csvInferRows rows: a column whose values (ignoring
// nulls) all parse as integers is int64, else as numbers float64, else true/false bool, else
// utf8; a column with only nulls (empty, "NULL", "null") is null. All fields are nullable.
// It returns nil for an empty file.
func inferCSV(path string, opt ReadOptions) (*arrow.Schema, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := newCSVReader(f, opt)
	cr.ReuseRecord = false
	var names []string
	var kinds []int // 0 unknown, 1 int, 2 float, 3 bool, 4 string
	for row := 0; row <= csvInferRows; row++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("data: reading %s: line %d: %w", path, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("data: reading %s: %w", path, err)
		}
		if names == nil {
			kinds = make([]int, len(rec))
			if opt.NoHeader {
				names = make([]string, len(rec))
				for i := range rec {
					names[i] = "f" + strconv.Itoa(i)
				}
			} else {
				names = rec
				continue
			}
		}
		for i, v := range rec {
			if isCSVNull(v) {
				continue
			}
			kinds[i] = max(kinds[i], csvKind(v, kinds[i]))
		}
	}
	if names == nil {
		return nil, nil
	}
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		var dt arrow.DataType = arrow.BinaryTypes.String
		switch kinds[i] {
		case 0:
			// Empty (or null) in every row looked at: null, as pyarrow; Ray Data unifies
			// it with the type other files or blocks give the column.
			dt = arrow.Null
		case 1:
			dt = arrow.PrimitiveTypes.Int64
		case 2:
			dt = arrow.PrimitiveTypes.Float64
		case 3:
			dt = arrow.FixedWidthTypes.Boolean
		}
		fields[i] = arrow.Field{Name: n, Type: dt, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// csvKind is the narrowest kind at least `from` that v fits.
func csvKind(v string, from int) int {
	if from <= 1 {
		if _, err := strconv.ParseInt(v, 10, 64); err == nil {
			return 1
		}
	}
	if from <= 2 {
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return 2
		}
	}
	if from == 0 || from == 3 {
		if strings.EqualFold(v, "true") || strings.EqualFold(v, "false") {
			return 3
		}
	}
	return 4
}

// csvReadSchema is schema with its null columns read as strings (nullCols says which).
func csvReadSchema(schema *arrow.Schema) (*arrow.Schema, []int) {
	var nullCols []int
	fields := schema.Fields()
	for i, f := range fields {
		if f.Type.ID() == arrow.NULL {
			nullCols = append(nullCols, i)
			fields[i].Type = arrow.BinaryTypes.String
		}
	}
	if nullCols == nil {
		return schema, nil
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md), nullCols
}

// csvNullColumns replaces the string columns nullCols of rec (released) with null columns,
// as schema says; a value that is not a null is an error.
func csvNullColumns(rec arrow.Record, schema *arrow.Schema, nullCols []int, path string) (arrow.Record, error) {
	defer rec.Release()
	cols := append([]arrow.Array(nil), rec.Columns()...)
	for _, c := range nullCols {
		s := cols[c].(*array.String)
		for i := 0; i < s.Len(); i++ {
			if s.IsValid(i) && !isCSVNull(s.Value(i)) {
				return nil, fmt.Errorf("data: reading %s: column %q: value %q in a column read as null (it is empty in the rows schema inference looked at; pass a schema, data.Schema(...), to choose the type)", path, schema.Field(c).Name, s.Value(i))
			}
		}
		cols[c] = array.NewNull(s.Len())
		defer cols[c].Release()
	}
	return array.NewRecord(schema, cols, rec.NumRows()), nil
}
