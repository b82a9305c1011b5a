package handoff

import (
	"sync"
	"testing"
)

// TestWakeOncePerTake: a message is asked for when the queue reaches wake items (or an
// item is urgent), once until the loop takes the items; wake 0 never asks.
func TestWakeOncePerTake(t *testing.T) {
	var h Queue[int]
	if h.Add(3, false, 1) || h.Add(3, false, 2) {
		t.Fatal("a wake-up asked for under 3 items")
	}
	if !h.Add(3, false, 3) {
		t.Fatal("no wake-up asked for at 3 items")
	}
	if h.Add(3, true, 4) {
		t.Fatal("a second wake-up asked for before the loop took the items")
	}
	if got := h.Take(); len(got) != 4 || got[0] != 1 || got[3] != 4 {
		t.Fatalf("took %v, want [1 2 3 4]", got)
	}
	if !h.Add(3, true, 5) {
		t.Fatal("no wake-up asked for an urgent item after a take")
	}
	h.Take()
	if h.Add(0, true, 6) {
		t.Fatal("a wake-up asked for with wake 0")
	}
	if h.Len() != 1 {
		t.Fatalf("Len %d, want 1", h.Len())
	}
}

// TestReleaseReuses: a released slice holds no items and is reused, so a steady stream
// allocates nothing; one grown past keep is dropped.
func TestReleaseReuses(t *testing.T) {
	var h Queue[*int]
	x := new(int)
	allocs := testing.AllocsPerRun(100, func() {
		h.Add(0, false, x, x)
		q := h.Take()
		if len(q) != 2 {
			t.Fatalf("took %d items, want 2", len(q))
		}
		h.Release(q, 16)
		if q[:2][0] != nil {
			t.Fatal("a released slice still holds its items")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per add, take and release, want 0", allocs)
	}
	for range 20 {
		h.Add(0, false, x)
	}
	q := h.Take()
	h.Release(q, 16)
	h.Add(0, false, x)
	if q2 := h.Take(); cap(q2) > 16 && &q2[:1][0] == &q[:1][0] {
		t.Fatal("a slice grown past keep was reused")
	}
}

// TestConcurrentAdds: items added from many goroutines are all taken, once.
func TestConcurrentAdds(t *testing.T) {
	var h Queue[int]
	var wg sync.WaitGroup
	const n, each = 8, 1000
	for g := range n {
		wg.Go(func() {
			for i := range each {
				h.Add(0, false, g*each+i)
			}
		})
	}
	seen := make([]bool, n*each)
	count := 0
	take := func() {
		q := h.Take()
		for _, v := range q {
			if seen[v] {
				t.Fatalf("item %d taken twice", v)
			}
			seen[v] = true
			count++
		}
		h.Release(q, 64)
	}
	for range 100 {
		take()
	}
	wg.Wait()
	take()
	if count != n*each {
		t.Fatalf("took %d items, want %d", count, n*each)
	}
}
