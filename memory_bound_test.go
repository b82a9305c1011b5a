package ray

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rssBytes reads the process's resident set size.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// heapBytes reads the bytes of heap objects, live or not yet swept (no stop-the-world).
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// goMemory is the memory the Go runtime holds (what its soft memory limit counts).
func goMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// peakSampler records the peak of a memory gauge above its value at start.
type peakSampler struct {
	base, peak atomic.Int64
	stop       chan struct{}
	wg         sync.WaitGroup
}

func samplePeak(read func() int64) *peakSampler {
	p := &peakSampler{stop: make(chan struct{})}
	p.base.Store(read())
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
			if v := read() - p.base.Load(); v > p.peak.Load() {
				p.peak.Store(v)
			}
		}
	}()
	return p
}

func (p *peakSampler) done() int64 {
	close(p.stop)
	p.wg.Wait()
	return p.peak.Load()
}

// TestLiveDataFourTimesTheBudget: 256 MiB of live objects (random bytes: nothing
// compresses) through a 64 MiB object store. Every value comes back exact, spill and
// restore happen, and the process's memory stays within the budget plus a stated overhead,
// below the live data.
//
// The overhead, 128 MiB here: the objects in flight (the one being put and its encoding, the
// one being read back and its decoding, spill and restore buffers: a few objects) and the
// garbage the Go collector has not collected yet. The store bounds what it holds (it spills
// least recently used objects, and a Put over budget waits until spilling caught up); Go's
// collector by default lets garbage grow to the size of the live heap before it runs, which
// alone would double the store's footprint. A program that needs a bound on its memory sets
// a soft memory limit (GOMEMLIMIT, or debug.SetMemoryLimit) to its own heap plus the store
// budget plus this overhead, as this test does, and the collector keeps to it. Measured on
// RSS, or on the Go heap under the race detector, whose shadow memory multiplies RSS.
func TestLiveDataFourTimesTheBudget(t *testing.T) {
	const budget, objSize, n = 64 << 20, 8 << 20, 32 // 256 MiB live
	const overhead = 128 << 20
	ctx, err := Init(context.Background(), WithNumCPUs(2), WithObjectStoreMemory(budget))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	gauge, what := rssBytes, "RSS"
	if raceEnabled {
		gauge, what = heapBytes, "Go heap"
	}
	// The limit: what the Go runtime holds now, plus the budget, plus the overhead less
	// the 32 MiB of it that is not Go memory the collector governs (the race detector's
	// and etcd's, stacks).
	// Earlier tests leave free memory mapped: give it back first, so that the limit is the
	// memory in use plus the budget plus the overhead.
	debug.FreeOSMemory()
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(goMemory() + budget + overhead - 32<<20))
	fill := func(i int) []byte {
		b := make([]byte, objSize)
		x := uint64(i)*0x9E3779B97F4A7C15 + 1
		for k := 0; k+8 <= len(b); k += 8 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			for j := range 8 {
				b[k+j] = byte(x >> (8 * j))
			}
		}
		return b
	}
	peak := samplePeak(gauge)
	refs := make([]ObjectRef[[]byte], n)
	for i := range refs {
		if refs[i], err = Put(ctx, fill(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Read everything back twice (most of it from disk), each value exact.
	for round := range 2 {
		for i, r := range refs {
			v, err := Get(ctx, r)
			if err != nil {
				t.Fatalf("round %d, object %d: %v", round, i, err)
			}
			if !bytes.Equal(v, fill(i)) {
				t.Fatalf("round %d, object %d read back wrong", round, i)
			}
		}
	}
	grew := peak.done()
	rep, err := Memory(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	nm := rep.Nodes[0]
	files, _ := filepath.Glob(filepath.Join(nodeOf(ctx).Dir(), "spill", "*.zst"))
	t.Logf("%s grew by at most %d MiB for %d MiB live in a %d MiB store; %d objects spilled (%d MiB), %d spill files",
		what, grew>>20, n*objSize>>20, budget>>20, nm.SpilledObjects, nm.SpilledBytes>>20, len(files))
	if nm.SpilledObjects < n/2 || len(files) < n/2 {
		t.Fatalf("only %d objects spilled (%d files) for 4x the budget", nm.SpilledObjects, len(files))
	}
	if nm.MemoryBytes > budget+objSize {
		t.Errorf("the store holds %d MiB in memory, budget %d MiB", nm.MemoryBytes>>20, budget>>20)
	}
	if grew > budget+overhead {
		t.Errorf("%s grew by %d MiB: more than the budget (%d MiB) plus the stated overhead (%d MiB)", what, grew>>20, budget>>20, overhead>>20)
	}
	for _, r := range refs {
		r.Release()
	}
}
