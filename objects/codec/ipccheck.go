package codec

import (
	"encoding/binary"
	"math"
)

// checkIPCStream validates the framing (ending with the end-of-stream marker, which
// every stream this package writes has, so truncation is detected) of an Arrow IPC stream and the flatbuffer metadata
// of each message before arrow/ipc parses it. arrow/ipc trusts the vector lengths and
// offsets it finds there (it sizes slices with them), so a corrupt length could otherwise
// make it allocate many gigabytes, which is fatal rather than a recoverable panic. This is
// a bounds check of the fields arrow/ipc reads, not a full flatbuffers verifier; what it
// lets through either decodes or makes arrow/ipc panic, which readArrow recovers.
func checkIPCStream(p []byte) error {
	pos := 0
	for pos < len(p) {
		if len(p)-pos < 4 {
			return corruptf("Arrow IPC", "truncated message length")
		}
		l := binary.LittleEndian.Uint32(p[pos:])
		pos += 4
		if l == 0xFFFFFFFF { // continuation marker, then the length
			if len(p)-pos < 4 {
				return corruptf("Arrow IPC", "truncated message length")
			}
			l = binary.LittleEndian.Uint32(p[pos:])
			pos += 4
		}
		if l == 0 { // end of stream: must be the end of the data too
			if pos != len(p) {
				return corruptf("Arrow IPC", "%d bytes after the end-of-stream marker", len(p)-pos)
			}
			return nil
		}
		if uint64(l) > uint64(len(p)-pos) {
			return corruptf("Arrow IPC", "message metadata of %d bytes overruns the input", l)
		}
		body, ok := checkMessage(p[pos : pos+int(l)])
		if !ok {
			return corruptf("Arrow IPC", "malformed message metadata at offset %d", pos)
		}
		pos += int(l)
		if body > uint64(len(p)-pos) {
			return corruptf("Arrow IPC", "message body of %d bytes overruns the input", body)
		}
		pos += int(body)
	}
	return corruptf("Arrow IPC", "stream truncated (no end-of-stream marker)")
}

// fbTable is a flatbuffers table inside buf.
type fbTable struct {
	buf    []byte
	pos    int // start of the table
	vt     int // start of its vtable
	vtSize int
}

func fbU32(buf []byte, pos int) (uint32, bool) {
	if pos < 0 || pos > len(buf)-4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(buf[pos:]), true
}

func fbTableAt(buf []byte, pos int) (fbTable, bool) {
	so, ok := fbU32(buf, pos)
	if !ok {
		return fbTable{}, false
	}
	vt := int64(pos) - int64(int32(so))
	if vt < 0 || vt > int64(len(buf))-4 {
		return fbTable{}, false
	}
	vtSize := int(binary.LittleEndian.Uint16(buf[vt:]))
	tblSize := int(binary.LittleEndian.Uint16(buf[vt+2:]))
	if vtSize < 4 || vtSize%2 != 0 || int(vt)+vtSize > len(buf) || pos+tblSize > len(buf) || tblSize < 4 {
		return fbTable{}, false
	}
	t := fbTable{buf: buf, pos: pos, vt: int(vt), vtSize: vtSize}
	// every present field must lie inside the table
	for i := 4; i < vtSize; i += 2 {
		if off := int(binary.LittleEndian.Uint16(buf[t.vt+i:])); off != 0 && off >= tblSize {
			return fbTable{}, false
		}
	}
	return t, true
}

// field returns the absolute position of field i, or 0 if absent.
func (t fbTable) field(i int) int {
	o := 4 + 2*i
	if o >= t.vtSize {
		return 0
	}
	off := int(binary.LittleEndian.Uint16(t.buf[t.vt+o:]))
	if off == 0 {
		return 0
	}
	return t.pos + off
}

// scalar checks that field i, if present, holds size bytes.
func (t fbTable) scalar(i, size int) bool {
	p := t.field(i)
	return p == 0 || p+size <= len(t.buf)
}

// ref follows the offset stored in field i. present is false if the field is absent.
func (t fbTable) ref(i int) (target int, present, ok bool) {
	p := t.field(i)
	if p == 0 {
		return 0, false, true
	}
	u, ok := fbU32(t.buf, p)
	if !ok || uint64(p)+uint64(u) > uint64(len(t.buf)) {
		return 0, true, false
	}
	return p + int(u), true, true
}

// vector checks the vector in field i has elements of elemSize bytes inside the buffer
// and returns the position of its first element and its length.
func (t fbTable) vector(i, elemSize int) (start, n int, ok bool) {
	target, present, ok := t.ref(i)
	if !ok || !present {
		return 0, 0, ok
	}
	l, ok := fbU32(t.buf, target)
	if !ok || uint64(l)*uint64(elemSize) > uint64(len(t.buf)-target-4) {
		return 0, 0, false
	}
	return target + 4, int(l), true
}

// tables calls check on every table of the vector of tables in field i.
func (t fbTable) tables(i int, check func(fbTable) bool) bool {
	start, n, ok := t.vector(i, 4)
	if !ok {
		return false
	}
	for k := 0; k < n; k++ {
		p := start + 4*k
		u, _ := fbU32(t.buf, p)
		if uint64(p)+uint64(u) > uint64(len(t.buf)) {
			return false
		}
		sub, ok := fbTableAt(t.buf, p+int(u))
		if !ok || !check(sub) {
			return false
		}
	}
	return true
}

func (t fbTable) sub(i int, check func(fbTable) bool) bool {
	target, present, ok := t.ref(i)
	if !ok || !present {
		return ok
	}
	s, ok := fbTableAt(t.buf, target)
	return ok && check(s)
}

// Message: version short, header_type ubyte, header union, bodyLength long, custom_metadata.
func checkMessage(meta []byte) (body uint64, ok bool) {
	root, ok := fbU32(meta, 0)
	if !ok {
		return 0, false
	}
	m, ok := fbTableAt(meta, int(root))
	if !ok || !m.scalar(0, 2) || !m.scalar(1, 1) || !m.scalar(3, 8) || !m.tables(4, checkKeyValue) {
		return 0, false
	}
	var kind byte
	if p := m.field(1); p != 0 {
		kind = meta[p]
	}
	var hdr func(fbTable) bool
	switch kind {
	case 1: // Schema
		hdr = checkSchema
	case 2: // DictionaryBatch
		hdr = checkDictionaryBatch
	case 3: // RecordBatch
		hdr = checkRecordBatch
	default:
		hdr = func(fbTable) bool { return true } // arrow/ipc rejects other kinds itself
	}
	if !m.sub(2, hdr) {
		return 0, false
	}
	if p := m.field(3); p != 0 {
		b := binary.LittleEndian.Uint64(meta[p:])
		if b > math.MaxInt64 {
			return 0, false
		}
		body = b
	}
	return body, true
}

func checkString(t fbTable, i int) bool {
	_, _, ok := t.vector(i, 1)
	return ok
}

// KeyValue: key string, value string.
func checkKeyValue(t fbTable) bool { return checkString(t, 0) && checkString(t, 1) }

// Schema: endianness short, fields [Field], custom_metadata [KeyValue], features [long].
func checkSchema(t fbTable) bool {
	if !t.scalar(0, 2) || !t.tables(2, checkKeyValue) {
		return false
	}
	if _, _, ok := t.vector(3, 8); !ok {
		return false
	}
	return t.tables(1, func(f fbTable) bool { return checkField(f, 0) })
}

const maxArrowTypeDepth = 256

// Field: name string, nullable bool, type_type ubyte, type union, dictionary
// DictionaryEncoding, children [Field], custom_metadata [KeyValue].
func checkField(t fbTable, depth int) bool {
	if depth > maxArrowTypeDepth || !checkString(t, 0) || !t.scalar(1, 1) || !t.scalar(2, 1) || !t.tables(6, checkKeyValue) {
		return false
	}
	// Type tables hold scalars, except Timestamp.timezone (string) and Union.typeIds ([int]).
	var typeType byte
	if p := t.field(2); p != 0 {
		typeType = t.buf[p]
	}
	if !t.sub(3, func(ty fbTable) bool {
		switch typeType {
		case 10: // Timestamp
			return checkString(ty, 1)
		case 14: // Union
			_, _, ok := ty.vector(1, 4)
			return ok
		}
		return true
	}) {
		return false
	}
	// DictionaryEncoding: id long, indexType Int, isOrdered bool, dictionaryKind short.
	if !t.sub(4, func(d fbTable) bool { return d.scalar(0, 8) && d.sub(1, func(fbTable) bool { return true }) }) {
		return false
	}
	return t.tables(5, func(c fbTable) bool { return checkField(c, depth+1) })
}

// RecordBatch: length long, nodes [FieldNode (16 bytes)], buffers [Buffer (16 bytes)],
// compression BodyCompression, variadicBufferCounts [long].
func checkRecordBatch(t fbTable) bool {
	if !t.scalar(0, 8) || !t.sub(3, func(fbTable) bool { return true }) {
		return false
	}
	for _, f := range [][2]int{{1, 16}, {2, 16}, {4, 8}} {
		if _, _, ok := t.vector(f[0], f[1]); !ok {
			return false
		}
	}
	return true
}

// DictionaryBatch: id long, data RecordBatch, isDelta bool.
func checkDictionaryBatch(t fbTable) bool {
	return t.scalar(0, 8) && t.scalar(2, 1) && t.sub(1, checkRecordBatch)
}
