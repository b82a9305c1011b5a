package lineage

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// fuzzTask is the task every fuzzed record is read back for; the seeds describe it.
var fuzzTask = ids.TaskID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

func specSeeds() [][]any {
	arg := ids.ReturnID(fuzzTask, 3)
	full := &pb.TaskSpec{}
	fill(full.ProtoReflect(), 0)
	full.TaskId = fuzzTask[:]
	for _, a := range full.Args {
		a.ObjectId = arg[:]
	}
	specs := []*pb.TaskSpec{
		{TaskId: fuzzTask[:], Function: "demo.square", Args: []*pb.Arg{{Data: []byte{0x04}}, {ObjectId: arg[:], IsRef: true, NodeId: "n1", Size: 1 << 20}}},
		{TaskId: fuzzTask[:]},
		full,
	}
	var seeds [][]any
	for _, s := range specs {
		seeds = append(seeds, []any{AppendSpec(nil, s)})
	}
	rec := AppendSpec(nil, specs[0])
	seeds = append(seeds,
		[]any{rec[:len(rec)-3]},                                 // truncated
		[]any{append(bytes.Clone(rec), 0xa2, 0x06, 0)},          // an unknown field 100
		[]any{AppendSpec(nil, &pb.TaskSpec{TaskId: []byte{9}})}, // another task
		[]any{AppendSpec(nil, &pb.TaskSpec{TaskId: fuzzTask[:], Args: []*pb.Arg{{IsRef: true, ObjectId: []byte{1}}}})}, // a bad argument
		[]any{[]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}},                                                              // a 4 GiB length prefix
		[]any{[]byte{}},
	)
	return seeds
}

func TestFuzzDecodeSpecCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzDecodeSpec", specSeeds()) }

// clearUnknown drops the unknown fields of m and its messages (AppendSpec writes only the
// fields it knows; proto.Marshal writes unknown ones back).
func clearUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case f.Kind() != protoreflect.MessageKind:
		case f.IsList():
			for i := 0; i < v.List().Len(); i++ {
				clearUnknown(v.List().Get(i).Message())
			}
		default:
			clearUnknown(v.Message())
		}
		return true
	})
}

// FuzzDecodeSpec feeds arbitrary lineage records to DecodeSpec. It must fail or return
// the record's own task with valid reference arguments; never panic; allocate in
// proportion to the record; and what it accepts must encode (AppendSpec) to the bytes
// proto.Marshal gives, which decode to the same spec.
func FuzzDecodeSpec(f *testing.F) {
	_, _, _ = DecodeSpec(fuzzTask, specSeeds()[2][0].([]byte)) // protobuf's lazy set-up, outside the bound
	f.Fuzz(func(t *testing.T, rec []byte) {
		var (
			spec *pb.TaskSpec
			refs []ids.ObjectID
			err  error
		)
		fuzzing.CheckAlloc(t, 64*uint64(len(rec))+64<<10, "DecodeSpec", func() { spec, refs, err = DecodeSpec(fuzzTask, rec) })
		if err != nil {
			return
		}
		if string(spec.TaskId) != string(fuzzTask[:]) {
			t.Fatalf("accepted a record of task %x", spec.TaskId)
		}
		n := 0
		for _, a := range spec.Args {
			if a.IsRef {
				if string(a.ObjectId) != string(refs[n][:]) {
					t.Fatalf("reference %d is %x, the spec says %x", n, refs[n], a.ObjectId)
				}
				n++
			}
		}
		if n != len(refs) {
			t.Fatalf("%d references for %d reference arguments", len(refs), n)
		}
		clearUnknown(spec.ProtoReflect())
		enc := AppendSpec(nil, spec)
		want, err := proto.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, want) {
			t.Fatalf("AppendSpec differs from proto.Marshal:\n%x\n%x", enc, want)
		}
		again, _, err := DecodeSpec(fuzzTask, enc)
		if err != nil || !proto.Equal(again, spec) {
			t.Fatalf("re-encoded record does not decode to the same spec: %v", err)
		}
	})
}

// TestDecodeSpecErrors: a record that cannot be used says why.
func TestDecodeSpecErrors(t *testing.T) {
	for _, c := range []struct {
		rec  []byte
		want string
	}{
		{[]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, "is corrupt: proto"},
		{AppendSpec(nil, &pb.TaskSpec{TaskId: []byte{9}}), "it describes task 09"},
		{AppendSpec(nil, &pb.TaskSpec{TaskId: fuzzTask[:], Args: []*pb.Arg{{}, {IsRef: true, ObjectId: []byte{1}}}}), "argument 2"},
	} {
		if _, _, err := DecodeSpec(fuzzTask, c.rec); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), fuzzTask.String()) {
			t.Errorf("%x: %v, want an error naming the task and %q", c.rec, err, c.want)
		}
	}
}
