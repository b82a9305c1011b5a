package shard

import (
	"encoding/binary"
	"path/filepath"
	"testing"
)

// spillData is 8 MiB of int64s counting up: numbers as objects often hold them.
func spillData() []byte {
	b := make([]byte, 8<<20)
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], uint64(i/8))
	}
	return b
}

// spillKinds are the two kinds of data of the benchmark: compressible numbers
// (counting int64s) and random bytes.
var spillKinds = []struct {
	name string
	data func() []byte
}{
	{"numbers", spillData},
	{"random", func() []byte {
		b := make([]byte, 8<<20)
		x := uint64(0x9E3779B97F4A7C15)
		for i := 0; i+8 <= len(b); i += 8 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			for k := range 8 {
				b[i+k] = byte(x >> (8 * k))
			}
		}
		return b
	}},
}

func BenchmarkSpillWrite(b *testing.B) {
	for _, k := range spillKinds {
		b.Run(k.name, func(b *testing.B) {
			data := k.data()
			path := filepath.Join(b.TempDir(), "x.zst")
			b.SetBytes(int64(len(data)))
			var n int64
			for b.Loop() {
				var err error
				if n, err = writeSpill(path, data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data))/float64(n), "ratio")
		})
	}
}

func BenchmarkSpillRead(b *testing.B) {
	for _, k := range spillKinds {
		b.Run(k.name, func(b *testing.B) {
			data := k.data()
			path := filepath.Join(b.TempDir(), "x.zst")
			if _, err := writeSpill(path, data); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := readSpill(path, int64(len(data))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
