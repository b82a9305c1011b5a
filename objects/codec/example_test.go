package codec_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/ray-go/ray/objects/codec"
)

type Job struct {
	Name    string    `cbor:"name"`
	Weights []float64 `cbor:"weights"`
}

func ExampleMarshal() {
	data, err := codec.Marshal(Job{Name: "train", Weights: []float64{0.5, 1}})
	if err != nil {
		panic(err)
	}
	job, err := codec.Unmarshal[Job](data)
	fmt.Printf("%c %+v %v\n", data[0], job, err)

	// a slice of numbers takes the raw path: 8-byte header, then the elements
	data, _ = codec.Marshal([]int64{1, 2, 3})
	fmt.Println(codec.FormatOf(data))
	fmt.Println(len(data))
	// Output:
	// C {Name:train Weights:[0.5 1]} <nil>
	// raw numeric slice <nil>
	// 32
}

func ExampleUnmarshal_mismatch() {
	data, _ := codec.Marshal([]int64{1, 2, 3})
	_, err := codec.Unmarshal[string](data)
	fmt.Println(err)
	fmt.Println(errors.Is(err, codec.ErrTypeMismatch))
	// Output:
	// codec: cannot decode raw []int64 data into string
	// true
}

func ExampleMarshal_unsupported() {
	_, err := codec.Marshal(make(chan int))
	fmt.Println(err)
	// Output:
	// codec: cannot encode chan int: channels cannot be sent to another process
}

func ExampleUnmarshalInto() {
	// what a function registry holding only reflect.Types does
	t := reflect.TypeFor[map[string]int]()
	data, _ := codec.MarshalValue(map[string]int{"b": 2, "a": 1})
	p := reflect.New(t)
	if err := codec.UnmarshalInto(data, p.Interface()); err != nil {
		panic(err)
	}
	fmt.Println(p.Elem().Interface())
	// Output: map[a:1 b:2]
}

// ObjectRef stands in for the runtime's reference type.
type ObjectRef struct{ id []byte }

func (r ObjectRef) RefPayload() []byte           { return r.id }
func (r ObjectRef) MarshalCBOR() ([]byte, error) { return codec.AppendRef(nil, r.id), nil }
func (r *ObjectRef) UnmarshalCBOR(b []byte) (err error) {
	r.id, err = codec.ParseRef(b)
	return err
}

func ExampleMarshalRefs() {
	type Batch struct {
		Inputs []ObjectRef
		Extra  any
	}
	v := Batch{Inputs: []ObjectRef{{[]byte("obj-1")}, {[]byte("obj-2")}}, Extra: ObjectRef{[]byte("obj-3")}}
	data, refs, err := codec.MarshalRefs(v)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", refs)
	back, _ := codec.Unmarshal[Batch](data)
	fmt.Printf("%s\n", back.Inputs[1].id)
	// Output:
	// ["obj-3" "obj-1" "obj-2"]
	// obj-2
}

// Celsius has its own compact encoding: a little-endian float32.
type Celsius float32

type celsiusCodec struct{}

func (celsiusCodec) Name() string { return "example.celsius/v1" }

func (celsiusCodec) MarshalAppend(dst []byte, v any) ([]byte, error) {
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(v.(Celsius)))), nil
}

func (celsiusCodec) Unmarshal(data []byte, ptr any) error {
	if len(data) != 4 {
		return fmt.Errorf("want 4 bytes, got %d", len(data))
	}
	*ptr.(*Celsius) = Celsius(math.Float32frombits(binary.LittleEndian.Uint32(data)))
	return nil
}

func init() {
	// Register at init time, in every process that encodes or decodes the type.
	codec.Register[Celsius](celsiusCodec{})
}

func ExampleRegister() {
	// Celsius was registered with celsiusCodec in init.
	data, _ := codec.Marshal(Celsius(21.5))
	fmt.Printf("%q\n", data)
	c, err := codec.Unmarshal[Celsius](data)
	fmt.Println(c, err)
	// Output:
	// "U\x12example.celsius/v1\x00\x00\xacA"
	// 21.5 <nil>
}
