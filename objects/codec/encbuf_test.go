package codec

import (
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// bigRecord has about rows*24 bytes: an int64, a float64 and a short string column.
func bigRecord(rows int, seed int64) arrow.Record {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "s", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < rows; i++ {
		v := seed*1_000_000 + int64(i)
		b.Field(0).(*array.Int64Builder).Append(v)
		b.Field(1).(*array.Float64Builder).Append(float64(v) / 2)
		b.Field(2).(*array.StringBuilder).Append("abcdefgh")
	}
	return b.NewRecord()
}

// poisoned counts the buffers recycled while a test runs and remembers where each started.
// Buffers an earlier test dropped may be recycled during this one (their finalizers run
// late), so a test asks about its own buffers by address.
type poisoned struct {
	mu    sync.Mutex
	n     int
	addrs map[uintptr]bool
}

// count is how many buffers were recycled.
func (p *poisoned) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// recycled reports whether the buffer starting at addr was.
func (p *poisoned) recycled(addr uintptr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addrs[addr]
}

// poison makes every recycled buffer 0xA5 bytes (a buffer recycled while still in use
// then changes whoever still reads it) and records it, until the test ends.
func poison(t *testing.T) *poisoned {
	p := &poisoned{addrs: map[uintptr]bool{}}
	hook := func(b []byte) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i := range b {
			b[i] = 0xA5
		}
		p.n++
		p.addrs[uintptr(unsafe.Pointer(unsafe.SliceData(b)))] = true
	}
	recycleHook.Store(&hook)
	t.Cleanup(func() { recycleHook.Store(nil) })
	return p
}

func gcs(n int) {
	for i := 0; i < n; i++ {
		runtime.GC()
		// Finalizers run on their own goroutine after the cycle.
		runtime.Gosched()
	}
}

// TestEncodeBufRecycled: a large encode buffer that nothing references any more is
// recycled (the next encode of a similar size gets it back), and one still referenced is
// not.
func TestEncodeBufRecycled(t *testing.T) {
	n := poison(t)
	rec := bigRecord(100_000, 1)
	defer rec.Release()
	data := mustMarshal(t, rec)
	if len(data) < recycleMin || cap(data) != len(data) {
		t.Fatalf("encoded %d bytes (cap %d)", len(data), cap(data))
	}
	first := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	keep := data[len(data)-10:] // a slice at the end keeps the whole buffer
	data = nil
	gcs(3)
	if n.recycled(first) {
		t.Fatal("a buffer still referenced was recycled")
	}
	runtime.KeepAlive(keep)
	keep = nil
	reused := false
	for i := 0; i < 20 && !reused; i++ {
		gcs(1)
		d := mustMarshal(t, rec)
		reused = uintptr(unsafe.Pointer(unsafe.SliceData(d))) == first
		got, err := Unmarshal[arrow.Record](d)
		if err != nil {
			t.Fatal(err)
		}
		if !array.RecordEqual(got, rec) {
			t.Fatal("a record encoded into a recycled buffer differs")
		}
		got.Release()
	}
	if n.count() == 0 {
		t.Fatal("no buffer was ever recycled")
	}
	if !reused {
		t.Fatal("the freed buffer was never reused")
	}
}

// TestEncodeBufDecodedOutlive: records decoded in place over encode buffers stay intact
// while other records are encoded, dropped and recycled around them (use after free
// would show up as 0xA5 bytes, the recycle poison, or another record's values).
func TestEncodeBufDecodedOutlive(t *testing.T) {
	n := poison(t)
	var held []arrow.Record
	var want []arrow.Record
	for round := int64(0); round < 12; round++ {
		rec := bigRecord(60_000, round)
		data := mustMarshal(t, rec)
		got, err := Unmarshal[arrow.Record](data)
		if err != nil {
			t.Fatal(err)
		}
		if round%3 == 0 { // keep a slice of every third one, drop the rest
			held = append(held, got.NewSlice(10, 50_000))
			want = append(want, rec.NewSlice(10, 50_000))
		}
		got.Release()
		rec.Release()
		data = nil
		gcs(1)
		for i, h := range held {
			if !array.RecordEqual(h, want[i]) {
				t.Fatalf("round %d: held record %d changed", round, i)
			}
		}
	}
	if n.count() == 0 {
		t.Fatal("nothing was recycled: the test tests nothing")
	}
	for i := range held {
		held[i].Release()
		want[i].Release()
	}
}

// TestEncodeBufPoolBounds: the pool keeps at most maxPerClass buffers of a class and
// maxPooled bytes, and drops buffers not reused in time.
func TestEncodeBufPoolBounds(t *testing.T) {
	trimPool(time.Now().Add(time.Hour)) // empty
	defer trimPool(time.Now().Add(time.Hour))
	class := bufClass(8 << 20)
	for i := 0; i < maxPooled/class+3; i++ {
		give(make([]byte, class))
	}
	pool.mu.Lock()
	n, bytes := len(pool.free[class]), pool.bytes
	pool.mu.Unlock()
	// (finalizers of earlier tests' buffers may put some of their own meanwhile)
	if bytes > maxPooled || n > min(maxPerClass, maxPooled/class) || n == 0 {
		t.Fatalf("pool holds %d buffers, %d bytes (limit %d)", n, bytes, maxPooled)
	}
	if b := take(class); len(b) != class {
		t.Fatalf("took %d bytes, want %d", len(b), class)
	}
	if b := take(bufClass(3 << 20)); b != nil {
		t.Fatal("a buffer of another class")
	}
	cutoff := time.Now().Add(time.Second)
	trimPool(cutoff)
	pool.mu.Lock()
	sum := 0
	for class, l := range pool.free {
		for _, p := range l {
			sum += class
			if p.at.Before(cutoff) {
				t.Errorf("a buffer put at %v survived trimming at %v", p.at, cutoff)
			}
		}
	}
	bytes = pool.bytes
	pool.mu.Unlock()
	if sum != bytes {
		t.Fatalf("the pool counts %d bytes and holds %d", bytes, sum)
	}
	for _, n := range []int{1 << 20, 1<<20 + 1, 27_762_155, 100 << 20} {
		if c := bufClass(n); c < n || c > n+n/8 {
			t.Fatalf("class of %d is %d", n, c)
		}
	}
}
