package codec

import (
	"reflect"
	"testing"
	"time"
)

// BenchmarkNamedScalarArg is what an actor call's time.Duration argument costs the codec:
// MarshalRefs at the caller, Unmarshal and MayHoldRefs at the callee.
func BenchmarkNamedScalarArg(b *testing.B) {
	b.ReportAllocs()
	t := reflect.TypeFor[time.Duration]()
	for b.Loop() {
		data, _, err := MarshalRefs(time.Duration(123456789))
		if err != nil {
			b.Fatal(err)
		}
		v, err := Unmarshal[time.Duration](data)
		if err != nil || v != 123456789 || MayHoldRefs(t) {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkIntArgMayHoldRefs is an int argument's decode at the callee, with the
// MayHoldRefs question every decoded argument asks.
func BenchmarkIntArgMayHoldRefs(b *testing.B) {
	b.ReportAllocs()
	data, _ := Marshal(1000)
	t := reflect.TypeFor[int]()
	for b.Loop() {
		v, err := Unmarshal[int](data)
		if err != nil || v != 1000 || MayHoldRefs(t) {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkStructTypeLookups is a small struct's encode, which looks its type up.
func BenchmarkStructTypeLookups(b *testing.B) {
	type point struct{ X, Y int }
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := MarshalRefs(point{1, 2}); err != nil {
			b.Fatal(err)
		}
	}
}
