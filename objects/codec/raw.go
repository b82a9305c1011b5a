package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unsafe"
)

// numKind is the element kind byte of FormatNumeric data (Python struct letters).
type numKind byte

const (
	kInt8    numKind = 'b'
	kInt16   numKind = 'h'
	kInt32   numKind = 'i'
	kInt64   numKind = 'q'
	kUint16  numKind = 'H'
	kUint32  numKind = 'I'
	kUint64  numKind = 'Q'
	kFloat32 numKind = 'f'
	kFloat64 numKind = 'd'
	kInt     numKind = 'n' // Go int, always 8 bytes on the wire
	kUint    numKind = 'N' // Go uint, always 8 bytes on the wire
	kBool    numKind = '?' // one byte, 0 or 1
)

// numHeaderLen is the size of the FormatNumeric header: format byte, kind byte, element
// count (6 bytes, little-endian). Eight bytes keep the payload 8-byte aligned within
// 8-byte aligned buffers, so a later zero-copy reader can view it in place.
const numHeaderLen = 8

// smallCopy is the size below which results are allocated with make (zeroed, then
// overwritten: cheap at this size); larger ones are allocated by append without zeroing.
const smallCopy = 32 << 10

var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func numHeader(k numKind, n int) [numHeaderLen]byte {
	var h [numHeaderLen]byte
	h[0], h[1] = byte(FormatNumeric), byte(k)
	c := uint64(n)
	for i := 2; i < numHeaderLen; i++ {
		h[i] = byte(c)
		c >>= 8
	}
	return h
}

// zeroHeader only ever provides the first n bytes of a large result: slices of it have
// cap n, so append never writes into it.
var zeroHeader [16]byte

// allocCopy returns n header bytes (to be filled in by the caller) followed by src, in one
// allocation of that size (rounded up to the allocator's size class) and one copy of src.
// Large results are not zeroed first: append grows a slice whose cap is its length into
// new memory and clears only the part past the new length. Small ones use make.
func allocCopy(n int, src []byte) []byte {
	if len(src) >= smallCopy {
		return append(zeroHeader[:n:n], src...)
	}
	out := make([]byte, n+len(src))
	copy(out[n:], src)
	return out
}

// wireSize is the encoded size of one element, 0 for an unknown kind.
func (k numKind) wireSize() int {
	switch k {
	case kInt8, kBool:
		return 1
	case kInt16, kUint16:
		return 2
	case kInt32, kUint32, kFloat32:
		return 4
	case kInt64, kUint64, kFloat64, kInt, kUint:
		return 8
	}
	return 0
}

func (k numKind) signed() bool {
	switch k {
	case kInt8, kInt16, kInt32, kInt64, kInt:
		return true
	}
	return false
}

// elemType is the natural Go element type for kind k (what decoding into any gives).
func (k numKind) elemType() reflect.Type {
	switch k {
	case kInt8:
		return reflect.TypeFor[int8]()
	case kInt16:
		return reflect.TypeFor[int16]()
	case kInt32:
		return reflect.TypeFor[int32]()
	case kInt64:
		return reflect.TypeFor[int64]()
	case kUint16:
		return reflect.TypeFor[uint16]()
	case kUint32:
		return reflect.TypeFor[uint32]()
	case kUint64:
		return reflect.TypeFor[uint64]()
	case kFloat32:
		return reflect.TypeFor[float32]()
	case kFloat64:
		return reflect.TypeFor[float64]()
	case kInt:
		return reflect.TypeFor[int]()
	case kUint:
		return reflect.TypeFor[uint]()
	case kBool:
		return reflect.TypeFor[bool]()
	}
	return nil
}

// kindOf maps a Go element kind to a numKind; ok is false for kinds without a fast path
// (uint8 goes through FormatBytes instead).
func kindOf(k reflect.Kind) (numKind, bool) {
	switch k {
	case reflect.Int8:
		return kInt8, true
	case reflect.Int16:
		return kInt16, true
	case reflect.Int32:
		return kInt32, true
	case reflect.Int64:
		return kInt64, true
	case reflect.Uint16:
		return kUint16, true
	case reflect.Uint32:
		return kUint32, true
	case reflect.Uint64:
		return kUint64, true
	case reflect.Float32:
		return kFloat32, true
	case reflect.Float64:
		return kFloat64, true
	case reflect.Int:
		return kInt, true
	case reflect.Uint:
		return kUint, true
	case reflect.Bool:
		return kBool, true
	}
	return 0, false
}

// compatible reports whether data of kind stored may be decoded into elements of kind
// want: the same kind, or int/int64 and uint/uint64 (same wire form).
func compatible(stored, want numKind) bool {
	if stored == want {
		return true
	}
	switch {
	case stored == kInt && want == kInt64, stored == kInt64 && want == kInt:
		return true
	case stored == kUint && want == kUint64, stored == kUint64 && want == kUint:
		return true
	}
	return false
}

// ---- encoding ----

// encodeBytes writes f, the length as a uvarint, and the bytes.
func encodeBytes(b []byte) []byte { return encodeLenPrefixed(FormatBytes, b) }

func encodeString(s string) []byte {
	return encodeLenPrefixed(FormatString, unsafe.Slice(unsafe.StringData(s), len(s)))
}

func encodeLenPrefixed(f Format, b []byte) []byte {
	n := 1 + uvarintLen(uint64(len(b)))
	out := allocCopy(n, b)
	out[0] = byte(f)
	binary.PutUvarint(out[1:n], uint64(len(b)))
	return out
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// splitLenPrefixed returns the payload of FormatBytes or FormatString data.
func splitLenPrefixed(data []byte) ([]byte, error) {
	l, n := binary.Uvarint(data[1:])
	if n <= 0 {
		return nil, corruptf(Format(data[0]).String(), "malformed length")
	}
	payload := data[1+n:]
	if l != uint64(len(payload)) {
		return nil, corruptf(Format(data[0]).String(), "header says %d bytes, payload has %d", l, len(payload))
	}
	return payload, nil
}

func encodeNumSlice[E any](k numKind, s []E) []byte {
	if s == nil {
		return cborNull()
	}
	var zero E
	return encodeNum(k, unsafe.Pointer(unsafe.SliceData(s)), len(s), int(unsafe.Sizeof(zero)))
}

// encodeNum encodes n elements of goSize bytes each starting at p.
func encodeNum(k numKind, p unsafe.Pointer, n, goSize int) []byte {
	ws := k.wireSize()
	if hostLittleEndian && goSize == ws {
		out := allocCopy(numHeaderLen, unsafe.Slice((*byte)(p), n*ws)) // one allocation, one memmove
		h := numHeader(k, n)
		copy(out, h[:])
		return out
	}
	return encodeNumPortable(k, p, n, goSize)
}

// encodeNumPortable writes little-endian elements one by one: big-endian hosts, and Go
// int/uint on 32-bit hosts (4 bytes in memory, 8 on the wire).
func encodeNumPortable(k numKind, p unsafe.Pointer, n, goSize int) []byte {
	ws := k.wireSize()
	out := make([]byte, numHeaderLen+n*ws)
	h := numHeader(k, n)
	copy(out, h[:])
	dst := out[numHeaderLen:]
	signed := k.signed()
	for i := 0; i < n; i++ {
		v := loadNative(unsafe.Add(p, i*goSize), goSize, signed)
		switch ws {
		case 1:
			dst[i] = byte(v)
		case 2:
			binary.LittleEndian.PutUint16(dst[2*i:], uint16(v))
		case 4:
			binary.LittleEndian.PutUint32(dst[4*i:], uint32(v))
		case 8:
			binary.LittleEndian.PutUint64(dst[8*i:], v)
		}
	}
	return out
}

// loadNative reads a size-byte integer (or float bits) in host byte order, sign-extended
// to 64 bits when signed.
func loadNative(q unsafe.Pointer, size int, signed bool) uint64 {
	switch size {
	case 1:
		if signed {
			return uint64(int64(*(*int8)(q)))
		}
		return uint64(*(*uint8)(q))
	case 2:
		if signed {
			return uint64(int64(*(*int16)(q)))
		}
		return uint64(*(*uint16)(q))
	case 4:
		if signed {
			return uint64(int64(*(*int32)(q)))
		}
		return uint64(*(*uint32)(q))
	}
	return *(*uint64)(q)
}

func storeNative(q unsafe.Pointer, size int, v uint64) {
	switch size {
	case 1:
		*(*uint8)(q) = uint8(v)
	case 2:
		*(*uint16)(q) = uint16(v)
	case 4:
		*(*uint32)(q) = uint32(v)
	default:
		*(*uint64)(q) = v
	}
}

// encodeRawReflect is the fast path for named types whose underlying type has one
// (type Vector []float64, type ID string, type Blob []byte, []Celsius).
func encodeRawReflect(ti *typeInfo, v reflect.Value) []byte {
	switch ti.raw {
	case rawBytes:
		if v.IsNil() {
			return cborNull()
		}
		return encodeBytes(v.Bytes())
	case rawString:
		return encodeString(v.String())
	default: // rawNum
		if v.IsNil() {
			return cborNull()
		}
		return encodeNum(ti.num, v.UnsafePointer(), v.Len(), int(ti.t.Elem().Size()))
	}
}

// ---- decoding ----

var zeroBase uint64 // data pointer of empty, non-nil decoded slices (8-byte aligned)

// parseNumeric validates a FormatNumeric header and returns the kind and payload.
func parseNumeric(data []byte) (numKind, []byte, error) {
	if len(data) < numHeaderLen {
		return 0, nil, corruptf("numeric", "%d-byte header truncated to %d bytes", numHeaderLen, len(data))
	}
	k := numKind(data[1])
	ws := k.wireSize()
	if ws == 0 {
		return 0, nil, corruptf("numeric", "unknown element kind 0x%02x", data[1])
	}
	var n uint64
	for i := numHeaderLen - 1; i >= 2; i-- {
		n = n<<8 | uint64(data[i])
	}
	payload := data[numHeaderLen:]
	if n > uint64(len(payload)) || n*uint64(ws) != uint64(len(payload)) {
		return 0, nil, corruptf("numeric", "header says %d %s elements (%d bytes), payload has %d bytes", n, k.elemType(), n*uint64(ws), len(payload))
	}
	if k == kBool {
		for _, b := range payload {
			if b > 1 {
				return 0, nil, corruptf("numeric", "bool element is neither 0 nor 1")
			}
		}
	}
	return k, payload, nil
}

// decodeNumPayload copies payload (elements of kind k) into new memory holding n Go
// elements of goSize bytes each, and returns that memory.
func decodeNumPayload(k numKind, payload []byte, goSize int) (unsafe.Pointer, int, error) {
	ws := k.wireSize()
	n := len(payload) / ws
	if n == 0 {
		return unsafe.Pointer(&zeroBase), 0, nil
	}
	if hostLittleEndian && goSize == ws {
		// One allocation of the exact size, not zeroed first (append of a byte slice to nil
		// allocates without clearing), and one memmove. The Go allocator aligns a block
		// whose size is a multiple of 2, 4 or 8 to that many bytes; check anyway.
		buf := append([]byte(nil), payload...)
		p := unsafe.Pointer(unsafe.SliceData(buf))
		if uintptr(p)%uintptr(ws) == 0 {
			return p, n, nil
		}
		words := make([]uint64, (len(payload)+7)/8)
		p = unsafe.Pointer(unsafe.SliceData(words))
		copy(unsafe.Slice((*byte)(p), len(payload)), payload)
		return p, n, nil
	}
	return decodeNumPortable(k, payload, n, goSize)
}

// decodeNumPortable reads little-endian elements one by one into host order, checking
// that 8-byte int/uint values fit a 4-byte Go int/uint on 32-bit hosts.
func decodeNumPortable(k numKind, payload []byte, n, goSize int) (unsafe.Pointer, int, error) {
	ws := k.wireSize()
	words := make([]uint64, (n*goSize+7)/8)
	p := unsafe.Pointer(unsafe.SliceData(words))
	signed := k.signed()
	for i := 0; i < n; i++ {
		var v uint64
		switch ws {
		case 1:
			v = uint64(payload[i])
		case 2:
			v = uint64(binary.LittleEndian.Uint16(payload[2*i:]))
		case 4:
			v = uint64(binary.LittleEndian.Uint32(payload[4*i:]))
		case 8:
			v = binary.LittleEndian.Uint64(payload[8*i:])
		}
		if goSize < ws {
			if signed && (int64(v) < math.MinInt32 || int64(v) > math.MaxInt32) ||
				!signed && v > math.MaxUint32 {
				return nil, 0, &TypeMismatchError{Stored: "raw " + kindSliceName(k) + " data", Want: reflect.SliceOf(k.elemType()),
					Err: fmt.Errorf("element %d (%d) overflows a %d-bit %s", i, int64(v), strconv.IntSize, k.elemType())}
			}
		}
		storeNative(unsafe.Add(p, i*goSize), goSize, v)
	}
	return p, n, nil
}

func kindSliceName(k numKind) string { return "[]" + k.elemType().String() }

// setNums decodes numeric data of kind stored into *dst, whose elements are of kind want.
func setNums[E any](dst *[]E, want, stored numKind, payload []byte) error {
	if !compatible(stored, want) {
		return &TypeMismatchError{Stored: "raw " + kindSliceName(stored) + " data", Want: reflect.TypeFor[[]E]()}
	}
	var zero E
	p, n, err := decodeNumPayload(stored, payload, int(unsafe.Sizeof(zero)))
	if err != nil {
		return err
	}
	*dst = unsafe.Slice((*E)(p), n)
	return nil
}

func decodeNumeric(data []byte, ptr any, t reflect.Type) error {
	k, payload, err := parseNumeric(data)
	if err != nil {
		return err
	}
	stored := "raw " + kindSliceName(k) + " data"
	v := derefAlloc(reflect.ValueOf(ptr).Elem())
	vt := v.Type()
	switch {
	case vt.Kind() == reflect.Slice:
		want, ok := kindOf(vt.Elem().Kind())
		if !ok || !compatible(k, want) {
			return &TypeMismatchError{Stored: stored, Want: t}
		}
		p, n, err := decodeNumPayload(k, payload, int(vt.Elem().Size()))
		if err != nil {
			return err
		}
		v.Set(reflect.SliceAt(vt.Elem(), p, n).Convert(vt))
		return nil
	case vt.Kind() == reflect.Interface && reflect.SliceOf(k.elemType()).Implements(vt):
		et := k.elemType()
		p, n, err := decodeNumPayload(k, payload, int(et.Size()))
		if err != nil {
			return err
		}
		v.Set(reflect.SliceAt(et, p, n))
		return nil
	}
	return &TypeMismatchError{Stored: stored, Want: t}
}

// derefAlloc follows pointers from v (settable), allocating nil ones, and returns the
// first non-pointer value.
func derefAlloc(v reflect.Value) reflect.Value {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	return v
}

var (
	typeBytes  = reflect.TypeFor[[]byte]()
	typeString = reflect.TypeFor[string]()
)

// decodeBytes decodes FormatBytes and FormatString data. The two are interchangeable:
// either decodes into a string or a []byte (or a named type of either).
func decodeBytes(data []byte, ptr any, t reflect.Type) error {
	f := Format(data[0])
	payload, err := splitLenPrefixed(data)
	if err != nil {
		return err
	}
	switch p := ptr.(type) {
	case *[]byte:
		*p = append([]byte{}, payload...)
		return nil
	case *string:
		*p = string(payload)
		return nil
	case *any:
		if f == FormatBytes {
			*p = append([]byte{}, payload...)
		} else {
			*p = string(payload)
		}
		return nil
	}
	v := derefAlloc(reflect.ValueOf(ptr).Elem())
	switch vt := v.Type(); {
	case vt.Kind() == reflect.String:
		v.SetString(string(payload))
		return nil
	case vt.Kind() == reflect.Slice && vt.Elem().Kind() == reflect.Uint8:
		v.SetBytes(append([]byte{}, payload...))
		return nil
	case vt.Kind() == reflect.Interface && f == FormatBytes && typeBytes.Implements(vt):
		v.Set(reflect.ValueOf(append([]byte{}, payload...)))
		return nil
	case vt.Kind() == reflect.Interface && f == FormatString && typeString.Implements(vt):
		v.Set(reflect.ValueOf(string(payload)))
		return nil
	}
	stored := "raw []byte data"
	if f == FormatString {
		stored = "raw string data"
	}
	return &TypeMismatchError{Stored: stored, Want: t}
}
