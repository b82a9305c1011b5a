package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	ray "github.com/ray-go/ray"
)

// The droppedobjects check (TestDroppedObjectsElsewhere) runs against a cluster of one node
// with a 16 MiB object store: the results of tasks (1 MiB each) are stored where the tasks
// ran, in the job's worker process, and owned by the driver, which drops the refs of four
// without Release, its own automatic collections off (debug.SetGCPercent(-1), as a quiet
// program that collects every 2 minutes). Only a collection in the driver frees them. Then
// the driver keeps eight more results, which take the worker process's store over 70% of
// its budget: the store asks its process and the cluster's other processes for a
// collection (internal/assembly/core, collect.go), and the driver's frees the four. It
// reports how long after the last kept result the store held only the kept ones
// ("seconds"), or the error.
var oneMiB = ray.Task1("e2e.OneMiB", func(_ context.Context, i int) ([]byte, error) {
	b := make([]byte, 1<<20)
	b[0] = byte(i)
	return b, nil
})

func droppedObjectsCheck(ctx context.Context, out map[string]any) error {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	rep := map[string]any{}
	out["dropped_objects"] = rep
	const dropped, keep = 4, 8
	self, err := ray.GetRuntimeContext(ctx)
	if err != nil {
		return err
	}
	// The store of the job's worker process (the one holding the most objects).
	held := func() (ray.NodeMemory, error) {
		m, err := ray.Memory(ctx, 0)
		if err != nil {
			return ray.NodeMemory{}, err
		}
		var best ray.NodeMemory
		for _, n := range m.Nodes {
			if n.Node != self.NodeID && n.Objects >= best.Objects {
				best = n
			}
		}
		return best, nil
	}
	if err := func() error {
		for i := range dropped {
			if b, err := ray.Get(ctx, oneMiB.Remote(ctx, ray.V(i))); err != nil || len(b) != 1<<20 {
				return fmt.Errorf("a dropped task's result: %d bytes, %w", len(b), err)
			}
		}
		return nil
	}(); err != nil {
		return err
	}
	st, err := held()
	if err != nil {
		return err
	}
	if st.Objects != dropped {
		return fmt.Errorf("after the dropped tasks the worker process's store (%s) holds %d objects, want %d", st.Node, st.Objects, dropped)
	}
	var kept []ray.ObjectRef[[]byte]
	for i := range keep {
		r := oneMiB.Remote(ctx, ray.V(dropped+i))
		if _, err := ray.Get(ctx, r); err != nil {
			return fmt.Errorf("a kept task's result: %w", err)
		}
		kept = append(kept, r)
	}
	start := time.Now()
	for deadline := start.Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if st, err = held(); err != nil {
			return err
		}
		if st.Objects == keep {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("60 s after the kept results the worker process's store (%s) holds %d objects (%d bytes in memory, %d spilled, budget %d), want the %d kept: the driver's dropped results were not freed",
				st.Node, st.Objects, st.MemoryBytes, st.SpilledObjects, st.Budget, keep)
		}
	}
	rep["seconds"] = time.Since(start).Seconds()
	for _, r := range kept {
		r.Release()
	}
	return nil
}
