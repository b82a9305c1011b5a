package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/endian"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// Shared decoding: Unmarshal builds the arrays of an Arrow record directly over the
// message bodies in the input, without copying them (arrow/ipc copies every buffer). This
// is what an object store's zero-copy read is: the runtime's stored bytes are immutable
// (the store, spilling and transfers only ever read them, and a freed object's bytes are
// left to the garbage collector, never reused), and the arrays keep them alive as long as
// they are referenced. The caller must not modify the input while the value lives, and
// must not modify the value's buffers (Arrow values are immutable anyway).
//
// Only plain layouts are built in place: fixed-width types, (large) binary and string,
// (large) lists, fixed-size lists and structs of those, uncompressed, native endian, every
// buffer 8-byte aligned in memory (the encoding pads the format byte to 8 bytes for this;
// a misaligned buffer is copied into aligned memory). Anything else (dictionaries, unions,
// maps, views, run-end encoding, extension types, compression) goes through arrow/ipc's
// copying reader. Every length, offset and buffer size is checked against the input
// before an array is made, so corrupt data is an error, never a panic or an array that
// reads out of its buffers later.

// arrowPad is the number of zero bytes after the format byte of Arrow encodings, so that
// the IPC stream, and with it every buffer of a message body, starts 8-byte aligned when
// the encoded data is (Go allocates byte slices of 8 bytes and more 8-byte aligned).
const arrowPad = 7

// arrowPayload returns the IPC stream of Arrow-format data: after the format byte and,
// in the padded layout, the 7 zero bytes (an IPC stream never starts with a zero length,
// which would be an end-of-stream marker before the schema, so the layouts are told apart;
// data written before padding existed decodes too).
func arrowPayload(data []byte) []byte {
	if len(data) >= 1+arrowPad && allZero(data[1:1+arrowPad]) {
		return data[1+arrowPad:]
	}
	return data[1:]
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// errNotShared means the stream needs the copying reader (not an error of the data).
var errNotShared = errors.New("not decodable in place")

// readArrowShared is readArrow (with the default allocator) building records over
// payload. It falls back to readArrow when the schema or a batch needs arrow/ipc's reader.
func readArrowShared(payload []byte, many bool, build func(*arrow.Schema, []arrow.Record)) (recs []arrow.Record, err error) {
	if err := checkIPCStream(payload); err != nil {
		return nil, err
	}
	recs, err = loadShared(payload, many, build)
	if errors.Is(err, errNotShared) {
		recs, _, err = readArrow(payload, nil, many, build)
	}
	return recs, err
}

func loadShared(payload []byte, many bool, build func(*arrow.Schema, []arrow.Record)) (recs []arrow.Record, err error) {
	building := false
	defer func() {
		if r := recover(); r != nil {
			// The checks below should leave nothing for arrow to panic on; if one is
			// missed, the data is corrupt all the same.
			for _, rec := range recs {
				rec.Release()
			}
			what := "loading in place"
			if building {
				what = "building table"
			}
			recs, err = nil, corruptf("Arrow IPC", "%s: %v", what, r)
		}
	}()
	mr := &sliceMessageReader{data: payload, refs: 1}
	defer mr.Release()
	// arrow/ipc reads the schema message (only that: dictionaries come with the batches).
	rd, err := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(noAlloc{}))
	if err != nil {
		return nil, corruptWrap("Arrow IPC", err)
	}
	schema := rd.Schema()
	rd.Release()
	if err := checkSchemaTypes(schema); err != nil {
		return nil, err
	}
	if schema.Endianness() != endian.NativeEndian {
		return nil, errNotShared
	}
	for _, f := range schema.Fields() {
		if !sharedType(f.Type, 0) {
			return nil, errNotShared
		}
	}
	fail := func(e error) ([]arrow.Record, error) {
		for _, rec := range recs {
			rec.Release()
		}
		return nil, e
	}
	for {
		meta, body, err := mr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(corruptWrap("Arrow IPC", err))
		}
		if len(recs) > 0 && !many {
			return fail(corruptf("Arrow IPC", "record data holds more than 1 record batch"))
		}
		rec, err := loadBatch(schema, meta, body)
		if err != nil {
			return fail(err)
		}
		recs = append(recs, rec)
	}
	if !many && len(recs) != 1 {
		return fail(corruptf("Arrow IPC", "record data holds %d record batches, want exactly 1", len(recs)))
	}
	if build != nil {
		building = true
		build(schema, recs)
		building = false
	}
	return recs, nil
}

// noAlloc is the allocator of the schema-only arrow/ipc reader: reading a schema
// allocates no buffers.
type noAlloc struct{}

func (noAlloc) Allocate(int) []byte           { panic("codec: unexpected allocation reading a schema") }
func (noAlloc) Reallocate(int, []byte) []byte { panic("codec: unexpected allocation reading a schema") }
func (noAlloc) Free([]byte)                   {}

// checkSchemaTypes rejects type parameters no valid schema has and that arrow's arrays
// trust (a negative fixed-size binary width or list size makes them slice out of range).
func checkSchemaTypes(schema *arrow.Schema) error {
	var check func(dt arrow.DataType, depth int) error
	check = func(dt arrow.DataType, depth int) error {
		if depth > maxArrowTypeDepth {
			return corruptf("Arrow IPC", "types nested more than %d deep", maxArrowTypeDepth)
		}
		switch dt := dt.(type) {
		case *arrow.FixedSizeBinaryType:
			if dt.ByteWidth < 0 {
				return corruptf("Arrow IPC", "fixed-size binary of width %d", dt.ByteWidth)
			}
		case *arrow.Decimal128Type:
			if dt.Precision < 1 || dt.Precision > 38 || dt.Scale < -38 || dt.Scale > 38 {
				return corruptf("Arrow IPC", "decimal128(%d, %d)", dt.Precision, dt.Scale)
			}
		case *arrow.Decimal256Type:
			if dt.Precision < 1 || dt.Precision > 76 || dt.Scale < -76 || dt.Scale > 76 {
				return corruptf("Arrow IPC", "decimal256(%d, %d)", dt.Precision, dt.Scale)
			}
		case *arrow.FixedSizeListType:
			if dt.Len() < 0 {
				return corruptf("Arrow IPC", "fixed-size list of size %d", dt.Len())
			}
		}
		if n, ok := dt.(arrow.NestedType); ok {
			for _, f := range n.Fields() {
				if err := check(f.Type, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, f := range schema.Fields() {
		if err := check(f.Type, 0); err != nil {
			return err
		}
	}
	return nil
}

// sharedType reports whether arrays of dt are built in place.
func sharedType(dt arrow.DataType, depth int) bool {
	if depth > maxArrowTypeDepth {
		return false
	}
	switch dt := dt.(type) {
	case *arrow.BooleanType,
		*arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type,
		*arrow.Float16Type, *arrow.Float32Type, *arrow.Float64Type,
		*arrow.Decimal128Type, *arrow.Decimal256Type,
		*arrow.Time32Type, *arrow.Time64Type, *arrow.TimestampType,
		*arrow.Date32Type, *arrow.Date64Type,
		*arrow.MonthIntervalType, *arrow.DayTimeIntervalType, *arrow.MonthDayNanoIntervalType,
		*arrow.DurationType, *arrow.FixedSizeBinaryType:
		return dt.(arrow.FixedWidthDataType).BitWidth() > 0
	case *arrow.BinaryType, *arrow.StringType, *arrow.LargeBinaryType, *arrow.LargeStringType:
		return true
	case *arrow.ListType:
		return sharedType(dt.Elem(), depth+1)
	case *arrow.LargeListType:
		return sharedType(dt.Elem(), depth+1)
	case *arrow.FixedSizeListType:
		return dt.Len() >= 0 && sharedType(dt.Elem(), depth+1)
	case *arrow.StructType:
		for _, f := range dt.Fields() {
			if !sharedType(f.Type, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// batchLoader walks a RecordBatch message's field nodes and buffers, in the order the IPC
// format lists them (a pre-order walk of the schema's fields).
type batchLoader struct {
	body          []byte
	nodes, nNodes int // position of the first node in meta, count
	bufs, nBufs   int
	meta          []byte
	inode, ibuf   int
	copied        bool // a misaligned buffer was copied
}

// loadBatch builds one record from a RecordBatch message over its body.
func loadBatch(schema *arrow.Schema, meta, body []byte) (arrow.Record, error) {
	root, _ := fbU32(meta, 0)
	m, ok := fbTableAt(meta, int(root))
	if !ok {
		return nil, corruptf("Arrow IPC", "malformed message metadata")
	}
	var kind byte
	if p := m.field(1); p != 0 {
		kind = meta[p]
	}
	if kind == 2 { // a DictionaryBatch: the schema has no dictionaries, so it is corrupt
		return nil, corruptf("Arrow IPC", "dictionary batch for a schema without dictionaries")
	}
	if kind != 3 {
		return nil, corruptf("Arrow IPC", "message of kind %d where a record batch belongs", kind)
	}
	hp, present, ok := m.ref(2)
	if !ok || !present {
		return nil, corruptf("Arrow IPC", "record batch message without a header")
	}
	rb, ok := fbTableAt(meta, hp)
	if !ok {
		return nil, corruptf("Arrow IPC", "malformed record batch header")
	}
	if rb.field(3) != 0 { // compression
		return nil, errNotShared
	}
	if _, n, _ := rb.vector(4, 8); n != 0 { // variadic buffer counts (view types)
		return nil, errNotShared
	}
	var rows int64
	if p := rb.field(0); p != 0 {
		rows = int64(binary.LittleEndian.Uint64(meta[p:]))
	}
	if rows < 0 || rows > 1<<40 {
		return nil, corruptf("Arrow IPC", "record batch of %d rows", rows)
	}
	l := &batchLoader{body: body, meta: meta}
	l.nodes, l.nNodes, ok = rb.vector(1, 16)
	if !ok {
		return nil, corruptf("Arrow IPC", "malformed field nodes")
	}
	l.bufs, l.nBufs, ok = rb.vector(2, 16)
	if !ok {
		return nil, corruptf("Arrow IPC", "malformed buffer list")
	}
	cols := make([]arrow.Array, 0, schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, f := range schema.Fields() {
		d, err := l.load(f.Type)
		if err != nil {
			return nil, err
		}
		if int64(d.Len()) != rows {
			d.Release()
			return nil, corruptf("Arrow IPC", "column %q has %d rows, the batch %d", f.Name, d.Len(), rows)
		}
		cols = append(cols, array.MakeFromData(d))
		d.Release()
	}
	if l.inode != l.nNodes || l.ibuf != l.nBufs {
		return nil, corruptf("Arrow IPC", "record batch lists %d nodes and %d buffers, the schema uses %d and %d",
			l.nNodes, l.nBufs, l.inode, l.ibuf)
	}
	return array.NewRecord(schema, cols, rows), nil
}

func (l *batchLoader) node() (length, nulls int, err error) {
	if l.inode >= l.nNodes {
		return 0, 0, corruptf("Arrow IPC", "record batch has too few field nodes")
	}
	p := l.nodes + 16*l.inode
	l.inode++
	n := int64(binary.LittleEndian.Uint64(l.meta[p:]))
	k := int64(binary.LittleEndian.Uint64(l.meta[p+8:]))
	// A length is bounded by the body: even a boolean column needs a bit per row, except
	// all-null or empty layouts; 1<<40 keeps every size computation below from overflowing.
	if n < 0 || n > 1<<40 || k < 0 || k > n {
		return 0, 0, corruptf("Arrow IPC", "field node of length %d with %d nulls", n, k)
	}
	return int(n), int(k), nil
}

// buffer returns buffer i of the body, at least min bytes long (else the data is
// corrupt). A misaligned buffer is copied.
func (l *batchLoader) buffer(min int) (*memory.Buffer, error) {
	if l.ibuf >= l.nBufs {
		return nil, corruptf("Arrow IPC", "record batch has too few buffers")
	}
	p := l.bufs + 16*l.ibuf
	l.ibuf++
	off := int64(binary.LittleEndian.Uint64(l.meta[p:]))
	n := int64(binary.LittleEndian.Uint64(l.meta[p+8:]))
	if off < 0 || n < 0 || off > int64(len(l.body)) || n > int64(len(l.body))-off {
		return nil, corruptf("Arrow IPC", "buffer [%d, +%d) outside a body of %d bytes", off, n, len(l.body))
	}
	if n < int64(min) {
		return nil, corruptf("Arrow IPC", "buffer of %d bytes where %d are needed", n, min)
	}
	if n == 0 {
		return memory.NewBufferBytes(nil), nil
	}
	b := l.body[off : off+n : off+n]
	if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 != 0 {
		b = append(make([]byte, 0, n), b...)
		l.copied = true
	}
	return memory.NewBufferBytes(b), nil
}

// validity returns the validity buffer of a node (nil when it has no nulls; the IPC
// format lists a buffer either way).
func (l *batchLoader) validity(length, nulls int) (*memory.Buffer, error) {
	if nulls == 0 {
		if _, err := l.buffer(0); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return l.buffer(bitBytes(length))
}

func bitBytes(n int) int { return (n + 7) / 8 }

func (l *batchLoader) load(dt arrow.DataType) (arrow.ArrayData, error) {
	length, nulls, err := l.node()
	if err != nil {
		return nil, err
	}
	valid, err := l.validity(length, nulls)
	if err != nil {
		return nil, err
	}
	switch dt := dt.(type) {
	case *arrow.BinaryType, *arrow.StringType:
		return l.binary(dt, length, nulls, valid, 4)
	case *arrow.LargeBinaryType, *arrow.LargeStringType:
		return l.binary(dt, length, nulls, valid, 8)
	case *arrow.ListType:
		return l.list(dt, dt.Elem(), length, nulls, valid, 4)
	case *arrow.LargeListType:
		return l.list(dt, dt.Elem(), length, nulls, valid, 8)
	case *arrow.FixedSizeListType:
		child, err := l.load(dt.Elem())
		if err != nil {
			return nil, err
		}
		defer child.Release()
		if int64(child.Len()) < int64(length)*int64(dt.Len()) {
			return nil, corruptf("Arrow IPC", "fixed-size list of %d x %d with %d child values", length, dt.Len(), child.Len())
		}
		return array.NewData(dt, length, []*memory.Buffer{valid}, []arrow.ArrayData{child}, nulls, 0), nil
	case *arrow.StructType:
		children := make([]arrow.ArrayData, 0, len(dt.Fields()))
		defer func() {
			for _, c := range children {
				c.Release()
			}
		}()
		for _, f := range dt.Fields() {
			c, err := l.load(f.Type)
			if err != nil {
				return nil, err
			}
			children = append(children, c)
			if c.Len() < length {
				return nil, corruptf("Arrow IPC", "struct of %d rows with a field of %d", length, c.Len())
			}
		}
		return array.NewData(dt, length, []*memory.Buffer{valid}, children, nulls, 0), nil
	case arrow.FixedWidthDataType:
		bits := int64(dt.BitWidth())
		if length == 0 { // the IPC writer lists an empty values buffer
			if _, err := l.buffer(0); err != nil {
				return nil, err
			}
			return array.NewData(dt, 0, []*memory.Buffer{valid, nil}, nil, nulls, 0), nil
		}
		vals, err := l.buffer(int((int64(length)*bits + 7) / 8))
		if err != nil {
			return nil, err
		}
		return array.NewData(dt, length, []*memory.Buffer{valid, vals}, nil, nulls, 0), nil
	}
	return nil, fmt.Errorf("%w: type %s", errNotShared, dt)
}

// offsets returns the offsets buffer of a variable-length layout of length rows (width 4
// or 8 bytes per offset), having checked that they start at 0 or more, never decrease and
// end at most at limit.
func (l *batchLoader) offsets(length, width int, limit int64) (*memory.Buffer, error) {
	if length == 0 { // zero or one offset
		buf, err := l.buffer(0)
		if err != nil {
			return nil, err
		}
		if buf.Len() >= width {
			if o := offsetAt(buf.Bytes(), 0, width); o < 0 || o > limit {
				return nil, corruptf("Arrow IPC", "offset %d outside [0, %d]", o, limit)
			}
		}
		return buf, nil
	}
	buf, err := l.buffer((length + 1) * width)
	if err != nil {
		return nil, err
	}
	b := buf.Bytes()
	prev := offsetAt(b, 0, width)
	if prev < 0 {
		return nil, corruptf("Arrow IPC", "negative offset %d", prev)
	}
	if width == 4 {
		for _, o := range arrow.Int32Traits.CastFromBytes(b[4 : 4*(length+1)]) {
			if int64(o) < prev {
				return nil, corruptf("Arrow IPC", "offsets decrease")
			}
			prev = int64(o)
		}
	} else {
		for _, o := range arrow.Int64Traits.CastFromBytes(b[8 : 8*(length+1)]) {
			if o < prev {
				return nil, corruptf("Arrow IPC", "offsets decrease")
			}
			prev = o
		}
	}
	if prev > limit {
		return nil, corruptf("Arrow IPC", "offsets end at %d, past %d", prev, limit)
	}
	return buf, nil
}

func offsetAt(b []byte, i, width int) int64 {
	if width == 4 {
		return int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return int64(binary.LittleEndian.Uint64(b[8*i:]))
}

func (l *batchLoader) binary(dt arrow.DataType, length, nulls int, valid *memory.Buffer, width int) (arrow.ArrayData, error) {
	// The data buffer comes after the offsets: peek at its size first.
	if l.ibuf+1 >= l.nBufs {
		return nil, corruptf("Arrow IPC", "record batch has too few buffers")
	}
	dataLen := int64(binary.LittleEndian.Uint64(l.meta[l.bufs+16*(l.ibuf+1)+8:]))
	offs, err := l.offsets(length, width, dataLen)
	if err != nil {
		return nil, err
	}
	data, err := l.buffer(0)
	if err != nil {
		return nil, err
	}
	return array.NewData(dt, length, []*memory.Buffer{valid, offs, data}, nil, nulls, 0), nil
}

func (l *batchLoader) list(dt, elem arrow.DataType, length, nulls int, valid *memory.Buffer, width int) (arrow.ArrayData, error) {
	// The child's length comes from its node, the next one.
	if l.inode >= l.nNodes {
		return nil, corruptf("Arrow IPC", "record batch has too few field nodes")
	}
	childLen := int64(binary.LittleEndian.Uint64(l.meta[l.nodes+16*l.inode:]))
	offs, err := l.offsets(length, width, childLen)
	if err != nil {
		return nil, err
	}
	child, err := l.load(elem)
	if err != nil {
		return nil, err
	}
	defer child.Release()
	return array.NewData(dt, length, []*memory.Buffer{valid, offs}, []arrow.ArrayData{child}, nulls, 0), nil
}
