package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

func encodeArrowRecord(rec arrow.Record) ([]byte, error) {
	return encodeIPC(FormatArrowRecord, rec.Schema(), func(w *ipc.Writer) error {
		return w.Write(rec)
	}, "arrow.Record")
}

func encodeArrowTable(tbl arrow.Table) ([]byte, error) {
	return encodeIPC(FormatArrowTable, tbl.Schema(), func(w *ipc.Writer) error {
		tr := array.NewTableReader(tbl, -1) // one batch per run of aligned chunks
		defer tr.Release()
		for tr.Next() {
			if err := w.Write(tr.Record()); err != nil {
				return err
			}
		}
		return tr.Err()
	}, "arrow.Table")
}

// encodeIPC writes the format byte and an IPC stream (the schema, what write writes, the
// end-of-stream marker) into one buffer of exactly the final size. A first pass through a
// byte counter measures the stream (the IPC writer's work apart from copying the bodies is
// a little flatbuffer building per message, so this is cheap), the second writes it into a
// buffer allocated once: no growth, no over-allocation (estimating from the arrays'
// buffers over-allocates for slices, whose buffers are larger than what is written), and
// the largest encoded objects are written in one copy each.
func encodeIPC(f Format, schema *arrow.Schema, write func(*ipc.Writer) error, what string) ([]byte, error) {
	var n countWriter
	if err := writeIPC(&n, schema, write); err != nil {
		return nil, fmt.Errorf("codec: encoding %s: %w", what, err)
	}
	// The format byte, padded to 8 bytes so that the stream's buffers are 8-byte aligned
	// in memory (read in place: arrowshared.go).
	// Large buffers are recycled once garbage (encbuf.go).
	out := fixedWriter{buf: encodeBuf(1 + arrowPad + int(n))[:1+arrowPad]}
	out.buf[0] = byte(f)
	clear(out.buf[1:])
	if err := writeIPC(&out, schema, write); err != nil {
		return nil, fmt.Errorf("codec: encoding %s: %w", what, err)
	}
	return out.buf, nil
}

func writeIPC(dst io.Writer, schema *arrow.Schema, write func(*ipc.Writer) error) error {
	w := ipc.NewWriter(dst, ipc.WithSchema(schema))
	if err := write(w); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// countWriter counts the bytes written to it.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

// fixedWriter appends to buf, whose capacity is the expected final size (appending past
// it still works: it only costs a reallocation).
type fixedWriter struct{ buf []byte }

func (w *fixedWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// UnmarshalRecord decodes FormatArrowRecord data into a record whose buffers come from mem
// (memory.DefaultAllocator when nil). The caller owns the record and must Release it.
// Unmarshal[arrow.Record] is the same with the default allocator.
func UnmarshalRecord(data []byte, mem memory.Allocator) (arrow.Record, error) {
	if len(data) == 0 {
		return nil, corruptf("", "empty input")
	}
	if Format(data[0]) != FormatArrowRecord {
		return nil, &TypeMismatchError{Stored: storedName(data), Want: typeArrowRecord}
	}
	recs, _, err := readArrow(arrowPayload(data), mem, false, nil)
	if err != nil {
		return nil, err
	}
	return recs[0], nil
}

// UnmarshalTable decodes FormatArrowTable or FormatArrowRecord data into a table whose
// buffers come from mem (memory.DefaultAllocator when nil). The caller owns the table and
// must Release it.
func UnmarshalTable(data []byte, mem memory.Allocator) (arrow.Table, error) {
	if len(data) == 0 {
		return nil, corruptf("", "empty input")
	}
	if f := Format(data[0]); f != FormatArrowTable && f != FormatArrowRecord {
		return nil, &TypeMismatchError{Stored: storedName(data), Want: typeArrowTable}
	}
	// The table is built while readArrow still tracks the allocations: arrow panics on
	// some records that decode but are inconsistent, after retaining part of them, and the
	// allocator must then free what the half-built table holds.
	var tbl arrow.Table
	recs, _, err := readArrow(arrowPayload(data), mem, true, func(schema *arrow.Schema, recs []arrow.Record) {
		tbl = array.NewTableFromRecords(schema, recs)
	})
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		r.Release()
	}
	return tbl, nil
}

// storedName names what data holds, for type mismatch errors.
func storedName(data []byte) string {
	switch f := Format(data[0]); f {
	case FormatCBOR:
		return describeCBOR(data[1:])
	case FormatNumeric:
		if len(data) > 1 && numKind(data[1]).wireSize() != 0 {
			return "raw " + kindSliceName(numKind(data[1])) + " data"
		}
	case FormatBytes:
		return "raw []byte data"
	case FormatString:
		return "raw string data"
	case FormatUser:
		if name, _, err := splitUser(data); err == nil {
			return fmt.Sprintf("data of codec %q", name)
		}
	}
	return Format(data[0]).String() + " data"
}

// decodeArrow is Unmarshal's Arrow path: records and tables built over data where they
// can be (readArrowShared), no copy of the array buffers.
func decodeArrow(data []byte, ptr any, t reflect.Type) error {
	f := Format(data[0])
	switch p := ptr.(type) {
	case *arrow.Record:
		rec, err := unmarshalRecordShared(data)
		if err != nil {
			return err
		}
		*p = rec
		return nil
	case *arrow.Table:
		tbl, err := unmarshalTableShared(data)
		if err != nil {
			return err
		}
		*p = tbl
		return nil
	case *any:
		if f == FormatArrowRecord {
			rec, err := unmarshalRecordShared(data)
			if err != nil {
				return err
			}
			*p = rec
			return nil
		}
		tbl, err := unmarshalTableShared(data)
		if err != nil {
			return err
		}
		*p = tbl
		return nil
	}
	return &TypeMismatchError{Stored: storedName(data), Want: t}
}

func unmarshalRecordShared(data []byte) (arrow.Record, error) {
	if Format(data[0]) != FormatArrowRecord {
		return nil, &TypeMismatchError{Stored: storedName(data), Want: typeArrowRecord}
	}
	recs, err := readArrowShared(arrowPayload(data), false, nil)
	if err != nil {
		return nil, err
	}
	return recs[0], nil
}

func unmarshalTableShared(data []byte) (arrow.Table, error) {
	var tbl arrow.Table
	recs, err := readArrowShared(arrowPayload(data), true, func(schema *arrow.Schema, recs []arrow.Record) {
		tbl = array.NewTableFromRecords(schema, recs)
	})
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		r.Release()
	}
	return tbl, nil
}

// errArrowAlloc is panicked by decodeAllocator and recovered in readArrow.
var errArrowAlloc = errors.New("allocation larger than the input")

// decodeAllocator is the allocator arrow/ipc reads with. It refuses allocations larger
// than the encoded input, so corrupt lengths in IPC metadata cannot make the reader
// allocate without bound (this package never writes compressed IPC, the one case where a
// buffer outgrows its input). And while the decode is in progress it tracks what is
// outstanding, because arrow/ipc leaks buffers on several of its error paths: when the
// decode fails, readArrow frees whatever is still outstanding. Once the decode is over
// (finish), it is a plain pass-through for the returned values' Release calls.
type decodeAllocator struct {
	mem   memory.Allocator
	limit int

	mu          sync.Mutex
	finished    bool
	outstanding map[*byte][]byte
}

func (a *decodeAllocator) track(b []byte) {
	if cap(b) == 0 {
		return
	}
	a.mu.Lock()
	if !a.finished {
		a.outstanding[unsafe.SliceData(b[:1])] = b
	}
	a.mu.Unlock()
}

// untrack forgets b and returns the slice as it was allocated (arrow/ipc sometimes frees
// a re-sliced buffer; the allocator must see the original length).
func (a *decodeAllocator) untrack(b []byte) []byte {
	if cap(b) == 0 {
		return b
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.finished {
		return b
	}
	p := unsafe.SliceData(b[:1])
	if orig, ok := a.outstanding[p]; ok {
		delete(a.outstanding, p)
		return orig
	}
	return b
}

func (a *decodeAllocator) Allocate(size int) []byte {
	if size > a.limit || size < 0 {
		panic(errArrowAlloc)
	}
	b := a.mem.Allocate(size)
	a.track(b)
	return b
}

func (a *decodeAllocator) Reallocate(size int, b []byte) []byte {
	if size > a.limit || size < 0 {
		panic(errArrowAlloc)
	}
	nb := a.mem.Reallocate(size, a.untrack(b))
	a.track(nb)
	return nb
}

func (a *decodeAllocator) Free(b []byte) { a.mem.Free(a.untrack(b)) }

// finish ends tracking; if the decode failed it frees everything still outstanding.
func (a *decodeAllocator) finish(failed bool) {
	a.mu.Lock()
	leaked := a.outstanding
	a.outstanding, a.finished = nil, true
	a.mu.Unlock()
	if failed {
		for _, b := range leaked {
			a.mem.Free(b)
		}
	}
}

// readArrow reads an IPC stream: the schema and its record batches (exactly one unless
// many is set). The records are retained for the caller. Panics from the IPC reader on
// corrupt input become errors. build, if not nil, runs on the result before the decode is
// over (a panic in it is a corrupt input too, and what it allocated or retained is freed).
func readArrow(payload []byte, mem memory.Allocator, many bool, build func(*arrow.Schema, []arrow.Record)) (recs []arrow.Record, schema *arrow.Schema, err error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if err := checkIPCStream(payload); err != nil {
		return nil, nil, err
	}
	alloc := &decodeAllocator{mem: mem, limit: len(payload) + 64, outstanding: make(map[*byte][]byte)}
	building := false
	defer func() {
		if r := recover(); r != nil {
			for _, rec := range recs {
				rec.Release()
			}
			what := "reader failed"
			if building {
				what = "building table"
			}
			recs, schema, err = nil, nil, corruptf("Arrow IPC", "%s: %v", what, r)
		}
		alloc.finish(err != nil)
	}()
	rd, err := ipc.NewReaderFromMessageReader(&sliceMessageReader{data: payload, refs: 1}, ipc.WithAllocator(alloc))
	if err != nil {
		return nil, nil, corruptWrap("Arrow IPC", err)
	}
	defer rd.Release()
	if err := checkSchemaTypes(rd.Schema()); err != nil {
		return nil, nil, err
	}
	for rd.Next() {
		rec := rd.Record()
		rec.Retain()
		recs = append(recs, rec)
		if !many && len(recs) > 1 {
			break
		}
	}
	if err := rd.Err(); err != nil {
		for _, rec := range recs {
			rec.Release()
		}
		return nil, nil, corruptWrap("Arrow IPC", err)
	}
	if !many && len(recs) != 1 {
		for _, rec := range recs {
			rec.Release()
		}
		return nil, nil, corruptf("Arrow IPC", "record data holds %d record batches, want exactly 1", len(recs))
	}
	if build != nil {
		building = true
		build(rd.Schema(), recs)
		building = false
	}
	return recs, rd.Schema(), nil
}

// sliceMessageReader reads the messages of an IPC stream held in memory without copying
// them: each message's metadata and body are memory.Buffers over the input (arrow/ipc's
// own message reader reads every body into a newly allocated buffer first). This is safe
// because arrow/ipc copies every array buffer out of the body when it builds a record or a
// dictionary (ipcSource.buffer reads it into a buffer from the reader's allocator), and
// the schema's names and metadata are converted to strings: nothing the decode returns
// aliases the input, which the caller (the object store) may share or free afterwards.
// checkIPCStream has validated the framing; the bounds are checked again here anyway, so
// that a bad length gives an error, never a panic.
type sliceMessageReader struct {
	data []byte
	pos  int
	refs int64
	msg  *ipc.Message
}

func (r *sliceMessageReader) Retain() { atomic.AddInt64(&r.refs, 1) }

func (r *sliceMessageReader) Release() {
	if atomic.AddInt64(&r.refs, -1) == 0 && r.msg != nil {
		r.msg.Release()
		r.msg = nil
	}
}

func (r *sliceMessageReader) u32() (uint32, error) {
	if len(r.data)-r.pos < 4 {
		return 0, errors.New("arrow/ipc: truncated message length")
	}
	v := binary.LittleEndian.Uint32(r.data[r.pos:])
	r.pos += 4
	return v, nil
}

// Message returns the next message, valid until the next call (as arrow/ipc's reader);
// io.EOF at the end-of-stream marker.
func (r *sliceMessageReader) Message() (*ipc.Message, error) {
	if r.msg != nil {
		r.msg.Release()
		r.msg = nil
	}
	meta, b, err := r.next()
	if err != nil {
		return nil, err
	}
	// Buffers over plain bytes: no allocator, so releasing them frees nothing.
	r.msg = ipc.NewMessage(memory.NewBufferBytes(meta), memory.NewBufferBytes(b))
	return r.msg, nil
}

// next returns the metadata and body of the next message, subslices of the input; io.EOF
// at the end-of-stream marker.
func (r *sliceMessageReader) next() (meta, body []byte, err error) {
	l, err := r.u32()
	if err != nil {
		return nil, nil, err
	}
	if l == 0xFFFFFFFF { // continuation marker, then the length
		if l, err = r.u32(); err != nil {
			return nil, nil, err
		}
	}
	if l == 0 {
		return nil, nil, io.EOF
	}
	if uint64(l) > uint64(len(r.data)-r.pos) {
		return nil, nil, errors.New("arrow/ipc: message metadata overruns the input")
	}
	meta = r.data[r.pos : r.pos+int(l) : r.pos+int(l)]
	r.pos += int(l)
	n, ok := checkMessage(meta)
	if !ok {
		return nil, nil, errors.New("arrow/ipc: malformed message metadata")
	}
	if n > uint64(len(r.data)-r.pos) {
		return nil, nil, errors.New("arrow/ipc: message body overruns the input")
	}
	body = r.data[r.pos : r.pos+int(n) : r.pos+int(n)]
	r.pos += int(n)
	return meta, body, nil
}
