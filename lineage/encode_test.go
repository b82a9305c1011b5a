package lineage

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ray-go/ray/internal/base/pb"
)

// fill sets every field of m (recursively) to a non-zero value derived from seed, so that
// a field the hand-written encoder does not know makes the encodings differ.
func fill(m protoreflect.Message, seed int64) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		v := seed + int64(i) + 1
		var val protoreflect.Value
		switch f.Kind() {
		case protoreflect.BytesKind:
			val = protoreflect.ValueOfBytes([]byte{byte(v), 0xfe, byte(v >> 8)})
		case protoreflect.StringKind:
			val = protoreflect.ValueOfString("s" + string(rune('a'+v%26)))
		case protoreflect.BoolKind:
			val = protoreflect.ValueOfBool(true)
		case protoreflect.Int32Kind:
			val = protoreflect.ValueOfInt32(int32(-v)) // negative: 10-byte varints
		case protoreflect.Int64Kind:
			val = protoreflect.ValueOfInt64(v << 40)
		case protoreflect.MessageKind:
			if f.IsList() {
				l := m.Mutable(f).List()
				for j := 0; j < 3; j++ {
					e := l.NewElement()
					fill(e.Message(), v*10+int64(j))
					l.Append(e)
				}
				continue
			}
			fill(m.Mutable(f).Message(), v*10)
			continue
		default:
			panic("fill: unhandled kind " + f.Kind().String() + " of " + string(f.FullName()))
		}
		if f.IsList() {
			l := m.Mutable(f).List()
			l.Append(val)
			l.Append(val)
			continue
		}
		m.Set(f, val)
	}
}

func TestAppendSpecMatchesProto(t *testing.T) {
	full := &pb.TaskSpec{}
	fill(full.ProtoReflect(), 0)
	partial := &pb.TaskSpec{TaskId: []byte{1, 2}, Function: "f", Args: []*pb.Arg{{Data: []byte("x")}, {ObjectId: []byte{9}, IsRef: true}, {}}}
	tests := []struct {
		name string
		spec *pb.TaskSpec
	}{
		{"empty", &pb.TaskSpec{}},
		{"every field set", full},
		{"some fields, empty arg", partial},
		{"zero owner", &pb.TaskSpec{Owner: &pb.PID{}}},
	}
	for _, tc := range tests {
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendSpec([]byte("prefix"), tc.spec)
		if !bytes.Equal(got[len("prefix"):], want) {
			t.Errorf("%s: AppendSpec differs from proto.Marshal\n got %x\nwant %x", tc.name, got[6:], want)
		}
		var back pb.TaskSpec
		if err := proto.Unmarshal(got[len("prefix"):], &back); err != nil || !proto.Equal(&back, tc.spec) {
			t.Errorf("%s: round trip: %v", tc.name, err)
		}
	}
}

func BenchmarkAppendSpec(b *testing.B) {
	s := &pb.TaskSpec{TaskId: make([]byte, 16), JobId: "abcd", Function: "microbench.small_value", ParentTaskId: make([]byte, 16),
		Owner: &pb.PID{Address: "127.0.0.1:34567", Id: "owner-abcd-12345678"}, NumReturns: 1, MaxRetries: 3,
		Resources: []*pb.ResourceQty{{Name: "CPU", Amount: 10000}}}
	b.Run("hand", func(b *testing.B) {
		buf := make([]byte, 0, 256)
		for i := 0; i < b.N; i++ {
			buf = AppendSpec(buf[:0], s)
		}
	})
	b.Run("proto", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := proto.Marshal(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
