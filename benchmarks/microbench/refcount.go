package main

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"sync"

	"github.com/ray-go/ray"

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

// spillingPutMetric: Ray's single_client_put_gigabytes while the store spills. A runtime of
// its own with a 256 MiB store; each body puts an 80 MiB []int64 of counting numbers (so
// zstd has something to compress) and keeps the last 8 puts alive, releasing the oldest:
// 640 MiB live, so every put beyond the budget waits for the store to spill (backpressure).
func spillingPutMetric() *metric {
	return &metric{
		name: "single_client_put_gigabytes_spilling", unit: "GB/s",
		body: "Put of an 80 MiB []int64 (counting numbers) into a 256 MiB store, keeping the last 8 alive (fresh runtime)",
		setup: func(e *env) (*bench, error) {
			if e.address != "" {
				return nil, errors.New("runs on a local runtime of its own (drop -address)")
			}
			ctx, err := ray.Init(context.Background(), append(append([]ray.InitOption{}, e.initOpts...), ray.WithObjectStoreMemory(256<<20))...)
			if err != nil {
				return nil, err
			}
			arr := make([]int64, 10<<20)
			for i := range arr {
				arr[i] = int64(i)
			}
			var window []ray.ObjectRef[[]int64]
			return &bench{multiplier: rayGB(len(arr)), run: func() error {
				r, err := ray.Put(ctx, arr)
				if err != nil {
					return err
				}
				window = append(window, r)
				if len(window) > 8 {
					window[0].Release()
					window = window[1:]
				}
				return nil
			}, cleanup: func() {
				for _, r := range window {
					r.Release()
				}
				if err := ray.Shutdown(ctx); err != nil {
					logf("spilling put runtime: shutdown: %v", err)
				}
			}}, nil
		},
	}
}
