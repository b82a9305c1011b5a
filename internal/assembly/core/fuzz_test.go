package core

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects/codec"
)

func nestedSeeds() [][]any {
	id := ids.ReturnID(ids.TaskID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 1) // fixed: seeds must not change from run to run
	owner := &pb.PID{Address: "127.0.0.1:4000", Id: "owner"}
	ref := func(p []byte) []byte { return codec.AppendRef(nil, p) }
	value := func(items ...[]byte) []byte {
		b := []byte{byte(codec.FormatCBOR), 0x80 | byte(len(items))}
		for _, it := range items {
			b = append(b, it...)
		}
		return b
	}
	good := RefPayload(id, owner)
	noOwner, _ := proto.Marshal(&pb.RefPayload{ObjectId: id[:]})
	badID, _ := proto.Marshal(&pb.RefPayload{ObjectId: id[:5], Owner: owner})
	return [][]any{
		{value(ref(good), ref(RefPayload(ids.ReturnID(id.Task(), 2), owner)))},
		{value()},
		{value(ref(noOwner))},
		{value(ref(badID))},
		{value(ref([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}))}, // a 4 GiB length inside the payload
		{value(ref(good[:len(good)-3]))},
		{[]byte{}},
	}
}

func TestFuzzNestedRefsCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzNestedRefs", nestedSeeds()) }

// FuzzNestedRefs feeds arbitrary encoded values to what a receiver runs on them to find
// the object references nested inside (codec.ScanRefs, then ParseNested): it must fail or
// return references with a valid object ID and an owner; never panic; allocate in
// proportion to the value; and the references, encoded again with RefPayload, must parse
// to the same ones.
func FuzzNestedRefs(f *testing.F) {
	_, _ = ParseNested([][]byte{RefPayload(ids.ObjectID{}, &pb.PID{})}) // protobuf's lazy set-up, outside the bound
	f.Fuzz(func(t *testing.T, value []byte) {
		var (
			nested []Nested
			err    error
		)
		fuzzing.CheckAlloc(t, 64*uint64(len(value))+64<<10, "ScanRefs and ParseNested", func() {
			var payloads [][]byte
			if payloads, err = codec.ScanRefs(value); err == nil {
				nested, err = ParseNested(payloads)
			}
		})
		if err != nil {
			return
		}
		payloads := make([][]byte, len(nested))
		for i, n := range nested {
			if n.Owner == nil {
				t.Fatalf("ref %d has no owner", i)
			}
			payloads[i] = RefPayload(n.ID, n.Owner)
		}
		again, err := ParseNested(payloads)
		if err != nil || len(again) != len(nested) {
			t.Fatalf("re-encoded refs: %d, %v; want %d", len(again), err, len(nested))
		}
		for i := range nested {
			if again[i].ID != nested[i].ID || !proto.Equal(again[i].Owner, nested[i].Owner) {
				t.Fatalf("ref %d differs after re-encoding", i)
			}
		}
	})
}
