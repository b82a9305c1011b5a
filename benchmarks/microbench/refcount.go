package main

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/objects"
)

// refcountOps is the reference counting one no-argument task costs its owner, done 1000
// times per body, outside the runtime: what core.Submit, the ObjectRef handle and its
// Release do to the reference table (objects.RefTable; core.complete of a task without
// ref arguments does not touch it), plus the garbage collector cleanup every handle
// registers and its Release stops (on a struct of the handle's size and with the cleanup
// argument of the root package's newRef: the cost of runtime.AddCleanup grows with how
// many live cleanups share a span, so the size matters). Its rate against
// single_client_tasks_async in the same run is refcount_overhead_ratio: the share of a
// task's cost that is reference counting.
type refcountOps struct {
	refs *objects.RefTable
	root ids.TaskID
	n    uint64
}

// refHandle has the layout of the root package's handle; refCleanup that of its cleanupArg.
type refHandle struct {
	id      ids.ObjectID
	core    *int
	owner   *int
	err     error
	cleanup runtime.Cleanup
	gone    atomic.Bool
}

type refCleanup struct {
	id   ids.ObjectID
	core *int
}

var refsDropped atomic.Int64

func releaseRefCleanup(refCleanup) { refsDropped.Add(1) }

func (r *refcountOps) body() error {
	for range 1000 {
		r.n++
		tid := r.root // IDs from a counter: hashing them (ids.ChildTaskID) is not reference counting
		binary.LittleEndian.PutUint64(tid[:8], r.n)
		ret := ids.ReturnID(tid, 1)
		r.refs.Submitted(tid, nil) // Submit: the caller's reference and the lineage record
		h := &refHandle{id: ret}
		h.cleanup = runtime.AddCleanup(h, releaseRefCleanup, refCleanup{id: ret}) // newRef
		// complete: a task without ref arguments does not touch the table (core.complete).
		// Release: stop the cleanup, then ReleaseOwned.
		if h.gone.CompareAndSwap(false, true) {
			h.cleanup.Stop()
			r.refs.RemoveLocal(ret)
		}
	}
	return nil
}

func refcountMetric() *metric {
	return &metric{
		name: "reference_counting_ops", unit: "tasks/s",
		body: "the reference counting of 1000 no-argument tasks (ref table, borrow lookup, GC cleanup), without the tasks",
		setup: func(*env) (*bench, error) {
			r := &refcountOps{refs: objects.NewRefTable(), root: ids.NewRootTaskID()}
			return &bench{multiplier: 1000, run: r.body}, nil
		},
	}
}
