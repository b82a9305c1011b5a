package codec

import (
	"flag"
	"fmt"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

var long = flag.Bool("long", false, "also run the 800 MiB []int64 benchmarks")

type struct10 struct {
	ID       int64
	Name     string
	Score    float64
	Active   bool
	Count    int
	Ratio    float32
	Tag      string
	Parent   uint64
	Priority int32
	Note     string
}

var s10 = struct10{ID: 1234567, Name: "task-42", Score: 0.75, Active: true, Count: 17, Ratio: 1.5,
	Tag: "demo", Parent: 99, Priority: -3, Note: "a short note"}

func BenchmarkMarshalInt(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(123456); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalInt(b *testing.B) {
	data, _ := Marshal(123456)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unmarshal[int](data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalString(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Marshal("hello, ray")
	}
}

func BenchmarkUnmarshalString(b *testing.B) {
	data, _ := Marshal("hello, ray")
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Unmarshal[string](data)
	}
}

func BenchmarkMarshalStruct10(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(s10); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalStruct10(b *testing.B) {
	data, _ := Marshal(s10)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unmarshal[struct10](data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalValueStruct10(b *testing.B) {
	b.ReportAllocs()
	var v any = s10
	for b.Loop() {
		_, _ = MarshalValue(v)
	}
}

func int64s(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i) * 31
	}
	return s
}

func benchSizes() []int {
	sizes := []int{1 << 20, 80 << 20}
	if *long {
		sizes = append(sizes, 800<<20)
	}
	return sizes
}

func BenchmarkMarshalInt64s(b *testing.B) {
	for _, size := range benchSizes() {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			s := int64s(size / 8)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Marshal(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUnmarshalInt64s(b *testing.B) {
	for _, size := range benchSizes() {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			data, _ := Marshal(int64s(size / 8))
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Unmarshal[[]int64](data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMemmove is the yardstick for the two above: one allocation and one copy of the
// same size with plain Go.
func BenchmarkMemmove(b *testing.B) {
	for _, size := range benchSizes() {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			src := make([]byte, size)
			b.SetBytes(int64(size))
			for b.Loop() {
				dst := make([]byte, size)
				copy(dst, src)
			}
		})
	}
}

func BenchmarkMarshalRefs10k(b *testing.B) {
	refs := make([]testRef[int], 10_000)
	for i := range refs {
		refs[i] = testRef[int]{id: []byte(fmt.Sprintf("object-id-%020d", i))}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, r, err := MarshalRefs(refs); err != nil || len(r) != len(refs) {
			b.Fatal(err)
		}
	}
}

// benchRecord is 1M rows of int64 and float64 (16 MB of column data).
func benchRecord() arrow.Record {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64},
		{Name: "b", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	const n = 1 << 20
	as, bs := make([]int64, n), make([]float64, n)
	for i := range as {
		as[i], bs[i] = int64(i), float64(i)*0.5
	}
	bld.Field(0).(*array.Int64Builder).AppendValues(as, nil)
	bld.Field(1).(*array.Float64Builder).AppendValues(bs, nil)
	return bld.NewRecord()
}

func BenchmarkMarshalArrowRecord(b *testing.B) {
	rec := benchRecord()
	defer rec.Release()
	b.SetBytes(16 << 20)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalArrowRecord(b *testing.B) {
	rec := benchRecord()
	defer rec.Release()
	data, _ := Marshal(rec)
	b.SetBytes(16 << 20)
	b.ReportAllocs()
	for b.Loop() {
		r, err := Unmarshal[arrow.Record](data)
		if err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
}
