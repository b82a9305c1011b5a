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
	"strconv"
	"sync"
	"syscall"

	"github.com/klauspost/compress/zstd"

	"github.com/ray-go/ray/internal/base/ids"
)

// Spill files: a header (magic, uncompressed length, CRC-32C of the uncompressed bytes,
// the object's ID) and one zstd frame. The checksum covers what the owner gets back, so a
// file altered on disk (or a decompressor bug) is detected, never returned as wrong bytes;
// the ID and the checksum the shard kept in memory when it wrote the file catch a file
// that is valid but not this object's (another object's file copied over it, or one left
// from an earlier spill of the same ID). Spill files do not outlive their process: a
// shard reads only the files it wrote itself (it starts empty), so there is no older
// format to read (RGS1 had no ID).
const (
	spillMagic  = "RGS2"
	spillHeader = 16 + ids.ObjectIDLen
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptSpill is returned for a spill file that is truncated, fails its checks, or
// holds another object.
var ErrCorruptSpill = errors.New("shard: spill file is corrupt")

// ErrMissingSpill is returned for a spill file that is gone.
var ErrMissingSpill = errors.New("shard: spill file is missing")

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

// spillPath is the file of the shard's n-th spill write, of object id. No two writes share
// a path, even of one ID (an object freed and put again, a result made again by lineage):
// the removal of a file nobody needs any more runs on a goroutine of its own, and must
// never find a newer spill of the same object under its name.
func spillPath(dir string, id ids.ObjectID, n uint64) string {
	return filepath.Join(dir, id.String()+"-"+strconv.FormatUint(n, 10)+".zst")
}

// maxSpillFile is the largest spill file an object of size bytes can give: the header and
// zstd's worst case (ZSTD_compressBound: incompressible blocks are stored raw, with a few
// bytes of framing per 128 KiB block), with room to spare.
func maxSpillFile(size int64) int64 {
	return spillHeader + size + size>>8 + 1<<10
}

// encodeSpill returns the content of a spill file holding object id's bytes data, and
// their CRC-32C.
func encodeSpill(id ids.ObjectID, data []byte) ([]byte, uint32, error) {
	enc, _, err := codecs()
	if err != nil {
		return nil, 0, err
	}
	sum := crc32.Checksum(data, castagnoli)
	buf := make([]byte, spillHeader, spillHeader+len(data)/2+64)
	copy(buf, spillMagic)
	binary.LittleEndian.PutUint64(buf[4:], uint64(len(data)))
	binary.LittleEndian.PutUint32(buf[12:], sum)
	copy(buf[16:], id[:])
	return enc.EncodeAll(data, buf), sum, nil
}

// decodeSpill checks the content b of a spill file of object id of size bytes (the size
// the shard recorded, not the file's claim) and returns the object's bytes and their
// CRC-32C. A file of another object is refused before its frame is read. Nothing it allocates depends on what the file says: the output buffer has the
// known size, and the decoder writes no more than that. Its errors say what is wrong;
// readSpillSum adds the file and ErrCorruptSpill.
func decodeSpill(b []byte, id ids.ObjectID, size int64) ([]byte, uint32, error) {
	_, dec, err := codecs()
	if err != nil {
		return nil, 0, err
	}
	if len(b) < spillHeader || string(b[:4]) != spillMagic {
		return nil, 0, fmt.Errorf("no valid header (%d bytes)", len(b))
	}
	n := binary.LittleEndian.Uint64(b[4:])
	sum := binary.LittleEndian.Uint32(b[12:])
	if got := ids.ObjectID(b[16:spillHeader]); got != id {
		return nil, 0, fmt.Errorf("the file holds another object (%s)", got)
	}
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

// writeSpill writes object id's bytes data to path (through a temporary file, renamed
// when complete) and returns the file's size and the bytes' CRC-32C. The file is readable
// by its owner only (0600, in a 0700 directory): objects are the cluster's data.
func writeSpill(path string, id ids.ObjectID, data []byte) (int64, uint32, error) {
	return writeSpillWith(os.WriteFile, freeSpace, path, id, data)
}

// SpillReserve is the share of its filesystem (at most SpillReserveMax bytes) that a spill
// leaves free (as Ray's local_fs_capacity_threshold, 0.95, keeps 5%): the disk is shared,
// by default with the session directory, where a head keeps its GCS (etcd exits when a
// write finds the disk full) and every process its logs. A spill refused for it fails as
// one that found the disk full (ENOSPC): the object stays in memory, spilling is retried,
// and puts past the store's limit are refused with a message that says so.
var (
	SpillReserve    = 0.05
	SpillReserveMax = int64(1 << 30)
)

// statfs is syscall.Statfs (tests of the package give their own).
var statfs = syscall.Statfs

// keepRoom refuses (an error wrapping syscall.ENOSPC) a write of need bytes in dir that
// would leave less than the reserve free on dir's filesystem (SpillReserve). A filesystem
// it cannot measure is not refused.
func keepRoom(dir string, need int64) error {
	var st syscall.Statfs_t
	if err := statfs(dir, &st); err != nil || st.Blocks == 0 {
		return nil
	}
	total := float64(st.Blocks) * float64(st.Bsize)
	free := float64(st.Bavail) * float64(st.Bsize)
	reserve := min(SpillReserve*total, float64(SpillReserveMax))
	if free-float64(need) >= reserve {
		return nil
	}
	return fmt.Errorf("%w: a spill of %d bytes would leave less than %.0f bytes free on the filesystem of %s (%.0f of %.0f free): "+
		"spilling stops there so that what else uses that disk (the head's GCS, logs) keeps room; make room there or give a "+
		"spill directory on another disk (rayctl start --spill-dir)", syscall.ENOSPC, need, reserve, dir, free, total)
}

// spillWriteError is a failed spill write with the free space on the spill directory's
// filesystem measured when the write failed, before its partial file was removed (after,
// the figure would include the room the partial file took, which the spill needed).
type spillWriteError struct {
	err  error
	free string
}

func (e *spillWriteError) Error() string { return e.err.Error() }
func (e *spillWriteError) Unwrap() error { return e.err }

// writeSpillWith is writeSpill with the file write and the free-space measure given (tests
// of the package give their own).
func writeSpillWith(writeFile func(string, []byte, fs.FileMode) error, free func(string) string, path string, id ids.ObjectID, data []byte) (int64, uint32, error) {
	buf, sum, err := encodeSpill(id, data)
	if err != nil {
		return 0, 0, err
	}
	// The spill directory only, not its parents: a write that comes late, after the node's
	// directory was removed, must not make it again.
	if err := os.Mkdir(filepath.Dir(path), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return 0, 0, err
	}
	if err := keepRoom(filepath.Dir(path), int64(len(buf))); err != nil {
		return 0, 0, &spillWriteError{err: err, free: free(filepath.Dir(path))}
	}
	tmp := path + ".tmp"
	if err := writeFile(tmp, buf, 0o600); err != nil {
		err = &spillWriteError{err: err, free: free(filepath.Dir(path))}
		os.Remove(tmp)
		return 0, 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, 0, err
	}
	return int64(len(buf)), sum, nil
}

// spillRecord is what a shard knows of a spill file it wrote: the object it holds, the
// object's size and the CRC-32C of its bytes. The file is checked against it, not the
// other way round.
type spillRecord struct {
	path string
	id   ids.ObjectID
	size int64
	sum  uint32
}

// readSpill reads back what writeSpill wrote for r and checks it.
func readSpill(r spillRecord) ([]byte, error) {
	data, _, err := readSpillSum(r)
	return data, err
}

// readSpillSum is readSpill that also returns the checked CRC-32C of the bytes. A file
// larger than a spill of r.size bytes can be is refused before it is read; a file whose
// bytes are not those written (another object's file, or one of an earlier spill of the
// same ID) is refused. Errors name the file, say what is wrong and wrap ErrMissingSpill
// (no file) or ErrCorruptSpill (anything else).
func readSpillSum(r spillRecord) ([]byte, uint32, error) {
	path, size := r.path, r.size
	corrupt := func(format string, args ...any) ([]byte, uint32, error) {
		return nil, 0, fmt.Errorf("%w: %s: %s", ErrCorruptSpill, path, fmt.Sprintf(format, args...))
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("%w: %s", ErrMissingSpill, path)
	}
	if err != nil {
		return corrupt("%v", err)
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
	data, sum, err := decodeSpill(b, r.id, size)
	if err != nil {
		return corrupt("%v", err)
	}
	if sum != r.sum {
		return corrupt("the file holds other bytes than were spilled (CRC-32C %08x, spilled %08x): a file of an earlier spill", sum, r.sum)
	}
	return data, sum, nil
}
