package core

import (
	"context"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/objects"
)

// TestWaitThroughAReset: an object set and at once made pending again (MemoryStore.Reset:
// its value was lost and is being recreated) is waited for again, not reported released:
// a waiter woken by the first value and reading after the reset gets the second value.
// (Ray Data's reduce failed with "released while waiting" when a worker process was
// killed mid-sort.)
func TestWaitThroughAReset(t *testing.T) {
	h := newHarness(t)
	for i := range 50 {
		id := ids.ReturnID(ids.NewRootTaskID(), 1)
		h.c.mem.Create(id)
		type got struct {
			v   objects.Value
			err error
		}
		res := make(chan got, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			v, err := h.tc.wait(ctx, id, nil)
			res <- got{v, err}
		}()
		time.Sleep(200 * time.Microsecond) // most often the waiter is blocked by now; either way it must not fail
		h.c.mem.Set(id, objects.Value{Data: []byte("first")})
		h.c.mem.Reset(id)
		time.Sleep(time.Millisecond) // the recreation takes a while: the woken waiter reads before it ends
		h.c.mem.Set(id, objects.Value{Data: []byte("second")})
		r := <-res
		if r.err != nil || (string(r.v.Data) != "first" && string(r.v.Data) != "second") {
			t.Fatalf("round %d: wait = %q, %v; want a value", i, r.v.Data, r.err)
		}
		h.c.mem.Remove(id)
	}
}
