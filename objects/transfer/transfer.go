package transfer

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/klauspost/compress/s2"

	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// MaxChunk is the largest chunk a puller asks for and a shard serves.
const MaxChunk = 1 << 20

// Defaults of Options.
const (
	DefaultInFlight = 4
	DefaultTimeout  = 30 * time.Second
)

var (
	// ErrNotFound: the store does not hold the object.
	ErrNotFound = errors.New("transfer: object not found")
	// ErrCorrupt: what arrived fails a check (checksum, s2 frame, chunk length, or replies
	// that disagree on the object's size or checksum).
	ErrCorrupt = errors.New("transfer: object corrupt in transfer")
	// ErrUnreadable: the store holds the object but cannot read it (its error follows).
	ErrUnreadable = errors.New("transfer: store cannot read object")
)

// Options tune one Pull. The zero value is valid.
type Options struct {
	ChunkBytes int           // bytes per request; 0 or more than MaxChunk: MaxChunk
	InFlight   int           // requests outstanding at once; 0: DefaultInFlight
	S2         bool          // let the store s2-compress chunks (worth it between machines)
	Timeout    time.Duration // per chunk; 0: DefaultTimeout; never past ctx's deadline
	// Size is the object's size as the caller knows it (its owner's record), 0 if
	// unknown. A store that names another size is ErrCorrupt. Unknown, the buffer grows
	// with the chunks asked for, so a store cannot make Pull allocate more than about
	// twice what it sends plus the chunks in flight.
	Size int64
}

func (o Options) withDefaults() Options {
	if o.ChunkBytes <= 0 || o.ChunkBytes > MaxChunk {
		o.ChunkBytes = MaxChunk
	}
	if o.InFlight <= 0 {
		o.InFlight = DefaultInFlight
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// stats counts what a pull received (for tests and benchmarks).
type stats struct {
	chunks     int
	compressed int
	wire       int64 // data bytes as received
}

// Pull fetches object id from the store shard at store in chunks and returns its bytes,
// checked against the object's CRC-32C. Errors wrap ErrNotFound, ErrCorrupt,
// ErrUnreadable, the context's error, or protoactor's future errors (actor.ErrTimeout,
// actor.ErrDeadLetter), with the object ID and the store's address.
func Pull(ctx context.Context, root *actor.RootContext, store *actor.PID, id ids.ObjectID, opt Options) ([]byte, error) {
	return pull(ctx, root, store, id, opt, nil)
}

type result struct {
	off int64
	msg any
	err error
}

type puller struct {
	root    *actor.RootContext
	store   *actor.PID
	id      ids.ObjectID
	opt     Options
	results chan result
	pending map[int64]bool // chunks requested, not answered
	st      *stats
	done    context.Context // ended by stop: the requests still outstanding stop waiting
	cancel  context.CancelFunc
}

func pull(ctx context.Context, root *actor.RootContext, store *actor.PID, id ids.ObjectID, opt Options, st *stats) ([]byte, error) {
	opt = opt.withDefaults()
	p := &puller{root: root, store: store, id: id, opt: opt, st: st,
		results: make(chan result, opt.InFlight), pending: make(map[int64]bool, opt.InFlight)}
	p.done, p.cancel = context.WithCancel(context.Background())
	defer p.stop()

	// Chunk 0 tells the size and checksum.
	if err := p.request(ctx, 0); err != nil {
		return nil, err
	}
	first, err := p.next(ctx)
	if err != nil {
		return nil, err
	}
	if first.Size < 0 || first.Size > math.MaxInt {
		return nil, p.errorf("%w: size %d", ErrCorrupt, first.Size)
	}
	if opt.Size > 0 && first.Size != opt.Size {
		return nil, p.errorf("%w: the store says size %d, the object has %d", ErrCorrupt, first.Size, opt.Size)
	}
	size, sum := first.Size, first.Crc32C
	// With the size known, the buffer is allocated whole; else it covers the chunks asked
	// for, growing (doubling) as more are.
	var buf []byte
	if opt.Size > 0 {
		buf = make([]byte, size)
	} else {
		buf = make([]byte, min(size, int64(opt.ChunkBytes)*int64(opt.InFlight+1)))
	}
	if err := p.place(buf, first, size, sum); err != nil {
		return nil, err
	}
	off := min(int64(opt.ChunkBytes), size)
	for off < size || len(p.pending) > 0 {
		for off < size && len(p.pending) < opt.InFlight {
			if end := min(off+int64(opt.ChunkBytes), size); end > int64(len(buf)) {
				buf = append(buf, make([]byte, min(size, max(2*int64(len(buf)), end))-int64(len(buf)))...)
			}
			if err := p.request(ctx, off); err != nil {
				return nil, err
			}
			off += int64(opt.ChunkBytes)
		}
		r, err := p.next(ctx)
		if err != nil {
			return nil, err
		}
		if err := p.place(buf, r, size, sum); err != nil {
			return nil, err
		}
	}
	if got := crc32.Checksum(buf, castagnoli); got != sum {
		return nil, p.errorf("%w: CRC-32C of %d bytes is %08x, the store says %08x", ErrCorrupt, size, got, sum)
	}
	return buf, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (p *puller) errorf(format string, args ...any) error {
	return fmt.Errorf("transfer: pull object %s from %s: %w", p.id, p.store.Address, fmt.Errorf(format, args...))
}

// request asks for the chunk at off.
func (p *puller) request(ctx context.Context, off int64) error {
	if err := ctx.Err(); err != nil {
		return p.errorf("%w", err)
	}
	timeout := p.opt.Timeout
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); left < timeout {
			timeout = left
		}
		if timeout <= 0 {
			return p.errorf("%w", context.DeadlineExceeded)
		}
	}
	call := ask.Start(p.root, p.store, &pb.PullObject{ObjectId: p.id[:], Offset: off, Length: int32(p.opt.ChunkBytes), AllowS2: p.opt.S2})
	p.pending[off] = true
	results, done := p.results, p.done
	go func() {
		// (ask, not a protoactor future: a reply that arrives after a future completed,
		// by its timeout or by stop, races with reading it; the race detector saw it in
		// TestPullCorrupt under load.)
		msg, err := call.Wait(done, timeout)
		results <- result{off: off, msg: msg, err: err} // never blocks: one slot per outstanding request
	}()
	return nil
}

// next waits for a reply to an outstanding request and checks what it says about the
// object.
func (p *puller) next(ctx context.Context) (*pb.PullObjectReply, error) {
	var r result
	select {
	case <-ctx.Done():
		return nil, p.errorf("%w", ctx.Err())
	case r = <-p.results:
	}
	delete(p.pending, r.off)
	if r.err != nil {
		if ctx.Err() != nil { // the chunk timed out with the context
			return nil, p.errorf("%w", ctx.Err())
		}
		if d, ok := ctx.Deadline(); ok && errors.Is(r.err, actor.ErrTimeout) && !time.Now().Before(d) {
			return nil, p.errorf("%w", context.DeadlineExceeded)
		}
		return nil, p.errorf("chunk at %d: %w", r.off, r.err)
	}
	m, ok := r.msg.(*pb.PullObjectReply)
	if !ok {
		return nil, p.errorf("chunk at %d: unexpected reply %T", r.off, r.msg)
	}
	switch {
	case m.Error != "":
		return nil, p.errorf("%w: %s", ErrUnreadable, m.Error)
	case !m.Found:
		return nil, p.errorf("%w", ErrNotFound)
	case m.Offset != r.off || string(m.ObjectId) != string(p.id[:]):
		return nil, p.errorf("%w: asked for offset %d, got a reply for %x at %d", ErrCorrupt, r.off, m.ObjectId, m.Offset)
	}
	return m, nil
}

// place checks chunk m against the object's size and checksum and copies (or decodes) it
// into buf.
func (p *puller) place(buf []byte, m *pb.PullObjectReply, size int64, sum uint32) error {
	if m.Size != size || m.Crc32C != sum {
		return p.errorf("%w: the object changed during the pull (size %d crc %08x, then size %d crc %08x)",
			ErrCorrupt, size, sum, m.Size, m.Crc32C)
	}
	want := min(int64(p.opt.ChunkBytes), size-m.Offset)
	dst := buf[m.Offset : m.Offset+want]
	if p.st != nil {
		p.st.chunks++
		p.st.wire += int64(len(m.Data))
	}
	if !m.Compressed {
		if int64(len(m.Data)) != want {
			return p.errorf("%w: chunk at %d has %d bytes, want %d", ErrCorrupt, m.Offset, len(m.Data), want)
		}
		copy(dst, m.Data)
		return nil
	}
	if p.st != nil {
		p.st.compressed++
	}
	n, err := s2.DecodedLen(m.Data)
	if err != nil || int64(n) != want {
		return p.errorf("%w: s2 chunk at %d decodes to %d bytes (%v), want %d", ErrCorrupt, m.Offset, n, err, want)
	}
	out, err := s2.Decode(dst, m.Data)
	if err != nil {
		return p.errorf("%w: s2 chunk at %d: %v", ErrCorrupt, m.Offset, err)
	}
	if len(out) > 0 && &out[0] != &dst[0] { // Decode uses dst when it is large enough
		copy(dst, out)
	}
	return nil
}

// stop ends the waits of the requests still outstanding, so their goroutines end now
// rather than at their timeout. Replies that arrive later go to dead letters.
func (p *puller) stop() {
	p.cancel()
	clear(p.pending)
}
