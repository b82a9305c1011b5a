package codec

import (
	"encoding/binary"
	"errors"
)

// RefTag is the CBOR tag number that marks an object reference nested inside an encoded
// value. The tag's content is a byte string, the reference's payload: whatever the runtime
// needs to rebuild the reference (object ID, owner address). The number is not registered
// with IANA; it sits in the first-come-first-served range and spells "RAYR".
const RefTag uint64 = 0x52415952

// Ref is implemented by object-reference types that may be nested in values passed to
// tasks (the runtime's ObjectRef[T]), so that the owner can count borrowed references:
//
//	func (r ObjectRef[T]) RefPayload() []byte           { return r.id.Bytes() }
//	func (r ObjectRef[T]) MarshalCBOR() ([]byte, error) { return codec.AppendRef(nil, r.RefPayload()), nil }
//	func (r *ObjectRef[T]) UnmarshalCBOR(b []byte) error {
//		p, err := codec.ParseRef(b)
//		...
//	}
//
// MarshalCBOR must return AppendRef(nil, RefPayload()). MarshalRefs then reports every
// reference in a value, wherever it sits (struct fields, slices, maps, interfaces), by
// scanning the encoding for RefTag; ScanRefs does the same on the receiving side. A type
// with a RefPayload method but no MarshalCBOR is refused at encode time. Decoding a
// reference into an interface (any) yields cbor.Tag{Number: RefTag, Content: []byte}.
type Ref interface {
	RefPayload() []byte
	MarshalCBOR() ([]byte, error)
}

// AppendRef appends the CBOR encoding of a reference (RefTag around the payload as a byte
// string) to dst.
func AppendRef(dst, payload []byte) []byte {
	dst = appendHead(dst, 6, RefTag)
	dst = appendHead(dst, 2, uint64(len(payload)))
	return append(dst, payload...)
}

// ParseRef returns a copy of the payload of a CBOR-encoded reference, as produced by
// AppendRef (for use in UnmarshalCBOR).
func ParseRef(data []byte) ([]byte, error) {
	tag, n, ok := readHead(data)
	if !ok || data[0]>>5 != 6 || tag != RefTag {
		return nil, corruptf("reference", "not a CBOR tag %d", RefTag)
	}
	rest := data[n:]
	l, m, ok := readHead(rest)
	if !ok || rest[0]>>5 != 2 {
		return nil, corruptf("reference", "tag content is not a byte string")
	}
	if l != uint64(len(rest)-m) {
		return nil, corruptf("reference", "byte string length %d does not match the %d bytes left", l, len(rest)-m)
	}
	return append([]byte{}, rest[m:]...), nil
}

// ScanRefs returns the payloads of the references (RefTag items) in encoded data, in
// encoding order, aliasing data. Only CBOR data can hold references; other formats give
// nil. Malformed CBOR gives an error wrapping ErrCorrupt.
func ScanRefs(data []byte) ([][]byte, error) {
	if len(data) == 0 {
		return nil, corruptf("", "empty input")
	}
	if Format(data[0]) != FormatCBOR {
		return nil, nil
	}
	s := refScanner{b: data[1:]}
	if err := s.item(0); err != nil {
		return nil, err
	}
	if s.pos != len(s.b) {
		return nil, corruptf("CBOR", "%d bytes after the value", len(s.b)-s.pos)
	}
	return s.refs, nil
}

type refScanner struct {
	b    []byte
	pos  int
	refs [][]byte
}

var errScanTruncated = errors.New("truncated")

func (s *refScanner) item(depth int) error {
	if depth > maxNesting {
		return corruptf("CBOR", "nested more than %d levels", maxNesting)
	}
	if s.pos >= len(s.b) {
		return corruptWrap("CBOR", errScanTruncated)
	}
	major := s.b[s.pos] >> 5
	arg, n, ok := readHead(s.b[s.pos:])
	if !ok {
		return corruptf("CBOR", "malformed or indefinite-length item at offset %d", s.pos)
	}
	s.pos += n
	rem := uint64(len(s.b) - s.pos)
	switch major {
	case 2, 3:
		if arg > rem {
			return corruptWrap("CBOR", errScanTruncated)
		}
		s.pos += int(arg)
	case 4, 5:
		count := arg
		if major == 5 {
			if arg > rem/2 {
				return corruptWrap("CBOR", errScanTruncated)
			}
			count = 2 * arg
		}
		if count > rem { // every item takes at least one byte
			return corruptWrap("CBOR", errScanTruncated)
		}
		for i := uint64(0); i < count; i++ {
			if err := s.item(depth + 1); err != nil {
				return err
			}
		}
	case 6:
		if arg != RefTag {
			return s.item(depth + 1)
		}
		if s.pos >= len(s.b) || s.b[s.pos]>>5 != 2 {
			return corruptf("CBOR", "reference at offset %d does not hold a byte string", s.pos)
		}
		l, m, ok := readHead(s.b[s.pos:])
		if !ok || l > uint64(len(s.b)-s.pos-m) {
			return corruptWrap("CBOR", errScanTruncated)
		}
		start := s.pos + m
		s.pos = start + int(l)
		s.refs = append(s.refs, s.b[start:s.pos:s.pos])
	}
	return nil
}

// readHead decodes the head of the CBOR item at b[0]: its argument (value, length, count
// or tag number) and the head's size. ok is false for a truncated head, reserved
// additional information, or an indefinite length (never written by this package).
func readHead(b []byte) (arg uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	ai := b[0] & 0x1f
	switch {
	case ai < 24:
		return uint64(ai), 1, true
	case ai == 24 && len(b) >= 2:
		return uint64(b[1]), 2, true
	case ai == 25 && len(b) >= 3:
		return uint64(binary.BigEndian.Uint16(b[1:])), 3, true
	case ai == 26 && len(b) >= 5:
		return uint64(binary.BigEndian.Uint32(b[1:])), 5, true
	case ai == 27 && len(b) >= 9:
		return binary.BigEndian.Uint64(b[1:]), 9, true
	}
	return 0, 0, false
}

// appendHead appends a CBOR head in its shortest form.
func appendHead(dst []byte, major byte, arg uint64) []byte {
	m := major << 5
	switch {
	case arg < 24:
		return append(dst, m|byte(arg))
	case arg <= 0xff:
		return append(dst, m|24, byte(arg))
	case arg <= 0xffff:
		return binary.BigEndian.AppendUint16(append(dst, m|25), uint16(arg))
	case arg <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(dst, m|26), uint32(arg))
	}
	return binary.BigEndian.AppendUint64(append(dst, m|27), arg)
}
