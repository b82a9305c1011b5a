package shard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/ray-go/ray/internal/base/ids"
)

// Spill files: a 16-byte header (magic, uncompressed length, CRC-32C of the uncompressed
// bytes) and one zstd frame. The checksum covers what the owner gets back, so a file
// altered on disk (or a decompressor bug) is detected, never returned as wrong bytes.
const (
	spillMagic  = "RGS1"
	spillHeader = 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptSpill is returned for a spill file that is missing, truncated, or fails its
// checksum.
var ErrCorruptSpill = errors.New("shard: spill file is corrupt")

var (
	codecOnce sync.Once
	encoder   *zstd.Encoder
	decoder   *zstd.Decoder
	codecErr  error
)

func codecs() (*zstd.Encoder, *zstd.Decoder, error) {
	codecOnce.Do(func() {
		// SpeedFastest: spilling is about freeing memory quickly; ~1 GB/s on this class
		// of machine and still a good ratio on the zeros and numbers objects often hold.
		encoder, codecErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		if codecErr == nil {
			decoder, codecErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(2))
		}
	})
	return encoder, decoder, codecErr
}

func spillPath(dir string, id ids.ObjectID) string {
	return filepath.Join(dir, id.String()+".zst")
}

// writeSpill writes data to path (through a temporary file, renamed when complete).
func writeSpill(path string, data []byte) (int64, error) {
	enc, _, err := codecs()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, spillHeader, spillHeader+len(data)/2+64)
	copy(buf, spillMagic)
	binary.LittleEndian.PutUint64(buf[4:], uint64(len(data)))
	binary.LittleEndian.PutUint32(buf[12:], crc32.Checksum(data, castagnoli))
	buf = enc.EncodeAll(data, buf)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf, 0o644); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return int64(len(buf)), nil
}

// readSpill reads back what writeSpill wrote and checks it.
func readSpill(path string) ([]byte, error) {
	data, _, err := readSpillSum(path)
	return data, err
}

// readSpillSum is readSpill that also returns the checked CRC-32C of the bytes.
func readSpillSum(path string) ([]byte, uint32, error) {
	_, dec, err := codecs()
	if err != nil {
		return nil, 0, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrCorruptSpill, err)
	}
	if len(b) < spillHeader || string(b[:4]) != spillMagic {
		return nil, 0, fmt.Errorf("%w: %s has no valid header", ErrCorruptSpill, path)
	}
	n := binary.LittleEndian.Uint64(b[4:])
	sum := binary.LittleEndian.Uint32(b[12:])
	if n > 1<<40 {
		return nil, 0, fmt.Errorf("%w: %s claims %d bytes", ErrCorruptSpill, path, n)
	}
	data, err := dec.DecodeAll(b[spillHeader:], make([]byte, 0, n))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s: %v", ErrCorruptSpill, path, err)
	}
	if uint64(len(data)) != n || crc32.Checksum(data, castagnoli) != sum {
		return nil, 0, fmt.Errorf("%w: %s fails its checksum", ErrCorruptSpill, path)
	}
	return data, sum, nil
}
