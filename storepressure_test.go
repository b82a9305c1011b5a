package ray

import (
	"context"
	"fmt"
	"runtime/debug"
	"testing"
	"time"
)

// mib1 is the elements of a []int64 of 1 MiB.
const mib1 = 128 << 10

// dropObjects puts n objects of 1 MiB and has n nested tasks return 1 MiB each, reads
// them all and drops every ref without Release: only a garbage collection that finds the
// refs gone gives the objects back.
var dropObjects = Task1("test.dropObjects", func(ctx context.Context, n int) (int, error) {
	for i := range n {
		r, err := Put(ctx, make([]int64, mib1))
		if err != nil {
			return 0, fmt.Errorf("put %d: %w", i, err)
		}
		if _, err := Get(ctx, r); err != nil {
			return 0, fmt.Errorf("get put %d: %w", i, err)
		}
	}
	for i := range n {
		if _, err := Get(ctx, big.Remote(ctx, V(mib1))); err != nil {
			return 0, fmt.Errorf("nested task %d: %w", i, err)
		}
	}
	return 2 * n, nil
})

// TestDroppedObjectsFreedUnderStorePressure: objects whose refs a task dropped without
// Release stay in the object store until a garbage collection of the process finds the
// refs gone; Go collects a quiet process only every 2 minutes (never here: automatic
// collections are off while the test runs), while Ray's reference counts free them at
// once. A store that a put finds over 70% of its budget asks for a collection
// (objects/shard Config.Pressure, core.CollectForStore), so the dropped objects are
// freed once the driver's own puts fill the store, instead of being spilled with them.
func TestDroppedObjectsFreedUnderStorePressure(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const budget = 8 << 20
	ctx, err := Init(context.Background(), WithNumCPUs(2), WithObjectStoreMemory(budget))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	store := func() NodeMemory {
		t.Helper()
		rep, err := Memory(ctx, 0)
		if err != nil || len(rep.Nodes) == 0 {
			t.Fatalf("Memory: %+v, %v", rep, err)
		}
		return rep.Nodes[0]
	}

	// 4 MiB dropped, half the budget: no pressure yet.
	res := dropObjects.Remote(ctx, V(2))
	if n := mustGet(t, ctx, res); n != 4 {
		t.Fatalf("dropObjects: %d", n)
	}
	res.Release()
	if st := store(); st.Objects != 4 || st.Bytes < 4<<20 {
		t.Fatalf("after the task: the store holds %d objects, %d bytes; want the 4 dropped objects of 1 MiB", st.Objects, st.Bytes)
	}

	// The driver puts 5 MiB it keeps: more than the budget with the dropped objects.
	var kept []ObjectRef[[]int64]
	defer func() {
		for _, r := range kept {
			r.Release()
		}
	}()
	for i := range 5 {
		r, err := Put(ctx, make([]int64, mib1))
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		kept = append(kept, r)
	}
	start := time.Now()
	var st NodeMemory
	for deadline := start.Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if st = store(); st.Objects == int64(len(kept)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the driver's puts the store still holds %d objects (%d bytes in memory, %d spilled, budget %d); want only the driver's %d: the objects the task dropped were not freed",
				st.Objects, st.MemoryBytes, st.SpilledObjects, budget, len(kept))
		}
	}
	t.Logf("the dropped objects were freed within %v of the driver's puts; the store: %d objects, %d bytes in memory, %d spilled",
		time.Since(start).Round(time.Millisecond), st.Objects, st.MemoryBytes, st.SpilledObjects)
	for i, r := range kept {
		if v, err := Get(ctx, r); err != nil || len(v) != mib1 {
			t.Fatalf("the driver's object %d: %d elements, %v", i, len(v), err)
		}
	}
}
