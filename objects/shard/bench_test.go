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

func BenchmarkSpillWrite(b *testing.B) {
	data := spillData()
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
}

func BenchmarkSpillRead(b *testing.B) {
	data := spillData()
	path := filepath.Join(b.TempDir(), "x.zst")
	if _, err := writeSpill(path, data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := readSpill(path); err != nil {
			b.Fatal(err)
		}
	}
}
