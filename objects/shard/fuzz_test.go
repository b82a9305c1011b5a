package shard

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/ids"
)

// spillSeeds: valid spill files of a few objects (empty, small, compressible, not) with
// their sizes, and the same files damaged where it matters: the length field (one bit
// flipped to claim 512 GiB, the bug this target was written for), the zstd frame's header,
// the body, the checksum, truncations, and a size that disagrees with the file.
func spillSeeds(t testing.TB) [][]any {
	var seeds [][]any
	add := func(file []byte, size int) { seeds = append(seeds, []any{file, uint32(size)}) }
	enc := func(data []byte) []byte {
		b, _, err := encodeSpill(fuzzID, data)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	objs := [][]byte{{}, []byte("x"), bytes.Repeat([]byte("ray-go "), 300), make([]byte, 5000)}
	noise := make([]byte, 700)
	for i := range noise {
		noise[i] = byte(i*131 + i>>3)
	}
	objs = append(objs, noise)
	for _, o := range objs {
		add(enc(o), len(o))
	}
	good := enc(objs[2])
	n := len(objs[2])
	flip := func(i int, mask byte) []byte {
		b := bytes.Clone(good)
		b[i] ^= mask
		return b
	}
	add(flip(4+4, 0x80), n)                                  // length +512 GiB (bit 39)
	add(flip(4+3, 0x01), n)                                  // length +16 MiB
	add(flip(spillHeader+5, 0x40), n)                        // the frame header's content size
	add(flip(len(good)-2, 0xff), n)                          // the body
	add(flip(12, 0x01), n)                                   // the checksum
	add(good[:len(good)/2], n)                               // truncated body
	add(good[:spillHeader], n)                               // header only
	add(good[:7], n)                                         // truncated header
	add(good, n+1)                                           // a size that disagrees
	add(append(bytes.Clone(good), good[spillHeader:]...), n) // two frames
	claim := bytes.Clone(good[:spillHeader])
	binary.LittleEndian.PutUint64(claim[4:], 1<<40)
	add(append(claim, good[spillHeader:]...), 1<<20) // a header and a size that agree, a body that does not
	other, _, err := encodeSpill(ids.PutID(fuzzID.Task(), 2), objs[2])
	if err != nil {
		t.Fatal(err)
	}
	add(other, n)            // another object's file
	add(flip(16+3, 0x01), n) // the ID
	return seeds
}

// fuzzID is the object the fuzz target's spill files are read as: the seeds are its files.
var fuzzID = ids.PutID(ids.TaskID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 1)

func TestFuzzSpillFileCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzSpillFile", spillSeeds(t)) }

// FuzzSpillFile feeds arbitrary spill file contents, with the object's size as the shard
// recorded it, to the reader of object fuzzID. It must return exactly size bytes that
// match the file's checksum, or an error; never panic; allocate in proportion to the known size, not to
// the file's claims; and what it accepts must encode to a file it accepts again.
func FuzzSpillFile(f *testing.F) {
	if _, _, err := codecs(); err != nil { // the decoders are made once, outside the bound
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, file []byte, size32 uint32) {
		size := int64(size32 % (8 << 20)) // the shard's record is trusted; keep it small here
		var (
			data []byte
			sum  uint32
			err  error
		)
		fuzzing.CheckAlloc(t, 2*uint64(size)+uint64(len(file))+8<<20, "decodeSpill", func() {
			data, sum, err = decodeSpill(file, fuzzID, size)
		})
		if err != nil {
			return
		}
		if int64(len(data)) != size || crc32.Checksum(data, castagnoli) != sum {
			t.Fatalf("accepted %d bytes with CRC %08x for a %d-byte object with CRC %08x", len(data), crc32.Checksum(data, castagnoli), size, sum)
		}
		again, _, err := encodeSpill(fuzzID, data)
		if err != nil {
			t.Fatal(err)
		}
		data2, sum2, err := decodeSpill(again, fuzzID, size)
		if err != nil || !bytes.Equal(data, data2) || sum2 != sum {
			t.Fatalf("re-encoded spill does not read back: %v", err)
		}
	})
}
