package codec

import (
	"math"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// FuzzUnmarshal feeds arbitrary bytes to every decoder: it must return an error or a
// value, never panic, and never leak Arrow memory.
//
//	go test -run '^$' -fuzz FuzzUnmarshal -fuzztime 30s ./objects/codec/
func FuzzUnmarshal(f *testing.F) {
	rec := testRecord(nil, 4)
	defer rec.Release()
	tbl := testTable(nil)
	defer tbl.Release()
	seeds := []any{
		nil, 0, -1, uint64(math.MaxUint64), 1.5, math.NaN(), true, "", "hello",
		[]byte{}, []byte{1, 2, 3}, []int64{1, -1}, []int{5}, []float32{1.5}, []bool{true, false},
		[]uint16{7}, Vector{1, 2}, map[string]any{"a": []any{1, "b", nil}},
		Outer{Name: "x", Map: map[string]int{"k": 1}, When: time.Unix(1, 2).UTC(), Any: 3},
		&Inner{X: 1, Tags: []string{"t"}}, holder{One: testRef[int]{id: []byte("r")}, Any: testRef[int]{id: []byte("s")}},
		point{1, 2}, wrapperspb.String("p"), rec, tbl,
	}
	for _, s := range seeds {
		data, err := MarshalValue(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range [][]byte{{}, {'C'}, {'N', 'q'}, {'U', 0}, {'A'}, {'T', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		try[any](data)
		try[int](data)
		try[int8](data)
		try[string](data)
		try[[]byte](data)
		try[[]int64](data)
		try[[]int](data)
		try[[]float32](data)
		try[[]bool](data)
		try[Vector](data)
		try[Outer](data)
		try[map[string]any](data)
		try[*Inner](data)
		try[holder](data)
		try[point](data)
		try[*wrapperspb.StringValue](data)
		_ = decodeRelease[arrow.Record](data)
		_ = decodeRelease[arrow.Table](data)
		if r, err := UnmarshalRecord(data, mem); err == nil {
			r.Release()
		}
		if tb, err := UnmarshalTable(data, mem); err == nil {
			tb.Release()
		}
		if n := mem.CurrentAlloc(); n != 0 {
			t.Fatalf("Arrow decode leaked %d bytes", n)
		}
		_, _ = ScanRefs(data)
		_, _ = FormatOf(data)
		// whatever decodes into any can be encoded again
		if v, err := Unmarshal[any](data); err == nil {
			_, _ = MarshalValue(v)
			if r, ok := v.(interface{ Release() }); ok {
				r.Release()
			}
		}
	})
}

func try[T any](data []byte) {
	v, err := Unmarshal[T](data)
	if err == nil {
		_, _ = Marshal(v)
	}
}
