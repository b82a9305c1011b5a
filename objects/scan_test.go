package objects

import (
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
)

// Scan sees every object of an owner's table with its state and counts, and stops when
// told to.
func TestScan(t *testing.T) {
	mem, refs := NewOwned()
	task := ids.NewRootTaskID()
	pending, ready, failed := ids.ReturnID(task, 1), ids.ReturnID(task, 2), ids.ReturnID(task, 3)
	for _, id := range []ids.ObjectID{pending, ready, failed} {
		mem.Create(id)
		refs.AddLocal(id)
	}
	refs.AddLocal(ready)
	mem.Set(ready, Value{InStore: true, Node: "n1", Size: 1 << 20})
	mem.Set(failed, Value{Data: []byte("boom")})
	seen := map[ids.ObjectID]Info{}
	mem.Scan(func(in *Info) bool { seen[in.ID] = *in; return true })
	if len(seen) != 3 {
		t.Fatalf("saw %d objects", len(seen))
	}
	if p := seen[pending]; !p.Held || p.Ready || p.Local != 1 {
		t.Errorf("pending: %+v", p)
	}
	if r := seen[ready]; !r.Ready || !r.Value.InStore || r.Value.Node != "n1" || r.Value.Size != 1<<20 || r.Local != 2 {
		t.Errorf("ready: %+v", r)
	}
	if f := seen[failed]; !f.Ready || string(f.Value.Data) != "boom" {
		t.Errorf("inline: %+v", f)
	}
	n := 0
	mem.Scan(func(*Info) bool { n++; return false })
	if n != 1 {
		t.Errorf("Scan went on after false: %d calls", n)
	}
}
