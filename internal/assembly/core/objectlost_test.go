package core

import (
	"context"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/objects"
)

// TestObjectOnDeadNodeListedLost: the state API shows an object whose bytes were in the store
// of a node this process knows is dead as LOST (with that node as its location), not READY.
func TestObjectOnDeadNodeListedLost(t *testing.T) {
	c, cl := newClusterCore(t, nil)
	id := ids.ReturnID(ids.NewRootTaskID(), 1)
	c.mem.Create(id)
	c.refs.AddLocal(id)
	c.mem.Set(id, objects.Value{InStore: true, Node: "n2", Size: 8 << 20})
	state := func() ObjectInfo {
		t.Helper()
		rep, err := c.ListObjects(context.Background(), ObjectQuery{ObjectID: id.String()})
		if err != nil || len(rep.Objects) != 1 {
			t.Fatalf("ListObjects: %+v, %v", rep, err)
		}
		return rep.Objects[0]
	}
	if o := state(); o.State != ObjectReady || o.Location != "n2" {
		t.Fatalf("on a live node: %+v, want READY on n2", o)
	}
	cl.kill("n2")
	if o := state(); o.State != ObjectLost || o.Location != "n2" {
		t.Fatalf("on a dead node: %+v, want LOST on n2", o)
	}
}
