// Package codec turns typed Go values into bytes and back: the values stored as objects
// and passed as task arguments and returns between processes.
//
// Both ends of a call know the static type (task functions are registered with typed
// arguments), so the API is generic:
//
//	data, err := codec.Marshal(v)             // v of type T
//	v, err := codec.Unmarshal[T](data)
//
// A function registry that only holds reflect.Types uses the type-erased forms, which
// share every code path with the generic ones:
//
//	data, err := codec.MarshalValue(arg)       // encoding chosen from arg's dynamic type
//	p := reflect.New(t)
//	err := codec.UnmarshalInto(data, p.Interface())
//	args[i] = p.Elem()
//
// # Formats
//
// The first byte of every encoding names its format, so decoding into the wrong type is
// an error naming both what the data holds and the requested type ("codec: cannot decode
// raw []int64 data into string"), never garbage. Formats are chosen in this order:
//
//	byte  format             chosen for                                   layout after the byte
//	'U'   user codec         a type with a registered Codec; protobuf     name length (1 byte), name, payload
//	                         message pointers (ProtoCodec, name "proto")
//	'B'   raw bytes          []byte and named []byte types                length (uvarint), the bytes
//	'S'   raw string         string and named string types                length (uvarint), the bytes
//	'N'   raw numeric slice  []int8 ... []float64, []int, []uint, []bool  kind byte, element count (6 bytes,
//	                         and named slices of those element kinds      little-endian), elements packed LE
//	'A'   Arrow record       arrow.Record                                 Arrow IPC stream: schema, 1 batch, EOS
//	'T'   Arrow table        arrow.Table                                  Arrow IPC stream: schema, n batches, EOS
//	'C'   CBOR               everything else, and nil                     one deterministic CBOR data item
//
// FormatOf reports the format of encoded data. The numeric kind byte uses Python struct
// letters: b int8, h int16, i int32, q int64, H uint16, I uint32, Q uint64, f float32,
// d float64, n int, N uint, ? bool. Go int and uint are always 8 bytes on the wire, so
// []int and []int64 data decode into each other (as do []uint and []uint64), and a 32-bit
// host decoding an int that does not fit gets an error. The numeric header is 8 bytes so
// the elements stay 8-byte aligned for a later zero-copy reader. Raw bytes and raw
// strings decode into each other's types too. Every format carries its length (CBOR and
// Arrow IPC by construction), so truncated data is always an error, never a shorter value.
//
// # CBOR
//
// The default format is CBOR (RFC 8949) from github.com/fxamacker/cbor/v2 in Core
// Deterministic mode: shortest integer and float forms, map keys sorted bytewise, no
// indefinite lengths, so equal values encode to equal bytes (whatever Go's map iteration
// order) and encodings can be hashed and compared. Struct fields follow encoding/json
// conventions: exported fields only, `cbor:"name,omitempty"` tags (json tags are read
// when there is no cbor tag), `cbor:"-"` to skip, embedded structs flattened. An
// unexported field that holds data is an error unless it is tagged `cbor:"-"` (see What
// cannot be encoded): encoding/json drops it without a word, but here the value would
// reach another process with that field zeroed. Other
// choices: time.Time is tag 0 with an RFC 3339 string to the nanosecond with its UTC
// offset (the monotonic reading and the Location's name are lost; compare with Equal);
// *big.Int is a CBOR integer when it fits in 64 bits and a bignum otherwise; NaN is the
// canonical quiet NaN (payload bits are not kept), -0.0 and infinities survive; types
// implementing cbor.Marshaler or encoding.BinaryMarshaler encode themselves.
//
// The encoder and decoder modes are built once. Decoding limits: 4096 levels of nesting
// (refused at encode time as well, so whatever encodes decodes), 2^28 elements per array
// or map, and CBOR's own check that the input is well formed before anything is
// allocated for it. Text strings need not be valid UTF-8, since Go strings need not be.
//
// # Fast paths
//
// []byte, string and the numeric slices above skip reflection: encoding allocates the
// result once, at its exact length, and fills it with one memmove on little-endian hosts
// (element by element on big-endian hosts, producing the same bytes); decoding does the
// same in reverse. Results of 32 KiB and more are allocated without being zeroed first
// (append into a fresh slice only clears the slack past the new length), so an 800 MiB
// []int64 encodes and decodes at memory-copy speed. Named types with these underlying
// types (type Vector []float64) take the same path through reflect. Plain integers and
// bools are written as CBOR by hand (byte for byte what the CBOR encoder writes) and read
// back without reflection, so a small int costs tens of nanoseconds; named integer and
// bool types without marshalers of their own (time.Duration, an enum) are written and read
// the same way through reflect, after one look-up of the type, not through the CBOR
// library (about a tenth of the library's cost). The results never
// alias the input, and Marshal and Unmarshal do not box their argument on these paths.
// UnmarshalOwned is for a caller that hands its input over (the task runtime, for an
// argument it read from another node into a buffer of its own): a []byte or string result,
// or a numeric slice of the stored element size (aligned, on a little-endian host), is
// then the input's payload itself, not a copy (200 MiB: ~0.2 µs against 24-47 ms,
// BenchmarkUnmarshalOwned).
//
// # Round trips
//
// Lossless(t) reports whether every value of t comes back whole (every field encoded, no
// interface inside, self-encoding types that decode themselves too); the actor runtime
// checkpoints an actor's state by itself when it does.
//
// # nil and empty
//
//	value                        encodes as    decodes as
//	nil slice, map, pointer      CBOR null     nil
//	empty slice or map           empty         empty, non-nil
//	nil interface (any(nil))     CBOR null     nil
//	"" / []byte{}                raw, empty    "" / []byte{} (non-nil)
//	nil protobuf message         empty message a new, empty message (non-nil)
//	nil arrow.Record/Table       CBOR null     nil
//
// A nil []int64 (or any fast-path slice) is CBOR null, not an empty raw slice, which is
// how nil and empty stay distinct. Decoding CBOR into a non-empty struct or map value
// merges, as fxamacker/cbor does; Unmarshal always starts from the zero value.
//
// # Interfaces
//
// A value whose static type is an interface (T = any, or MarshalValue) is encoded by its
// dynamic type, so Marshal[any]([]int64{...}) still takes the raw path. Decoding into an
// interface gives each format's natural Go type: []byte, string, the slice type of the
// numeric kind ([]int for kind n), arrow.Record or arrow.Table (caller releases), and for
// CBOR: int64 for integers that fit (else *big.Int), float64, bool, string, []byte,
// []any, map[any]any, time.Time, nil, and cbor.Tag for other tags (refs included). User
// codec data cannot be decoded into an interface: decode into the registered type.
//
// # What cannot be encoded
//
// Channels, functions, unsafe.Pointer, uintptr, complex numbers, structs with an
// unexported field that holds data (they would silently arrive without it), protobuf
// messages or Arrow values nested inside another value, and cyclic or more than 4096-deep
// values. Marshal returns an *UnsupportedTypeError naming the type, where inside it the
// problem is, and why: "codec: cannot encode chan int: channels cannot be sent to another
// process", "codec: cannot encode main.P: .hidden (int): unexported fields are not
// encoded, so the receiving process would see its zero value; export the field, or tag it
// `cbor:"-"` to leave it out on purpose (...)". An unexported field is fine when tagged
// `cbor:"-"` (or `json:"-"` without a cbor tag: left out on purpose, decoded as its zero
// value), when it is the blank field _, or when its type has size zero (struct{},
// [0]func()); so is any field inside a type the encoder treats as a whole (time.Time,
// *big.Int, types with MarshalCBOR or MarshalBinary, a registered Codec's type). CheckType
// reports the same for a type without a value, for a function registry to check the
// argument and result types of what it registers. The static part of this check runs once
// per type (cached in a sync.Map keyed by reflect.Type, with a direct-mapped array of the
// last types looked up in front); values of types that contain interfaces or are recursive
// are also walked before encoding, checking dynamic types, depth and cycles, because the
// CBOR encoder would otherwise recurse until the stack overflows. Types with neither pay
// nothing.
//
// # Arrow
//
// An arrow.Record is written as an Arrow IPC stream (schema, one record batch, end of
// stream) and an arrow.Table as a stream of its batches, after the format byte and 7 zero
// bytes (so that the stream's buffers are 8-byte aligned in memory); both decode
// (Unmarshal, UnmarshalRecord, UnmarshalTable) into values the caller must Release. The
// IPC metadata is bounds-checked before arrow/ipc reads it and panics from arrow/ipc on
// corrupt input are recovered, so corrupt Arrow data is an error too. Arrow values are
// only supported as the top-level value. Encoding measures the stream first and writes it
// into one buffer of exactly its size.
//
// Unmarshal decodes without copying: for plain layouts (fixed-width, binary and string,
// lists, fixed-size lists and structs of them) the arrays' buffers are the input's bytes
// (an object store's zero-copy read), after every length, buffer bound and offset has
// been checked against the input; other layouts go through arrow/ipc, which copies. So
// the input must not be modified while the value lives, and the value's buffers must not
// be modified (Arrow values are immutable; the runtime's stored objects are never
// modified nor reused while referenced, the garbage collector keeps them alive for the
// arrays). UnmarshalRecord and UnmarshalTable copy every buffer into memory from the
// given memory.Allocator: their result never aliases the input.
//
// # User codecs
//
// Register[T](c) makes a Codec the encoding of T, ahead of every built-in format (see
// Codec for the contract). The codec's name is written into the data and checked on
// decode. ProtoCodec encodes protobuf message pointers with deterministic protobuf
// encoding and is used for them without registration.
//
// # Object references inside values
//
// Ray lets a task argument or return hold references to other objects (nested
// ObjectRefs); the owner must know about them to count borrowers. A reference type
// implements Ref: its MarshalCBOR returns AppendRef(nil, payload), the CBOR tag RefTag
// around a byte string payload (object ID, owner: whatever the runtime needs), and its
// UnmarshalCBOR uses ParseRef. MarshalRefs encodes a value and returns the payloads of
// all references inside it, wherever they sit; ScanRefs does the same for received data.
// Only types that contain an interface or a custom CBOR marshaler are scanned, so plain
// data pays nothing (MayHoldRefs tells a type apart the same way, for decoders that look
// for references in decoded values). Raw, Arrow and user-codec formats cannot hold
// references.
//
// The layout is a wire format between the processes of one cluster, which run the same
// binary (see DESIGN.md), so it carries no version number; change it only together with
// every reader.
//
// Everything here is written on top of fxamacker/cbor, apache/arrow/go and
// google.golang.org/protobuf; the hand-written parts are the format header, the raw
// numeric paths (no library offers a copy-once typed slice format), the type check and
// value walk, the reference scanner (a minimal CBOR walker) and the Arrow IPC metadata
// bounds check.
package codec
