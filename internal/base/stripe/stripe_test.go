package stripe

import (
	"sync"
	"testing"
	"unsafe"
)

func TestCounterSums(t *testing.T) {
	var c Counter
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(slot uint32) {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				c.Add(slot, 2)
			}
		}(NextSlot())
	}
	wg.Wait()
	c.Add(1<<31+5, -6) // any slot, negative deltas
	if got := c.Load(); got != 8*1000*2-6 {
		t.Fatalf("Load = %d, want %d", got, 8*1000*2-6)
	}
}

func TestCellsFillCacheLines(t *testing.T) {
	if s := unsafe.Sizeof(cell{}); s != 64 {
		t.Fatalf("a stripe is %d bytes, want 64 (one cache line)", s)
	}
}

func BenchmarkCounterParallel(b *testing.B) {
	var c Counter
	b.RunParallel(func(pb *testing.PB) {
		slot := NextSlot()
		for pb.Next() {
			c.Add(slot, 1)
		}
	})
}
