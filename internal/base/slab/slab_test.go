package slab

import "testing"

func TestSlab(t *testing.T) {
	type rec struct{ a, b int }
	s := Slab[rec]{N: 4}
	seen := map[*rec]bool{}
	for range 20 {
		p := s.New()
		if *p != (rec{}) {
			t.Fatalf("New returned a used value %+v", *p)
		}
		if seen[p] {
			t.Fatal("New returned a pointer twice")
		}
		seen[p] = true
		p.a, p.b = 1, 2
	}
	// Allocations of 1, 2, 4, 4, ...: one per 4 values once grown.
	allocs := testing.AllocsPerRun(10, func() {
		for range 4 {
			s.New().a = 1
		}
	})
	if allocs != 1 {
		t.Fatalf("%v allocations per 4 values, want 1", allocs)
	}
	var z Slab[rec]
	for want, sizes := 0, []int{1, 2, 4, 8, 16, 32, 64, 64}; want < len(sizes); want++ {
		z.free = nil
		z.New()
		if got := len(z.free) + 1; got != sizes[want] {
			t.Fatalf("allocation %d of a zero Slab holds %d values, want %d", want+1, got, sizes[want])
		}
	}
}
