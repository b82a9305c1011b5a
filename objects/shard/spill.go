package shard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
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
// checks.
var ErrCorruptSpill = errors.New("shard: spill file is corrupt")

var (
	codecOnce sync.Once
	encoder   *zstd.Encoder
	decoder   *zstd.Decoder
	codecErr  error
)

func codecs() (*zstd.Encoder, *zstd.Decoder, error) {
	codecOnce.Do(func() {
		// SpeedFastest: spilling is about freeing memory quickly; still a good ratio on
		// the zeros and numbers objects often hold. EncodeAll and DecodeAll take one of
		// the codec's encoders or decoders for the call, so their concurrency is how many
		// spills (restores) compress (decompress) at once, across every shard of the
		// process: one per core (each shard's SpillWorkers bound its own).
		procs := runtime.GOMAXPROCS(0)
		encoder, codecErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(procs))
		if codecErr == nil {
			// WithDecodeAllCapLimit: DecodeAll writes at most cap(dst) bytes, the object's
			// known size, whatever the frame claims: a corrupt frame header (its content
			// size) or a frame that expands past it cannot make the decoder allocate more.
			decoder, codecErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(procs), zstd.WithDecodeAllCapLimit(true))
		}
	})
	return encoder, decoder, codecErr
}

func spillPath(dir string, id ids.ObjectID) string {
	return filepath.Join(dir, id.String()+".zst")
}

// maxSpillFile is the largest spill file an object of size bytes can give: the header and
// zstd's worst case (ZSTD_compressBound: incompressible blocks are stored raw, with a few
// bytes of framing per 128 KiB block), with room to spare.
func maxSpillFile(size int64) int64 {
	return spillHeader + size + size>>8 + 1<<10
}

// encodeSpill returns the content of a spill file holding data.
func encodeSpill(data []byte) ([]byte, error) {
	enc, _, err := codecs()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, spillHeader, spillHeader+len(data)/2+64)
	copy(buf, spillMagic)
	binary.LittleEndian.PutUint64(buf[4:], uint64(len(data)))
	binary.LittleEndian.PutUint32(buf[12:], crc32.Checksum(data, castagnoli))
	return enc.EncodeAll(data, buf), nil
}

// decodeSpill checks the content b of a spill file of an object of size bytes (the size
// the shard recorded, not the file's claim) and returns the object's bytes and their
// CRC-32C. Nothing it allocates depends on what the file says: the output buffer has the
// known size, and the decoder writes no more than that. Its errors say what is wrong;
// readSpillSum adds the file and ErrCorruptSpill.
func decodeSpill(b []byte, size int64) ([]byte, uint32, error) {
	_, dec, err := codecs()
	if err != nil {
		return nil, 0, err
	}
	if len(b) < spillHeader || string(b[:4]) != spillMagic {
		return nil, 0, fmt.Errorf("no valid header (%d bytes)", len(b))
	}
	n := binary.LittleEndian.Uint64(b[4:])
	sum := binary.LittleEndian.Uint32(b[12:])
	if size < 0 || n != uint64(size) {
		return nil, 0, fmt.Errorf("the header says %d bytes, the object has %d", n, size)
	}
	// The frame's own content size, when it has one, must agree too. Checked here rather
	// than left to DecodeAll, which refuses it as well but prints to standard error.
	var h zstd.Header
	if err := h.Decode(b[spillHeader:]); err != nil {
		return nil, 0, fmt.Errorf("zstd frame header: %v", err)
	}
	if h.HasFCS && h.FrameContentSize != uint64(size) {
		return nil, 0, fmt.Errorf("the zstd frame says %d bytes, the object has %d", h.FrameContentSize, size)
	}
	data, err := dec.DecodeAll(b[spillHeader:], make([]byte, 0, size))
	if err != nil {
		return nil, 0, fmt.Errorf("zstd: %v", err)
	}
	if int64(len(data)) != size {
		return nil, 0, fmt.Errorf("%d bytes decompressed, the object has %d", len(data), size)
	}
	if crc32.Checksum(data, castagnoli) != sum {
		return nil, 0, errors.New("the bytes fail their checksum")
	}
	return data, sum, nil
}

// writeSpill writes data to path (through a temporary file, renamed when complete). The
// file is readable by its owner only (0600, in a 0700 directory): objects are the
// cluster's data.
func writeSpill(path string, data []byte) (int64, error) {
	buf, err := encodeSpill(data)
	if err != nil {
		return 0, err
	}
	// The spill directory only, not its parents: a write that comes late, after the node's
	// directory was removed, must not make it again.
	if err := os.Mkdir(filepath.Dir(path), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return 0, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf, 0o600); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return int64(len(buf)), nil
}

// readSpill reads back what writeSpill wrote for an object of size bytes and checks it.
func readSpill(path string, size int64) ([]byte, error) {
	data, _, err := readSpillSum(path, size)
	return data, err
}

// readSpillSum is readSpill that also returns the checked CRC-32C of the bytes. A file
// larger than a spill of size bytes can be is refused before it is read. Errors name the
// file, say what is wrong and wrap ErrCorruptSpill.
func readSpillSum(path string, size int64) ([]byte, uint32, error) {
	corrupt := func(format string, args ...any) ([]byte, uint32, error) {
		return nil, 0, fmt.Errorf("%w: %s: %s", ErrCorruptSpill, path, fmt.Sprintf(format, args...))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrCorruptSpill, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return corrupt("%v", err)
	}
	if st.Size() > maxSpillFile(size) {
		return corrupt("the file has %d bytes, more than a spill of a %d-byte object can take", st.Size(), size)
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return corrupt("read %d bytes: %v", st.Size(), err)
	}
	data, sum, err := decodeSpill(b, size)
	if err != nil {
		return corrupt("%v", err)
	}
	return data, sum, nil
}
