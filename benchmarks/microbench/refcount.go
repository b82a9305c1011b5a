package main

import (
	"encoding/binary"
	"runtime"
	"sync"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/objects"
)

// refcountOps is the reference counting one no-argument task costs its owner, done 1000
// times per body, outside the runtime: what core.Submit, core.complete, the ObjectRef
// handle and its Release do to the reference table (objects.RefTable) and the borrow
// table, plus the garbage collector cleanup every handle registers. Its rate against
// single_client_tasks_async in the same run is refcount_overhead_ratio: the share of a
// task's cost that is reference counting.
type refcountOps struct {
	refs   *objects.RefTable
	mu     sync.Mutex
	borrow map[ids.ObjectID]int // stands in for the borrow-table lookup of every release
	root   ids.TaskID
	n      uint64
}

type refHandle struct{ id ids.ObjectID }

func (r *refcountOps) body() error {
	for range 1000 {
		r.n++
		tid := r.root // IDs from a counter: hashing them (ids.ChildTaskID) is not reference counting
		binary.LittleEndian.PutUint64(tid[:8], r.n)
		ret := ids.ReturnID(tid, 1)
		r.refs.AddLocal(ret)                          // Submit: the caller's reference
		r.refs.AddTask(tid, []ids.ObjectID{ret}, nil) // Submit: lineage bookkeeping
		h := &refHandle{id: ret}
		runtime.AddCleanup(h, func(ids.ObjectID) {}, ret) // newRef
		r.refs.Counts(ret)                                // complete
		r.refs.RemoveLocalAll(nil)                        // complete: argument references
		r.mu.Lock()                                       // Release: is it borrowed?
		_ = r.borrow[ret]
		r.mu.Unlock()
		r.refs.RemoveLocal(ret) // Release
		runtime.KeepAlive(h)
	}
	return nil
}

func refcountMetric() *metric {
	return &metric{
		name: "reference_counting_ops", unit: "tasks/s",
		body: "the reference counting of 1000 no-argument tasks (ref table, borrow lookup, GC cleanup), without the tasks",
		setup: func(*env) (*bench, error) {
			r := &refcountOps{refs: objects.NewRefTable(), borrow: map[ids.ObjectID]int{}, root: ids.NewRootTaskID()}
			return &bench{multiplier: 1000, run: r.body}, nil
		},
	}
}
