package data

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// optOf is the plain computation behind nullOpt: opt is nil for the whole first quarter of
// Range(100) (one block of four) and for every id divisible by 7, else id/2.
func optOf(id int64) any {
	if id < 25 || id%7 == 0 {
		return nil
	}
	return float64(id) / 2
}

var (
	nullOpt = RowFunc("test.nullOpt", func(_ context.Context, r Row) (Row, error) {
		id := r["id"].(int64)
		return Row{"id": id, "opt": optOf(id)}, nil
	})
	allNilOpt = RowFunc("test.allNilOpt", func(_ context.Context, r Row) (Row, error) {
		return Row{"id": r["id"], "opt": nil}, nil
	})
	// nestedOpt: lists empty (list<null>) and a struct field nil in the first block.
	nestedOpt = RowFunc("test.nestedOpt", func(_ context.Context, r Row) (Row, error) {
		id := r["id"].(int64)
		if id < 10 {
			return Row{"id": id, "l": []any{}, "s": map[string]any{"a": id, "b": nil}}, nil
		}
		return Row{"id": id, "l": []any{float64(id), nil}, "s": map[string]any{"a": id, "b": float64(id) / 4}}, nil
	})
)

func wantOptRows(n int64) []Row {
	out := make([]Row, n)
	for i := range out {
		out[i] = Row{"id": int64(i), "opt": optOf(int64(i))}
	}
	return out
}

// fieldType is the type of column name in s ("" if absent).
func fieldType(s *arrow.Schema, name string) string {
	if idx := s.FieldIndices(name); len(idx) > 0 {
		return s.Field(idx[0]).Type.String()
	}
	return ""
}

// checkBatchTypes iterates d in small batches and checks that column col has type want in
// every batch and the rows are wantRows.
func checkBatchTypes(t *testing.T, ctx context.Context, d *Dataset, col, want string, wantRows []Row) {
	t.Helper()
	var rows []Row
	for b, err := range d.IterBatches(ctx, BatchSize(10)) {
		if err != nil {
			t.Fatal(err)
		}
		if got := fieldType(b.Schema(), col); got != want {
			t.Fatalf("a batch has %s: %s, want %s (schema %s)", col, got, want, b.Schema())
		}
		rows = append(rows, rowsOf(b)...)
	}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Fatalf("rows:\n got %v\nwant %v", rows, wantRows)
	}
}

// TestNullBlockThenFloats is the reported case: a Map that sets a field to nil for some
// ids, for every id of one block.
func TestNullBlockThenFloats(t *testing.T) {
	ctx := timeout(t)
	d := Range(100, Parallelism(4)).Map(nullOpt)
	want := wantOptRows(100)
	rows, err := d.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("TakeAll:\n got %v\nwant %v", rows, want)
	}
	checkBatchTypes(t, ctx, d, "opt", "float64", want)
	s, err := d.Schema(ctx)
	if err != nil || fieldType(s, "opt") != "float64" {
		t.Fatalf("Schema: %v, %v", s, err)
	}
	if n, err := d.Count(ctx); err != nil || n != 100 {
		t.Fatalf("Count: %d, %v", n, err)
	}
	// Take of the null block only: its own type, null.
	first, err := d.Take(ctx, 5)
	if err != nil || !reflect.DeepEqual(first, want[:5]) {
		t.Fatalf("Take: %v, %v", first, err)
	}
	// A materialized dataset, consumed again.
	m, err := d.Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkBatchTypes(t, ctx, m, "opt", "float64", want)
	// The null block after the typed ones (Union), and before them.
	typed := Range(100, Parallelism(4)).Filter(isEven).Map(nullOpt).Filter(isAbove30)
	var wantU []Row
	for _, r := range want {
		if id := r["id"].(int64); id%2 == 0 && id > 30 {
			wantU = append(wantU, r)
		}
	}
	nulls := Range(20, Parallelism(2)).Map(allNilOpt)
	var wantNulls []Row
	for i := int64(0); i < 20; i++ {
		wantNulls = append(wantNulls, Row{"id": i, "opt": nil})
	}
	checkBatchTypes(t, ctx, typed.Union(nulls), "opt", "float64", append(append([]Row(nil), wantU...), wantNulls...))
	checkBatchTypes(t, ctx, nulls.Union(typed), "opt", "float64", append(append([]Row(nil), wantNulls...), wantU...))
}

var isAbove30 = Predicate("test.above30", func(_ context.Context, r Row) (bool, error) { return r["id"].(int64) > 30, nil })

// TestNullBlockWrites: files written from a dataset with a null block all have the
// dataset's type, and read back as the same rows.
func TestNullBlockWrites(t *testing.T) {
	ctx := timeout(t)
	d := Range(100, Parallelism(4)).Map(nullOpt)
	want := wantOptRows(100)
	for _, c := range []struct {
		name  string
		write func(dir string) ([]string, error)
		read  func(dir string) *Dataset
	}{
		{"parquet", func(dir string) ([]string, error) { return d.WriteParquet(ctx, dir) }, func(dir string) *Dataset { return ReadParquet([]string{dir}) }},
		{"csv", func(dir string) ([]string, error) { return d.WriteCSV(ctx, dir) }, func(dir string) *Dataset { return ReadCSV([]string{dir}) }},
		{"json", func(dir string) ([]string, error) { return d.WriteJSON(ctx, dir) }, func(dir string) *Dataset { return ReadJSON([]string{dir}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			files, err := c.write(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 4 {
				t.Fatalf("files: %v", files)
			}
			if c.name == "parquet" {
				// Every file has the dataset's type, the one of the null block too.
				for _, f := range files {
					s, err := ReadParquet([]string{f}).Schema(ctx)
					if err != nil || fieldType(s, "opt") != "float64" {
						t.Fatalf("%s: %v, %v", f, s, err)
					}
				}
			}
			got, err := c.read(dir).TakeAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sortByID(got), want) {
				t.Fatalf("read back:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestAllBlocksNull: a column null in every block stays of type null; written, it stays
// null (Parquet's null logical type; CSV empty fields and JSON nulls, read back as null).
func TestAllBlocksNull(t *testing.T) {
	ctx := timeout(t)
	d := Range(40, Parallelism(4)).Map(allNilOpt)
	var want []Row
	for i := int64(0); i < 40; i++ {
		want = append(want, Row{"id": i, "opt": nil})
	}
	checkBatchTypes(t, ctx, d, "opt", "null", want)
	for _, f := range []struct {
		name  string
		write func(dir string) ([]string, error)
		read  func(dir string) *Dataset
	}{
		{"parquet", func(dir string) ([]string, error) { return d.WriteParquet(ctx, dir) }, func(dir string) *Dataset { return ReadParquet([]string{dir}) }},
		{"csv", func(dir string) ([]string, error) { return d.WriteCSV(ctx, dir) }, func(dir string) *Dataset { return ReadCSV([]string{dir}) }},
		{"json", func(dir string) ([]string, error) { return d.WriteJSON(ctx, dir) }, func(dir string) *Dataset { return ReadJSON([]string{dir}) }},
	} {
		dir := filepath.Join(t.TempDir(), f.name)
		if _, err := f.write(dir); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		rd := f.read(dir)
		s, err := rd.Schema(ctx)
		if err != nil || fieldType(s, "opt") != "null" {
			t.Fatalf("%s read back: schema %v, %v", f.name, s, err)
		}
		got, err := rd.TakeAll(ctx)
		if err != nil || !reflect.DeepEqual(sortByID(got), want) {
			t.Fatalf("%s read back: %v, %v", f.name, got, err)
		}
	}
}

// TestNullIntFloat: null, then int64, then float64. The null block takes int64; int64 and
// float64 are not promoted (pyarrow's default unification does not either): a clear error.
func TestNullIntFloat(t *testing.T) {
	ctx := timeout(t)
	mk := func(dt arrow.DataType, vals ...any) arrow.Record {
		rows := make([]Row, len(vals))
		for i, v := range vals {
			rows[i] = Row{"opt": v}
		}
		schema := arrow.NewSchema([]arrow.Field{{Name: "opt", Type: dt, Nullable: true}}, nil)
		rec, err := rowsToRecord(rows, schema)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	n := mk(arrow.Null, nil, nil)
	i := mk(arrow.PrimitiveTypes.Int64, int64(1), nil)
	f := mk(arrow.PrimitiveTypes.Float64, 2.5)
	defer n.Release()
	defer i.Release()
	defer f.Release()
	rows, err := FromArrow(n, i).TakeAll(ctx)
	if err != nil || !reflect.DeepEqual(rows, []Row{{"opt": nil}, {"opt": nil}, {"opt": int64(1)}, {"opt": nil}}) {
		t.Fatalf("null then int64: %v, %v", rows, err)
	}
	_, err = FromArrow(n, i, f).TakeAll(ctx)
	if err == nil || !strings.Contains(err.Error(), "schema mismatch") || !strings.Contains(err.Error(), "opt: float64") || !strings.Contains(err.Error(), "opt: int64") {
		t.Fatalf("null, int64, float64: %v", err)
	}
	t.Log(err)
	// In one batch (concatenation) the same.
	if _, err := concatRecords([]arrow.Record{n, i, f}); err == nil || !strings.Contains(err.Error(), "schema mismatch") {
		t.Fatalf("concatenating null, int64, float64: %v", err)
	}
}

// TestNullFiles: two CSV (and JSON-lines) files whose column is empty in one.
func TestNullFiles(t *testing.T) {
	ctx := timeout(t)
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.csv", "id,opt\n1,\n2,\n")
	write("b.csv", "id,opt\n3,1.5\n4,\n5,2.5\n")
	write("a.json", `{"id": 1, "opt": null}`+"\n"+`{"id": 2}`+"\n")
	write("b.json", `{"id": 3, "opt": 1.5}`+"\n"+`{"id": 4, "opt": null}`+"\n"+`{"id": 5, "opt": 2.5}`+"\n")
	want := []Row{{"id": int64(1), "opt": nil}, {"id": int64(2), "opt": nil}, {"id": int64(3), "opt": 1.5}, {"id": int64(4), "opt": nil}, {"id": int64(5), "opt": 2.5}}
	for _, d := range []*Dataset{ReadCSV([]string{filepath.Join(dir, "*.csv")}), ReadJSON([]string{filepath.Join(dir, "*.json")})} {
		var rows []Row
		for b, err := range d.IterBatches(ctx, BatchSize(2)) {
			if err != nil {
				t.Fatal(err)
			}
			if got := fieldType(b.Schema(), "opt"); got != "float64" {
				t.Fatalf("batch type %s", got)
			}
			rows = append(rows, rowsOf(b)...)
		}
		if !reflect.DeepEqual(sortByID(rows), want) {
			t.Fatalf("rows: %v", rows)
		}
		// The files are read by separate tasks (one per file) and meet in the output.
		if !strings.Contains(d.Stats(), "2 tasks executed") {
			t.Errorf("stats:\n%s", d.Stats())
		}
	}
}

// TestNullNestedParquet: a list column empty in one block (list<null>) and a struct field
// nil in it (struct<b: null>) take the other blocks' types when written to Parquet.
func TestNullNestedParquet(t *testing.T) {
	ctx := timeout(t)
	d := Range(40, Parallelism(4)).Map(nestedOpt)
	want, err := d.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range want { // the plain computation
		id := int64(i)
		w := Row{"id": id, "l": []any{}, "s": Row{"a": id, "b": nil}}
		if id >= 10 {
			w = Row{"id": id, "l": []any{float64(id), nil}, "s": Row{"a": id, "b": float64(id) / 4}}
		}
		if !reflect.DeepEqual(r, w) {
			t.Fatalf("row %d: %v, want %v", i, r, w)
		}
	}
	dir := filepath.Join(t.TempDir(), "pq")
	files, err := d.WriteParquet(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		s, err := ReadParquet([]string{f}).Schema(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if l, st := fieldType(s, "l"), fieldType(s, "s"); !strings.HasPrefix(l, "list<") || !strings.HasSuffix(l, ": float64, nullable>") || st != "struct<a: int64, b: float64>" {
			t.Fatalf("%s: l %s, s %s", f, l, st)
		}
	}
	got, err := ReadParquet([]string{dir}).TakeAll(ctx)
	if err != nil || !reflect.DeepEqual(sortByID(got), want) {
		t.Fatalf("read back: %v, %v", got, err)
	}
	// The unification of the types themselves, directly.
	a := array.NewListBuilder(mem, arrow.Null)
	a.Append(true)
	a.ValueBuilder().AppendNull()
	a.AppendNull()
	la := a.NewArray()
	a.Release()
	defer la.Release()
	to, ok := unifyTypes(la.DataType(), arrow.ListOf(arrow.PrimitiveTypes.Float64))
	if !ok {
		t.Fatal("list<null> and list<float64> do not unify")
	}
	c := castNulls(la, to)
	defer c.Release()
	if c.DataType().String() != "list<item: float64, nullable>" || c.Len() != 2 || !c.IsNull(1) || c.(*array.List).ListValues().Len() != 1 {
		t.Fatalf("cast: %s %v", c.DataType(), c)
	}
	if _, ok := unifyTypes(arrow.ListOf(arrow.PrimitiveTypes.Int64), arrow.ListOf(arrow.PrimitiveTypes.Float64)); ok {
		t.Fatal("list<int64> and list<float64> unify")
	}
}
