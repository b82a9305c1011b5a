package ppo

import (
	"math"
	"reflect"
	"testing"
)

func TestWireRoundTrip(t *testing.T) {
	wts := []Weights{
		{},
		{Pi: []float64{1, -2.5, math.Inf(1), math.SmallestNonzeroFloat64}, Vf: []float64{3}, LogStd: []float64{-0.5}, Version: 7},
		{Pi: []float64{0}, Version: -1},
	}
	for _, w := range wts {
		b, err := w.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Weights
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Fatalf("weights %+v came back as %+v", w, got)
		}
	}
	frs := []Fragment{
		{},
		{Steps: 2, Obs: []float32{1, 2, 3, float32(math.NaN())}, Actions: []float64{0, 1}, LogP: []float64{-0.1, -0.2},
			Adv: []float64{1, 2}, Ret: []float64{3, 4}, EpReturns: []float64{21}, EpLens: []int{21}, Version: 3},
	}
	for _, f := range frs {
		b, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Fragment
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if f.Obs != nil { // NaN != NaN: compare the bits
			for i := range f.Obs {
				if math.Float32bits(got.Obs[i]) != math.Float32bits(f.Obs[i]) {
					t.Fatalf("obs %v came back as %v", f.Obs, got.Obs)
				}
			}
			got.Obs, f.Obs = nil, nil
		}
		if !reflect.DeepEqual(got, f) {
			t.Fatalf("fragment %+v came back as %+v", f, got)
		}
	}
	// Truncations and trailing bytes are errors.
	b, _ := frs[1].MarshalBinary()
	for i := range len(b) {
		var f Fragment
		if err := f.UnmarshalBinary(b[:i]); err == nil {
			t.Fatalf("a fragment cut to %d of %d bytes decoded", i, len(b))
		}
	}
	var f Fragment
	if err := f.UnmarshalBinary(append(b, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	var w Weights
	if err := w.UnmarshalBinary(b); err == nil {
		t.Fatal("a fragment decoded as weights")
	}
}

func FuzzUnmarshal(f *testing.F) {
	b1, _ := Weights{Pi: []float64{1, 2}, Vf: []float64{3}, Version: 2}.MarshalBinary()
	b2, _ := Fragment{Steps: 1, Obs: []float32{1}, Actions: []float64{1}, LogP: []float64{0}, Adv: []float64{0}, Ret: []float64{0},
		EpReturns: []float64{1}, EpLens: []int{1}}.MarshalBinary()
	f.Add(b1)
	f.Add(b2)
	f.Fuzz(func(t *testing.T, b []byte) {
		var w Weights
		if w.UnmarshalBinary(b) == nil {
			again, _ := w.MarshalBinary()
			var w2 Weights
			if err := w2.UnmarshalBinary(again); err != nil {
				t.Fatalf("re-encoded weights do not decode: %v", err)
			}
		}
		var fr Fragment
		if fr.UnmarshalBinary(b) == nil {
			again, _ := fr.MarshalBinary()
			var f2 Fragment
			if err := f2.UnmarshalBinary(again); err != nil {
				t.Fatalf("re-encoded fragment does not decode: %v", err)
			}
		}
	})
}
