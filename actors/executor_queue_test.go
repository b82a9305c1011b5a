package actors

import (
	"testing"

	"github.com/ray-go/ray/internal/base/pb"
)

// TestExecutorQueueReuse checks the executor's queue hand-off: calls come out of take in
// push order, a batch being run is never written by later pushes, and once a batch is
// given back a call pushed alone costs no allocation.
func TestExecutorQueueReuse(t *testing.T) {
	x := &executor{signal: make(chan struct{}, 1)}
	entries := make([]*pb.ActorLogEntry, 10)
	for i := range entries {
		entries[i] = &pb.ActorLogEntry{Index: uint64(i + 1)}
	}
	x.push(execItem{entry: entries[0]})
	x.push(execItem{entry: entries[1]})
	a, closed := x.take(nil)
	if closed || len(a) != 2 || a[0].entry != entries[0] || a[1].entry != entries[1] {
		t.Fatalf("first take: %v, closed %v", a, closed)
	}
	// Pushed while a is being run: must not land in a's array.
	x.push(execItem{entry: entries[2]})
	x.push(execItem{entry: entries[3]})
	x.push(execItem{entry: entries[4]})
	if a[0].entry != entries[0] || a[1].entry != entries[1] {
		t.Fatal("pushes wrote into the batch being run")
	}
	b, _ := x.take(a)
	if len(b) != 3 || b[0].entry != entries[2] || b[2].entry != entries[4] {
		t.Fatalf("second take: %v", b)
	}
	if a[0].entry != nil {
		t.Fatal("the batch given back still points at its calls")
	}
	x.push(execItem{entry: entries[5]})
	if b[0].entry != entries[2] {
		t.Fatal("a push wrote into the batch being run")
	}
	c, _ := x.take(b)
	if len(c) != 1 || c[0].entry != entries[5] {
		t.Fatalf("third take: %v", c)
	}
	if e, _ := x.take(c); e != nil {
		t.Fatalf("take of an empty queue: %v", e)
	}
	// Steady state, one call at a time: no allocation for the queue.
	var prev []execItem
	allocs := testing.AllocsPerRun(100, func() {
		x.push(execItem{entry: entries[6]})
		prev, _ = x.take(prev)
		if len(prev) != 1 || prev[0].entry != entries[6] {
			t.Fatalf("take: %v", prev)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per call pushed and taken, want 0", allocs)
	}
	x.close()
	if _, closed := x.take(prev); !closed {
		t.Fatal("take after close: not closed")
	}
}
