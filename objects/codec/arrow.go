package codec

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

func encodeArrowRecord(rec arrow.Record) ([]byte, error) {
	var buf bytes.Buffer
	size := 1024
	for _, col := range rec.Columns() {
		size += dataSize(col.Data())
	}
	buf.Grow(size)
	buf.WriteByte(byte(FormatArrowRecord))
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		w.Close()
		return nil, fmt.Errorf("codec: encoding arrow.Record: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("codec: encoding arrow.Record: %w", err)
	}
	return buf.Bytes(), nil
}

func encodeArrowTable(tbl arrow.Table) ([]byte, error) {
	var buf bytes.Buffer
	size := 1024
	for i := 0; i < int(tbl.NumCols()); i++ {
		for _, chunk := range tbl.Column(i).Data().Chunks() {
			size += dataSize(chunk.Data()) + 256
		}
	}
	buf.Grow(size)
	buf.WriteByte(byte(FormatArrowTable))
	tr := array.NewTableReader(tbl, -1) // one batch per run of aligned chunks
	defer tr.Release()
	w := ipc.NewWriter(&buf, ipc.WithSchema(tbl.Schema()))
	for tr.Next() {
		if err := w.Write(tr.Record()); err != nil {
			w.Close()
			return nil, fmt.Errorf("codec: encoding arrow.Table: %w", err)
		}
	}
	if err := tr.Err(); err != nil {
		w.Close()
		return nil, fmt.Errorf("codec: encoding arrow.Table: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("codec: encoding arrow.Table: %w", err)
	}
	return buf.Bytes(), nil
}

// dataSize estimates the encoded size of an array: the sum of its buffers (dictionaries
// are left out; the buffer grows if needed).
func dataSize(d arrow.ArrayData) int {
	n := 0
	for _, b := range d.Buffers() {
		if b != nil {
			n += b.Len() + 8
		}
	}
	for _, c := range d.Children() {
		n += dataSize(c)
	}
	return n
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
	recs, _, err := readArrow(data[1:], mem, false)
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
	recs, schema, err := readArrow(data[1:], mem, true)
	if err != nil {
		return nil, err
	}
	tbl, err := newTable(schema, recs)
	for _, r := range recs {
		r.Release()
	}
	return tbl, err
}

func newTable(schema *arrow.Schema, recs []arrow.Record) (tbl arrow.Table, err error) {
	defer func() {
		if r := recover(); r != nil {
			tbl, err = nil, corruptf("Arrow IPC", "building table: %v", r)
		}
	}()
	return array.NewTableFromRecords(schema, recs), nil
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

func decodeArrow(data []byte, ptr any, t reflect.Type) error {
	f := Format(data[0])
	switch p := ptr.(type) {
	case *arrow.Record:
		rec, err := UnmarshalRecord(data, nil)
		if err != nil {
			return err
		}
		*p = rec
		return nil
	case *arrow.Table:
		tbl, err := UnmarshalTable(data, nil)
		if err != nil {
			return err
		}
		*p = tbl
		return nil
	case *any:
		if f == FormatArrowRecord {
			rec, err := UnmarshalRecord(data, nil)
			if err != nil {
				return err
			}
			*p = rec
			return nil
		}
		tbl, err := UnmarshalTable(data, nil)
		if err != nil {
			return err
		}
		*p = tbl
		return nil
	}
	return &TypeMismatchError{Stored: storedName(data), Want: t}
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
// corrupt input become errors.
func readArrow(payload []byte, mem memory.Allocator, many bool) (recs []arrow.Record, schema *arrow.Schema, err error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if err := checkIPCStream(payload); err != nil {
		return nil, nil, err
	}
	alloc := &decodeAllocator{mem: mem, limit: len(payload) + 64, outstanding: make(map[*byte][]byte)}
	defer func() {
		if r := recover(); r != nil {
			for _, rec := range recs {
				rec.Release()
			}
			recs, schema, err = nil, nil, corruptf("Arrow IPC", "reader failed: %v", r)
		}
		alloc.finish(err != nil)
	}()
	rd, err := ipc.NewReader(bytes.NewReader(payload), ipc.WithAllocator(alloc))
	if err != nil {
		return nil, nil, corruptWrap("Arrow IPC", err)
	}
	defer rd.Release()
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
	return recs, rd.Schema(), nil
}
