package data

import (
	"strings"
	"testing"
)

// TestNumBlocks: NumBlocks answers for materialized datasets (and FromItems, materialized
// from the start as in Ray) without running anything, and says to Materialize a lazy one.
func TestNumBlocks(t *testing.T) {
	ctx := timeout(t)
	items := make([]Row, 10)
	for i := range items {
		items[i] = Row{"id": int64(i)}
	}
	fi := FromItems(items, Parallelism(3))
	if n, err := fi.NumBlocks(); err != nil || n != 3 {
		t.Fatalf("FromItems(10 items, Parallelism(3)).NumBlocks() = %d, %v; want 3", n, err)
	}
	m, err := fi.Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := m.NumBlocks(); err != nil || n != 3 {
		t.Fatalf("materialized FromItems: NumBlocks() = %d, %v; want 3", n, err)
	}

	lazy := Range(100, Parallelism(4)).Repartition(5, false)
	if _, err := lazy.NumBlocks(); err == nil || !strings.Contains(err.Error(), "Materialize") {
		t.Fatalf("lazy NumBlocks: %v, want an error saying to Materialize", err)
	}
	if _, err := fi.Filter(isAbove30).NumBlocks(); err == nil {
		t.Fatal("FromItems then Filter: NumBlocks gave no error")
	}
	m, err = lazy.Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := m.NumBlocks(); err != nil || n != 5 {
		t.Fatalf("Repartition(5).Materialize().NumBlocks() = %d, %v; want 5", n, err)
	}
	parts, err := Range(100, Parallelism(4)).Split(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, p := range parts {
		n, err := p.NumBlocks()
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != 4 {
		t.Fatalf("Split(2) of 4 blocks: %d blocks in all, want 4", total)
	}
	if _, err := (&Dataset{}).NumBlocks(); err == nil {
		t.Fatal("zero Dataset: NumBlocks gave no error")
	}
}
