package codec

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ray-go/ray/internal/base/fuzzing"
)

// unmarshalSeeds: the encodings of values of every kind the codec handles, and a few
// truncated or malformed headers.
func unmarshalSeeds(t testing.TB) [][]any {
	rec := testRecord(nil, 4)
	defer rec.Release()
	tbl := testTable(nil)
	defer tbl.Release()
	values := []any{
		nil, 0, -1, uint64(math.MaxUint64), 1.5, math.NaN(), true, "", "hello",
		[]byte{}, []byte{1, 2, 3}, []int64{1, -1}, []int{5}, []float32{1.5}, []bool{true, false},
		[]uint16{7}, Vector{1, 2}, map[string]any{"a": []any{1, "b", nil}},
		Outer{Name: "x", Map: map[string]int{"k": 1}, When: time.Unix(1, 2).UTC(), Any: 3},
		&Inner{X: 1, Tags: []string{"t"}}, holder{One: testRef[int]{id: []byte("r")}, Any: testRef[int]{id: []byte("s")}},
		point{1, 2}, wrapperspb.String("p"), rec, tbl,
	}
	var seeds [][]any
	for _, v := range values {
		data, err := MarshalValue(v)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, []any{data})
	}
	for _, s := range [][]byte{{}, {'C'}, {'N', 'q'}, {'U', 0}, {'A'}, {'T', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}} {
		seeds = append(seeds, []any{s})
	}
	return seeds
}

func TestFuzzUnmarshalCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzUnmarshal", unmarshalSeeds(t)) }

// FuzzUnmarshal feeds arbitrary bytes to every decoder: it must return an error or a
// value, never panic, never leak Arrow memory, and allocate in proportion to the input.
//
//	go test -run '^$' -fuzz FuzzUnmarshal -fuzztime 30s ./objects/codec/
func FuzzUnmarshal(f *testing.F) {
	for _, s := range unmarshalSeeds(f) { // lazy set-up of the codecs, outside the bound
		decodeAll(f, s[0].([]byte))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzing.CheckAlloc(t, 256*uint64(len(data))+4<<20, "decoding", func() { decodeAll(t, data) })
	})
}

// decodeAll decodes data as every type the codec handles.
func decodeAll(t testing.TB, data []byte) {
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
	sameOwned[[]byte](t, data)
	sameOwned[string](t, data)
	sameOwned[[]float64](t, data)
	sameOwned[[]int](t, data)
	sameOwned[[]uint16](t, data)
	_, _ = ScanRefs(data)
	_, _ = FormatOf(data)
	// whatever decodes into any can be encoded again
	if v, err := Unmarshal[any](data); err == nil {
		_, _ = MarshalValue(v)
		if r, ok := v.(interface{ Release() }); ok {
			r.Release()
		}
	}
}

// sameOwned checks that UnmarshalOwned of a copy of data decodes what Unmarshal does (or
// fails alike).
func sameOwned[T any](t testing.TB, data []byte) {
	want, werr := Unmarshal[T](data)
	got, gerr := UnmarshalOwned[T](append([]byte(nil), data...))
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("UnmarshalOwned[%T] = %v, %v; Unmarshal = %v, %v", want, got, gerr, want, werr)
	}
	if werr != nil {
		return
	}
	// Compared encoded (a NaN is not DeepEqual to itself).
	wb, err1 := Marshal(want)
	gb, err2 := Marshal(got)
	if err1 != nil || err2 != nil || !bytes.Equal(wb, gb) {
		t.Fatalf("UnmarshalOwned[%T] = %v; Unmarshal = %v", want, got, want)
	}
}

func refSeeds() [][]any {
	ref := func(p string) []byte { return AppendRef(nil, []byte(p)) }
	arr := func(items ...[]byte) []byte {
		b := appendHead([]byte{byte(FormatCBOR)}, 4, uint64(len(items)))
		for _, it := range items {
			b = append(b, it...)
		}
		return b
	}
	return [][]any{
		{arr(ref("object-1"), ref("object-2"))},
		{arr()},
		{append([]byte{byte(FormatCBOR)}, ref("x")...)},
		{arr(ref("a"), appendHead(nil, 6, 1), ref("b"))},                       // a ref inside another tag
		{append([]byte{byte(FormatCBOR)}, appendHead(nil, 4, 1<<40)...)},       // an array claiming 2^40 items
		{append([]byte{byte(FormatCBOR)}, appendHead(nil, 2, 1<<62)...)},       // a byte string claiming 4 EiB
		{append([]byte{byte(FormatCBOR)}, bytes.Repeat([]byte{0x81}, 200)...)}, // nested past the limit
		{[]byte{byte(FormatCBOR), 0x9f, 0xff}},                                 // indefinite length
		{[]byte{}},
	}
}

func TestFuzzScanRefsCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzScanRefs", refSeeds()) }

// FuzzScanRefs feeds arbitrary bytes to ScanRefs, which lists the object references
// nested in a value (the borrower registers with their owners): it must fail or return
// payloads; never panic; allocate in proportion to the input; and the references it
// finds, encoded again in an array, must scan to the same payloads, each of which ParseRef
// accepts.
func FuzzScanRefs(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			refs [][]byte
			err  error
		)
		fuzzing.CheckAlloc(t, 64*uint64(len(data))+64<<10, "ScanRefs", func() { refs, err = ScanRefs(data) })
		if err != nil || len(data) == 0 || Format(data[0]) != FormatCBOR {
			return
		}
		arr := appendHead([]byte{byte(FormatCBOR)}, 4, uint64(len(refs)))
		for _, r := range refs {
			enc := AppendRef(nil, r)
			if p, err := ParseRef(enc); err != nil || !bytes.Equal(p, r) {
				t.Fatalf("ParseRef(AppendRef(%x)) = %x, %v", r, p, err)
			}
			arr = append(arr, enc...)
		}
		again, err := ScanRefs(arr)
		if err != nil || len(again) != len(refs) {
			t.Fatalf("re-encoded refs: %d, %v; want %d", len(again), err, len(refs))
		}
		for i := range refs {
			if !bytes.Equal(again[i], refs[i]) {
				t.Fatalf("ref %d: %x, want %x", i, again[i], refs[i])
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
