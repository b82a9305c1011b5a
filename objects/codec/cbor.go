package codec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sync"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/fxamacker/cbor/v2"
)

// Decoding limits. Generous for real values, bounded so hostile or corrupt input cannot
// make the decoder recurse or allocate without limit. Values nested deeper than maxNesting
// are refused at encode time too, so whatever encodes also decodes.
const (
	maxNesting     = 4096    // arrays, maps and tags inside each other
	maxCollection  = 1 << 28 // elements of one array, pairs of one map
	pooledBufLimit = 64 << 10
	bigCBORResult  = 64 << 10 // CBOR results at least this big are returned without a copy
)

var (
	encMode cbor.UserBufferEncMode
	decMode cbor.DecMode
)

func init() {
	eo := cbor.CoreDetEncOptions() // sorted map keys, shortest ints and floats, definite lengths
	eo.Time = cbor.TimeRFC3339Nano // nanoseconds and the UTC offset survive
	eo.TimeTag = cbor.EncTagRequired
	var err error
	if encMode, err = eo.UserBufferEncMode(); err != nil {
		panic(err)
	}
	do := cbor.DecOptions{
		MaxNestedLevels:  maxNesting,
		MaxArrayElements: maxCollection,
		MaxMapPairs:      maxCollection,
		IndefLength:      cbor.IndefLengthForbidden, // we never write them
		TagsMd:           cbor.TagsAllowed,
		IntDec:           cbor.IntDecConvertSignedOrBigInt, // integers into any: int64, else *big.Int
		UTF8:             cbor.UTF8DecodeInvalid,           // Go strings need not be UTF-8
		BigIntDec:        cbor.BigIntDecodePointer,
	}
	if decMode, err = do.DecMode(); err != nil {
		panic(err)
	}
}

// cborUint and cborInt write integers as the CBOR encoder does (shortest head), without
// reflection. TestHandWrittenCBORMatches checks they agree with fxamacker/cbor.
func cborUint(v uint64) []byte { return cborHead(0, v) }

func cborInt(v int64) []byte {
	if v >= 0 {
		return cborHead(0, uint64(v))
	}
	return cborHead(1, uint64(^v)) // -1 - v
}

func cborHead(major byte, arg uint64) []byte {
	var b [10]byte
	b[0] = byte(FormatCBOR)
	n := 1 + len(appendHead(b[1:1], major, arg))
	out := make([]byte, n)
	copy(out, b[:n])
	return out
}

// decodeCBORFast decodes a lone CBOR integer or boolean into a pointer to a Go integer or
// bool. ok is false for anything else, including values that do not fit (the general
// path then reports the error). It must not let ptr escape.
func decodeCBORFast(body []byte, ptr any) (ok bool, err error) {
	_, isBool := ptr.(*bool)
	b, major, arg, ok := scalarHead(body, isBool)
	if !ok {
		return false, nil
	}
	switch p := ptr.(type) {
	case *bool:
		*p = b
		return true, nil
	case *int:
		v, ok := cborToInt(major, arg, math.MinInt, math.MaxInt)
		*p = int(v)
		return ok, nil
	case *int64:
		v, ok := cborToInt(major, arg, math.MinInt64, math.MaxInt64)
		*p = v
		return ok, nil
	case *int32:
		v, ok := cborToInt(major, arg, math.MinInt32, math.MaxInt32)
		*p = int32(v)
		return ok, nil
	case *int16:
		v, ok := cborToInt(major, arg, math.MinInt16, math.MaxInt16)
		*p = int16(v)
		return ok, nil
	case *int8:
		v, ok := cborToInt(major, arg, math.MinInt8, math.MaxInt8)
		*p = int8(v)
		return ok, nil
	case *uint:
		*p = uint(arg)
		return major == 0 && arg <= math.MaxUint, nil
	case *uint64:
		*p = arg
		return major == 0, nil
	case *uint32:
		*p = uint32(arg)
		return major == 0 && arg <= math.MaxUint32, nil
	case *uint16:
		*p = uint16(arg)
		return major == 0 && arg <= math.MaxUint16, nil
	case *uint8:
		*p = uint8(arg)
		return major == 0 && arg <= math.MaxUint8, nil
	}
	return false, nil
}

// decodeScalar decodes a lone CBOR integer or boolean into *ptr, of a scalar type
// (typeInfo.scalar), as the CBOR library would. It reports false, leaving *ptr alone, for
// anything else and for integers out of the type's range: the library then decodes or
// reports the error.
func decodeScalar(body []byte, ptr any) bool {
	return decodeScalarBody(body, reflect.ValueOf(ptr).UnsafePointer(), reflect.TypeOf(ptr).Elem())
}

// decodeScalarAt decodes data into the value of type t at p when t is a scalar type
// (typeInfo.scalar), no codec is registered for it, and data is a lone CBOR integer in
// its range or a boolean, as decodeScalar would, without boxing; it reports whether it
// did (otherwise *p is untouched). p does not escape.
func decodeScalarAt(data []byte, p unsafe.Pointer, t reflect.Type) bool {
	if len(data) < 2 || Format(data[0]) != FormatCBOR || !scalarKind(t.Kind()) ||
		registry.Load() != nil && lookupCodec(t) != nil || !info(t).scalar {
		return false
	}
	return decodeScalarBody(data[1:], p, t)
}

// decodeScalarBody decodes body, one CBOR item, into the value of scalar type t at p if
// it is a boolean or an integer in t's range; it reports whether it did.
func decodeScalarBody(body []byte, p unsafe.Pointer, t reflect.Type) bool {
	b, major, arg, ok := scalarHead(body, t.Kind() == reflect.Bool)
	if !ok {
		return false
	}
	switch k := t.Kind(); k {
	case reflect.Bool:
		*(*bool)(p) = b
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		v, ok := cborToInt(major, arg, -1<<(bits-1), 1<<(bits-1)-1)
		if !ok {
			return false
		}
		switch k {
		case reflect.Int:
			*(*int)(p) = int(v)
		case reflect.Int8:
			*(*int8)(p) = int8(v)
		case reflect.Int16:
			*(*int16)(p) = int16(v)
		case reflect.Int32:
			*(*int32)(p) = int32(v)
		default:
			*(*int64)(p) = v
		}
		return true
	default:
		if major != 0 || t.Bits() < 64 && arg >= 1<<t.Bits() {
			return false
		}
		switch k {
		case reflect.Uint:
			*(*uint)(p) = uint(arg)
		case reflect.Uint8:
			*(*uint8)(p) = uint8(arg)
		case reflect.Uint16:
			*(*uint16)(p) = uint16(arg)
		case reflect.Uint32:
			*(*uint32)(p) = uint32(arg)
		default:
			*(*uint64)(p) = arg
		}
		return true
	}
}

// scalarHead reads body, one whole CBOR item, as a boolean (isBool: b) or as an integer's
// head (major type 0 or 1, and its argument), as the scalar decoders take it; ok is false
// for anything else.
func scalarHead(body []byte, isBool bool) (b bool, major byte, arg uint64, ok bool) {
	if isBool {
		return len(body) == 1 && body[0] == 0xf5, 0, 0, len(body) == 1 && (body[0] == 0xf4 || body[0] == 0xf5)
	}
	if len(body) == 0 || body[0]>>5 > 1 {
		return false, 0, 0, false
	}
	arg, n, ok := readHead(body)
	return false, body[0] >> 5, arg, ok && n == len(body)
}

// cborToInt converts a CBOR integer (major 0: arg, major 1: -1-arg) to int64 if it lies
// in [lo, hi].
func cborToInt(major byte, arg uint64, lo, hi int64) (int64, bool) {
	if major == 0 {
		return int64(arg), arg <= uint64(hi)
	}
	return -1 - int64(arg), arg <= uint64(-(lo + 1))
}

var cborBufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

var nullEncoding = [2]byte{byte(FormatCBOR), 0xf6}

// cborNull is the encoding of a nil value: CBOR null.
func cborNull() []byte { return []byte{nullEncoding[0], nullEncoding[1]} }

func encodeCBOR(v any) ([]byte, error) {
	buf := cborBufPool.Get().(*bytes.Buffer)
	buf.Reset()
	buf.WriteByte(byte(FormatCBOR))
	if err := encMode.MarshalToBuffer(v, buf); err != nil {
		putBuf(buf)
		return nil, fmt.Errorf("codec: cannot encode %T: %w", v, err)
	}
	if buf.Len() >= bigCBORResult {
		return buf.Bytes(), nil // the buffer is handed over, not returned to the pool
	}
	out := make([]byte, buf.Len())
	copy(out, buf.Bytes())
	putBuf(buf)
	return out, nil
}

func putBuf(buf *bytes.Buffer) {
	if buf.Cap() <= pooledBufLimit {
		cborBufPool.Put(buf)
	}
}

var (
	typeArrowRecord = reflect.TypeFor[arrow.Record]()
	typeArrowTable  = reflect.TypeFor[arrow.Table]()
)

func decodeCBOR(body []byte, ptr any, t reflect.Type) error {
	if len(body) == 0 {
		return corruptf("CBOR", "no value after the format byte")
	}
	if t == typeArrowRecord || t == typeArrowTable {
		if len(body) == 1 && body[0] == 0xf6 { // null: a nil Record/Table
			reflect.ValueOf(ptr).Elem().SetZero()
			return nil
		}
		return &TypeMismatchError{Stored: describeCBOR(body), Want: t}
	}
	ti := info(t)
	if ti.proto {
		return &TypeMismatchError{Stored: describeCBOR(body), Want: t,
			Err: errors.New("protobuf messages are encoded with the proto codec")}
	}
	if ti.scalar && decodeScalar(body, ptr) {
		return nil
	}
	if err := decMode.Unmarshal(body, ptr); err != nil {
		return classifyCBORError(body, t, err)
	}
	return nil
}

func classifyCBORError(body []byte, t reflect.Type, err error) error {
	var (
		typeErr *cbor.UnmarshalTypeError
		tagErr  *cbor.WrongTagError
		keyErr  *cbor.InvalidMapKeyTypeError
	)
	if errors.As(err, &typeErr) || errors.As(err, &tagErr) || errors.As(err, &keyErr) {
		return &TypeMismatchError{Stored: describeCBOR(body), Want: t, Err: err}
	}
	if werr := decMode.Wellformed(body); werr != nil {
		return corruptWrap("CBOR", err)
	}
	var (
		syntaxErr   *cbor.SyntaxError
		semErr      *cbor.SemanticError
		nestErr     *cbor.MaxNestedLevelError
		arrErr      *cbor.MaxArrayElementsError
		mapErr      *cbor.MaxMapPairsError
		indefErr    *cbor.IndefiniteLengthError
		extraErr    *cbor.ExtraneousDataError
		dupErr      *cbor.DupMapKeyError
		tagsErr     *cbor.TagsMdError
		admitErr    *cbor.InadmissibleTagContentTypeError
		unaccept    cbor.UnacceptableDataItemError
		unacceptPtr *cbor.UnacceptableDataItemError
	)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.As(err, &syntaxErr), errors.As(err, &semErr), errors.As(err, &nestErr),
		errors.As(err, &arrErr), errors.As(err, &mapErr), errors.As(err, &indefErr),
		errors.As(err, &extraErr), errors.As(err, &dupErr), errors.As(err, &tagsErr),
		errors.As(err, &admitErr), errors.As(err, &unaccept), errors.As(err, &unacceptPtr):
		return corruptWrap("CBOR", err)
	}
	return fmt.Errorf("codec: decoding CBOR into %v: %w", t, err)
}

// describeCBOR names the top-level CBOR item for error messages ("CBOR map").
func describeCBOR(body []byte) string {
	if len(body) == 0 {
		return "empty CBOR"
	}
	b := body[0]
	switch b >> 5 {
	case 0:
		return "CBOR unsigned integer"
	case 1:
		return "CBOR negative integer"
	case 2:
		return "CBOR byte string"
	case 3:
		return "CBOR text string"
	case 4:
		return "CBOR array"
	case 5:
		return "CBOR map"
	case 6:
		if n, _, ok := readHead(body); ok {
			switch n {
			case 0, 1:
				return "CBOR time"
			case 2, 3:
				return "CBOR bignum"
			case RefTag:
				return "CBOR object reference"
			}
			return fmt.Sprintf("CBOR tag %d", n)
		}
		return "CBOR tag"
	}
	switch b {
	case 0xf4, 0xf5:
		return "CBOR boolean"
	case 0xf6:
		return "CBOR null"
	case 0xf7:
		return "CBOR undefined"
	case 0xf9, 0xfa, 0xfb:
		return "CBOR float"
	}
	return "CBOR simple value"
}
