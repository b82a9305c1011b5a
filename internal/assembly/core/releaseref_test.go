package core

import (
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
)

// TestReleaseRefNoAllocation checks that dropping a reference this process holds (the
// path of every result ref released and every actor handle given back when its calls
// end) costs no allocation: the object ID no longer moves to the heap on every call for
// the message a borrowed object's last release sends.
func TestReleaseRefNoAllocation(t *testing.T) {
	sys, quiet := quietSystem(t)
	c := newTestCore(t, sys, nil, nil, quiet)
	id := ids.ReturnID(ids.NewRootTaskID(), 1)
	c.AddRef(id)
	c.AddRef(id)
	if got := testing.AllocsPerRun(100, func() {
		c.ReleaseRef(id, false)
		c.AddRef(id)
	}); got != 0 {
		t.Fatalf("%v allocations per release and add of a held reference, want 0", got)
	}
	if n, _, known := c.refs.Counts(id); !known || n != 2 {
		t.Fatalf("count after the loop: %d (known %v), want 2", n, known)
	}
}
