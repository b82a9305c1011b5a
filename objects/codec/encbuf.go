package codec

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Recycled encode buffers.
//
// Encoding a large Arrow value writes it into one buffer of its exact size; a fresh buffer
// of tens of MiB costs a page fault per 4 KiB page the first time it is written (more than
// the copy itself), and the encoded bytes of a block usually die soon (the object is freed
// once consumed). So large encode buffers are recycled, with the garbage collector as the
// only judge of when a buffer is free: a buffer handed out carries a finalizer, which runs
// only once nothing at all references the buffer any more (the object store, a spill or
// transfer in progress, arrays decoded in place over it, a slice of it anywhere), and puts
// it in a pool for the next encode of a similar size. No code frees a buffer explicitly, so
// no ownership protocol can be got wrong; a buffer still in use is never recycled.
//
// The pool keeps at most maxPerClass buffers of a size class and maxPooled bytes in all,
// and drops what has not been reused for poolMaxAge (checked at every garbage
// collection), so an idle process does not hold the memory for long.

// recycleMin is the smallest buffer recycled (below it allocation is cheap, and values
// this small usually travel inline with the task reply).
const recycleMin = 1 << 20

// bufClass rounds n up to its size class: a multiple of 1/8 of its power of two, so a
// recycled buffer wastes at most an eighth. Buffers are reused only within a class.
func bufClass(n int) int {
	step := 1 << (bits.Len(uint(n)) - 4)
	return (n + step - 1) &^ (step - 1)
}

const (
	// A few buffers per class are enough for a stream of blocks (each GC frees about as
	// many as were encoded since the last); more would only hold memory.
	maxPerClass = 2
	maxPooled   = 64 << 20
	poolMaxAge  = 10 * time.Second
)

type pooledBuf struct {
	b  []byte // the whole allocation (its class size)
	at time.Time
}

var pool struct {
	mu     sync.Mutex
	free   map[int][]pooledBuf // by size class, the most recently put last
	bytes  int
	ticker sync.Once
}

// take returns a pooled buffer of the class, or nil.
func take(class int) []byte {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	l := pool.free[class]
	if len(l) == 0 {
		return nil
	}
	p := l[len(l)-1]
	l[len(l)-1] = pooledBuf{}
	pool.free[class] = l[:len(l)-1]
	pool.bytes -= class
	return p.b
}

// give puts a free buffer into the pool, unless the pool is full (then the garbage
// collector frees it).
func give(b []byte) {
	pool.ticker.Do(func() { armTrim() })
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if pool.bytes+len(b) > maxPooled || len(pool.free[len(b)]) >= maxPerClass {
		return
	}
	if pool.free == nil {
		pool.free = make(map[int][]pooledBuf)
	}
	pool.free[len(b)] = append(pool.free[len(b)], pooledBuf{b: b, at: time.Now()})
	pool.bytes += len(b)
}

// trimPool drops the buffers put before cutoff.
func trimPool(cutoff time.Time) {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	for class, l := range pool.free {
		keep := l[:0]
		for _, p := range l {
			if p.at.After(cutoff) {
				keep = append(keep, p)
			} else {
				pool.bytes -= class
			}
		}
		clear(l[len(keep):])
		if len(keep) == 0 {
			delete(pool.free, class)
		} else {
			pool.free[class] = keep
		}
	}
}

// gcTick is garbage made to learn of garbage collections: its finalizer trims the pool
// and makes the next one. (16 bytes: smaller pointer-free objects share blocks, which
// delays their finalizers.)
type gcTick struct{ _ [16]byte }

func armTrim() {
	runtime.SetFinalizer(new(gcTick), func(*gcTick) {
		trimPool(time.Now().Add(-poolMaxAge))
		armTrim()
	})
}

// recycleHook, if set (tests), sees every buffer put back into a pool before it is. It is
// read on the finalizer goroutine, which may still be recycling an earlier test's buffers
// while a test sets it: atomic.
var recycleHook atomic.Pointer[func([]byte)]

// encodeBuf returns an empty slice with capacity exactly n: a recycled buffer, or a new
// one, for n >= recycleMin. The caller writes it from the start; nothing past what it
// writes is ever read (a recycled buffer holds old data).
func encodeBuf(n int) []byte {
	if n < recycleMin {
		return make([]byte, 0, n)
	}
	class := bufClass(n)
	b := take(class)
	if b == nil {
		b = make([]byte, class)
	}
	// The finalizer is set on the allocation's first byte: it runs when no slice into the
	// allocation is left, whatever its bounds.
	runtime.SetFinalizer(&b[0], func(p *byte) { recycle(p, class) })
	return b[:0:n]
}

// recycle puts the class-sized allocation at p into its pool (from its finalizer, so
// nothing else references it).
func recycle(p *byte, class int) {
	b := unsafe.Slice(p, class)
	if h := recycleHook.Load(); h != nil {
		(*h)(b)
	}
	give(b)
}
