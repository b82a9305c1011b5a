package codec

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
)

// Codec is a user-supplied encoding for one Go type, plugged in with Register: protobuf
// messages (see ProtoCodec), a hand-tuned binary layout, a compressed form.
//
// Contract: Name is stable across versions and processes and identifies the format (not
// the type: one codec may serve several types); it is written into every value the codec
// encodes and checked when decoding. MarshalAppend appends the encoding of v to dst and
// returns the extended slice; v's dynamic type is the registered type. Unmarshal decodes
// data into ptr, a non-nil pointer to the registered type; it must not keep data after it
// returns, and must return an error, never panic, on malformed data (a panic is recovered
// and reported as corrupt data anyway). Implementations must be safe for concurrent use.
//
// User codecs are opaque to the codec package: values they encode cannot carry nested
// object references that MarshalRefs reports.
type Codec interface {
	Name() string
	MarshalAppend(dst []byte, v any) ([]byte, error)
	Unmarshal(data []byte, ptr any) error
}

// maxCodecName bounds Codec.Name: its length is one header byte.
const maxCodecName = 255

var (
	registryMu sync.Mutex
	registry   atomic.Pointer[map[reflect.Type]Codec] // copy on write; nil while empty
)

// Register makes c the encoding of type T, taking precedence over every built-in format
// (including ProtoCodec for protobuf messages). It applies to values whose static type is
// T, or whose dynamic type is T when encoded through an interface or MarshalValue; a T
// nested inside a CBOR-encoded value is still encoded as CBOR. Register is meant for init
// time, in every process that encodes or decodes T (task workers run the same binary).
// It panics if c is nil, its name is empty or longer than 255 bytes, T is an interface
// type, or T already has a codec.
func Register[T any](c Codec) {
	t := reflect.TypeFor[T]()
	switch {
	case c == nil:
		panic("codec: Register of a nil Codec for " + t.String())
	case c.Name() == "" || len(c.Name()) > maxCodecName:
		panic(fmt.Sprintf("codec: Register %v: codec name %q must be 1 to %d bytes", t, c.Name(), maxCodecName))
	case t.Kind() == reflect.Interface:
		panic("codec: Register needs a concrete type, not interface " + t.String())
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	next := make(map[reflect.Type]Codec)
	if cur := registry.Load(); cur != nil {
		if old, ok := (*cur)[t]; ok {
			panic(fmt.Sprintf("codec: Register %v: already registered with codec %q", t, old.Name()))
		}
		for k, v := range *cur {
			next[k] = v
		}
	}
	next[t] = c
	registry.Store(&next)
}

func lookupCodec(t reflect.Type) Codec {
	m := registry.Load()
	if m == nil {
		return nil
	}
	return (*m)[t]
}

// encodeUser writes FormatUser: 'U', the name's length (one byte), the name, the payload.
func encodeUser(c Codec, v any) ([]byte, error) {
	name := c.Name()
	dst := make([]byte, 2+len(name), 2+len(name)+64)
	dst[0] = byte(FormatUser)
	dst[1] = byte(len(name))
	copy(dst[2:], name)
	out, err := c.MarshalAppend(dst, v)
	if err != nil {
		return nil, fmt.Errorf("codec: %q codec cannot encode %T: %w", name, v, err)
	}
	return out, nil
}

// splitUser returns the codec name and payload of FormatUser data.
func splitUser(data []byte) (name string, payload []byte, err error) {
	if len(data) < 2 || len(data) < 2+int(data[1]) {
		return "", nil, corruptf("user codec", "header truncated")
	}
	n := int(data[1])
	return string(data[2 : 2+n]), data[2+n:], nil
}

func decodeUser(data []byte, c Codec, ptr any, t reflect.Type) (err error) {
	if Format(data[0]) != FormatUser {
		return &TypeMismatchError{Stored: storedName(data), Want: t, Err: fmt.Errorf("%v is encoded with codec %q", t, c.Name())}
	}
	name, payload, err := splitUser(data)
	if err != nil {
		return err
	}
	if name != c.Name() {
		return &TypeMismatchError{Stored: fmt.Sprintf("data of codec %q", name), Want: t,
			Err: fmt.Errorf("%v is encoded with codec %q", t, c.Name())}
	}
	defer func() {
		if r := recover(); r != nil {
			err = corruptf("codec "+name, "decoder panicked: %v", r)
		}
	}()
	if err := c.Unmarshal(payload, ptr); err != nil {
		return fmt.Errorf("codec: %q codec cannot decode into %v: %w", name, t, err)
	}
	return nil
}

// ProtoCodec encodes protobuf messages (pointer types implementing proto.Message) with
// deterministic protobuf encoding. Protobuf message pointers use it without registration;
// Register[*pb.M](ProtoCodec{}) is only needed to be explicit. A nil message encodes as an
// empty message and decodes as a new, empty, non-nil one. Its name is "proto".
type ProtoCodec struct{}

var protoMarshal = proto.MarshalOptions{Deterministic: true}

// Name returns "proto".
func (ProtoCodec) Name() string { return "proto" }

// MarshalAppend appends the deterministic protobuf encoding of v, a proto.Message.
func (ProtoCodec) MarshalAppend(dst []byte, v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a proto.Message", v)
	}
	return protoMarshal.MarshalAppend(dst, m)
}

// Unmarshal decodes data into ptr, a pointer to a message pointer (**pb.M), allocating the
// message if it is nil.
func (ProtoCodec) Unmarshal(data []byte, ptr any) error {
	rv := reflect.ValueOf(ptr)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Pointer {
		return fmt.Errorf("ProtoCodec.Unmarshal needs a pointer to a message pointer, got %T", ptr)
	}
	mv := rv.Elem()
	if mv.IsNil() {
		mv.Set(reflect.New(mv.Type().Elem()))
	}
	m, ok := mv.Interface().(proto.Message)
	if !ok {
		return errors.New(mv.Type().String() + " is not a proto.Message")
	}
	return proto.Unmarshal(data, m)
}
