package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// point has a hand-written 8-byte codec, registered below.
type point struct{ X, Y int32 }

type pointCodec struct{}

func (pointCodec) Name() string { return "test.point/v1" }

func (pointCodec) MarshalAppend(dst []byte, v any) ([]byte, error) {
	p := v.(point)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(p.X))
	return binary.LittleEndian.AppendUint32(dst, uint32(p.Y)), nil
}

func (pointCodec) Unmarshal(data []byte, ptr any) error {
	if len(data) != 8 {
		return fmt.Errorf("point needs 8 bytes, got %d", len(data))
	}
	*ptr.(*point) = point{int32(binary.LittleEndian.Uint32(data)), int32(binary.LittleEndian.Uint32(data[4:]))}
	return nil
}

// matrix is a fast-path type (a []float64) whose registered codec must win.
type matrix []float64

type matrixCodec struct{}

func (matrixCodec) Name() string { return "test.matrix" }
func (matrixCodec) MarshalAppend(dst []byte, v any) ([]byte, error) {
	return append(dst, byte(len(v.(matrix)))), nil
}
func (matrixCodec) Unmarshal(data []byte, ptr any) error {
	*ptr.(*matrix) = make(matrix, data[0])
	return nil
}

// panicky's codec panics on decode; the panic must become an error.
type panicky struct{ A int }

type panicCodec struct{}

func (panicCodec) Name() string                                    { return "test.panic" }
func (panicCodec) MarshalAppend(dst []byte, v any) ([]byte, error) { return append(dst, 1), nil }
func (panicCodec) Unmarshal([]byte, any) error                     { panic("boom") }

func init() {
	Register[point](pointCodec{})
	Register[matrix](matrixCodec{})
	Register[panicky](panicCodec{})
	Register[*wrapperspb.BytesValue](ProtoCodec{}) // explicit registration works too
}

func TestUserCodec(t *testing.T) {
	data := mustMarshal(t, point{1, -2})
	want := append([]byte{'U', byte(len("test.point/v1"))}, "test.point/v1"...)
	want = append(want, 1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff)
	if string(data) != string(want) {
		t.Fatalf("got % x, want % x", data, want)
	}
	checkEqual(t, roundTrip(t, point{1, -2}, FormatUser), point{1, -2})

	// precedence over the raw fast path
	if got := roundTrip(t, matrix{1, 2, 3}, FormatUser); len(got) != 3 {
		t.Fatalf("matrix codec not used: %v", got)
	}
	// through an interface, the dynamic type's codec is used
	d, _ := Marshal[any](point{3, 4})
	if Format(d[0]) != FormatUser {
		t.Fatalf("Marshal[any](point) format %v", Format(d[0]))
	}

	mismatches := []struct {
		name string
		err  error
		want []string
	}{
		{"codec-data-into-other-type", decodeErr[struct{ X, Y int32 }](data), []string{`data of codec "test.point/v1"`, "no codec is registered"}},
		{"codec-data-into-any", decodeErr[any](data), []string{`data of codec "test.point/v1"`, "into interface {}"}},
		{"cbor-into-codec-type", decodeErr[point](mustMarshal(t, struct{ X, Y int32 }{})), []string{"CBOR map", "into codec.point", `codec "test.point/v1"`}},
		{"raw-into-codec-type", decodeErr[matrix](mustMarshal(t, []float64{1})), []string{"raw []float64 data", "into codec.matrix"}},
		{"other-codec-into-codec-type", decodeErr[point](mustMarshal(t, matrix{})), []string{`data of codec "test.matrix"`, "into codec.point"}},
		{"proto-into-codec-type", decodeErr[point](mustMarshal(t, wrapperspb.String("x"))), []string{`data of codec "proto"`}},
	}
	for _, c := range mismatches {
		t.Run(c.name, func(t *testing.T) {
			if !errors.Is(c.err, ErrTypeMismatch) {
				t.Fatalf("error %v is not a type mismatch", c.err)
			}
			for _, w := range c.want {
				if !strings.Contains(c.err.Error(), w) {
					t.Fatalf("error %q does not mention %q", c.err, w)
				}
			}
		})
	}

	// decoder errors and panics are reported, never propagated as panics
	if err := decodeErr[point](append(data, 9)); err == nil || !strings.Contains(err.Error(), "8 bytes") {
		t.Fatalf("bad payload: %v", err)
	}
	if err := decodeErr[panicky](mustMarshal(t, panicky{})); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("panicking codec: %v", err)
	}
}

func TestRegisterPanics(t *testing.T) {
	type fresh struct{ A int }
	cases := map[string]func(){
		"nil":       func() { Register[fresh](nil) },
		"empty":     func() { Register[fresh](namedCodec("")) },
		"long":      func() { Register[fresh](namedCodec(strings.Repeat("x", 256))) },
		"interface": func() { Register[fmt.Stringer](namedCodec("s")) },
		"duplicate": func() { Register[point](namedCodec("again")) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}

type namedCodec string

func (n namedCodec) Name() string                                  { return string(n) }
func (namedCodec) MarshalAppend(dst []byte, v any) ([]byte, error) { return dst, nil }
func (namedCodec) Unmarshal([]byte, any) error                     { return nil }

func TestProtoCodec(t *testing.T) {
	s := wrapperspb.String("hello")
	data := mustMarshal(t, s)
	if Format(data[0]) != FormatUser || !strings.HasPrefix(string(data[2:]), "proto") {
		t.Fatalf("proto message encoded as % x", data)
	}
	got := roundTrip(t, s, FormatUser)
	if !proto.Equal(got, s) {
		t.Fatalf("got %v", got)
	}
	st, err := structpb.NewStruct(map[string]any{"a": 1.5, "b": []any{"x", true}, "c": map[string]any{"d": nil}})
	if err != nil {
		t.Fatal(err)
	}
	if got := roundTrip(t, st, FormatUser); !proto.Equal(got, st) {
		t.Fatalf("struct: got %v", got)
	}
	// deterministic: a map-bearing message encodes the same every time
	first := mustMarshal(t, st)
	for i := 0; i < 10; i++ {
		if string(mustMarshal(t, st)) != string(first) {
			t.Fatal("proto encoding not deterministic")
		}
	}
	ts := timestamppb.Now()
	if got := roundTrip(t, ts, FormatUser); !proto.Equal(got, ts) {
		t.Fatal("timestamp differs")
	}
	bv := wrapperspb.Bytes([]byte{1, 2})
	if got := roundTrip(t, bv, FormatUser); !proto.Equal(got, bv) {
		t.Fatal("explicitly registered message differs")
	}
	// nil message -> empty, non-nil message
	var nilMsg *wrapperspb.StringValue
	got, err = Unmarshal[*wrapperspb.StringValue](mustMarshal(t, nilMsg))
	if err != nil || got == nil || got.Value != "" {
		t.Fatalf("nil message: %v, %v", got, err)
	}
	// type-erased decode
	var into *wrapperspb.StringValue
	if err := UnmarshalInto(data, &into); err != nil || into.GetValue() != "hello" {
		t.Fatalf("UnmarshalInto: %v, %v", into, err)
	}
	// mismatches
	if err := decodeErr[int](data); !errors.Is(err, ErrTypeMismatch) || !strings.Contains(err.Error(), `data of codec "proto"`) {
		t.Fatalf("proto into int: %v", err)
	}
	if err := decodeErr[*wrapperspb.StringValue](mustMarshal(t, 5)); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("int into proto: %v", err)
	}
	// corrupt payload
	bad := append(append([]byte{}, data[:7]...), 0xff, 0xff)
	if err := decodeErr[*wrapperspb.StringValue](bad); err == nil {
		t.Fatal("corrupt proto payload accepted")
	}
	// nested messages and non-pointer messages are refused
	if _, err := Marshal(struct{ M *wrapperspb.StringValue }{s}); !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), "protobuf") {
		t.Fatalf("nested message: %v", err)
	}
	if _, err := Marshal([]any{s}); !errors.Is(err, ErrUnsupportedType) {
		t.Fatalf("message in []any: %v", err)
	}
}
