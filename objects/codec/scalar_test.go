package codec

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"
)

type (
	enum8   int8
	enumU16 uint16
	onOff   bool
	count   uint64
	// textInt has a text form, so it is not a scalar: the CBOR library's path is kept.
	textInt int32
)

func (t textInt) MarshalText() ([]byte, error) { return []byte(strconv.Itoa(int(t))), nil }

// TestScalarEncodingIsTheLibrarys checks that named integer and boolean types, written and
// read by hand (typeInfo.scalar), give the CBOR library's bytes and read its bytes back,
// and that a value out of the target's range still fails as a type mismatch.
func TestScalarEncodingIsTheLibrarys(t *testing.T) {
	check := func(v any, wantScalar bool) {
		t.Helper()
		ti := info(reflect.TypeOf(v))
		if ti.scalar != wantScalar {
			t.Fatalf("%T: scalar = %v, want %v", v, ti.scalar, wantScalar)
		}
		got, err := MarshalValue(v)
		if err != nil {
			t.Fatalf("%T(%v): %v", v, v, err)
		}
		lib, err := encodeCBOR(v)
		if err != nil {
			t.Fatalf("%T(%v): library: %v", v, v, err)
		}
		if !bytes.Equal(got, lib) {
			t.Fatalf("%T(%v): encoded %x, the library writes %x", v, v, got, lib)
		}
	}
	for _, d := range []time.Duration{0, 1, -1, 23, 24, -24, -25, 255, 256, 65535, 65536, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64} {
		check(d, true)
		back, err := Unmarshal[time.Duration](lib(t, d))
		if err != nil || back != d {
			t.Fatalf("Duration %d: decoded %d, %v", d, back, err)
		}
	}
	for _, e := range []enum8{math.MinInt8, -1, 0, 1, math.MaxInt8} {
		check(e, true)
		back, err := Unmarshal[enum8](lib(t, e))
		if err != nil || back != e {
			t.Fatalf("enum8 %d: decoded %d, %v", e, back, err)
		}
	}
	for _, e := range []enumU16{0, 1, 23, 24, math.MaxUint16} {
		check(e, true)
		back, err := Unmarshal[enumU16](lib(t, e))
		if err != nil || back != e {
			t.Fatalf("enumU16 %d: decoded %d, %v", e, back, err)
		}
	}
	for _, c := range []count{0, math.MaxUint64} {
		check(c, true)
		back, err := Unmarshal[count](lib(t, c))
		if err != nil || back != c {
			t.Fatalf("count %d: decoded %d, %v", c, back, err)
		}
	}
	for _, f := range []onOff{false, true} {
		check(f, true)
		back, err := Unmarshal[onOff](lib(t, f))
		if err != nil || back != f {
			t.Fatalf("onOff %v: decoded %v, %v", f, back, err)
		}
	}
	check(textInt(7), false)

	// Out of range and of the wrong sign: the library's error, a type mismatch.
	for _, data := range [][]byte{lib(t, int64(200)), lib(t, int64(-200))} {
		if _, err := Unmarshal[enum8](data); !errors.Is(err, ErrTypeMismatch) {
			t.Fatalf("enum8 from %x: err = %v, want a type mismatch", data, err)
		}
	}
	if _, err := Unmarshal[enumU16](lib(t, int64(-1))); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("enumU16 from -1: err = %v, want a type mismatch", err)
	}
	if _, err := Unmarshal[onOff](lib(t, int64(1))); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("onOff from 1: err = %v, want a type mismatch", err)
	}
	// A value stored as a plain int64 decodes into a named type and back.
	if d, err := Unmarshal[time.Duration](lib(t, int64(-7))); err != nil || d != -7 {
		t.Fatalf("Duration from int64 -7: %d, %v", d, err)
	}
}

// lib is the CBOR library's encoding of v.
func lib(t *testing.T, v any) []byte {
	t.Helper()
	b, err := encodeCBOR(v)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), b...)
}

// TestMayHoldRefsBasic checks the predeclared types' short cut against the cache.
func TestMayHoldRefsBasic(t *testing.T) {
	for _, v := range []any{false, 0, int8(0), int16(0), int32(0), int64(0), uint(0), uint8(0), uint16(0),
		uint32(0), uint64(0), uintptr(0), float32(0), float64(0), complex64(0), complex128(0), "", time.Duration(0)} {
		if MayHoldRefs(reflect.TypeOf(v)) {
			t.Fatalf("%T may hold refs", v)
		}
	}
	for _, v := range []any{[]any{}, map[string]any{}, struct{ X any }{}} {
		if !MayHoldRefs(reflect.TypeOf(v)) {
			t.Fatalf("%T may not hold refs", v)
		}
	}
}

// TestScalarGenericPaths checks Marshal, MarshalRefs and Unmarshal of named scalar types
// (the paths that neither box nor look past the type): the library's bytes, the value
// back, a mismatch still an error, and no allocation but the encoding's.
func TestScalarGenericPaths(t *testing.T) {
	for _, d := range []time.Duration{0, -1, 24, math.MaxInt64, math.MinInt64} {
		b, err := Marshal(d)
		if err != nil || !bytes.Equal(b, lib(t, d)) {
			t.Fatalf("Marshal(%d) = %x, %v; the library writes %x", d, b, err, lib(t, d))
		}
		b, refs, err := MarshalRefs(d)
		if err != nil || refs != nil || !bytes.Equal(b, lib(t, d)) {
			t.Fatalf("MarshalRefs(%d) = %x, %v, %v", d, b, refs, err)
		}
		if back, err := Unmarshal[time.Duration](b); err != nil || back != d {
			t.Fatalf("Unmarshal of %d: %d, %v", d, back, err)
		}
	}
	for _, e := range []enum8{math.MinInt8, math.MaxInt8} {
		b, err := Marshal(e)
		if err != nil || !bytes.Equal(b, lib(t, e)) {
			t.Fatalf("Marshal(%d) = %x, %v", e, b, err)
		}
		if back, err := Unmarshal[enum8](b); err != nil || back != e {
			t.Fatalf("Unmarshal of %d: %d, %v", e, back, err)
		}
	}
	for _, c := range []count{0, math.MaxUint64} {
		b, _ := Marshal(c)
		if back, err := Unmarshal[count](b); err != nil || back != c || !bytes.Equal(b, lib(t, c)) {
			t.Fatalf("count %d: %x back %d, %v", c, b, back, err)
		}
	}
	for _, u := range []enumU16{0, math.MaxUint16} {
		b, _ := Marshal(u)
		if back, err := Unmarshal[enumU16](b); err != nil || back != u || !bytes.Equal(b, lib(t, u)) {
			t.Fatalf("enumU16 %d: %x back %d, %v", u, b, back, err)
		}
	}
	for _, f := range []onOff{false, true} {
		b, _ := Marshal(f)
		if back, err := Unmarshal[onOff](b); err != nil || back != f || !bytes.Equal(b, lib(t, f)) {
			t.Fatalf("onOff %v: %x back %v, %v", f, b, back, err)
		}
	}
	if _, err := Unmarshal[enum8](lib(t, int64(128))); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("enum8 from 128: %v, want a type mismatch", err)
	}
	if _, err := Unmarshal[enumU16](lib(t, int64(65536))); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("enumU16 from 65536: %v, want a type mismatch", err)
	}
	if _, err := Unmarshal[time.Duration](lib(t, "x")); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("Duration from a string: %v, want a type mismatch", err)
	}
	if ti, _ := Marshal(textInt(3)); !bytes.Equal(ti, lib(t, textInt(3))) {
		t.Fatalf("textInt: %x, the library writes %x", ti, lib(t, textInt(3)))
	}
	b, _ := Marshal(time.Duration(1 << 40))
	if n := testing.AllocsPerRun(100, func() { _, _ = Unmarshal[time.Duration](b) }); n != 0 {
		t.Fatalf("Unmarshal[time.Duration]: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = MarshalRefs(time.Duration(1 << 40)) }); n != 1 {
		t.Fatalf("MarshalRefs(time.Duration): %v allocations, want 1 (the encoding)", n)
	}
}
