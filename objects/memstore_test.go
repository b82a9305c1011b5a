package objects

import (
	"testing"
	"unsafe"

	"github.com/ray-go/ray/internal/base/ids"
)

// TestMemorySlotInline: a slot is stored in its map's groups, not allocated one by one,
// only while it is at most 128 bytes (Go's inline map element limit).
func TestMemorySlotInline(t *testing.T) {
	if n := unsafe.Sizeof(slot{}); n > 128 {
		t.Fatalf("slot is %d bytes: over 128, the map allocates every entry", n)
	}
	s := NewMemoryStore()
	root := ids.NewRootTaskID()
	for i := range 100 { // grow the maps first
		s.Create(ids.PutID(root, uint32(i+1)))
	}
	id := ids.PutID(root, 1000)
	data := []byte("x")
	allocs := testing.AllocsPerRun(100, func() {
		s.Create(id)
		s.Set(id, Value{Data: data})
		s.Remove(id)
	})
	if allocs != 0 {
		t.Fatalf("Create, Set, Remove of an object nobody waits for: %.1f allocations, want 0", allocs)
	}
}

// TestMemoryStoreWaitersAfterReset: a reconstructed object (Reset) is waited for anew;
// the waiters of its first value are gone with it.
func TestMemoryStoreWaitersAfterReset(t *testing.T) {
	s := NewMemoryStore()
	id := ids.PutID(ids.NewRootTaskID(), 1)
	s.Create(id)
	first := s.Ready(id)
	s.Set(id, Value{Data: []byte("a")})
	<-first
	if ch := s.Ready(id); ch == nil {
		t.Fatal("ready object: nil channel")
	} else {
		<-ch // closed already
	}
	if !s.Reset(id) {
		t.Fatal("Reset of a ready object reported false")
	}
	again := s.Ready(id)
	select {
	case <-again:
		t.Fatal("reset object reported ready")
	default:
	}
	got := ""
	s.OnReady(id, func(v Value) { got = string(v.Data) })
	s.Set(id, Value{Data: []byte("b")})
	<-again
	if v, ready, _ := s.Get(id); !ready || string(v.Data) != "b" || got != "b" {
		t.Fatalf("after Reset and Set: %q ready=%v, subscriber saw %q", v.Data, ready, got)
	}
}

// TestMemoryStoreShrinks: a shard whose map held many objects and now holds few gets a
// new map (maps keep their memory otherwise), and keeps the objects still there.
func TestMemoryStoreShrinks(t *testing.T) {
	s := newMemoryStore(1)
	root := ids.NewRootTaskID()
	const n = 4 * shrinkBelow
	for i := range n {
		s.Create(ids.PutID(root, uint32(i+1)))
	}
	keep := ids.PutID(root, 7)
	s.Set(keep, Value{Data: []byte("kept")})
	for i := range n {
		if id := ids.PutID(root, uint32(i+1)); id != keep {
			s.Delete(id)
		}
	}
	sh := &s.shards[0]
	if sh.peak >= n {
		t.Fatalf("peak %d after deleting all but one of %d objects: the map was not made anew", sh.peak, n)
	}
	if v, ready, known := s.Get(keep); !known || !ready || string(v.Data) != "kept" {
		t.Fatalf("the object left was lost: %q ready=%v known=%v", v.Data, ready, known)
	}
	if s.Len() != 1 {
		t.Fatalf("%d objects left, want 1", s.Len())
	}
}
