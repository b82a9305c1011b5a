package data

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/decimal128"
)

// TestShufflePieces: the reduce's in-place shuffle of fixed-width pieces keeps every row
// whole (the columns of 8, 4, 2, 1 and 16 bytes move together), is a permutation, depends
// only on the seed, and leaves to the general path what it cannot do (nulls, booleans,
// strings, pieces of different schemas).
func TestShufflePieces(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 20, Scale: 0}},
	}, nil)
	piece := func(from, n int) arrow.Record {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for i := from; i < from+n; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.Float64Builder).Append(float64(i) / 2)
			b.Field(2).(*array.Int32Builder).Append(int32(-i))
			b.Field(3).(*array.Uint16Builder).Append(uint16(i))
			b.Field(4).(*array.Int8Builder).Append(int8(i))
			b.Field(5).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i) * 3))
		}
		return b.NewRecord()
	}
	var pieces []arrow.Record
	at := 0
	for _, n := range []int{300, 0, 1, 1000} {
		pieces = append(pieces, piece(at, n))
		at += n
	}
	full := piece(0, 2000)
	pieces = append(pieces, full.NewSlice(1301, 2000)) // a slice: offset 1301
	full.Release()
	defer releaseRecords(pieces)

	shuffle := func(seed uint64) []int64 {
		out, ok := shufflePieces(pieces, rand.New(rand.NewPCG(seed, 1)))
		if !ok {
			t.Fatal("fixed-width pieces without nulls went to the general path")
		}
		defer out.Release()
		ids := slices.Clone(out.Column(0).(*array.Int64).Int64Values())
		for r, id := range ids {
			i := int(id)
			if out.Column(1).(*array.Float64).Value(r) != float64(i)/2 || out.Column(2).(*array.Int32).Value(r) != int32(-i) ||
				out.Column(3).(*array.Uint16).Value(r) != uint16(i) || out.Column(4).(*array.Int8).Value(r) != int8(i) ||
				out.Column(5).(*array.Decimal128).Value(r) != decimal128.FromI64(int64(i)*3) {
				t.Fatalf("row %d (id %d) was torn apart", r, id)
			}
		}
		return ids
	}
	a, again, other := shuffle(7), shuffle(7), shuffle(8)
	sorted := slices.Sorted(slices.Values(a))
	for i, id := range sorted {
		if id != int64(i) {
			t.Fatalf("not a permutation of 0..1999: sorted[%d] = %d", i, id)
		}
	}
	if !slices.Equal(a, again) || slices.Equal(a, other) || slices.IsSorted(a) {
		t.Fatal("the shuffle does not depend on its seed alone")
	}

	withNull := oneColumn("id", float64Col([]float64{1, 2}, []bool{true, false}))
	defer withNull.Release()
	if _, ok := shufflePieces([]arrow.Record{withNull}, rand.New(rand.NewPCG(1, 1))); ok {
		t.Fatal("a column with nulls took the in-place path")
	}
	if _, ok := shufflePieces([]arrow.Record{pieces[0], withNull}, rand.New(rand.NewPCG(1, 1))); ok {
		t.Fatal("pieces of two schemas took the in-place path")
	}
}

func releaseRecords(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}
