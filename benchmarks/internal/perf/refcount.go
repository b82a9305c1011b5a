package perf

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/objects"
)

// refcountOps is the reference counting one no-argument task costs its owner, done 1000
// times per body, outside the runtime: what core.Submit, the ObjectRef handle and its
// Release do to the reference table (objects.RefTable; core.complete of a task without
// ref arguments does not touch it), plus the finalizer every handle gets and its Release
// clears (on a struct of the handle's size: the cost of the runtime's finalizer records
// grows with how many live ones share a span, so the size matters). Its rate against
// single_client_tasks_async in the same run is refcount_overhead_ratio: the share of a
// task's cost that is reference counting.
type refcountOps struct {
	refs *objects.RefTable
	root ids.TaskID
	n    uint64
}

// refHandle has the layout of the root package's handle (its size is what is measured:
// the fields it does not use are there for that).
type refHandle struct {
	id ids.ObjectID
	//lint:ignore U1000 the root package's handle has it
	core *int
	//lint:ignore U1000 the root package's handle has it
	owner *int
	//lint:ignore U1000 the root package's handle has it
	err  error
	gone atomic.Bool
}

var refsDropped atomic.Int64

func collectedRef(h *refHandle) {
	if h.gone.CompareAndSwap(false, true) {
		refsDropped.Add(1)
	}
}

func (r *refcountOps) body() error {
	for range 1000 {
		r.n++
		tid := r.root // IDs from a counter: hashing them (ids.ChildTaskID) is not reference counting
		binary.LittleEndian.PutUint64(tid[4:12], r.n)
		ret := ids.ReturnID(tid, 1)
		r.refs.Submitted(tid, nil, nil) // Submit: the caller's reference and the lineage record
		h := &refHandle{id: ret}
		runtime.SetFinalizer(h, collectedRef) // newRef
		// complete: a task without ref arguments does not touch the table (core.complete).
		// Release: clear the finalizer, then ReleaseOwned.
		if h.gone.CompareAndSwap(false, true) {
			runtime.SetFinalizer(h, nil)
			r.refs.RemoveLocal(ret)
		}
	}
	return nil
}

func refcountMetric() *metric {
	return &metric{
		name: "reference_counting_ops", unit: "tasks/s",
		body: "the reference counting of 1000 no-argument tasks (ref table, borrow lookup, GC finalizer), without the tasks",
		setup: func(*env) (*bench, error) {
			r := &refcountOps{refs: objects.NewRefTable(), root: ids.NewRootTaskID()}
			return &bench{multiplier: 1000, run: r.body}, nil
		},
	}
}
