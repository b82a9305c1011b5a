package codec

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/fxamacker/cbor/v2"
)

// roundTrip marshals v, checks the format byte, unmarshals into a new T, and checks that
// re-encoding the result gives the same bytes (which also covers NaN, where == fails).
func roundTrip[T any](t *testing.T, v T, want Format) T {
	t.Helper()
	data, err := Marshal(v)
	if err != nil {
		t.Fatalf("Marshal(%T): %v", v, err)
	}
	if Format(data[0]) != want {
		t.Fatalf("Marshal(%T) format = %v, want %v (data %q)", v, Format(data[0]), want, data)
	}
	got, err := Unmarshal[T](data)
	if err != nil {
		t.Fatalf("Unmarshal[%T]: %v", v, err)
	}
	again, err := Marshal(got)
	if err != nil {
		t.Fatalf("re-Marshal(%T): %v", got, err)
	}
	if !bytes.Equal(data, again) {
		t.Fatalf("%T: re-encoding differs:\n%q\n%q", v, data, again)
	}
	// the type-erased forms must agree with the generic ones
	data2, err := MarshalValue(v)
	if err != nil || !bytes.Equal(data, data2) {
		t.Fatalf("MarshalValue(%T) = %q, %v; Marshal gave %q", v, data2, err, data)
	}
	var viaInto T
	if err := UnmarshalInto(data, &viaInto); err != nil {
		t.Fatalf("UnmarshalInto(*%T): %v", v, err)
	}
	return got
}

func checkEqual[T any](t *testing.T, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

// fast checks a fast-path type: nil, empty, and a populated value.
func fast[T any](t *testing.T, name string, v T, f Format) {
	t.Run(name, func(t *testing.T) {
		got := roundTrip(t, v, f)
		checkEqual(t, got, v)
		var empty T
		rv := reflect.ValueOf(&empty).Elem()
		if rv.Kind() == reflect.Slice {
			nilGot := roundTrip(t, empty, FormatCBOR) // nil slices are CBOR null
			if !reflect.ValueOf(nilGot).IsNil() {
				t.Fatalf("nil %T decoded as non-nil %#v", v, nilGot)
			}
			rv.Set(reflect.MakeSlice(rv.Type(), 0, 0))
			emptyGot := roundTrip(t, empty, f)
			if ev := reflect.ValueOf(emptyGot); ev.IsNil() || ev.Len() != 0 {
				t.Fatalf("empty %T decoded as %#v", v, emptyGot)
			}
		}
	})
}

func TestFastPaths(t *testing.T) {
	big := make([]int64, 100_000) // above smallCopy: exercises the non-zeroing allocation
	for i := range big {
		big[i] = int64(i) * -7919
	}
	fast(t, "bytes", []byte{0, 1, 2, 255}, FormatBytes)
	fast(t, "bytes-large", bytes.Repeat([]byte{7, 8, 9}, 20_000), FormatBytes)
	fast(t, "string", "héllo, \x00 wörld \xff (not UTF-8)", FormatString)
	fast(t, "string-large", strings.Repeat("ray", 20_000), FormatString)
	fast(t, "int64", []int64{0, 1, -1, math.MaxInt64, math.MinInt64}, FormatNumeric)
	fast(t, "int64-large", big, FormatNumeric)
	fast(t, "int32", []int32{0, -1, math.MaxInt32, math.MinInt32}, FormatNumeric)
	fast(t, "int16", []int16{0, -1, math.MaxInt16, math.MinInt16}, FormatNumeric)
	fast(t, "int8", []int8{0, -1, math.MaxInt8, math.MinInt8}, FormatNumeric)
	fast(t, "uint64", []uint64{0, 1, math.MaxUint64}, FormatNumeric)
	fast(t, "uint32", []uint32{0, 1, math.MaxUint32}, FormatNumeric)
	fast(t, "uint16", []uint16{0, 1, math.MaxUint16}, FormatNumeric)
	fast(t, "int", []int{0, -5, math.MaxInt, math.MinInt}, FormatNumeric)
	fast(t, "uint", []uint{0, 5, math.MaxUint}, FormatNumeric)
	fast(t, "float64", []float64{0, -1.5, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1)}, FormatNumeric)
	fast(t, "float32", []float32{0, -1.5, math.MaxFloat32, float32(math.Inf(-1))}, FormatNumeric)
	fast(t, "bool", []bool{true, false, true}, FormatNumeric)

	t.Run("nan-and-negative-zero-bits", func(t *testing.T) {
		nan := math.Float64frombits(0x7ff8_0000_dead_beef) // a NaN with a payload
		in := []float64{nan, math.Copysign(0, -1)}
		got := roundTrip(t, in, FormatNumeric)
		for i := range in {
			if math.Float64bits(got[i]) != math.Float64bits(in[i]) {
				t.Fatalf("element %d: bits %x, want %x", i, math.Float64bits(got[i]), math.Float64bits(in[i]))
			}
		}
	})
	t.Run("empty-string", func(t *testing.T) {
		checkEqual(t, roundTrip(t, "", FormatString), "")
	})
	t.Run("header-layout", func(t *testing.T) {
		data, _ := Marshal([]int32{1, -2})
		want := []byte{'N', 'i', 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff}
		if !bytes.Equal(data, want) {
			t.Fatalf("got % x, want % x", data, want)
		}
		data, _ = Marshal("hi")
		if !bytes.Equal(data, []byte{'S', 2, 'h', 'i'}) {
			t.Fatalf("got % x", data)
		}
	})
	t.Run("no-aliasing", func(t *testing.T) {
		in := []int64{1, 2, 3}
		data, _ := Marshal(in)
		in[0] = 99
		got, _ := Unmarshal[[]int64](data)
		data[numHeaderLen] = 42
		checkEqual(t, got, []int64{1, 2, 3})
		b := []byte("abc")
		data, _ = Marshal(b)
		gb, _ := Unmarshal[[]byte](data)
		data[len(data)-1] = 'X'
		checkEqual(t, gb, []byte("abc"))
	})
}

type (
	Vector  []float64
	Celsius float32
	Temps   []Celsius
	ID      string
	Blob    []byte
)

func TestNamedTypesTakeFastPaths(t *testing.T) {
	checkEqual(t, roundTrip(t, Vector{1, 2.5}, FormatNumeric), Vector{1, 2.5})
	checkEqual(t, roundTrip(t, Temps{-40, 100}, FormatNumeric), Temps{-40, 100})
	checkEqual(t, roundTrip(t, ID("obj-1"), FormatString), ID("obj-1"))
	checkEqual(t, roundTrip(t, Blob{1, 2}, FormatBytes), Blob{1, 2})
	if got := roundTrip(t, Vector(nil), FormatCBOR); got != nil {
		t.Fatalf("nil Vector decoded as %v", got)
	}
	// a named type and its underlying type read each other's data
	data, _ := Marshal([]float64{3, 4})
	v, err := Unmarshal[Vector](data)
	checkEqual(t, v, Vector{3, 4})
	if err != nil {
		t.Fatal(err)
	}
	// a pointer to a fast-path type decodes raw data too
	p, err := Unmarshal[*[]float64](data)
	if err != nil || !reflect.DeepEqual(*p, []float64{3, 4}) {
		t.Fatalf("Unmarshal[*[]float64] = %v, %v", p, err)
	}
}

func TestCrossDecoding(t *testing.T) {
	d, _ := Marshal([]int{1, -2})
	if got, err := Unmarshal[[]int64](d); err != nil || !reflect.DeepEqual(got, []int64{1, -2}) {
		t.Fatalf("[]int -> []int64: %v, %v", got, err)
	}
	d, _ = Marshal([]int64{1, -2})
	if got, err := Unmarshal[[]int](d); err != nil || !reflect.DeepEqual(got, []int{1, -2}) {
		t.Fatalf("[]int64 -> []int: %v, %v", got, err)
	}
	d, _ = Marshal([]uint64{7})
	if got, err := Unmarshal[[]uint](d); err != nil || !reflect.DeepEqual(got, []uint{7}) {
		t.Fatalf("[]uint64 -> []uint: %v, %v", got, err)
	}
	d, _ = Marshal("text")
	if got, err := Unmarshal[[]byte](d); err != nil || string(got) != "text" {
		t.Fatalf("string -> []byte: %q, %v", got, err)
	}
	d, _ = Marshal([]byte("bin"))
	if got, err := Unmarshal[string](d); err != nil || got != "bin" {
		t.Fatalf("[]byte -> string: %q, %v", got, err)
	}
}

// TestPortablePathsMatch checks the element-by-element paths used on big-endian hosts (and
// for int/uint on 32-bit hosts) produce the same bytes and values as the memcpy paths.
func TestPortablePathsMatch(t *testing.T) {
	check := func(k numKind, p unsafe.Pointer, n, size int) {
		t.Helper()
		native := encodeNum(k, p, n, size)
		portable := encodeNumPortable(k, p, n, size)
		if !bytes.Equal(native, portable) {
			t.Fatalf("kind %c: native % x, portable % x", k, native, portable)
		}
		_, payload, err := parseNumeric(native)
		if err != nil {
			t.Fatal(err)
		}
		q1, n1, _ := decodeNumPayload(k, payload, size)
		q2, n2, err := decodeNumPortable(k, payload, n, size)
		if err != nil || n1 != n || n2 != n ||
			!bytes.Equal(unsafe.Slice((*byte)(q1), n*size), unsafe.Slice((*byte)(q2), n*size)) {
			t.Fatalf("kind %c: decoded values differ (%v)", k, err)
		}
	}
	i8 := []int8{1, -1, 127, -128}
	i16 := []int16{1, -1, 32767, -32768}
	i32 := []int32{1, -1, math.MaxInt32, math.MinInt32}
	i64 := []int64{1, -1, math.MaxInt64, math.MinInt64}
	u16 := []uint16{1, 65535}
	u32 := []uint32{1, math.MaxUint32}
	u64 := []uint64{1, math.MaxUint64}
	f32 := []float32{1.5, float32(math.NaN())}
	f64 := []float64{1.5, math.Inf(-1)}
	ints := []int{1, -1, math.MinInt}
	bs := []bool{true, false}
	check(kInt8, unsafe.Pointer(&i8[0]), len(i8), 1)
	check(kInt16, unsafe.Pointer(&i16[0]), len(i16), 2)
	check(kInt32, unsafe.Pointer(&i32[0]), len(i32), 4)
	check(kInt64, unsafe.Pointer(&i64[0]), len(i64), 8)
	check(kUint16, unsafe.Pointer(&u16[0]), len(u16), 2)
	check(kUint32, unsafe.Pointer(&u32[0]), len(u32), 4)
	check(kUint64, unsafe.Pointer(&u64[0]), len(u64), 8)
	check(kFloat32, unsafe.Pointer(&f32[0]), len(f32), 4)
	check(kFloat64, unsafe.Pointer(&f64[0]), len(f64), 8)
	check(kInt, unsafe.Pointer(&ints[0]), len(ints), 8)
	check(kBool, unsafe.Pointer(&bs[0]), len(bs), 1)

	// Go int on a 32-bit host: 4 bytes in memory, 8 on the wire, sign-extended.
	small := []int32{-3, math.MaxInt32}
	wire := encodeNumPortable(kInt, unsafe.Pointer(&small[0]), 2, 4)
	want, _ := Marshal([]int64{-3, math.MaxInt32})
	if !bytes.Equal(wire[2:], want[2:]) {
		t.Fatalf("32-bit int encoding % x, want % x", wire, want)
	}
	_, payload, _ := parseNumeric(wire)
	q, _, err := decodeNumPortable(kInt, payload, 2, 4)
	if err != nil || !reflect.DeepEqual(unsafe.Slice((*int32)(q), 2), small) {
		t.Fatalf("32-bit int decoding: %v", err)
	}
	tooBig, _ := Marshal([]int{math.MaxInt32 + 1})
	_, payload, _ = parseNumeric(tooBig)
	if _, _, err := decodeNumPortable(kInt, payload, 1, 4); !errors.Is(err, ErrTypeMismatch) || !strings.Contains(err.Error(), "overflows") {
		t.Fatalf("overflow on a 32-bit int: %v", err)
	}
}

type Inner struct {
	X    int      `cbor:"x"`
	Tags []string `cbor:"tags,omitempty"`
}

type Base struct {
	BaseID string
	//lint:ignore U1000 test data: the codec ignores unexported fields
	mu [0]func()
}

type Outer struct {
	Base
	Name     string `cbor:"name"`
	Count    int64
	Ratio    float64
	Small    float32
	Flags    []bool
	Inner    Inner
	PInner   *Inner
	NilInner *Inner
	Map      map[string]int
	IntKeys  map[int]string
	Bytes    []byte
	When     time.Time
	Dur      time.Duration
	Big      *big.Int
	Any      any
	Skipped  chan int `cbor:"-"`
	JSONSkip func()   `json:"-"`
	//lint:ignore U1000 test data: an unexported field tagged "-" is left out on purpose
	unexported chan int `cbor:"-"`
	Nested     [][]int32
	Arr        [3]uint8
	Opt        *string
	Empty      []int
	NilSlice   []int
}

func TestCBORRoundTrip(t *testing.T) {
	s := "opt"
	huge, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	when := time.Date(2024, 2, 29, 13, 14, 15, 123456789, time.FixedZone("X", 5*3600+30*60))
	full := Outer{
		Base:    Base{BaseID: "b"},
		Name:    "n",
		Count:   math.MinInt64,
		Ratio:   math.Pi,
		Small:   1.25,
		Flags:   []bool{true},
		Inner:   Inner{X: 1, Tags: []string{"a", "b"}},
		PInner:  &Inner{X: 2},
		Map:     map[string]int{"z": 1, "a": 2, "m": 3},
		IntKeys: map[int]string{-1: "neg", 10: "ten"},
		Bytes:   []byte{0, 1},
		When:    when,
		Dur:     1500 * time.Millisecond,
		Big:     huge,
		Any:     []any{int64(1), "two", 3.5, nil, map[any]any{"k": true}},
		Nested:  [][]int32{{1}, {}, nil, {2, 3}},
		Arr:     [3]uint8{1, 2, 3},
		Opt:     &s,
		Empty:   []int{},
	}
	got := roundTrip(t, full, FormatCBOR)
	if !got.When.Equal(when) {
		t.Fatalf("time %v, want %v", got.When, when)
	}
	if _, off := got.When.Zone(); off != 5*3600+30*60 {
		t.Fatalf("time zone offset %d lost", off)
	}
	got.When, full.When = time.Time{}, time.Time{}
	checkEqual(t, got, full)
	if got.Empty == nil || got.NilSlice != nil || got.NilInner != nil {
		t.Fatalf("nil/empty not preserved: Empty=%#v NilSlice=%#v NilInner=%v", got.Empty, got.NilSlice, got.NilInner)
	}

	type node struct {
		V    int
		Next *node
	}
	list := &node{V: 1, Next: &node{V: 2, Next: &node{V: 3}}}

	cases := []struct {
		name string
		v    any
	}{
		{"int", 42},
		{"negative", -42},
		{"int8-min", int8(math.MinInt8)},
		{"uint64-max", uint64(math.MaxUint64)},
		{"int64-min", int64(math.MinInt64)},
		{"float32", float32(1.1)},
		{"float64", 1e300},
		{"nan", math.NaN()},
		{"inf", math.Inf(-1)},
		{"bool", true},
		{"nil-pointer", (*int)(nil)},
		{"pointer-pointer", func() **int { i := 7; p := &i; return &p }()},
		{"map-nested", map[string][]string{"a": {"x"}, "b": nil}},
		{"map-struct-keys", map[struct{ A, B int }]int{{1, 2}: 3, {0, 0}: 1}},
		{"slice-of-pointers", []*Inner{{X: 1}, nil}},
		{"nested-slices", [][]float64{{1, 2}, {3}}},
		{"array", [4]int{1, 2, 3, 4}},
		{"byte-array", [4]byte{1, 2, 3, 4}},
		{"empty-struct", struct{}{}},
		{"big-small", big.NewInt(5)},
		{"big-negative-huge", new(big.Int).Neg(huge)},
		{"time-utc", time.Unix(1700000000, 5).UTC()},
		{"recursive-list", list},
		{"any-slice", []any{int64(1), "a", []any{2.5, false}}},
		{"raw-message", cbor.RawMessage{0x82, 0x01, 0x02}},
		{"struct-omitempty", Inner{X: 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := MarshalValue(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if Format(data[0]) != FormatCBOR {
				t.Fatalf("format %v", Format(data[0]))
			}
			p := reflect.New(reflect.TypeOf(c.v))
			if err := UnmarshalInto(data, p.Interface()); err != nil {
				t.Fatal(err)
			}
			again, err := MarshalValue(p.Elem().Interface())
			if err != nil || !bytes.Equal(again, data) {
				t.Fatalf("re-encoding differs: %q vs %q (%v)", again, data, err)
			}
			if f, ok := c.v.(float64); ok && math.IsNaN(f) {
				if !math.IsNaN(p.Elem().Float()) {
					t.Fatalf("NaN decoded as %v", p.Elem().Float())
				}
				return
			}
			if tm, ok := c.v.(time.Time); ok {
				if !tm.Equal(p.Elem().Interface().(time.Time)) {
					t.Fatalf("time %v != %v", p.Elem(), tm)
				}
				return
			}
			if !reflect.DeepEqual(p.Elem().Interface(), c.v) {
				t.Fatalf("got %#v, want %#v", p.Elem().Interface(), c.v)
			}
		})
	}
	t.Run("negative-zero", func(t *testing.T) {
		got := roundTrip(t, math.Copysign(0, -1), FormatCBOR)
		if !math.Signbit(got) {
			t.Fatal("-0 lost its sign")
		}
	})
}

func TestInterfaceDecodesToNaturalTypes(t *testing.T) {
	when := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	cases := []struct {
		in   any
		want any
	}{
		{nil, nil},
		{7, int64(7)},
		{-7, int64(-7)},
		{uint64(math.MaxUint64), new(big.Int).SetUint64(math.MaxUint64)},
		{2.5, 2.5},
		{float32(0.5), 0.5},
		{"s", "s"},
		{[]byte{1}, []byte{1}},
		{[]int64{1, 2}, []int64{1, 2}},
		{[]int{1, 2}, []int{1, 2}},
		{[]float32{1}, []float32{1}},
		{[]bool{true}, []bool{true}},
		{[]string{"a"}, []any{"a"}},
		{map[string]int{"a": 1}, map[any]any{"a": int64(1)}},
		{Inner{X: 1}, map[any]any{"x": int64(1)}},
		{when, when},
		{true, true},
	}
	for _, c := range cases {
		data, err := Marshal[any](c.in)
		if err != nil {
			t.Fatalf("Marshal[any](%#v): %v", c.in, err)
		}
		got, err := Unmarshal[any](data)
		if err != nil {
			t.Fatalf("Unmarshal[any] of %#v: %v", c.in, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%#v decoded into any as %#v (%T), want %#v (%T)", c.in, got, got, c.want, c.want)
		}
	}
	// Marshal[any] picks the format from the dynamic type.
	data, _ := Marshal[any]([]int64{1})
	if Format(data[0]) != FormatNumeric {
		t.Fatalf("Marshal[any]([]int64) format %v", Format(data[0]))
	}
}

func TestNilAndEmpty(t *testing.T) {
	if got := roundTrip(t, map[string]int(nil), FormatCBOR); got != nil {
		t.Fatalf("nil map decoded as %#v", got)
	}
	if got := roundTrip(t, map[string]int{}, FormatCBOR); got == nil || len(got) != 0 {
		t.Fatalf("empty map decoded as %#v", got)
	}
	if got := roundTrip(t, []string(nil), FormatCBOR); got != nil {
		t.Fatalf("nil []string decoded as %#v", got)
	}
	if got := roundTrip(t, []string{}, FormatCBOR); got == nil {
		t.Fatal("empty []string decoded as nil")
	}
	if got := roundTrip(t, (*Inner)(nil), FormatCBOR); got != nil {
		t.Fatalf("nil pointer decoded as %#v", got)
	}
	if got := roundTrip[any](t, nil, FormatCBOR); got != nil {
		t.Fatalf("nil any decoded as %#v", got)
	}
	data, _ := MarshalValue(nil)
	if !bytes.Equal(data, []byte{'C', 0xf6}) {
		t.Fatalf("MarshalValue(nil) = % x", data)
	}
	if got := roundTrip(t, []byte{}, FormatBytes); got == nil {
		t.Fatal("empty []byte decoded as nil")
	}
}

func TestDeterminism(t *testing.T) {
	keys := make([]string, 500)
	for i := range keys {
		keys[i] = strings.Repeat("k", i%7) + string(rune('a'+i%26)) + string(rune('A'+i/26))
	}
	var first []byte
	for run := 0; run < 20; run++ {
		m := make(map[string]any, len(keys))
		perm := rand.Perm(len(keys))
		for _, i := range perm {
			m[keys[i]] = map[int]string{i: keys[i], -i: "neg"}
		}
		data, err := Marshal(struct {
			M map[string]any
			S []int
		}{m, []int{1}})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = data
		} else if !bytes.Equal(first, data) {
			t.Fatal("same value encoded to different bytes")
		}
	}
	// Core Deterministic order: bytewise on the encoded keys, so "b" (61 62) before "aa" (62 61 61).
	data, _ := Marshal(map[string]int{"aa": 3, "b": 1, "a": 2})
	want := []byte{'C', 0xa3, 0x61, 'a', 0x02, 0x61, 'b', 0x01, 0x62, 'a', 'a', 0x03}
	if !bytes.Equal(data, want) {
		t.Fatalf("got % x, want % x", data, want)
	}
	// shortest forms
	data, _ = Marshal(1.5)
	if !bytes.Equal(data, []byte{'C', 0xf9, 0x3e, 0x00}) {
		t.Fatalf("1.5 encoded as % x, want a half float", data)
	}
	data, _ = Marshal(math.NaN())
	if !bytes.Equal(data, []byte{'C', 0xf9, 0x7e, 0x00}) {
		t.Fatalf("NaN encoded as % x", data)
	}
}

func mustMarshal[T any](t *testing.T, v T) []byte {
	t.Helper()
	data, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func decodeErr[T any](data []byte) error {
	_, err := Unmarshal[T](data)
	return err
}

func TestTypeMismatch(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want []string
	}{
		{"int64s-into-string", decodeErr[string](mustMarshal(t, []int64{1})), []string{"raw []int64 data", "into string"}},
		{"string-into-int64s", decodeErr[[]int64](mustMarshal(t, "x")), []string{"raw string data", "into []int64"}},
		{"float64s-into-int64s", decodeErr[[]int64](mustMarshal(t, []float64{1})), []string{"raw []float64 data", "into []int64"}},
		{"int32s-into-array", decodeErr[[2]int32](mustMarshal(t, []int32{1, 2})), []string{"raw []int32 data", "into [2]int32"}},
		{"bytes-into-int", decodeErr[int](mustMarshal(t, []byte{1})), []string{"raw []byte data", "into int"}},
		{"int-into-string", decodeErr[string](mustMarshal(t, 5)), []string{"CBOR unsigned integer", "into string"}},
		{"negative-into-uint", decodeErr[uint](mustMarshal(t, -5)), []string{"CBOR negative integer", "into uint"}},
		{"struct-into-int", decodeErr[int](mustMarshal(t, Inner{})), []string{"CBOR map", "into int"}},
		{"overflow", decodeErr[int8](mustMarshal(t, 300)), []string{"CBOR unsigned integer", "into int8"}},
		{"field-type", decodeErr[struct{ X string }](mustMarshal(t, struct{ X int }{1})), []string{"CBOR map", "X"}},
		{"slice-into-map", decodeErr[map[string]int](mustMarshal(t, []string{"a"})), []string{"CBOR array", "into map[string]int"}},
		{"time-into-int", decodeErr[int](mustMarshal(t, time.Now())), []string{"CBOR time", "into int"}},
		{"int-into-record", decodeErr[interface{ Release() }](mustMarshal(t, 1)), []string{"CBOR unsigned integer"}},
		{"int64s-into-any-stringer", decodeErr[interface{ String() string }](mustMarshal(t, []int64{1})), []string{"raw []int64 data"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !errors.Is(c.err, ErrTypeMismatch) {
				t.Fatalf("error %v does not wrap ErrTypeMismatch", c.err)
			}
			var tm *TypeMismatchError
			if !errors.As(c.err, &tm) || tm.Want == nil {
				t.Fatalf("error %v is not a *TypeMismatchError", c.err)
			}
			for _, w := range c.want {
				if !strings.Contains(c.err.Error(), w) {
					t.Fatalf("error %q does not mention %q", c.err, w)
				}
			}
		})
	}
}

//lint:ignore U1000 test data: a struct with no exported fields
type counter struct{ n int }

type withChan struct {
	Name string
	Done chan struct{}
}

//lint:ignore U1000 test data: an embedded type with no exported fields
type lonelyMutex struct {
	mu struct{ locked bool }
}

type embedsUnexported struct {
	//lint:ignore U1000 test data: embedded, its unexported field is promoted and would be lost
	lonelyMutex
	N int
}

// mixed has exported and unexported fields: the unexported one would arrive as 0.
type mixed struct {
	//lint:ignore U1000 test data: an unexported field that holds data
	hidden int
	Shown  int
}

// skipsOnPurpose has unexported fields that are fine: tagged "-", blank, or of a size
// of zero.
type skipsOnPurpose struct {
	N int
	//lint:ignore U1000 test data: left out on purpose
	cache map[string]int `cbor:"-"`
	//lint:ignore U1000 test data: left out on purpose, json tag
	mu sync.Mutex `json:"-"`
	_  int
	//lint:ignore U1000 test data: a zero-size marker
	noCompare [0]func()
	//lint:ignore U1000 test data: a zero-size marker
	marker struct{}
	When   time.Time // a struct of unexported fields that encodes itself
}

type badRef struct{}

func (badRef) RefPayload() []byte { return nil }

type list struct {
	V    int
	Next *list
}

func TestUnsupportedTypes(t *testing.T) {
	cyclic := &list{V: 1}
	cyclic.Next = cyclic
	var deep *list
	for i := 0; i < maxNesting+10; i++ {
		deep = &list{V: i, Next: deep}
	}
	selfSlice := []any{nil}
	selfSlice[0] = selfSlice
	selfMap := map[string]any{}
	selfMap["me"] = selfMap

	cases := []struct {
		name string
		v    any
		want string
	}{
		{"chan", make(chan int), "codec: cannot encode chan int: channels cannot be sent to another process"},
		{"func", func() {}, "codec: cannot encode func(): functions cannot be sent"},
		{"unsafe-pointer", unsafe.Pointer(nil), "unsafe.Pointer cannot be sent"},
		{"uintptr", uintptr(1), "uintptr holds an address"},
		{"complex", complex(1, 2), "no complex numbers"},
		{"struct-field", withChan{}, "codec: cannot encode codec.withChan: .Done (chan struct {}): channels cannot be sent to another process"},
		{"in-slice", []withChan{}, "[].Done (chan struct {})"},
		{"map-value", map[string]func(){}, "[] (func())"},
		{"map-key", map[chan int]int{}, "[key] (chan int)"},
		{"pointer-inside", struct{ P *withChan }{}, ".P.Done (chan struct {})"},
		{"interface-dynamic", []any{1, make(chan int)}, "codec: cannot encode []interface {}: [1] (chan int): channels"},
		{"interface-in-map", map[string]any{"cb": func() {}}, "[cb] (func())"},
		{"interface-in-struct", struct{ X any }{X: withChan{}}, ".X.Done (chan struct {})"},
		{"no-exported-fields", counter{}, "codec: cannot encode codec.counter: .n (int): unexported fields are not encoded"},
		{"unexported-beside-exported", mixed{hidden: 7, Shown: 8}, "codec: cannot encode codec.mixed: .hidden (int): " +
			"unexported fields are not encoded, so the receiving process would see its zero value; " +
			"export the field, or tag it `cbor:\"-\"` to leave it out on purpose"},
		{"unexported-nested", struct{ Items []mixed }{}, ".Items[].hidden (int): unexported fields"},
		{"unexported-by-pointer", map[string]*mixed{}, "[].hidden (int)"},
		{"unexported-promoted", embedsUnexported{}, "codec: cannot encode codec.embedsUnexported: .mu (struct { locked bool }): unexported fields"},
		{"unexported-in-interface", []any{1, mixed{}}, "codec: cannot encode []interface {}: [1].hidden (int): unexported fields"},
		{"cyclic-pointer", cyclic, "cyclic"},
		{"cyclic-slice", selfSlice, "cyclic"},
		{"cyclic-map", selfMap, "cyclic"},
		{"too-deep", deep, "nested more than 4096 levels"},
		{"ref-without-marshaler", struct{ R badRef }{}, "RefPayload"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i := 0; i < 2; i++ { // the second call hits the cache
				_, err := MarshalValue(c.v)
				if !errors.Is(err, ErrUnsupportedType) {
					t.Fatalf("error %v does not wrap ErrUnsupportedType", err)
				}
				if !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %q does not contain %q", err, c.want)
				}
			}
		})
	}
	// what is fine: skipped fields (exported or not), blank and zero-size unexported
	// fields, structs that encode themselves, acyclic recursion
	for _, v := range []any{
		Outer{},
		struct {
			X int
			c chan int `cbor:"-"`
		}{X: 1},
		skipsOnPurpose{N: 1},
		[]any{skipsOnPurpose{}},
		&list{V: 1, Next: &list{V: 2}},
		[]any{[]any{1}, []any{1}}, // shared, not cyclic
	} {
		if _, err := MarshalValue(v); err != nil {
			t.Fatalf("MarshalValue(%T): %v", v, err)
		}
	}
	// a DAG sharing a pointer deeper than the cycle check depth is not a cycle
	shared := &list{V: -1}
	var chain *list = shared
	for i := 0; i < cycleCheckDepth+50; i++ {
		chain = &list{V: i, Next: chain}
	}
	if _, err := MarshalValue([]*list{chain, chain}); err != nil {
		t.Fatalf("shared deep chain: %v", err)
	}
	// the generic form reports the static type
	_, err := Marshal(func(int) int { return 0 })
	if err == nil || !strings.Contains(err.Error(), "func(int) int") {
		t.Fatalf("Marshal(func) = %v", err)
	}
	var ute *UnsupportedTypeError
	_, err = Marshal(withChan{})
	if !errors.As(err, &ute) || ute.Path != ".Done" || ute.Leaf != reflect.TypeFor[chan struct{}]() || ute.Type != reflect.TypeFor[withChan]() {
		t.Fatalf("UnsupportedTypeError fields: %#v", ute)
	}
}

func TestCorruptInput(t *testing.T) {
	huge := []byte{'C', 0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} // array claiming 2^64-1 items
	deep := append([]byte{'C'}, bytes.Repeat([]byte{0x81}, maxNesting+1)...)
	deep = append(deep, 0x01)
	cases := []struct {
		name string
		data []byte
		dec  func([]byte) error
	}{
		{"empty", nil, decodeErr[int]},
		{"unknown-format", []byte{'Z', 1}, decodeErr[int]},
		{"cbor-no-body", []byte{'C'}, decodeErr[int]},
		{"cbor-trailing", []byte{'C', 0x01, 0x02}, decodeErr[int]},
		{"cbor-truncated", []byte{'C', 0x19, 0x01}, decodeErr[int]},
		{"cbor-reserved-ai", []byte{'C', 0x1c}, decodeErr[any]},
		{"cbor-indefinite", []byte{'C', 0x9f, 0x01, 0xff}, decodeErr[[]int]},
		{"cbor-huge-array", huge, decodeErr[[]int]},
		{"cbor-too-deep", deep, decodeErr[any]},
		{"numeric-unknown-kind", []byte{'N', 'z', 0, 0, 0, 0, 0, 0}, decodeErr[[]int64]},
		{"numeric-short-header", []byte{'N', 'q', 1}, decodeErr[[]int64]},
		{"numeric-count-mismatch", []byte{'N', 'h', 2, 0, 0, 0, 0, 0, 1, 0}, decodeErr[[]int16]},
		{"numeric-count-huge", []byte{'N', 'q', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0}, decodeErr[[]int64]},
		{"numeric-bad-bool", []byte{'N', '?', 1, 0, 0, 0, 0, 0, 2}, decodeErr[[]bool]},
		{"bytes-bad-length", []byte{'B', 5, 1, 2}, decodeErr[[]byte]},
		{"bytes-bad-varint", []byte{'B', 0x80}, decodeErr[[]byte]},
		{"string-too-long", []byte{'S', 1, 'a', 'b'}, decodeErr[string]},
		{"user-truncated-name", []byte{'U', 9, 'p'}, decodeErr[int]},
		{"arrow-garbage", []byte{'A', 1, 2, 3, 4, 5, 6, 7, 8}, decodeErr[any]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.dec(c.data)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
		})
	}
}

// TestTruncationAlwaysDetected: every proper prefix of every encoding is an error.
func TestTruncationAlwaysDetected(t *testing.T) {
	rec := testRecord(nil, 10)
	defer rec.Release()
	tbl := testTable(nil)
	defer tbl.Release()
	encodings := map[string]struct {
		data []byte
		dec  func([]byte) error
	}{
		"cbor-struct":  {mustMarshal(t, Outer{Name: "x", Map: map[string]int{"a": 1}, Any: []any{1, "b"}}), decodeErr[Outer]},
		"cbor-int":     {mustMarshal(t, 1<<40), decodeErr[int]},
		"bytes":        {mustMarshal(t, []byte("hello")), decodeErr[[]byte]},
		"string":       {mustMarshal(t, strings.Repeat("x", 200)), decodeErr[string]},
		"int64s":       {mustMarshal(t, []int64{1, 2, 3}), decodeErr[[]int64]},
		"bools":        {mustMarshal(t, []bool{true, false}), decodeErr[[]bool]},
		"arrow-record": {mustMarshal(t, rec), decodeRelease[arrowRecord]},
		"arrow-table":  {mustMarshal(t, tbl), decodeRelease[arrowTable]},
	}
	for name, e := range encodings {
		t.Run(name, func(t *testing.T) {
			if err := e.dec(e.data); err != nil {
				t.Fatalf("full data: %v", err)
			}
			for n := 0; n < len(e.data); n++ {
				if err := e.dec(e.data[:n]); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("prefix of %d/%d bytes: %v, want ErrCorrupt", n, len(e.data), err)
				}
			}
		})
	}
}

func TestHandWrittenCBORMatches(t *testing.T) {
	ints := []int64{0, 1, 23, 24, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
		-1, -24, -25, -256, -257, -65536, -65537, math.MinInt32, math.MinInt64}
	for _, v := range ints {
		want, err := encMode.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := cborInt(v); !bytes.Equal(got[1:], want) {
			t.Fatalf("cborInt(%d) = % x, want % x", v, got[1:], want)
		}
		if v >= 0 {
			if got := cborUint(uint64(v)); !bytes.Equal(got[1:], want) {
				t.Fatalf("cborUint(%d) = % x, want % x", v, got[1:], want)
			}
		}
	}
	want, _ := encMode.Marshal(uint64(math.MaxUint64))
	if got := cborUint(math.MaxUint64); !bytes.Equal(got[1:], want) {
		t.Fatalf("cborUint(max) = % x", got)
	}
	// every integer type decodes every value like the general path: same value or an error
	type decoder func([]byte) (any, error)
	both := func(fast, slow decoder, data []byte) {
		t.Helper()
		a, errA := fast(data)
		b, errB := slow(data)
		if (errA == nil) != (errB == nil) || errA == nil && a != b {
			t.Fatalf("% x: fast %v (%v), general %v (%v)", data, a, errA, b, errB)
		}
	}
	pair := func(f func([]byte) (any, error), s func([]byte) (any, error)) [2]decoder { return [2]decoder{f, s} }
	decoders := []([2]decoder){
		pair(wrapFast[int], wrapSlow[int]), pair(wrapFast[int64], wrapSlow[int64]), pair(wrapFast[int32], wrapSlow[int32]),
		pair(wrapFast[int16], wrapSlow[int16]), pair(wrapFast[int8], wrapSlow[int8]), pair(wrapFast[uint], wrapSlow[uint]),
		pair(wrapFast[uint64], wrapSlow[uint64]), pair(wrapFast[uint32], wrapSlow[uint32]), pair(wrapFast[uint16], wrapSlow[uint16]),
		pair(wrapFast[uint8], wrapSlow[uint8]), pair(wrapFast[bool], wrapSlow[bool]),
	}
	inputs := [][]byte{{'C', 0xf4}, {'C', 0xf5}, {'C', 0x18, 0x05} /* not shortest */, {'C', 0x01, 0x02}, cborUint(math.MaxUint64)}
	for _, v := range ints {
		inputs = append(inputs, cborInt(v))
	}
	for _, in := range inputs {
		for _, d := range decoders {
			both(d[0], d[1], in)
		}
	}
}

func wrapFast[T any](data []byte) (any, error) {
	v, err := Unmarshal[T](data)
	return v, err
}

func wrapSlow[T any](data []byte) (any, error) {
	v, err := unmarshalSlow[T](data)
	return v, err
}

func TestConcurrentUse(t *testing.T) {
	type fresh1 struct{ A []any }
	type fresh2 struct{ B map[string]*fresh2 }
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			var err error
			for i := 0; i < 200 && err == nil; i++ {
				var data []byte
				switch i % 4 {
				case 0:
					data, err = Marshal(fresh1{A: []any{i, "x"}})
					if err == nil {
						_, err = Unmarshal[fresh1](data)
					}
				case 1:
					data, err = Marshal(fresh2{B: map[string]*fresh2{"k": {}}})
					if err == nil {
						_, err = Unmarshal[fresh2](data)
					}
				case 2:
					data, err = Marshal([]int64{int64(i)})
					if err == nil {
						_, err = Unmarshal[[]int64](data)
					}
				case 3:
					data, err = MarshalValue(Outer{Name: "c", Any: []any{1}})
					if err == nil {
						err = UnmarshalInto(data, new(Outer))
					}
				}
			}
			done <- err
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestDecodedValuesDoNotAliasInput(t *testing.T) {
	type withBytes struct {
		B   []byte
		S   string
		Raw cbor.RawMessage
		Any any
	}
	in := withBytes{B: []byte("bytes"), S: "string", Raw: cbor.RawMessage{0x43, 1, 2, 3}, Any: []byte("anyb")}
	data := mustMarshal(t, in)
	got, err := Unmarshal[withBytes](data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		data[i] = 0
	}
	if string(got.B) != "bytes" || got.S != "string" || !bytes.Equal(got.Raw, []byte{0x43, 1, 2, 3}) || string(got.Any.([]byte)) != "anyb" {
		t.Fatalf("decoded value changed with its input: %+v", got)
	}
}
