package data

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

func float64Col(vals []float64, valid []bool) arrow.Array {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.AppendValues(vals, valid)
	return b.NewArray()
}

func oneColumn(name string, a arrow.Array) arrow.Record {
	defer a.Release()
	return array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: name, Type: a.DataType(), Nullable: true}}, nil), []arrow.Array{a}, int64(a.Len()))
}

// TestSortKernel: nulls last, NaN before them, stable, in both directions.
func TestSortKernel(t *testing.T) {
	nan := math.NaN()
	vals := []float64{3, nan, 1, 0, 3, 2, nan, 1, -1}
	valid := []bool{true, true, true, false, true, true, true, true, true}
	rec := oneColumn("x", float64Col(vals, valid))
	defer rec.Release()
	asc, err := sortIndices(rec, []string{"x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{8, 2, 7, 5, 0, 4, 1, 6, 3}; !reflect.DeepEqual(asc, want) {
		t.Fatalf("ascending %v, want %v", asc, want)
	}
	desc, err := sortIndices(rec, []string{"x"}, []bool{true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 4, 5, 2, 7, 8, 1, 6, 3}; !reflect.DeepEqual(desc, want) {
		t.Fatalf("descending %v, want %v", desc, want)
	}
}

// TestMergeRunsKernel: merging sorted runs equals a stable sort of their concatenation.
func TestMergeRunsKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var runs []arrow.Record
	var all []int64
	for r := 0; r < 5; r++ {
		v := make([]int64, rng.IntN(50))
		for i := range v {
			v[i] = rng.Int64N(20)
		}
		slices.Sort(v)
		all = append(all, v...)
		b := array.NewInt64Builder(mem)
		b.AppendValues(v, nil)
		runs = append(runs, oneColumn("k", b.NewArray()))
		b.Release()
	}
	out, err := mergeRuns(runs, []string{"k"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	slices.Sort(all)
	if got := out.Column(0).(*array.Int64).Int64Values(); !slices.Equal(got, all) {
		t.Fatalf("merged %v\nwant %v", got, all)
	}
	for _, r := range runs {
		r.Release()
	}
}

// TestHashKernel: a key hashes alike whatever its integer width, so every task sends it to
// one partition; grouping puts equal keys (null, NaN) together.
func TestHashKernel(t *testing.T) {
	b32 := array.NewInt32Builder(mem)
	b32.AppendValues([]int32{5, -3}, nil)
	a32 := b32.NewArray()
	b32.Release()
	b64 := array.NewInt64Builder(mem)
	b64.AppendValues([]int64{5, -3}, nil)
	a64 := b64.NewArray()
	b64.Release()
	defer a32.Release()
	defer a64.Release()
	h32, _ := hashRows([]arrow.Array{a32}, 2)
	h64, _ := hashRows([]arrow.Array{a64}, 2)
	if !slices.Equal(h32, h64) {
		t.Fatalf("int32 %v, int64 %v", h32, h64)
	}
	f := float64Col([]float64{math.NaN(), 0, math.Copysign(0, -1), 1, math.NaN(), 0}, []bool{true, true, true, true, true, false})
	defer f.Release()
	h, _ := hashRows([]arrow.Array{f}, f.Len())
	groupOf, reps, err := groupByHash([]arrow.Array{f}, h)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 1, 1, 2, 0, 3}; !slices.Equal(groupOf, want) || len(reps) != 4 {
		t.Fatalf("groups %v (reps %v), want %v", groupOf, reps, want)
	}
}

// TestTakeKernel: strings, nulls, negative indices (null rows) and a sliced input.
func TestTakeKernel(t *testing.T) {
	b := array.NewStringBuilder(mem)
	b.AppendValues([]string{"x", "a", "", "bc", "d"}, []bool{true, true, false, true, true})
	full := b.NewArray()
	b.Release()
	defer full.Release()
	a := array.NewSlice(full, 1, 5) // a, null, bc, d
	defer a.Release()
	out, err := takeIdx(a, []int32{3, -1, 0, 1, 2, 2})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	var got []any
	for i := 0; i < out.Len(); i++ {
		got = append(got, valueAt(out, i))
	}
	if want := []any{"d", nil, "a", nil, "bc", "bc"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("take: %v, want %v", got, want)
	}
	fb := array.NewFloat64Builder(mem)
	fb.AppendValues([]float64{1, 2, 3}, nil)
	f := fb.NewArray()
	fb.Release()
	defer f.Release()
	fs := array.NewSlice(f, 1, 3)
	defer fs.Release()
	fo, err := takeIdx(fs, []int32{1, 0, -1})
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Release()
	if fo.(*array.Float64).Value(0) != 3 || fo.(*array.Float64).Value(1) != 2 || !fo.IsNull(2) {
		t.Fatalf("take floats: %v", fo)
	}
}
