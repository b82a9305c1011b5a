package objects

import (
	"slices"
	"sync"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

func TestBorrowsTakeDropAndEnd(t *testing.T) {
	b := newBorrows(8)
	ownerA := &pb.PID{Address: "10.0.0.1:1", Id: "owner-a"}
	ownerB := &pb.PID{Address: "10.0.0.2:1", Id: "owner-b"}
	x, y := ids.PutID(ids.NewRootTaskID(), 1), ids.PutID(ids.NewRootTaskID(), 1)
	if _, _, borrowed := b.Drop(x); borrowed {
		t.Fatal("Drop of an object never borrowed reported a borrow")
	}
	e, first := b.Take(x, ownerA)
	if !first || e.Owner != ownerA {
		t.Fatalf("first Take: first=%v owner=%v", first, e.Owner)
	}
	close(e.Registered)
	if e2, first := b.Take(x, ownerA); first || e2 != e {
		t.Fatal("second Take made a new borrow")
	}
	if !b.More(x) || b.More(y) {
		t.Fatal("More: want x borrowed, y not")
	}
	if !b.Adopt(y, ownerB) {
		t.Fatal("Adopt of a new borrow did not report it first")
	}
	if got, _ := b.Get(y); got == nil {
		t.Fatal("adopted y not borrowed")
	} else {
		select {
		case <-got.Registered:
		default:
			t.Fatal("an adopted borrow is registered already")
		}
	}
	for i := 0; i < 2; i++ { // x has 3 holds
		if _, last, _ := b.Drop(x); last {
			t.Fatalf("drop %d ended the borrow", i+1)
		}
	}
	if e, last, borrowed := b.Drop(x); !last || !borrowed || e.Owner != ownerA {
		t.Fatalf("third drop: last=%v borrowed=%v", last, borrowed)
	}
	if b.Borrowed() != 1 {
		t.Fatalf("%d borrowed, want y", b.Borrowed())
	}
	if got := b.EndBorrowsFrom(ownerB.Address); len(got) != 1 || got[y] != 1 || b.Borrowed() != 0 {
		t.Fatalf("EndBorrowsFrom: %v, %d left", got, b.Borrowed())
	}
}

func TestBorrowsPinsAndLenders(t *testing.T) {
	b := newBorrows(8)
	outer := ids.PutID(ids.NewRootTaskID(), 1)
	n := []Nested{{ID: ids.PutID(ids.NewRootTaskID(), 2)}, {ID: ids.PutID(ids.NewRootTaskID(), 3)}}
	if got := b.Unpin(outer); got != nil {
		t.Fatal("Unpin of nothing returned refs")
	}
	b.Pin(outer, n[:1])
	b.Pin(outer, n[1:])
	if got := b.Unpin(outer); !slices.Equal(got, n) {
		t.Fatalf("Unpin: %v, want %v", got, n)
	}
	if got := b.Unpin(outer); got != nil {
		t.Fatal("a second Unpin returned refs again")
	}
	id := ids.PutID(ids.NewRootTaskID(), 1)
	if !b.AddLender(id, "10.0.0.1:1/o1") || b.AddLender(id, "10.0.0.1:1/o1") || !b.AddLender(id, "10.0.0.2:1/o2") {
		t.Fatal("AddLender: want first, repeat, first")
	}
	if b.Lenders(id) != 2 {
		t.Fatalf("%d lenders, want 2", b.Lenders(id))
	}
	if at := b.LendersAt("10.0.0.1:1"); len(at) != 1 || at[0].ID != id || at[0].Key != "10.0.0.1:1/o1" {
		t.Fatalf("LendersAt: %v", at)
	}
	if !b.DropLender(id, "10.0.0.1:1/o1") || b.DropLender(id, "10.0.0.1:1/o1") {
		t.Fatal("DropLender: want had, then not")
	}
	b.DropLender(id, "10.0.0.2:1/o2")
	if b.Lenders(id) != 0 || b.LendersAt("10.0.0.2:1") != nil {
		t.Fatal("lenders left after dropping them all")
	}
}

// TestBorrowsConcurrent: holds taken and given back from many goroutines over many shards
// leave no borrow behind, and every object's borrow ended (a hold taken after the end starts
// a new borrow).
func TestBorrowsConcurrent(t *testing.T) {
	b := newBorrows(16)
	owner := &pb.PID{Address: "a:1", Id: "o"}
	objs := make([]ids.ObjectID, 64)
	for i := range objs {
		objs[i] = ids.PutID(ids.NewRootTaskID(), 1)
	}
	var mu sync.Mutex
	ended := map[ids.ObjectID]int{}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, id := range objs {
				b.Take(id, owner)
			}
			for _, id := range objs {
				if _, last, _ := b.Drop(id); last {
					mu.Lock()
					ended[id]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if b.Borrowed() != 0 {
		t.Fatalf("%d borrows left", b.Borrowed())
	}
	for _, id := range objs {
		if ended[id] < 1 {
			t.Fatalf("borrow of %s never ended", id)
		}
	}
}
