package formats

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	arrowcsv "github.com/apache/arrow/go/v15/arrow/csv"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// ParquetRowGroupRows is the number of rows per row group that WriteFile writes.
const ParquetRowGroupRows = 1 << 20

// WriteFile writes records (all with the same schema, possibly zero records given a schema) to a new
// file at path: an existing file is an error naming it. The data goes to path+".tmp" first (synced
// to disk), then is linked to path without replacing anything and the temporary file removed, so
// a crash never leaves a half file under the final name. Parquet via pqarrow (one row group per
// ParquetRowGroupRows rows, the Arrow schema stored in the file), CSV via the arrow/csv writer with
// a header line (nulls as empty fields; nested columns other than lists are refused), JSON as one
// object per line (nulls as null, binary as base64, nested as nested, NaN and infinities as null).
// Returns the bytes written. The records are not released.
func WriteFile(path string, schema *arrow.Schema, recs []arrow.Record, opt WriteOptions) (n int64, err error) {
	if schema == nil {
		if len(recs) == 0 {
			return 0, fmt.Errorf("data: writing %s: no records and no schema", path)
		}
		schema = recs[0].Schema()
	}
	for i, r := range recs {
		if !r.Schema().Equal(schema) {
			return 0, fmt.Errorf("data: writing %s: record %d has schema %s, want %s: all blocks of a write must have the same schema", path, i, r.Schema(), schema)
		}
	}
	if opt.Delimiter == 0 {
		opt.Delimiter = ','
	}
	var codec compress.Compression
	switch opt.Format {
	case Parquet:
		switch strings.ToLower(opt.Compression) {
		case "", "snappy":
			codec = compress.Codecs.Snappy
		case "zstd":
			codec = compress.Codecs.Zstd
		case "gzip":
			codec = compress.Codecs.Gzip
		case "none", "uncompressed":
			codec = compress.Codecs.Uncompressed
		default:
			return 0, fmt.Errorf("data: writing %s: unknown Parquet compression %q: use \"snappy\", \"zstd\", \"gzip\" or \"none\"", path, opt.Compression)
		}
	case CSV:
		if err := csvWritable(schema); err != nil {
			return 0, fmt.Errorf("data: writing %s: %w", path, err)
		}
	case JSON:
	case Binary:
		return 0, fmt.Errorf("data: writing %s: cannot write the binary format: use Parquet, CSV or JSON", path)
	default:
		return 0, fmt.Errorf("data: writing %s: unknown format %d: use formats.Parquet, CSV or JSON", path, int(opt.Format))
	}
	if _, err := os.Lstat(path); err == nil {
		return 0, fmt.Errorf("data: writing %s: the file already exists: remove it or write to another directory", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, pathErr(path, err)
	}

	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, pathErr(tmp, err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	cw := &countWriter{w: f}
	bw := bufio.NewWriterSize(cw, 1<<20)
	switch opt.Format {
	case Parquet:
		err = writeParquet(bw, schema, recs, codec)
	case CSV:
		err = writeCSV(bw, schema, recs, opt)
	case JSON:
		err = writeJSON(bw, schema, recs)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	done = true
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("data: writing %s: %w", path, err)
	}
	// Link does not replace an existing file, unlike Rename.
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			os.Remove(tmp)
			return 0, fmt.Errorf("data: writing %s: the file already exists: remove it or write to another directory", path)
		}
		// File systems without hard links: rename after checking.
		if _, serr := os.Lstat(path); serr == nil {
			os.Remove(tmp)
			return 0, fmt.Errorf("data: writing %s: the file already exists: remove it or write to another directory", path)
		}
		if rerr := os.Rename(tmp, path); rerr != nil {
			os.Remove(tmp)
			return 0, pathErr(path, rerr)
		}
		return cw.n, nil
	}
	os.Remove(tmp)
	return cw.n, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func writeParquet(w io.Writer, schema *arrow.Schema, recs []arrow.Record, codec compress.Compression) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parquet writer: %v", r)
		}
	}()
	props := parquet.NewWriterProperties(
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(ParquetRowGroupRows),
	)
	fw, err := pqarrow.NewFileWriter(schema, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.NumRows() == 0 {
			continue
		}
		if err := fw.WriteBuffered(r); err != nil {
			fw.Close()
			return err
		}
	}
	return fw.Close()
}

// csvWritable refuses the columns the CSV writer cannot hold.
func csvWritable(schema *arrow.Schema) error {
	for _, f := range schema.Fields() {
		switch f.Type.ID() {
		case arrow.STRUCT, arrow.MAP, arrow.SPARSE_UNION, arrow.DENSE_UNION, arrow.DICTIONARY, arrow.RUN_END_ENCODED:
			return fmt.Errorf("CSV cannot hold column %q of type %s: write Parquet or JSON, or drop or flatten the column first", f.Name, f.Type)
		}
	}
	return nil
}

func writeCSV(w io.Writer, schema *arrow.Schema, recs []arrow.Record, opt WriteOptions) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("csv writer: %v", r)
		}
	}()
	cw := arrowcsv.NewWriter(w, schema,
		arrowcsv.WithComma(opt.Delimiter),
		arrowcsv.WithHeader(!opt.NoHeader),
		arrowcsv.WithNullWriter(""),
	)
	if len(recs) == 0 && !opt.NoHeader {
		// The header alone, so that the schema's column names survive.
		cols := emptyColumns(schema)
		e := array.NewRecord(schema, cols, 0)
		for _, c := range cols {
			c.Release()
		}
		err := cw.Write(e)
		e.Release()
		if err != nil {
			return err
		}
	}
	for _, r := range recs {
		if err := cw.Write(r); err != nil {
			return err
		}
	}
	return cw.Flush()
}

func emptyColumns(schema *arrow.Schema) []arrow.Array {
	cols := make([]arrow.Array, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
	}
	return cols
}

func writeJSON(w io.Writer, schema *arrow.Schema, recs []arrow.Record) error {
	keys := make([][]byte, schema.NumFields())
	for i, f := range schema.Fields() {
		k := appendQuoted(nil, f.Name)
		keys[i] = append(k, ':')
	}
	var buf []byte
	for _, r := range recs {
		cols := r.Columns()
		for row := 0; row < int(r.NumRows()); row++ {
			buf = append(buf[:0], '{')
			for c, col := range cols {
				if c > 0 {
					buf = append(buf, ',')
				}
				buf = append(buf, keys[c]...)
				var err error
				if buf, err = appendValue(buf, col, row); err != nil {
					return fmt.Errorf("column %q: %w", schema.Field(c).Name, err)
				}
			}
			buf = append(buf, '}', '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendValue appends the JSON form of a[i].
func appendValue(buf []byte, a arrow.Array, i int) ([]byte, error) {
	if a.DataType().ID() == arrow.NULL || a.IsNull(i) { // a null array has no validity bitmap
		return append(buf, "null"...), nil
	}
	switch a := a.(type) {
	case *array.Boolean:
		return strconv.AppendBool(buf, a.Value(i)), nil
	case *array.Int8:
		return strconv.AppendInt(buf, int64(a.Value(i)), 10), nil
	case *array.Int16:
		return strconv.AppendInt(buf, int64(a.Value(i)), 10), nil
	case *array.Int32:
		return strconv.AppendInt(buf, int64(a.Value(i)), 10), nil
	case *array.Int64:
		return strconv.AppendInt(buf, a.Value(i), 10), nil
	case *array.Uint8:
		return strconv.AppendUint(buf, uint64(a.Value(i)), 10), nil
	case *array.Uint16:
		return strconv.AppendUint(buf, uint64(a.Value(i)), 10), nil
	case *array.Uint32:
		return strconv.AppendUint(buf, uint64(a.Value(i)), 10), nil
	case *array.Uint64:
		return strconv.AppendUint(buf, a.Value(i), 10), nil
	case *array.Float32:
		return appendFloat(buf, float64(a.Value(i)), 32), nil
	case *array.Float64:
		return appendFloat(buf, a.Value(i), 64), nil
	case *array.String:
		return appendQuoted(buf, a.Value(i)), nil
	case *array.LargeString:
		return appendQuoted(buf, a.Value(i)), nil
	case *array.Binary:
		return appendBase64(buf, a.Value(i)), nil
	case *array.LargeBinary:
		return appendBase64(buf, a.Value(i)), nil
	case *array.FixedSizeBinary:
		return appendBase64(buf, a.Value(i)), nil
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		buf = append(buf, '{')
		for f := 0; f < a.NumField(); f++ {
			if f > 0 {
				buf = append(buf, ',')
			}
			buf = appendQuoted(buf, st.Field(f).Name)
			buf = append(buf, ':')
			var err error
			if buf, err = appendValue(buf, a.Field(f), i); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case *array.Map:
		// Objects when the keys are strings, else lists of {"key":..., "value":...}.
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		_, strKeys := keys.(*array.String)
		if strKeys {
			buf = append(buf, '{')
		} else {
			buf = append(buf, '[')
		}
		for j := int(start); j < int(end); j++ {
			if j > int(start) {
				buf = append(buf, ',')
			}
			var err error
			if strKeys {
				buf = appendQuoted(buf, keys.(*array.String).Value(j))
				buf = append(buf, ':')
			} else {
				buf = append(buf, `{"key":`...)
				if buf, err = appendValue(buf, keys, j); err != nil {
					return nil, err
				}
				buf = append(buf, `,"value":`...)
			}
			if buf, err = appendValue(buf, items, j); err != nil {
				return nil, err
			}
			if !strKeys {
				buf = append(buf, '}')
			}
		}
		if strKeys {
			return append(buf, '}'), nil
		}
		return append(buf, ']'), nil
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		buf = append(buf, '[')
		for j := int(start); j < int(end); j++ {
			if j > int(start) {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendValue(buf, vals, j); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	}
	// Dates, timestamps, decimals, dictionaries...: Arrow's own JSON form of the value.
	b, err := json.Marshal(a.GetOneForMarshal(i))
	if err != nil {
		return nil, err
	}
	return append(buf, b...), nil
}

func appendFloat(buf []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(buf, "null"...)
	}
	n := len(buf)
	buf = strconv.AppendFloat(buf, f, 'g', -1, bits)
	for _, c := range buf[n:] {
		if c == '.' || c == 'e' {
			return buf
		}
	}
	return append(buf, '.', '0') // keep floats floats for readers that infer types
}

func appendBase64(buf []byte, b []byte) []byte {
	buf = append(buf, '"')
	buf = base64.StdEncoding.AppendEncode(buf, b)
	return append(buf, '"')
}

const hexDigits = "0123456789abcdef"

// appendQuoted appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendQuoted(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
