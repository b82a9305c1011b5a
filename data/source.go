package data

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/ray-go/ray/data/internal/formats"
)

func formatName(f int) string {
	switch formats.Format(f) {
	case formats.Parquet:
		return "Parquet"
	case formats.CSV:
		return "CSV"
	case formats.JSON:
		return "JSON"
	case formats.Binary:
		return "BinaryFiles"
	case formats.Text:
		return "Text"
	}
	return "Items"
}

func targetBytes(o options) int64 {
	if o.targetBytes > 0 {
		return o.targetBytes
	}
	return DefaultSettings().TargetMaxBlockSize
}

// Range is a dataset of the integers 0..n-1 in column "id" (int64), made by read tasks
// (Ray's range). Options: Parallelism (read tasks; default the cluster's CPUs, more when
// blocks would exceed TargetMaxBlockSize), TargetMaxBlockSize.
func Range(n int, opts ...Option) *Dataset {
	o := collect(opts)
	var err error
	if n < 0 {
		err = fmt.Errorf("data: Range(%d): negative", n)
	}
	s := &sourceSpec{Kind: "range", N: int64(n), Parallelism: o.parallelism, Read: readCfg{TargetBytes: targetBytes(o)}}
	return newDataset(&lnode{Kind: kRead, Source: s}, err)
}

// FromItems makes a dataset from a slice of rows (Ray's from_items): []Row (or
// []map[string]any), a slice of structs (exported fields become columns, named by a
// `data:"name"` tag or the field name), or a slice of scalars (column "item"). The items are
// converted to Arrow at once and travel with the plan; read tasks turn them into blocks.
// Options: Parallelism (number of blocks, default min(len, 16)).
func FromItems(items any, opts ...Option) *Dataset {
	o := collect(opts)
	rows, err := itemsToRows(items)
	if err != nil {
		return newDataset(&lnode{Kind: kRead, Source: &sourceSpec{Kind: "ipc"}}, err)
	}
	nb := o.parallelism
	if nb <= 0 {
		nb = 16
	}
	nb = max(1, min(nb, len(rows)))
	var recs []arrow.Record
	for i := 0; i < nb; i++ {
		part := rows[len(rows)*i/nb : len(rows)*(i+1)/nb]
		rec, err := rowsToRecord(part, nil)
		if err != nil {
			return newDataset(&lnode{Kind: kRead, Source: &sourceSpec{Kind: "ipc"}}, fmt.Errorf("data: FromItems: %w", err))
		}
		recs = append(recs, rec)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	return fromRecords("FromItems", recs)
}

// FromArrow makes a dataset of the given records, one block each (Ray's from_arrow). The
// records are encoded at once (the caller keeps ownership) and travel with the plan.
func FromArrow(recs ...arrow.Record) *Dataset {
	return fromRecords("FromArrow", recs)
}

func fromRecords(op string, recs []arrow.Record) *Dataset {
	s := &sourceSpec{Kind: "ipc"}
	for i, r := range recs {
		if r == nil {
			return newDataset(&lnode{Kind: kRead, Source: s}, fmt.Errorf("data: %s: record %d is nil", op, i))
		}
		b, err := encodeRecord(r)
		if err != nil {
			return newDataset(&lnode{Kind: kRead, Source: s}, fmt.Errorf("data: %s: record %d: %w", op, i, err))
		}
		s.Blocks = append(s.Blocks, b)
		s.Rows = append(s.Rows, r.NumRows())
	}
	s.Name = op
	return newDataset(&lnode{Kind: kRead, Source: s}, nil)
}

func encodeRecord(r arrow.Record) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(r.Schema()))
	if err := w.Write(r); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeRecord(b []byte) (arrow.Record, error) {
	rd, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	defer rd.Release()
	if !rd.Next() {
		if rd.Err() != nil {
			return nil, rd.Err()
		}
		return nil, fmt.Errorf("data: an encoded block holds no record")
	}
	rec := rd.Record()
	rec.Retain()
	return rec, nil
}

func itemsToRows(items any) ([]Row, error) {
	switch v := items.(type) {
	case []Row:
		return v, nil
	case nil:
		return nil, fmt.Errorf("data: FromItems: nil items (pass a slice)")
	}
	rv := reflect.ValueOf(items)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, fmt.Errorf("data: FromItems: items must be a slice, got %T", items)
	}
	rows := make([]Row, rv.Len())
	for i := range rows {
		e := rv.Index(i)
		for e.Kind() == reflect.Interface || e.Kind() == reflect.Pointer {
			if e.IsNil() {
				break
			}
			e = e.Elem()
		}
		switch {
		case e.Kind() == reflect.Map && e.Type().Key().Kind() == reflect.String:
			r := make(Row, e.Len())
			it := e.MapRange()
			for it.Next() {
				r[it.Key().String()] = it.Value().Interface()
			}
			rows[i] = r
		case e.Kind() == reflect.Struct && e.Type() != timeType:
			r := Row{}
			t := e.Type()
			for f := 0; f < t.NumField(); f++ {
				sf := t.Field(f)
				if !sf.IsExported() {
					continue
				}
				name := sf.Name
				if tag := sf.Tag.Get("data"); tag != "" {
					if tag == "-" {
						continue
					}
					name = strings.Split(tag, ",")[0]
				}
				r[name] = e.Field(f).Interface()
			}
			rows[i] = r
		default:
			if !e.IsValid() || (e.Kind() == reflect.Pointer || e.Kind() == reflect.Interface) && e.IsNil() {
				rows[i] = Row{"item": nil}
			} else {
				rows[i] = Row{"item": e.Interface()}
			}
		}
	}
	return rows, nil
}

func readFiles(f formats.Format, paths []string, opts []Option) *Dataset {
	o := collect(opts)
	s := &sourceSpec{Kind: "files", Format: int(f), Parallelism: o.parallelism, Read: readCfg{
		Columns: o.columns, Delimiter: o.delimiter, NoHeader: o.noHeader, IncludePath: o.includePath, TargetBytes: targetBytes(o)}}
	if o.schema != nil {
		s.Read.SchemaIPC = encodeSchema(o.schema)
	}
	n := &lnode{Kind: kRead, Source: s}
	if len(paths) == 0 {
		return newDataset(n, fmt.Errorf("data: Read%s: no paths given", formatName(int(f))))
	}
	files, err := formats.Expand(paths, extsOf(f))
	if err != nil {
		return newDataset(n, err)
	}
	s.Paths = files
	return newDataset(n, nil)
}

// ReadParquet reads Parquet files: paths are files, directories (read recursively, hidden
// files skipped) or globs ("**" for any depth). Read tasks are split by files and row
// groups. Options: Columns, Parallelism (default the cluster's CPUs), IncludePath,
// TargetMaxBlockSize.
func ReadParquet(paths []string, opts ...Option) *Dataset {
	return readFiles(formats.Parquet, paths, opts)
}

// ReadCSV reads CSV files (one read task per file). Options: Columns, Schema (default:
// inferred from the first 1000 rows: a column of whole numbers is int64, so one written
// from float64 values that were all whole reads back as int64 unless Schema says
// otherwise), Delimiter, NoHeader, IncludePath, Parallelism, TargetMaxBlockSize.
func ReadCSV(paths []string, opts ...Option) *Dataset {
	return readFiles(formats.CSV, paths, opts)
}

// ReadJSON reads line-delimited JSON files (one object per line, one read task per file).
// Options: Columns, Schema (default: inferred from the first 1000 lines), IncludePath,
// Parallelism, TargetMaxBlockSize.
func ReadJSON(paths []string, opts ...Option) *Dataset {
	return readFiles(formats.JSON, paths, opts)
}

// ReadBinaryFiles reads whole files, one row each: column "bytes" and, with IncludePath,
// "path". Options: IncludePath, Parallelism.
func ReadBinaryFiles(paths []string, opts ...Option) *Dataset {
	return readFiles(formats.Binary, paths, opts)
}

// ReadText reads text files, one row per line: column "text" (utf8) and, with IncludePath,
// "path" (Ray's read_text). Line ends ("\n", "\r\n") are removed and empty (or blank) lines
// dropped. Paths are files, directories or globs (any file name). One read task per file.
// Options: IncludePath, Parallelism, TargetMaxBlockSize.
func ReadText(paths []string, opts ...Option) *Dataset {
	return readFiles(formats.Text, paths, opts)
}
