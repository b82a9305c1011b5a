package formats

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

var fullSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	), Nullable: true},
}, nil)

const fullRows = `[
 {"i": 1, "f": 1.5, "s": "a", "b": true, "l": [1, 2], "st": {"a": 1, "b": "x"}},
 {"i": null, "f": null, "s": null, "b": null, "l": null, "st": null},
 {"i": -3, "f": 2, "s": "q\"uote\n, and ; é", "b": false, "l": [], "st": {"a": null, "b": "y"}}
]`

// fullRecords is fullRows twice, as two records.
func fullRecords(t *testing.T, schema *arrow.Schema) []arrow.Record {
	mem := checkedMem(t)
	a := recordFromJSON(t, mem, schema, fullRows)
	b := recordFromJSON(t, mem, schema, fullRows)
	t.Cleanup(func() { a.Release(); b.Release() })
	return []arrow.Record{a, b}
}

// assertColumnsEqual compares the columns of got with the concatenation of want by name.
func assertColumnsEqual(t *testing.T, got arrow.Record, want []arrow.Record, names ...string) {
	t.Helper()
	mem := checkedMem(t)
	w, err := concatRecords(want[0].Schema(), want, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release()
	if got.NumRows() != w.NumRows() {
		t.Fatalf("rows %d, want %d", got.NumRows(), w.NumRows())
	}
	for _, n := range names {
		gi := got.Schema().FieldIndices(n)
		wi := w.Schema().FieldIndices(n)
		if len(gi) != 1 || len(wi) != 1 {
			t.Fatalf("column %q missing: got schema %s", n, got.Schema())
		}
		g, x := got.Column(gi[0]), w.Column(wi[0])
		if !arrow.TypeEqual(g.DataType(), x.DataType()) {
			t.Fatalf("column %q: type %s, want %s", n, g.DataType(), x.DataType())
		}
		if !array.Equal(g, x) {
			t.Fatalf("column %q:\n got %v\nwant %v", n, g, x)
		}
	}
}

func TestRoundTripParquet(t *testing.T) {
	for _, comp := range []string{"", "zstd", "gzip", "none"} {
		t.Run("compression="+comp, func(t *testing.T) {
			mem := checkedMem(t)
			recs := fullRecords(t, fullSchema)
			p := filepath.Join(t.TempDir(), FileName("out", 3, Parquet))
			n, err := WriteFile(p, fullSchema, recs, WriteOptions{Format: Parquet, Compression: comp})
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(p); err != nil || fi.Size() != n {
				t.Fatalf("WriteFile returned %d bytes, file: %v %v", n, fi, err)
			}
			got, err := readOne(t, Parquet, p, ReadOptions{}, mem)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			if !got.Schema().Equal(fullSchema) {
				t.Fatalf("schema read\n%s\nwant\n%s", got.Schema(), fullSchema)
			}
			assertColumnsEqual(t, got, recs, "i", "f", "s", "b", "l", "st")
		})
	}
}

func TestRoundTripJSON(t *testing.T) {
	mem := checkedMem(t)
	recs := fullRecords(t, fullSchema)
	p := filepath.Join(t.TempDir(), "out.json")
	if _, err := WriteFile(p, fullSchema, recs, WriteOptions{Format: JSON}); err != nil {
		t.Fatal(err)
	}
	// Inferred schema.
	got, err := readOne(t, JSON, p, ReadOptions{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if !got.Schema().Equal(fullSchema) {
		t.Fatalf("inferred schema\n%s\nwant\n%s", got.Schema(), fullSchema)
	}
	assertColumnsEqual(t, got, recs, "i", "f", "s", "b", "l", "st")
	// Explicit schema.
	got2, err := readOne(t, JSON, p, ReadOptions{Schema: fullSchema, BatchRows: 2}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer got2.Release()
	assertColumnsEqual(t, got2, recs, "i", "f", "s", "b", "l", "st")
	data, _ := os.ReadFile(p)
	first := strings.SplitN(string(data), "\n", 2)[0]
	want := `{"i":1,"f":1.5,"s":"a","b":true,"l":[1,2],"st":{"a":1,"b":"x"}}`
	if first != want {
		t.Fatalf("first line %s, want %s", first, want)
	}
}

func TestWriteJSONBinaryAndSpecials(t *testing.T) {
	mem := checkedMem(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
	}, nil)
	rec := recordFromJSON(t, mem, schema, `[{"bin": "aGk=", "x": 3, "m": [{"key": "k", "value": 1}]}, {"bin": null, "x": null, "m": null}]`)
	defer rec.Release()
	p := filepath.Join(t.TempDir(), "s.json")
	if _, err := WriteFile(p, schema, []arrow.Record{rec}, WriteOptions{Format: JSON}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	want := "{\"bin\":\"aGk=\",\"x\":3.0,\"m\":{\"k\":1}}\n{\"bin\":null,\"x\":null,\"m\":null}\n"
	if string(data) != want {
		t.Fatalf("got %q\nwant %q", data, want)
	}
}

func TestRoundTripCSV(t *testing.T) {
	mem := checkedMem(t)
	schema := arrow.NewSchema(fullSchema.Fields()[:4], nil)
	recs := fullRecords(t, schema)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		w    WriteOptions
		r    ReadOptions
	}{
		{"comma", WriteOptions{Format: CSV}, ReadOptions{}},
		{"semicolon", WriteOptions{Format: CSV, Delimiter: ';'}, ReadOptions{Delimiter: ';'}},
		{"semicolon no header", WriteOptions{Format: CSV, Delimiter: ';', NoHeader: true}, ReadOptions{Delimiter: ';', NoHeader: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".csv")
			if _, err := WriteFile(p, schema, recs, tc.w); err != nil {
				t.Fatal(err)
			}
			got, err := readOne(t, CSV, p, tc.r, mem)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			names := []string{"i", "f", "b"}
			if tc.r.NoHeader {
				want := []string{"f0", "f1", "f2", "f3"}
				for k, f := range got.Schema().Fields() {
					if f.Name != want[k] {
						t.Fatalf("no header: columns %s", got.Schema())
					}
				}
				// Rename to compare.
				cols := got.Columns()
				renamed := array.NewRecord(schema, cols, got.NumRows())
				defer renamed.Release()
				got = renamed
			}
			if got.Schema().Field(1).Type.ID() != arrow.FLOAT64 {
				t.Fatalf("f must be inferred float64 (2 and 1.5): %s", got.Schema())
			}
			assertColumnsEqual(t, got, recs, names...)
			// CSV keeps no null strings: null reads back as "".
			s := got.Column(2).(*array.String)
			wantS := []string{"a", "", "q\"uote\n, and ; é", "a", "", "q\"uote\n, and ; é"}
			for k, w := range wantS {
				if s.Value(k) != w {
					t.Fatalf("s[%d] = %q, want %q", k, s.Value(k), w)
				}
			}
		})
	}
}

func TestCSVRefusesNested(t *testing.T) {
	recs := fullRecords(t, fullSchema)
	p := filepath.Join(t.TempDir(), "n.csv")
	_, err := WriteFile(p, fullSchema, recs, WriteOptions{Format: CSV})
	if err == nil || !strings.Contains(err.Error(), `column "st"`) || !strings.Contains(err.Error(), "Parquet or JSON") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("a refused write left a file: %v", err)
	}
}

func TestReadBinary(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	a := writeString(t, dir, "a.bin", "hello")
	b := writeString(t, dir, "b.bin", "")
	blocks, err := readUnits(t, Binary, []string{a, b}, ReadOptions{IncludePath: true}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseAll(blocks)
	if len(blocks) != 2 {
		t.Fatalf("%d blocks", len(blocks))
	}
	for k, want := range []struct{ path, data string }{{a, "hello"}, {b, ""}} {
		r := blocks[k]
		if r.NumRows() != 1 || r.NumCols() != 2 || r.Schema().Field(0).Name != "bytes" || r.Schema().Field(1).Name != "path" {
			t.Fatalf("block %d: %v", k, r)
		}
		if got := string(r.Column(0).(*array.Binary).Value(0)); got != want.data {
			t.Fatalf("bytes %q, want %q", got, want.data)
		}
		if got := r.Column(1).(*array.String).Value(0); got != want.path {
			t.Fatalf("path %q", got)
		}
	}
}

func TestWriteFileRefusesOverwrite(t *testing.T) {
	recs := fullRecords(t, fullSchema)
	dir := t.TempDir()
	for _, f := range []Format{Parquet, JSON} {
		p := filepath.Join(dir, FileName("x", 0, f))
		if _, err := WriteFile(p, fullSchema, recs, WriteOptions{Format: f}); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(p)
		_, err := WriteFile(p, fullSchema, recs[:1], WriteOptions{Format: f})
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("%s: overwrite err = %v", f, err)
		}
		after, _ := os.ReadFile(p)
		if string(before) != string(after) {
			t.Fatalf("%s: file changed", f)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
	if _, err := WriteFile(filepath.Join(dir, "y.parquet"), fullSchema, recs, WriteOptions{Format: Parquet, Compression: "lzma"}); err == nil || !strings.Contains(err.Error(), `"snappy"`) {
		t.Fatalf("bad compression: %v", err)
	}
	other := recordFromJSON(t, checkedMem(t), seqSchema, `[{"i": 1, "f": 2}]`)
	defer other.Release()
	if _, err := WriteFile(filepath.Join(dir, "z.json"), fullSchema, []arrow.Record{recs[0], other}, WriteOptions{Format: JSON}); err == nil || !strings.Contains(err.Error(), "same schema") {
		t.Fatalf("mixed schemas: %v", err)
	}
}

func TestWriteZeroRecords(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	for _, f := range []Format{Parquet, CSV, JSON} {
		schema := seqSchema
		p := filepath.Join(dir, FileName("empty", 0, f))
		if _, err := WriteFile(p, schema, nil, WriteOptions{Format: f}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		units, err := Plan(f, []string{p}, 4)
		if err != nil {
			t.Fatal(err)
		}
		var blocks []arrow.Record
		err = Read(context.Background(), units[0], ReadOptions{Format: f}, mem, func(r arrow.Record) error {
			blocks = append(blocks, r)
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch f {
		case Parquet:
			// The schema survives: one empty block.
			if len(blocks) != 1 || blocks[0].NumRows() != 0 || !blocks[0].Schema().Equal(schema) {
				t.Fatalf("parquet: %v", blocks)
			}
		case CSV:
			// Header only: the column names survive (no values: the types are null).
			if len(blocks) != 1 || blocks[0].NumRows() != 0 || blocks[0].Schema().Field(1).Name != "f" {
				t.Fatalf("csv: %v", blocks)
			}
		case JSON:
			if len(blocks) != 0 {
				t.Fatalf("json: %v", blocks)
			}
		}
		releaseAll(blocks)
	}
}

// A float64 column of whole values is written as "1", "2" and read back as int64 when the
// schema is inferred (the package doc says so, as pyarrow does), and as float64 with the
// schema given.
func TestCSVWholeFloatsReadAsInt64(t *testing.T) {
	mem := checkedMem(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.AppendValues([]float64{1, 2, -3}, nil)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecord(schema, []arrow.Array{col}, 3)
	defer rec.Release()
	p := filepath.Join(t.TempDir(), "whole.csv")
	if _, err := WriteFile(p, schema, []arrow.Record{rec}, WriteOptions{Format: CSV}); err != nil {
		t.Fatal(err)
	}
	inferred, err := readOne(t, CSV, p, ReadOptions{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer inferred.Release()
	if id := inferred.Schema().Field(0).Type.ID(); id != arrow.INT64 {
		t.Fatalf("inferred %s, want int64 (as the doc says; update it if this changed)", inferred.Schema())
	}
	given, err := readOne(t, CSV, p, ReadOptions{Schema: schema}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer given.Release()
	got, ok := given.Column(0).(*array.Float64)
	if !ok || got.Len() != 3 || got.Value(0) != 1 || got.Value(2) != -3 {
		t.Fatalf("with the schema given: %v", given.Column(0))
	}
}
