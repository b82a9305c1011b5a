package formats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// Defaults of ReadOptions.
const (
	DefaultTargetBlockBytes = 128 << 20
	DefaultBatchRows        = 64 << 10
)

// Read reads one unit and calls emit with each block (an arrow.Record; emit takes ownership and
// must Release it). Blocks of a unit all have the same schema: the file's columns (or
// opt.Columns, in that order), then "path" with opt.IncludePath. Each block holds at most
// opt.TargetBlockBytes as measured by RecordBytes (a single larger row makes a block of its
// own). A unit without rows emits one empty block when its schema is known (so the caller learns
// the schema) and nothing for an empty CSV/JSON file.
//
// Errors name the file and, where known, the line/row group: `data: reading /x/a.csv: line 17:
// ...`. Transient errors of the file system (see IsTransient) are retried up to 3 times with a
// short backoff. ctx cancellation stops the read between batches and returns ctx.Err(). mem is the
// allocator for all buffers (nil: memory.DefaultAllocator). An error returned by emit is returned
// as is.
func Read(ctx context.Context, u Unit, opt ReadOptions, mem memory.Allocator, emit func(arrow.Record) error) (err error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if emit == nil {
		return errors.New("data: formats.Read: emit is nil")
	}
	if opt.TargetBlockBytes <= 0 {
		opt.TargetBlockBytes = DefaultTargetBlockBytes
	}
	autoBatch := opt.BatchRows <= 0
	if autoBatch {
		opt.BatchRows = DefaultBatchRows
	}
	if opt.Delimiter == 0 {
		opt.Delimiter = ','
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p := &pipeline{path: u.Path, opt: opt, mem: mem, emit: emit, target: opt.TargetBlockBytes}
	defer p.release()
	switch opt.Format {
	case Parquet:
		err = readParquet(ctx, u, opt, autoBatch, mem, p.add)
	case CSV:
		err = readCSV(ctx, u.Path, opt, mem, p.add)
	case JSON:
		err = readJSON(ctx, u.Path, opt, mem, p.add)
	case Binary:
		err = readBinary(u.Path, mem, p.add)
	case Text:
		err = readText(ctx, u.Path, opt, mem, p.add)
	default:
		return fmt.Errorf("data: unknown format %d: use formats.Parquet, CSV, JSON or Binary", int(opt.Format))
	}
	if err != nil {
		if p.emitErr != nil {
			return p.emitErr
		}
		return err
	}
	return p.finish()
}

// pipeline takes the batches of a reader (owning them), projects them, adds the path column and
// cuts blocks of at most target bytes.
type pipeline struct {
	path   string
	opt    ReadOptions
	mem    memory.Allocator
	emit   func(arrow.Record) error
	target int64

	inSchema *arrow.Schema // schema of the last input batch
	idx      []int         // projection of inSchema
	outSch   *arrow.Schema

	pending      []arrow.Record
	pendingBytes int64
	empty        arrow.Record // a zero-row block, emitted if nothing else is
	emitted      int
	emitErr      error
}

func (p *pipeline) release() {
	for _, r := range p.pending {
		r.Release()
	}
	p.pending = nil
	if p.empty != nil {
		p.empty.Release()
		p.empty = nil
	}
}

// add takes ownership of rec.
func (p *pipeline) add(rec arrow.Record) error {
	out, err := p.shape(rec)
	rec.Release()
	if err != nil {
		return err
	}
	if out.NumRows() == 0 {
		if p.empty == nil && p.emitted == 0 && len(p.pending) == 0 {
			p.empty = out
		} else {
			out.Release()
		}
		return nil
	}
	return p.cut(out)
}

// shape projects rec and adds the path column; it returns a new reference.
func (p *pipeline) shape(rec arrow.Record) (arrow.Record, error) {
	if p.inSchema == nil || !p.inSchema.Equal(rec.Schema()) {
		p.inSchema = rec.Schema()
		p.idx = p.idx[:0]
		if p.opt.Columns == nil {
			for i := range rec.Schema().Fields() {
				p.idx = append(p.idx, i)
			}
		} else {
			for _, c := range p.opt.Columns {
				is := rec.Schema().FieldIndices(c)
				if len(is) == 0 {
					names := make([]string, 0, rec.Schema().NumFields())
					for _, f := range rec.Schema().Fields() {
						names = append(names, f.Name)
					}
					return nil, fmt.Errorf("data: reading %s: no column %q: the file has columns %s", p.path, c, strings.Join(names, ", "))
				}
				p.idx = append(p.idx, is[0])
			}
		}
		fields := make([]arrow.Field, 0, len(p.idx)+1)
		for _, i := range p.idx {
			fields = append(fields, rec.Schema().Field(i))
		}
		if p.opt.IncludePath {
			fields = append(fields, arrow.Field{Name: "path", Type: arrow.BinaryTypes.String})
		}
		if p.outSch == nil {
			md := rec.Schema().Metadata()
			p.outSch = arrow.NewSchema(fields, &md)
		} else if !fieldsEqual(p.outSch.Fields(), fields) {
			return nil, fmt.Errorf("data: reading %s: the schema changed within the file: %s then %s", p.path, p.outSch, arrow.NewSchema(fields, nil))
		}
	}
	cols := make([]arrow.Array, 0, len(p.idx)+1)
	for _, i := range p.idx {
		cols = append(cols, rec.Column(i))
	}
	if p.opt.IncludePath {
		pc := repeatString(p.mem, p.path, int(rec.NumRows()))
		defer pc.Release()
		cols = append(cols, pc)
	}
	return array.NewRecord(p.outSch, cols, rec.NumRows()), nil
}

func fieldsEqual(a, b []arrow.Field) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// repeatString is a string array holding s n times.
func repeatString(mem memory.Allocator, s string, n int) arrow.Array {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	b.ReserveData(n * len(s))
	for i := 0; i < n; i++ {
		b.Append(s)
	}
	return b.NewArray()
}

// cut adds rec (owned) to the pending block, emitting blocks of at most target bytes.
func (p *pipeline) cut(rec arrow.Record) error {
	for {
		n := rec.NumRows()
		size := RecordBytes(rec)
		room := p.target - p.pendingBytes
		if size <= room {
			p.pending = append(p.pending, rec)
			p.pendingBytes += size
			if p.pendingBytes >= p.target {
				return p.flush()
			}
			return nil
		}
		// Take the longest prefix that fits.
		k := prefixFitting(rec, room)
		if k == 0 {
			if len(p.pending) > 0 {
				if err := p.flush(); err != nil {
					rec.Release()
					return err
				}
				continue
			}
			k = 1 // one row larger than the target makes a block of its own
		}
		head := rec.NewSlice(0, k)
		p.pending = append(p.pending, head)
		p.pendingBytes += RecordBytes(head)
		if err := p.flush(); err != nil {
			rec.Release()
			return err
		}
		if k == n {
			rec.Release()
			return nil
		}
		tail := rec.NewSlice(k, n)
		rec.Release()
		rec = tail
	}
}

// prefixFitting returns the largest k with RecordBytes(rows [0,k)) <= room.
func prefixFitting(rec arrow.Record, room int64) int64 {
	bytesOf := func(k int64) int64 {
		var t int64
		for _, c := range rec.Columns() {
			t += rangeBytes(c.Data(), 0, k)
		}
		return t
	}
	lo, hi := int64(0), rec.NumRows() // bytesOf(lo) <= room; find the largest
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if bytesOf(mid) <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// flush emits the pending records as one block.
func (p *pipeline) flush() error {
	if len(p.pending) == 0 {
		return nil
	}
	var block arrow.Record
	if len(p.pending) == 1 && !isSparse(p.pending[0]) {
		block = p.pending[0]
	} else {
		// Several parts, or a small slice of a large batch: copy into compact buffers, so that
		// a block owns no more memory than it holds.
		var err error
		block, err = concatRecords(p.outSch, p.pending, p.mem)
		for _, r := range p.pending {
			r.Release()
		}
		if err != nil {
			p.pending, p.pendingBytes = p.pending[:0], 0
			return fmt.Errorf("data: reading %s: %w", p.path, err)
		}
	}
	p.pending, p.pendingBytes = p.pending[:0], 0
	p.emitted++
	if err := p.emit(block); err != nil {
		p.emitErr = err
		return err
	}
	return nil
}

func (p *pipeline) finish() error {
	if err := p.flush(); err != nil {
		return err
	}
	if p.emitted == 0 && p.empty != nil {
		e := p.empty
		p.empty = nil
		p.emitted++
		if err := p.emit(e); err != nil {
			return err
		}
	}
	return nil
}

// isSparse reports whether rec's buffers are much larger than its rows (a slice of a batch).
func isSparse(rec arrow.Record) bool {
	var held int64
	for _, c := range rec.Columns() {
		held += heldBytes(c.Data())
	}
	return held > 2*RecordBytes(rec)+64<<10
}

// heldBytes is the size of the buffers d references.
func heldBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += heldBytes(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		if dict := d.Dictionary(); dict != nil {
			n += heldBytes(dict)
		}
	}
	return n
}

// concatRecords concatenates records column by column into new buffers.
func concatRecords(schema *arrow.Schema, recs []arrow.Record, mem memory.Allocator) (arrow.Record, error) {
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	parts := make([]arrow.Array, len(recs))
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	for i := range cols {
		for j, r := range recs {
			parts[j] = r.Column(i)
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			return nil, err
		}
		cols[i] = c
	}
	return array.NewRecord(schema, cols, rows), nil
}

// IsTransient reports whether err is a transient I/O error worth retrying: EINTR, EAGAIN, or an
// error whose Timeout() is true (os.ErrDeadlineExceeded, network timeouts). io.ErrUnexpectedEOF
// (a truncated or still-growing file) and context errors are not transient.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.EAGAIN) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// maxRetries is how often a transient error is retried; retryBackoff the first pause (doubled
// each time).
const maxRetries = 3

var retryBackoff = 10 * time.Millisecond

// retry runs op until it succeeds, fails with a non-transient error, or failed maxRetries+1 times.
func retry[T any](op func() (T, error)) (T, error) {
	d := retryBackoff
	for i := 0; ; i++ {
		v, err := op()
		if err == nil || i == maxRetries || !IsTransient(err) {
			return v, err
		}
		time.Sleep(d)
		d *= 2
	}
}

// fileHandle is what the readers need of an open file.
type fileHandle interface {
	io.Reader
	io.ReaderAt
	io.Seeker
	io.Closer
	Stat() (os.FileInfo, error)
}

// openFile opens a file for reading; tests replace it to inject faults.
var openFile = func(path string) (fileHandle, error) { return os.Open(path) }

// retryFile retries the transient errors of the reads of a file.
type retryFile struct {
	f    fileHandle
	path string
}

func open(path string) (*retryFile, error) {
	f, err := retry(func() (fileHandle, error) { return openFile(path) })
	if err != nil {
		return nil, pathErr(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, pathErr(path, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("data: reading %s: is a directory, not a file", path)
	}
	return &retryFile{f: f, path: path}, nil
}

func (r *retryFile) Read(b []byte) (int, error) {
	d := retryBackoff
	for i := 0; ; i++ {
		n, err := r.f.Read(b)
		if n > 0 || err == nil || i == maxRetries || !IsTransient(err) {
			if err != nil && n > 0 && IsTransient(err) {
				err = nil // return the data; the next Read retries
			}
			return n, err
		}
		time.Sleep(d)
		d *= 2
	}
}

func (r *retryFile) ReadAt(b []byte, off int64) (int, error) {
	total := 0
	d := retryBackoff
	for i := 0; ; {
		n, err := r.f.ReadAt(b[total:], off+int64(total))
		total += n
		if err == nil || total == len(b) {
			return total, nil
		}
		if i == maxRetries || !IsTransient(err) {
			return total, err
		}
		i++
		time.Sleep(d)
		d *= 2
	}
}

func (r *retryFile) Seek(off int64, whence int) (int64, error) { return r.f.Seek(off, whence) }
func (r *retryFile) Close() error                              { return r.f.Close() }
