package data

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/ray-go/ray"
)

func ids(t *testing.T, rows []Row) []int64 {
	t.Helper()
	out := make([]int64, len(rows))
	for i, r := range rows {
		v, ok := r["id"].(int64)
		if !ok {
			t.Fatalf("row %d: id is %T (%v)", i, r["id"], r)
		}
		out[i] = v
	}
	return out
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func TestRangeRoundTrip(t *testing.T) {
	ctx := timeout(t)
	d := Range(1000, Parallelism(7))
	rows, err := d.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, rows); !reflect.DeepEqual(got, seq(0, 1000)) {
		t.Fatalf("ids: %v...", got[:min(len(got), 20)])
	}
	if st := d.Stats(); !strings.Contains(st, "Operator 1 ReadRange: 7 tasks executed, 7 blocks produced") {
		t.Errorf("stats:\n%s", st)
	}
	n, err := d.Count(ctx)
	if err != nil || n != 1000 {
		t.Fatalf("Count: %d, %v", n, err)
	}
	s, err := d.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.NumFields() != 1 || s.Field(0).Name != "id" || s.Field(0).Type.ID() != arrow.INT64 {
		t.Fatalf("schema: %v", s)
	}
	// Range(0) is empty.
	rows, err = Range(0).TakeAll(ctx)
	if err != nil || len(rows) != 0 {
		t.Fatalf("Range(0): %v, %v", rows, err)
	}
}

type person struct {
	Name  string
	Age   int `data:"age"`
	score float64
}

func TestFromItems(t *testing.T) {
	ctx := timeout(t)
	rows, err := FromItems([]Row{{"a": 1, "b": "x"}, {"a": 2, "b": nil}, {"a": 3, "b": "z"}}, Parallelism(2)).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{{"a": int64(1), "b": "x"}, {"a": int64(2), "b": nil}, {"a": int64(3), "b": "z"}}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows from maps: %v", rows)
	}
	rows, err = FromItems([]person{{"ann", 30, 1}, {"bob", 40, 2}}).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Row{{"Name": "ann", "age": int64(30)}, {"Name": "bob", "age": int64(40)}}; !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows from structs: %v", rows)
	}
	rows, err = FromItems([]float64{1.5, 2.5, 3.5}).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Row{{"item": 1.5}, {"item": 2.5}, {"item": 3.5}}; !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows from scalars: %v", rows)
	}
	n, err := FromItems([]string{"a", "b", "c", "d"}).Count(ctx)
	if err != nil || n != 4 {
		t.Fatalf("Count: %d, %v", n, err)
	}
}

func TestFromArrow(t *testing.T) {
	ctx := timeout(t)
	a := int64Record("id", 3, func(i int) int64 { return int64(i) })
	b := int64Record("id", 2, func(i int) int64 { return int64(10 + i) })
	defer a.Release()
	defer b.Release()
	d := FromArrow(a, b)
	var got []int64
	var batches int
	for batch, err := range d.IterBatches(ctx, BatchSize(100)) {
		if err != nil {
			t.Fatal(err)
		}
		batches++
		got = append(got, batch.Column(0).(*array.Int64).Int64Values()...)
	}
	if batches != 1 || !reflect.DeepEqual(got, []int64{0, 1, 2, 10, 11}) {
		t.Fatalf("%d batches, ids %v", batches, got)
	}
	// Two blocks of different schemas: a clear error.
	c := int64Record("other", 2, func(i int) int64 { return int64(i) })
	defer c.Release()
	_, err := FromArrow(a, c).TakeAll(ctx)
	if err == nil || !strings.Contains(err.Error(), "schema mismatch") || !strings.Contains(err.Error(), "other: int64") {
		t.Fatalf("mixed schemas: %v", err)
	}
}

func TestTransforms(t *testing.T) {
	ctx := timeout(t)
	base := Range(20, Parallelism(3))
	check := func(name string, d *Dataset, want []Row) {
		t.Helper()
		got, err := d.TakeAll(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %v\nwant %v", name, got, want)
		}
	}
	rowsOfIDs := func(ids []int64) []Row {
		out := make([]Row, len(ids))
		for i, id := range ids {
			out[i] = Row{"id": id}
		}
		return out
	}
	check("Map", base.Map(plus100), rowsOfIDs(seq(100, 120)))
	var doubled []int64
	for i := int64(0); i < 20; i++ {
		doubled = append(doubled, 2*i)
	}
	check("MapBatches", base.MapBatches(double), rowsOfIDs(doubled))
	var evens []int64
	for i := int64(0); i < 20; i += 2 {
		evens = append(evens, i)
	}
	check("Filter", base.Filter(isEven), rowsOfIDs(evens))
	check("FlatMap", Range(2).FlatMap(twice), rowsOfIDs([]int64{0, 1000, 1, 1001}))
	check("AddColumn", Range(3).AddColumn("sq", squareCol), []Row{{"id": int64(0), "sq": int64(0)}, {"id": int64(1), "sq": int64(1)}, {"id": int64(2), "sq": int64(4)}})
	named := Range(3).Map(withName)
	check("SelectColumns", named.SelectColumns("name", "id"), []Row{{"name": "n0", "id": int64(0)}, {"name": "n1", "id": int64(1)}, {"name": "n2", "id": int64(2)}})
	check("DropColumns", named.DropColumns("name", "score"), rowsOfIDs(seq(0, 3)))
	s, err := named.SelectColumns("name", "id").Schema(ctx)
	if err != nil || strings.Join(columnNames(s), ",") != "name,id" {
		t.Fatalf("column order after SelectColumns: %v, %v", s, err)
	}
	s, err = named.Schema(ctx)
	if err != nil || strings.Join(columnNames(s), ",") != "id,name,score" {
		t.Fatalf("columns of Map output (input's first, then sorted): %v, %v", s, err)
	}

	// MapBatches with BatchSize cuts each block into batches of that size.
	batchSizesMu.Lock()
	batchSizes = nil
	batchSizesMu.Unlock()
	check("MapBatches(BatchSize)", Range(10, Parallelism(1)).MapBatches(recordSizes, BatchSize(4)), rowsOfIDs(seq(0, 10)))
	batchSizesMu.Lock()
	if !reflect.DeepEqual(batchSizes, []int64{4, 4, 2}) {
		t.Errorf("batch sizes: %v", batchSizes)
	}
	batchSizesMu.Unlock()

	// A chain: everything fused into one task per block.
	chain := base.Map(plus100).Filter(isEven).MapBatches(double).AddColumn("sq", squareCol).DropColumns("sq")
	var want []int64
	for i := int64(100); i < 120; i += 2 {
		want = append(want, 2*i)
	}
	check("chain", chain, rowsOfIDs(want))
	if st := chain.Stats(); !strings.Contains(st, "ReadRange->Map(test.plus100)->Filter(test.even)->MapBatches(test.double)->AddColumn(sq=test.square)->DropColumns(sq): 3 tasks executed") {
		t.Errorf("stats of the fused chain:\n%s", st)
	}
}

func TestUnknownColumn(t *testing.T) {
	ctx := timeout(t)
	_, err := Range(3).Map(withName).SelectColumns("id", "nope").TakeAll(ctx)
	if err == nil || !strings.Contains(err.Error(), `no column "nope"; the columns are: id, name, score`) {
		t.Fatalf("SelectColumns of an unknown column: %v", err)
	}
	_, err = Range(3).DropColumns("zzz").TakeAll(ctx)
	if err == nil || !strings.Contains(err.Error(), `no column "zzz"; the columns are: id`) {
		t.Fatalf("DropColumns of an unknown column: %v", err)
	}
}

func TestUserErrorNamesOperator(t *testing.T) {
	ctx := timeout(t)
	_, err := Range(20, Parallelism(2)).Map(failAt7).TakeAll(ctx)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{"operator ReadRange->Map(test.failAt7)", "Map(test.failAt7)", "boom at id 7"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	var te *ray.TaskError
	if !errors.As(err, &te) || te.Function != "ray.data.exec" {
		t.Errorf("error does not wrap the task's *ray.TaskError: %#v", err)
	}
}

func TestLimit(t *testing.T) {
	ctx := timeout(t)
	rows, err := Range(1000, Parallelism(10)).Limit(15).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, rows); !reflect.DeepEqual(got, seq(0, 15)) {
		t.Fatalf("Limit(15): %v", got)
	}
	// Limit cuts inside a block and across blocks.
	rows, err = Range(100, Parallelism(10)).Limit(25).Map(plus100).TakeAll(ctx)
	if err != nil || !reflect.DeepEqual(ids(t, rows), seq(100, 125)) {
		t.Fatalf("Limit(25) then Map: %v, %v", rows, err)
	}
	// Take stops launching upstream work: 40 slow blocks, 2 tasks at a time, 3 rows wanted.
	slowCalls.Store(0)
	d := Range(400, Parallelism(40)).MapBatches(slowID)
	rows, err = d.Take(ctx, 3, MaxTasksInFlight(2))
	if err != nil || !reflect.DeepEqual(ids(t, rows), seq(0, 3)) {
		t.Fatalf("Take(3): %v, %v", rows, err)
	}
	if n := slowCalls.Load(); n > 6 {
		t.Errorf("Take(3) of 40 blocks ran %d of them (Limit should stop upstream work)", n)
	}
	if n, err := Range(50).Limit(0).Count(ctx); err != nil || n != 0 {
		t.Errorf("Limit(0).Count: %d %v", n, err)
	}
	rows, err = Range(5).Limit(0).TakeAll(ctx)
	if err != nil || len(rows) != 0 {
		t.Errorf("Limit(0): %v %v", rows, err)
	}
}

func TestUnion(t *testing.T) {
	ctx := timeout(t)
	d := Range(5, Parallelism(2)).Union(Range(3, Parallelism(3)).Map(plus100), Range(2))
	rows, err := d.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(seq(0, 5), seq(100, 103)...), seq(0, 2)...)
	if got := ids(t, rows); !reflect.DeepEqual(got, want) {
		t.Fatalf("Union order: %v, want %v", got, want)
	}
	if n, err := d.Count(ctx); err != nil || n != 10 {
		t.Fatalf("Count: %d %v", n, err)
	}
	// Union then Limit stops inside the second input.
	rows, err = d.Limit(7).TakeAll(ctx)
	if err != nil || !reflect.DeepEqual(ids(t, rows), want[:7]) {
		t.Fatalf("Union.Limit(7): %v %v", rows, err)
	}
	_, err = Range(3).Union(Range(3).Map(stringID)).TakeAll(ctx)
	if err == nil || !strings.Contains(err.Error(), "Union: schema mismatch") || !strings.Contains(err.Error(), "id: utf8") {
		t.Fatalf("Union of different schemas: %v", err)
	}
}
