package codec

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
)

// Format is the first byte of every encoded value: it says how the rest is laid out. The
// values are printable ASCII so that a hex dump of an object is easy to read.
type Format byte

// The formats. See the package documentation for the layout of each.
const (
	FormatCBOR        Format = 'C' // deterministic CBOR (the default)
	FormatBytes       Format = 'B' // raw []byte
	FormatString      Format = 'S' // raw string (UTF-8 or not)
	FormatNumeric     Format = 'N' // raw little-endian numeric slice with an element kind
	FormatArrowRecord Format = 'A' // Arrow IPC stream: schema and exactly one record batch
	FormatArrowTable  Format = 'T' // Arrow IPC stream: schema and zero or more record batches
	FormatUser        Format = 'U' // a registered Codec, named in the header
)

// String returns the format's name, or "format(0x..)" for an unknown byte.
func (f Format) String() string {
	switch f {
	case FormatCBOR:
		return "CBOR"
	case FormatBytes:
		return "raw bytes"
	case FormatString:
		return "raw string"
	case FormatNumeric:
		return "raw numeric slice"
	case FormatArrowRecord:
		return "Arrow IPC record"
	case FormatArrowTable:
		return "Arrow IPC table"
	case FormatUser:
		return "user codec"
	}
	return fmt.Sprintf("format(0x%02x)", byte(f))
}

// FormatOf returns the format of encoded data, or an error wrapping ErrCorrupt if data is
// empty or starts with an unknown format byte. It does not validate the rest.
func FormatOf(data []byte) (Format, error) {
	if len(data) == 0 {
		return 0, corruptf("", "empty input")
	}
	switch f := Format(data[0]); f {
	case FormatCBOR, FormatBytes, FormatString, FormatNumeric, FormatArrowRecord, FormatArrowTable, FormatUser:
		return f, nil
	}
	return 0, corruptf("", "unknown format byte 0x%02x", data[0])
}

// Marshal encodes v. Both ends of a task call know T statically; the encoding is chosen from
// T (and, when T is an interface type, from v's dynamic type): a registered Codec first,
// then the raw fast paths, Arrow, protobuf, and deterministic CBOR for everything else.
// Types that cannot cross a process boundary (channels, functions, ...) give an error
// wrapping ErrUnsupportedType. The result never aliases v's memory.
func Marshal[T any](v T) ([]byte, error) {
	// encodeFast does not let v escape, so this conversion stays on the stack; only the
	// general path pays for boxing v.
	if data, ok := encodeFast(any(v)); ok {
		return data, nil
	}
	if data, ok := encodeScalarAt(unsafe.Pointer(&v), reflect.TypeFor[T]()); ok {
		return data, nil
	}
	return encodeSlow(any(v))
}

// MarshalValue is the type-erased form of Marshal, for callers that only hold an any (a
// function registry working with reflect.Values). The encoding is chosen from v's dynamic
// type, exactly as Marshal[T] does when T is that type; a nil v encodes as CBOR null.
func MarshalValue(v any) ([]byte, error) {
	return encode(v)
}

// MarshalRefs is Marshal that also reports the object references (see Ref) nested in v:
// the payload of every RefTag item in the encoding, in encoding order, duplicates kept. The
// payloads alias data. Types that cannot hold references (no interface, no custom CBOR
// marshaler anywhere inside) skip the scan, so this costs the same as Marshal for them.
func MarshalRefs[T any](v T) (data []byte, refs [][]byte, err error) {
	// As in Marshal: the fast paths box v on the stack, and none of their types can hold
	// a reference.
	if data, ok := encodeFast(any(v)); ok {
		return data, nil, nil
	}
	if data, ok := encodeScalarAt(unsafe.Pointer(&v), reflect.TypeFor[T]()); ok {
		return data, nil, nil // a scalar holds no reference
	}
	return encodeRefs(any(v))
}

// MarshalValueRefs is the type-erased form of MarshalRefs.
func MarshalValueRefs(v any) (data []byte, refs [][]byte, err error) {
	return encodeRefs(v)
}

// Unmarshal decodes data, as produced by Marshal[T] (or by Marshal of a compatible type),
// into a new T. A mismatch between what data holds and T gives an error wrapping
// ErrTypeMismatch that names both; malformed or truncated data gives an error wrapping
// ErrCorrupt. Unmarshal never panics on bad input and the result never aliases data.
// When T is arrow.Record or arrow.Table the caller owns the result and must Release it.
func Unmarshal[T any](data []byte) (T, error) {
	var out T
	// decodeFast does not let &out escape, so out stays on the stack for the fast paths.
	if ok, err := decodeFast(data, &out); ok {
		return out, err
	}
	if decodeScalarAt(data, unsafe.Pointer(&out), reflect.TypeFor[T]()) {
		return out, nil
	}
	return unmarshalSlow[T](data)
}

func unmarshalSlow[T any](data []byte) (T, error) {
	var out T
	err := decodeInto(data, &out, reflect.TypeFor[T]())
	return out, err
}

// UnmarshalInto is the type-erased form of Unmarshal: ptr must be a non-nil pointer, and
// data is decoded into the value it points to (the registry's pattern is
// p := reflect.New(t); UnmarshalInto(data, p.Interface()); arg := p.Elem()). The pointed-to
// value is overwritten, not merged into, except for CBOR into a non-empty struct or map,
// which follows CBOR's merge rules; pass a zero value to be safe.
func UnmarshalInto(data []byte, ptr any) error {
	rv := reflect.ValueOf(ptr)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("codec: UnmarshalInto needs a non-nil pointer, got %T", ptr)
	}
	if ok, err := decodeFast(data, ptr); ok {
		return err
	}
	return decodeInto(data, ptr, rv.Type().Elem())
}

// encodeFast encodes the common types that need no reflection: the raw fast paths and
// plain integers and booleans (written as CBOR by hand, byte for byte what the CBOR
// encoder writes). ok is false for anything else, and for types with a registered codec.
// It must not let v escape.
func encodeFast(v any) (data []byte, ok bool) {
	if registry.Load() != nil && lookupCodec(reflect.TypeOf(v)) != nil {
		return nil, false
	}
	switch x := v.(type) {
	case int:
		return cborInt(int64(x)), true
	case int64:
		return cborInt(x), true
	case int32:
		return cborInt(int64(x)), true
	case int16:
		return cborInt(int64(x)), true
	case int8:
		return cborInt(int64(x)), true
	case uint:
		return cborUint(uint64(x)), true
	case uint64:
		return cborUint(x), true
	case uint32:
		return cborUint(uint64(x)), true
	case uint16:
		return cborUint(uint64(x)), true
	case uint8:
		return cborUint(uint64(x)), true
	case bool:
		return cborBool(x), true
	case []byte:
		if x == nil {
			return cborNull(), true
		}
		return encodeBytes(x), true
	case string:
		return encodeString(x), true
	case []int64:
		return encodeNumSlice(kInt64, x), true
	case []float64:
		return encodeNumSlice(kFloat64, x), true
	case []int:
		return encodeNumSlice(kInt, x), true
	case []int32:
		return encodeNumSlice(kInt32, x), true
	case []float32:
		return encodeNumSlice(kFloat32, x), true
	case []uint64:
		return encodeNumSlice(kUint64, x), true
	case []uint32:
		return encodeNumSlice(kUint32, x), true
	case []int16:
		return encodeNumSlice(kInt16, x), true
	case []uint16:
		return encodeNumSlice(kUint16, x), true
	case []int8:
		return encodeNumSlice(kInt8, x), true
	case []uint:
		return encodeNumSlice(kUint, x), true
	case []bool:
		return encodeNumSlice(kBool, x), true
	}
	return nil, false
}

// encode picks the format for v's dynamic type.
func encode(v any) ([]byte, error) {
	if data, ok := encodeFast(v); ok {
		return data, nil
	}
	return encodeSlow(v)
}

// encodeSlow is encode for what encodeFast does not handle.
func encodeSlow(v any) ([]byte, error) {
	data, _, err := encodeSlowInfo(v)
	return data, err
}

// encodeSlowInfo is encodeSlow that also returns what the codec knows of v's type when it
// looked it up (nil for nil, user codecs and Arrow), so that encodeRefs need not look
// again.
func encodeSlowInfo(v any) ([]byte, *typeInfo, error) {
	if v == nil {
		return cborNull(), nil, nil
	}
	if c := lookupCodec(reflect.TypeOf(v)); c != nil {
		data, err := encodeUser(c, v)
		return data, nil, err
	}
	switch x := v.(type) {
	case arrow.Record:
		data, err := encodeArrowRecord(x)
		return data, nil, err
	case arrow.Table:
		data, err := encodeArrowTable(x)
		return data, nil, err
	}
	ti := info(reflect.TypeOf(v))
	if ti.err != nil {
		return nil, ti, ti.err
	}
	if ti.scalar {
		return encodeScalar(reflect.ValueOf(v)), ti, nil
	}
	if ti.proto {
		data, err := encodeUser(ProtoCodec{}, v)
		return data, ti, err
	}
	if ti.raw != rawNone {
		return encodeRawReflect(ti, reflect.ValueOf(v)), ti, nil
	}
	if ti.walk {
		if err := walkValue(ti, reflect.ValueOf(v)); err != nil {
			return nil, ti, err
		}
	}
	data, err := encodeCBOR(v)
	return data, ti, err
}

// encodeScalarAt encodes the value of type t at p when t is a scalar type
// (typeInfo.scalar) and no codec is registered for it, as encodeSlow would, without
// boxing it; ok is false otherwise. p does not escape.
func encodeScalarAt(p unsafe.Pointer, t reflect.Type) (data []byte, ok bool) {
	if !scalarKind(t.Kind()) || registry.Load() != nil && lookupCodec(t) != nil || !info(t).scalar {
		return nil, false
	}
	switch t.Kind() {
	case reflect.Bool:
		return cborBool(*(*bool)(p)), true
	case reflect.Int:
		return cborInt(int64(*(*int)(p))), true
	case reflect.Int8:
		return cborInt(int64(*(*int8)(p))), true
	case reflect.Int16:
		return cborInt(int64(*(*int16)(p))), true
	case reflect.Int32:
		return cborInt(int64(*(*int32)(p))), true
	case reflect.Int64:
		return cborInt(*(*int64)(p)), true
	case reflect.Uint:
		return cborUint(uint64(*(*uint)(p))), true
	case reflect.Uint8:
		return cborUint(uint64(*(*uint8)(p))), true
	case reflect.Uint16:
		return cborUint(uint64(*(*uint16)(p))), true
	case reflect.Uint32:
		return cborUint(uint64(*(*uint32)(p))), true
	case reflect.Uint64:
		return cborUint(*(*uint64)(p)), true
	}
	return nil, false
}

// cborBool is b encoded: CBOR's true or false.
func cborBool(b bool) []byte {
	if b {
		return []byte{byte(FormatCBOR), 0xf5}
	}
	return []byte{byte(FormatCBOR), 0xf4}
}

// scalarKind reports whether values of kind k may be scalars (typeInfo.scalar): a look
// at the kind before the type's.
func scalarKind(k reflect.Kind) bool {
	return k == reflect.Bool || k >= reflect.Int && k <= reflect.Uint64
}

// encodeScalar encodes a value of a scalar type (typeInfo.scalar) as the CBOR library
// does: an integer in its shortest head, a boolean as true or false.
func encodeScalar(rv reflect.Value) []byte {
	switch rv.Kind() {
	case reflect.Bool:
		return cborBool(rv.Bool())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return cborUint(rv.Uint())
	}
	return cborInt(rv.Int())
}

func encodeRefs(v any) ([]byte, [][]byte, error) {
	var (
		data []byte
		ti   *typeInfo
		err  error
		fast bool
	)
	if data, fast = encodeFast(v); !fast {
		data, ti, err = encodeSlowInfo(v)
	}
	if err != nil || len(data) == 0 || Format(data[0]) != FormatCBOR || v == nil {
		return data, nil, err
	}
	if ti == nil {
		ti = info(reflect.TypeOf(v))
	}
	if !ti.refs {
		return data, nil, nil
	}
	refs, err := ScanRefs(data)
	if err != nil {
		return nil, nil, fmt.Errorf("codec: scanning refs in %T: %w", v, err)
	}
	return data, refs, nil
}

// UnmarshalOwned is Unmarshal for a caller that hands data over: nothing else holds data
// or will read or write it again. A []byte or string result then aliases data instead of
// being copied into new memory (a large argument read from another node is decoded
// without a second copy of its bytes), as does a numeric slice ([]float64, []int64, ...:
// raw numeric data of its own element layout, aligned, on a little-endian host); every
// other result, and any error, is Unmarshal's.
func UnmarshalOwned[T any](data []byte) (T, error) {
	var out T
	if len(data) > 2 && (registry.Load() == nil || lookupCodec(reflect.TypeFor[T]()) == nil) {
		switch Format(data[0]) {
		case FormatNumeric:
			if k, payload, err := parseNumeric(data); err == nil && aliasNumsTo(&out, k, payload) {
				return out, nil
			}
		case FormatBytes, FormatString:
			// (an error, or an empty payload: Unmarshal's error, or its empty value)
			if payload, err := splitLenPrefixed(data); err == nil && len(payload) > 0 {
				switch p := any(&out).(type) {
				case *[]byte:
					*p = payload[:len(payload):len(payload)]
					return out, nil
				case *string:
					*p = unsafe.String(unsafe.SliceData(payload), len(payload))
					return out, nil
				}
			}
		}
	}
	return Unmarshal[T](data)
}

// aliasNumsTo makes *ptr, a numeric slice of the kind stored (or one compatible with
// it, of the same size), the elements of payload in place, when this host's layout is the
// wire's (little endian) and payload is aligned for them. It reports whether it did.
func aliasNumsTo(ptr any, stored numKind, payload []byte) bool {
	switch p := ptr.(type) {
	case *[]int64:
		return aliasNums(p, kInt64, stored, payload)
	case *[]float64:
		return aliasNums(p, kFloat64, stored, payload)
	case *[]int:
		return aliasNums(p, kInt, stored, payload)
	case *[]int32:
		return aliasNums(p, kInt32, stored, payload)
	case *[]float32:
		return aliasNums(p, kFloat32, stored, payload)
	case *[]uint64:
		return aliasNums(p, kUint64, stored, payload)
	case *[]uint32:
		return aliasNums(p, kUint32, stored, payload)
	case *[]int16:
		return aliasNums(p, kInt16, stored, payload)
	case *[]uint16:
		return aliasNums(p, kUint16, stored, payload)
	case *[]uint:
		return aliasNums(p, kUint, stored, payload)
	}
	return false
}

func aliasNums[E any](dst *[]E, want, stored numKind, payload []byte) bool {
	var zero E
	ws := stored.wireSize()
	if !hostLittleEndian || !compatible(stored, want) || int(unsafe.Sizeof(zero)) != ws || len(payload) == 0 ||
		uintptr(unsafe.Pointer(unsafe.SliceData(payload)))%uintptr(ws) != 0 {
		return false
	}
	n := len(payload) / ws
	*dst = unsafe.Slice((*E)(unsafe.Pointer(unsafe.SliceData(payload))), n)[:n:n]
	return true
}

// decodeFast decodes the common cases that need no reflection: raw numeric slices,
// []byte and string, and CBOR integers and booleans into the matching Go types. ok is
// false when the general path must run (which then also produces any error). It must not
// let ptr escape.
func decodeFast(data []byte, ptr any) (ok bool, err error) {
	if len(data) < 2 || registry.Load() != nil && lookupCodec(reflect.TypeOf(ptr).Elem()) != nil {
		return false, nil
	}
	switch Format(data[0]) {
	case FormatNumeric:
		k, payload, err := parseNumeric(data)
		if err != nil {
			return true, err
		}
		switch p := ptr.(type) {
		case *[]int64:
			return true, setNums(p, kInt64, k, payload)
		case *[]float64:
			return true, setNums(p, kFloat64, k, payload)
		case *[]int:
			return true, setNums(p, kInt, k, payload)
		case *[]int32:
			return true, setNums(p, kInt32, k, payload)
		case *[]float32:
			return true, setNums(p, kFloat32, k, payload)
		case *[]uint64:
			return true, setNums(p, kUint64, k, payload)
		case *[]uint32:
			return true, setNums(p, kUint32, k, payload)
		case *[]int16:
			return true, setNums(p, kInt16, k, payload)
		case *[]uint16:
			return true, setNums(p, kUint16, k, payload)
		case *[]int8:
			return true, setNums(p, kInt8, k, payload)
		case *[]uint:
			return true, setNums(p, kUint, k, payload)
		case *[]bool:
			return true, setNums(p, kBool, k, payload)
		}
	case FormatBytes, FormatString:
		payload, err := splitLenPrefixed(data)
		if err != nil {
			return true, err
		}
		switch p := ptr.(type) {
		case *[]byte:
			*p = append([]byte{}, payload...)
			return true, nil
		case *string:
			*p = string(payload)
			return true, nil
		}
	case FormatCBOR:
		return decodeCBORFast(data[1:], ptr)
	}
	return false, nil
}

// decodeInto decodes data into *ptr, whose type is t.
func decodeInto(data []byte, ptr any, t reflect.Type) error {
	if len(data) == 0 {
		return corruptf("", "empty input (decoding into %v)", t)
	}
	if c := lookupCodec(t); c != nil {
		return decodeUser(data, c, ptr, t)
	}
	switch Format(data[0]) {
	case FormatCBOR:
		return decodeCBOR(data[1:], ptr, t)
	case FormatBytes, FormatString:
		return decodeBytes(data, ptr, t)
	case FormatNumeric:
		return decodeNumeric(data, ptr, t)
	case FormatArrowRecord, FormatArrowTable:
		return decodeArrow(data, ptr, t)
	case FormatUser:
		if info(t).proto {
			return decodeUser(data, ProtoCodec{}, ptr, t)
		}
		name, _, err := splitUser(data)
		if err != nil {
			return err
		}
		return &TypeMismatchError{Stored: fmt.Sprintf("data of codec %q", name), Want: t,
			Err: fmt.Errorf("no codec is registered for %v", t)}
	}
	return corruptf("", "unknown format byte 0x%02x (decoding into %v)", data[0], t)
}
