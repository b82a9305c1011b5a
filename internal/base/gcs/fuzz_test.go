package gcs

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/s2"

	"github.com/ray-go/ray/internal/base/fuzzing"
)

// framePage builds the raw frames of recs, as a Packer appends them.
func framePage(recs []Record) []byte {
	var raw []byte
	for _, r := range recs {
		raw = binary.AppendUvarint(raw, uint64(len(r.ID)))
		raw = append(raw, r.ID...)
		raw = binary.AppendUvarint(raw, uint64(len(r.Data)))
		raw = append(raw, r.Data...)
	}
	return raw
}

func pageSeeds() [][]any {
	recs := []Record{{ID: "task-1", Data: []byte("spec one")}, {ID: "task-2", Data: bytes.Repeat([]byte{7}, 3000)}, {ID: "task-1", Data: []byte("newer")}}
	good := encodePage(framePage(recs))
	raw := framePage(recs)
	withVersion := func(b []byte) []byte { return append([]byte{pageVersion}, b...) }
	return [][]any{
		{good},
		{encodePage(framePage(recs[:1]))},
		{encodePage(nil)},
		{encodePage(framePage([]Record{{ID: "", Data: nil}}))},
		{good[:len(good)/2]},                                                // truncated s2 block
		{append([]byte{2}, good[1:]...)},                                    // another version
		{withVersion(s2.Encode(nil, raw[:len(raw)-2]))},                     // a truncated frame inside
		{withVersion(s2.Encode(nil, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}))}, // a 4 GiB record length
		{withVersion([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})},                 // an s2 block that claims 4 GiB
		{withVersion(s2.Encode(nil, make([]byte, 2*MaxRecordBytes+1)))},     // decodes past the bound
		{[]byte{}},
	}
}

func TestFuzzDecodePageCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzDecodePage", pageSeeds()) }

// FuzzDecodePage feeds arbitrary values to the reader of packed pages (lineage and
// object-table pages read back from etcd). It must fail or return records; never panic;
// allocate within a bound set by the page size limit, whatever the lengths inside say;
// and what it accepts must frame and encode to a page that decodes to the same records.
func FuzzDecodePage(f *testing.F) {
	f.Fuzz(func(t *testing.T, value []byte) {
		var (
			recs []Record
			err  error
		)
		// Raw pages are at most 2*MaxRecordBytes; a record costs its frame (2 bytes at
		// least) plus a Record and an ID string, less than 64 bytes per raw byte.
		fuzzing.CheckAlloc(t, 64*2*MaxRecordBytes+uint64(len(value)), "DecodePage", func() { recs, err = DecodePage(value) })
		if err != nil {
			return
		}
		again, err := DecodePage(encodePage(framePage(recs)))
		if err != nil || len(again) != len(recs) {
			t.Fatalf("re-encoded page: %d records, %v; want %d", len(again), err, len(recs))
		}
		for i, r := range recs {
			if again[i].ID != r.ID || !bytes.Equal(again[i].Data, r.Data) {
				t.Fatalf("record %d differs after re-encoding", i)
			}
		}
	})
}
