package ppo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Weights and Fragment travel through the object store once per update and
// once per Sample call. They encode themselves (encoding.BinaryMarshaler,
// which the object store's codec honours) as little-endian arrays: decoding
// a few thousand float64 values that way is a copy, where the generic CBOR
// path decodes them one reflected value at a time (about a tenth of a
// CartPole run's CPU before).
//
// Layout: a magic byte and a format version, then the integer fields as
// signed varints and each slice as a uvarint length followed by its values
// (float64 or float32 bits, little-endian; EpLens as signed varints).

const (
	weightsMagic  = 'W'
	fragmentMagic = 'F'
	wireVersion   = 1
)

var errShort = errors.New("ppo: truncated encoding")

type wireWriter struct{ b []byte }

func (w *wireWriter) int(v int64) { w.b = binary.AppendVarint(w.b, v) }

func (w *wireWriter) f64s(xs []float64) {
	w.b = binary.AppendUvarint(w.b, uint64(len(xs)))
	for _, x := range xs {
		w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(x))
	}
}

func (w *wireWriter) f32s(xs []float32) {
	w.b = binary.AppendUvarint(w.b, uint64(len(xs)))
	for _, x := range xs {
		w.b = binary.LittleEndian.AppendUint32(w.b, math.Float32bits(x))
	}
}

type wireReader struct {
	b   []byte
	err error
}

func (r *wireReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *wireReader) int() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a slice length and checks that size bytes per element remain.
func (r *wireReader) count(size int) int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.b = r.b[n:]
	if v > uint64(len(r.b)/size) {
		r.fail(fmt.Errorf("ppo: encoding claims %d values, %d bytes left", v, len(r.b)))
		return 0
	}
	return int(v)
}

func (r *wireReader) f64s() []float64 {
	n := r.count(8)
	if r.err != nil || n == 0 {
		return nil
	}
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = math.Float64frombits(binary.LittleEndian.Uint64(r.b[8*i:]))
	}
	r.b = r.b[8*n:]
	return xs
}

func (r *wireReader) f32s() []float32 {
	n := r.count(4)
	if r.err != nil || n == 0 {
		return nil
	}
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(r.b[4*i:]))
	}
	r.b = r.b[4*n:]
	return xs
}

func (r *wireReader) header(magic byte, what string) {
	if len(r.b) < 2 {
		r.fail(errShort)
		return
	}
	if r.b[0] != magic || r.b[1] != wireVersion {
		r.fail(fmt.Errorf("ppo: not an encoded %s (header %x)", what, r.b[:2]))
		return
	}
	r.b = r.b[2:]
}

func (r *wireReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail(fmt.Errorf("ppo: %d bytes after the encoding", len(r.b)))
	}
	return r.err
}

// MarshalBinary encodes the weights (see the layout above).
func (wt Weights) MarshalBinary() ([]byte, error) {
	w := wireWriter{b: make([]byte, 0, 16+8*(len(wt.Pi)+len(wt.Vf)+len(wt.LogStd)))}
	w.b = append(w.b, weightsMagic, wireVersion)
	w.int(int64(wt.Version))
	w.f64s(wt.Pi)
	w.f64s(wt.Vf)
	w.f64s(wt.LogStd)
	return w.b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded; malformed input is an
// error, never a panic.
func (wt *Weights) UnmarshalBinary(b []byte) error {
	r := wireReader{b: b}
	r.header(weightsMagic, "Weights")
	v := Weights{Version: int(r.int())}
	v.Pi, v.Vf, v.LogStd = r.f64s(), r.f64s(), r.f64s()
	if err := r.done(); err != nil {
		return err
	}
	*wt = v
	return nil
}

// MarshalBinary encodes the fragment (see the layout above).
func (f Fragment) MarshalBinary() ([]byte, error) {
	n := 32 + 4*len(f.Obs) + 8*(len(f.Actions)+len(f.LogP)+len(f.Adv)+len(f.Ret)+len(f.EpReturns)) + 10*len(f.EpLens)
	w := wireWriter{b: make([]byte, 0, n)}
	w.b = append(w.b, fragmentMagic, wireVersion)
	w.int(int64(f.Steps))
	w.int(int64(f.Version))
	w.f32s(f.Obs)
	w.f64s(f.Actions)
	w.f64s(f.LogP)
	w.f64s(f.Adv)
	w.f64s(f.Ret)
	w.f64s(f.EpReturns)
	w.b = binary.AppendUvarint(w.b, uint64(len(f.EpLens)))
	for _, l := range f.EpLens {
		w.int(int64(l))
	}
	return w.b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded; malformed input is an
// error, never a panic.
func (f *Fragment) UnmarshalBinary(b []byte) error {
	r := wireReader{b: b}
	r.header(fragmentMagic, "Fragment")
	v := Fragment{Steps: int(r.int()), Version: int(r.int())}
	v.Obs = r.f32s()
	v.Actions, v.LogP, v.Adv, v.Ret, v.EpReturns = r.f64s(), r.f64s(), r.f64s(), r.f64s(), r.f64s()
	if n := r.count(1); n > 0 {
		v.EpLens = make([]int, n)
		for i := range v.EpLens {
			v.EpLens[i] = int(r.int())
		}
	}
	if err := r.done(); err != nil {
		return err
	}
	*f = v
	return nil
}
