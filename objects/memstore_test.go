package objects

import (
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
)

// TestMemoryEntryEmbedded: an object whose entry the caller provides (CreateIn) costs the
// store no allocation: create, set and remove of an object nobody waits for.
func TestMemoryEntryEmbedded(t *testing.T) {
	s := NewMemoryStore()
	root := ids.NewRootTaskID()
	for i := range 100 { // grow the maps first
		s.Create(ids.PutID(root, uint32(i+1)))
	}
	id := ids.PutID(root, 1000)
	data := []byte("x")
	fresh := make([]Entry, 200)
	n := 0
	allocs := testing.AllocsPerRun(100, func() {
		s.CreateIn(id, &fresh[n])
		n++
		s.Set(id, Value{Data: data})
		s.Remove(id)
	})
	if allocs != 0 {
		t.Fatalf("CreateIn, Set, Remove of an object nobody waits for: %.1f allocations, want 0", allocs)
	}
}

// TestOwnedSharesEntries: an owner's store and reference table keep an object in one
// entry, which lives while either holds it; each part sees only its own state.
func TestOwnedSharesEntries(t *testing.T) {
	mem, refs := NewOwned()
	root := ids.NewRootTaskID()
	ret := ids.ReturnID(ids.ChildTaskID(root, 1), 1)
	var e Entry
	mem.CreateIn(ret, &e)
	refs.Submitted(ret.Task(), nil, nil)
	if sh := mem.t.shard(ret); sh.m[ret] != &e {
		t.Fatal("the reference table did not use the entry the store made")
	}
	mem.Set(ret, Value{Data: []byte("v")})
	// The store lets go first (the value was freed), the counts still hold the entry.
	mem.Remove(ret)
	if _, _, known := mem.Get(ret); known {
		t.Fatal("the store still knows an object it removed")
	}
	if l, _, known := refs.Counts(ret); !known || l != 1 {
		t.Fatalf("counts after the store let go: local=%d known=%v, want 1 true", l, known)
	}
	// A new store part starts pending, not with the old value.
	mem.Create(ret)
	if _, ready, known := mem.Get(ret); !known || ready {
		t.Fatalf("recreated object: ready=%v known=%v, want pending", ready, known)
	}
	r := refs.RemoveLocal(ret)
	if got := r.Values(); len(got) != 1 || got[0] != ret {
		t.Fatalf("released values %v, want [%v]", got, ret)
	}
	if _, _, known := refs.Counts(ret); known {
		t.Fatal("the table still counts an object with no references")
	}
	if _, _, known := mem.Get(ret); !known {
		t.Fatal("the store's part went with the table's")
	}
	mem.Remove(ret)
	if n, l := refs.Len(); n != 0 || l != 0 || mem.Len() != 0 {
		t.Fatalf("left: %d counted, %d records, %d held", n, l, mem.Len())
	}
	if sh := mem.t.shard(ret); len(sh.m) != 0 {
		t.Fatalf("%d entries left in the shard's map", len(sh.m))
	}
}

// TestSubmittedInUsesOnlyAHeldHint: SubmittedIn counts the entry it is given when the
// store holds it (CreateIn took it), and the table's own entry when the hint is a
// caller's zero entry that CreateIn did not take (the object existed already).
func TestSubmittedInUsesOnlyAHeldHint(t *testing.T) {
	mem, refs := NewOwned()
	root := ids.NewRootTaskID()
	ret := ids.ReturnID(ids.ChildTaskID(root, 1), 1)
	var taken, unused Entry
	mem.CreateIn(ret, &taken)
	mem.CreateIn(ret, &unused) // exists: unused stays the caller's
	refs.SubmittedIn(ret.Task(), nil, nil, &unused)
	if unused.refs || unused.mem {
		t.Fatal("SubmittedIn counted a hint the table does not hold")
	}
	if l, _, known := refs.Counts(ret); !known || l != 1 || !taken.refs || taken.rc.local != 1 {
		t.Fatalf("counts: local=%d known=%v (the held entry counted: %v), want 1 true true", l, known, taken.refs)
	}
	var other Entry
	ret2 := ids.ReturnID(ids.ChildTaskID(root, 2), 1)
	mem.CreateIn(ret2, &other)
	refs.SubmittedIn(ret2.Task(), nil, nil, &other)
	if !other.refs || other.rc.local != 1 || !other.rc.task {
		t.Fatal("SubmittedIn did not count the held hint's entry")
	}
	if sh := mem.t.shard(ret2); sh.m[ret2] != &other {
		t.Fatal("the hint's entry is not the table's")
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

// TestMemoryStoreReplace: Replace changes the value of a ready object only; a pending or
// unknown one stays as it is.
func TestMemoryStoreReplace(t *testing.T) {
	s := NewMemoryStore()
	id := ids.PutID(ids.NewRootTaskID(), 1)
	moved := Value{InStore: true, Node: "n1", Size: 1}
	if s.Replace(id, moved) {
		t.Fatal("Replace of an unknown object reported true")
	}
	s.Create(id)
	if s.Replace(id, moved) {
		t.Fatal("Replace of a pending object reported true")
	}
	if _, ready, _ := s.Get(id); ready {
		t.Fatal("Replace made a pending object ready")
	}
	s.Set(id, Value{Data: []byte("a")})
	if !s.Replace(id, moved) {
		t.Fatal("Replace of a ready object reported false")
	}
	if v, ready, _ := s.Get(id); !ready || !v.InStore || v.Node != "n1" || v.Data != nil {
		t.Fatalf("after Replace: %+v ready=%v", v, ready)
	}
}

// TestMemoryStoreShrinks: a shard whose map held many objects and now holds few gets a
// new map (maps keep their memory otherwise), and keeps the objects still there.
func TestMemoryStoreShrinks(t *testing.T) {
	s := newMemoryStore(1)
	root := ids.NewRootTaskID()
	const n = 40000
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
	sh := &s.t.shards[0]
	if sh.peak.N() >= n {
		t.Fatalf("peak %d after deleting all but one of %d objects: the map was not made anew", sh.peak.N(), n)
	}
	if v, ready, known := s.Get(keep); !known || !ready || string(v.Data) != "kept" {
		t.Fatalf("the object left was lost: %q ready=%v known=%v", v.Data, ready, known)
	}
	if s.Len() != 1 {
		t.Fatalf("%d objects left, want 1", s.Len())
	}
}

// Removing a pending object wakes its waiters: Ready's channel closes (the object is then
// unknown) and each subscriber gets a Gone value. They waited for ever.
func TestMemoryStoreRemovePendingWakesWaiters(t *testing.T) {
	s := NewMemoryStore()
	id := ids.ReturnID(ids.NewRootTaskID(), 1)
	s.Create(id)
	ch := s.Ready(id)
	var got []Value
	if !s.OnReady(id, func(v Value) { got = append(got, v) }) {
		t.Fatal("OnReady of a pending object")
	}
	cancelled := false
	cancel, _ := s.OnReadyCancel(id, func(Value) { cancelled = true })
	cancel()
	s.Delete(id)
	select {
	case <-ch:
	default:
		t.Fatal("Ready's channel stays open after the pending object was removed")
	}
	if _, _, known := s.Get(id); known {
		t.Fatal("the removed object is still known")
	}
	if len(got) != 1 || !got[0].Gone || cancelled {
		t.Fatalf("subscribers called with %+v (a cancelled one: %v), want one Gone value", got, cancelled)
	}
	// A ready object's removal calls nothing.
	id2 := ids.ReturnID(ids.NewRootTaskID(), 1)
	s.Set(id2, Value{Data: []byte("x")})
	s.Delete(id2)
}
