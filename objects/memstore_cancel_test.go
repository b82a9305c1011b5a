package objects

import (
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
)

// TestOnReadyCancel: cancelled subscriptions leave nothing behind; live ones still run.
func TestOnReadyCancel(t *testing.T) {
	s := NewMemoryStore()
	id := ids.PutID(ids.NewRootTaskID(), 1)
	s.Create(id)
	for range 1000 { // a caller polling Wait with a timeout
		cancel, ok := s.OnReadyCancel(id, func(Value) { t.Error("a cancelled callback ran") })
		if !ok {
			t.Fatal("unknown object")
		}
		cancel()
	}
	if n := s.subscribers(id); n != 0 {
		t.Fatalf("%d callbacks left after cancelling them all", n)
	}
	ran := 0
	keep, _ := s.OnReadyCancel(id, func(v Value) { ran++ })
	gone, _ := s.OnReadyCancel(id, func(Value) { t.Error("a cancelled callback ran") })
	gone()
	s.Set(id, Value{Data: []byte("x")})
	keep() // after it ran: a no-op
	if ran != 1 {
		t.Fatalf("live callback ran %d times", ran)
	}
	// On a ready object the callback runs at once.
	now := 0
	s.OnReadyCancel(id, func(Value) { now++ })
	if now != 1 {
		t.Fatal("callback on a ready object did not run")
	}
	if _, ok := s.OnReadyCancel(ids.PutID(ids.NewRootTaskID(), 2), func(Value) {}); ok {
		t.Fatal("unknown object accepted")
	}
}
