package codec

import (
	"errors"
	"reflect"
	"testing"
	"unsafe"
)

// UnmarshalOwned gives what Unmarshal gives, and for []byte and string it aliases the
// input instead of copying it; everything else (other types, empty values, bad input)
// is Unmarshal's.
func TestUnmarshalOwned(t *testing.T) {
	payload := []byte("a large argument, read from another node")
	for _, v := range []any{payload, string(payload)} {
		var data []byte
		var err error
		switch v := v.(type) {
		case []byte:
			data, err = Marshal(v)
		case string:
			data, err = Marshal(v)
		}
		if err != nil {
			t.Fatal(err)
		}
		end := unsafe.Pointer(unsafe.SliceData(data[len(data)-len(payload):]))
		if b, err := UnmarshalOwned[[]byte](data); err != nil || string(b) != string(payload) || unsafe.Pointer(unsafe.SliceData(b)) != end || cap(b) != len(b) {
			t.Errorf("%T into []byte: %q, %v (aliases the input: %v, cap %d)", v, b, err, unsafe.Pointer(unsafe.SliceData(b)) == end, cap(b))
		}
		if s, err := UnmarshalOwned[string](data); err != nil || s != string(payload) || unsafe.Pointer(unsafe.StringData(s)) != end {
			t.Errorf("%T into string: %q, %v", v, s, err)
		}
	}
	// Empty: Unmarshal's empty, non-nil slice.
	data, _ := Marshal([]byte{})
	if b, err := UnmarshalOwned[[]byte](data); err != nil || b == nil || len(b) != 0 {
		t.Errorf("empty []byte: %v (nil %v), %v", b, b == nil, err)
	}
	// Other types: Unmarshal's result.
	nums, _ := Marshal([]int64{1, 2, 3})
	if v, err := UnmarshalOwned[[]int64](nums); err != nil || !reflect.DeepEqual(v, []int64{1, 2, 3}) {
		t.Errorf("[]int64: %v, %v", v, err)
	}
	// Bad input: Unmarshal's errors.
	bad := append([]byte(nil), data...)
	bad = append(bad, 'x') // a payload longer than its header says
	if _, err := UnmarshalOwned[[]byte](bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("corrupt []byte: %v, want ErrCorrupt", err)
	}
	if _, err := UnmarshalOwned[[]byte](nums); !errors.Is(err, ErrTypeMismatch) {
		t.Errorf("[]int64 data into []byte: %v, want ErrTypeMismatch", err)
	}
}

// BenchmarkUnmarshalOwned: a 200 MiB []byte decoded by Unmarshal (a copy) and by
// UnmarshalOwned (an alias of the input).
func BenchmarkUnmarshalOwned(b *testing.B) {
	data, err := Marshal(make([]byte, 200<<20))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for range b.N {
			if _, err := Unmarshal[[]byte](data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("UnmarshalOwned", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for range b.N {
			if _, err := UnmarshalOwned[[]byte](data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Numeric slices of the stored layout alias the input too; a different element size
// ([]int32 data into []int64 is a mismatch anyway, int64 data into []int is the same size)
// or an unaligned payload is copied as Unmarshal does.
func TestUnmarshalOwnedNumeric(t *testing.T) {
	want := []float64{1.5, -2, 3.25, 1e300}
	data, err := Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	end := unsafe.Pointer(unsafe.SliceData(data[len(data)-8*len(want):]))
	v, err := UnmarshalOwned[[]float64](data)
	if err != nil || !reflect.DeepEqual(v, want) || unsafe.Pointer(unsafe.SliceData(v)) != end || cap(v) != len(v) {
		t.Fatalf("[]float64: %v, %v (aliases the input: %v)", v, err, unsafe.Pointer(unsafe.SliceData(v)) == end)
	}
	ints, _ := Marshal([]int64{7, -8, 9})
	if v, err := UnmarshalOwned[[]int](ints); err != nil || !reflect.DeepEqual(v, []int{7, -8, 9}) ||
		unsafe.Pointer(unsafe.SliceData(v)) != unsafe.Pointer(unsafe.SliceData(ints[len(ints)-24:])) {
		t.Errorf("[]int64 data into []int: %v, %v (want an alias)", v, err)
	}
	// Unaligned: the same bytes one byte further on are copied, and still decode right.
	shifted := append(make([]byte, 1, len(data)+1), data...)[1:]
	if v, err := UnmarshalOwned[[]float64](shifted); err != nil || !reflect.DeepEqual(v, want) ||
		unsafe.Pointer(unsafe.SliceData(v)) == unsafe.Pointer(unsafe.SliceData(shifted[len(shifted)-8*len(want):])) {
		t.Errorf("unaligned []float64: %v, %v (want a copy)", v, err)
	}
	if _, err := UnmarshalOwned[[]float32](data); !errors.Is(err, ErrTypeMismatch) {
		t.Errorf("[]float64 data into []float32: %v, want ErrTypeMismatch", err)
	}
	empty, _ := Marshal([]float64{})
	if v, err := UnmarshalOwned[[]float64](empty); err != nil || len(v) != 0 {
		t.Errorf("empty []float64: %v, %v", v, err)
	}
}
