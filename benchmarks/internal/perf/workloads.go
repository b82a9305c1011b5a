package perf

import (
	"context"
	"fmt"

	"github.com/ray-go/ray"
)

// The remote functions of the workloads, as in ray_perf.py.
var (
	// smallValue is ray_perf.py's small_value: no arguments, returns b"ok".
	smallValue = ray.Task0("microbench.small_value", func(context.Context) ([]byte, error) {
		return []byte("ok"), nil
	})

	// doPutSmall is do_put_small: 100 tiny puts from inside a task.
	doPutSmall = ray.Task0("microbench.do_put_small", func(ctx context.Context) (int, error) {
		for i := 0; i < 100; i++ {
			r, err := ray.Put(ctx, 0)
			if err != nil {
				return 0, err
			}
			r.Release()
		}
		return 0, nil
	})

	// doPut is do_put: 10 puts of a fresh zeroed int64 array of elems elements (Ray:
	// np.zeros(10 * 1024 * 1024, dtype=np.int64), 80 MiB).
	doPut = ray.Task1("microbench.do_put", func(ctx context.Context, elems int) (int, error) {
		for i := 0; i < 10; i++ {
			r, err := ray.Put(ctx, make([]int64, elems))
			if err != nil {
				return 0, err
			}
			r.Release()
		}
		return 0, nil
	})
)

// getAllRelease gets every ref, then releases them all (also on error).
func getAllRelease[T any](ctx context.Context, refs []ray.ObjectRef[T]) error {
	_, err := ray.GetAll(ctx, refs)
	for _, r := range refs {
		r.Release()
	}
	return err
}

// sizes are the workload sizes of a mode (full: Ray's; quick: scaled down).
type sizes struct {
	bigPutElems   int // single_client_put_gigabytes: elements of the []int64 put
	multiPutElems int // multi_client_put_gigabytes: elements of each of the 100 puts
	batchTasks    int // multi_client_tasks_async: tasks per submitter
	actorCalls    int // 1_n and n_n actor calls: calls per client
	transferBytes int // cross_node_object_transfer_gigabytes: the object's size
}

var (
	fullSizes  = sizes{bigPutElems: 100 << 20, multiPutElems: 10 << 20, batchTasks: 10_000, actorCalls: 5_000, transferBytes: 200 << 20}
	quickSizes = sizes{bigPutElems: 10 << 20, multiPutElems: 1 << 20, batchTasks: 1_000, actorCalls: 1_000, transferBytes: 32 << 20}
)

// rayGB is the multiplier ray_perf.py uses for bytes: 8 * 0.1 "GB" for 100 * 1024 * 1024
// int64s, i.e. one "GB" is 1000 MiB. We keep that unit so the figures compare directly.
func rayGB(elems int) float64 { return float64(elems) * 8 / (1 << 20) / 1000 }

// coreMetrics are the Ray workloads, in BENCHMARKS.md order.
func coreMetrics() []*metric {
	return []*metric{
		{
			name: "single_client_get_calls_Plasma_Store", unit: "gets/s",
			body: "Get of one tiny object (Put(0) once, before timing)",
			setup: func(e *env) (*bench, error) {
				ref, err := ray.Put(e.ctx, 0)
				if err != nil {
					return nil, err
				}
				return &bench{multiplier: 1, run: func() error {
					_, err := ray.Get(e.ctx, ref)
					return err
				}, cleanup: ref.Release}, nil
			},
		},
		{
			name: "single_client_put_calls_Plasma_Store", unit: "puts/s",
			body: "Put(0), then Release the ref (Ray drops it at once)",
			setup: func(e *env) (*bench, error) {
				return &bench{multiplier: 1, run: func() error {
					r, err := ray.Put(e.ctx, 0)
					r.Release()
					return err
				}}, nil
			},
		},
		{
			name: "multi_client_put_calls_Plasma_Store", unit: "puts/s",
			body: "10 tasks, each 100 Put(0) with its own ctx (released at once); Get the 10 results",
			setup: func(e *env) (*bench, error) {
				return &bench{multiplier: 1000, run: func() error {
					refs := make([]ray.ObjectRef[int], 10)
					for i := range refs {
						refs[i] = doPutSmall.Remote(e.ctx)
					}
					return getAllRelease(e.ctx, refs)
				}}, nil
			},
		},
		{
			name: "single_client_put_gigabytes", unit: "GB/s",
			body: "Put of one []int64 (800 MiB; quick: 80 MiB), released at once; GB = 1000 MiB as Ray",
			setup: func(e *env) (*bench, error) {
				arr := make([]int64, e.sizes.bigPutElems)
				return &bench{multiplier: rayGB(len(arr)), run: func() error {
					r, err := ray.Put(e.ctx, arr)
					r.Release()
					return err
				}}, nil
			},
		},
		{
			name: "multi_client_put_gigabytes", unit: "GB/s",
			body: "10 tasks, each 10 Puts of a fresh zeroed []int64 of 80 MiB (quick: 8 MiB), released at once",
			setup: func(e *env) (*bench, error) {
				elems := e.sizes.multiPutElems
				return &bench{multiplier: 100 * rayGB(elems), run: func() error {
					refs := make([]ray.ObjectRef[int], 10)
					for i := range refs {
						refs[i] = doPut.Remote(e.ctx, ray.V(elems))
					}
					return getAllRelease(e.ctx, refs)
				}}, nil
			},
		},
		{
			name: "single_client_tasks_sync", unit: "tasks/s",
			body: "submit small_value (no args, returns []byte(\"ok\")), Get it",
			setup: func(e *env) (*bench, error) {
				return &bench{multiplier: 1, run: func() error {
					r := smallValue.Remote(e.ctx)
					v, err := ray.Get(e.ctx, r)
					r.Release()
					if err == nil && string(v) != "ok" {
						err = fmt.Errorf("small_value returned %q", v)
					}
					return err
				}}, nil
			},
		},
		{
			name: "single_client_tasks_async", unit: "tasks/s",
			body: "submit 1000 small_value, GetAll",
			setup: func(e *env) (*bench, error) {
				return &bench{multiplier: 1000, run: func() error { return tasksAsync(e.ctx) }}, nil
			},
		},
		{
			name: "single_client_tasks_async_fresh", unit: "tasks/s",
			body:  "single_client_tasks_async on a fresh runtime (lineage on): the fair baseline of the _no_lineage run after it",
			setup: func(e *env) (*bench, error) { return freshTasksAsync(e) },
		},
		{
			name: "single_client_tasks_async_no_lineage", unit: "tasks/s",
			body:  "single_client_tasks_async on a fresh runtime started WithoutLineage()",
			setup: func(e *env) (*bench, error) { return freshTasksAsync(e, ray.WithoutLineage()) },
		},
		{
			name: "single_client_get_object_containing_10k_refs", unit: "gets/s",
			body: "a task Puts 10,000 small objects and returns the list of their refs; the driver Gets the list (binding 10,000 borrowed refs) and releases it",
			setup: func(e *env) (*bench, error) {
				return &bench{multiplier: 1, run: func() error {
					ref := containing10k.Remote(e.ctx)
					refs, err := ray.Get(e.ctx, ref)
					ref.Release()
					if err == nil && len(refs) != 10000 {
						err = fmt.Errorf("got %d refs, want 10000", len(refs))
					}
					for _, r := range refs {
						r.Release()
					}
					return err
				}}, nil
			},
		},
		{
			name: "single_client_wait_1k_refs", unit: "bodies/s",
			body: "submit 1000 small_value, then 1000 rounds of Wait(notReady, NumReady(1)) taking one ready ref per round",
			setup: func(e *env) (*bench, error) {
				return &bench{multiplier: 1, run: func() error { return wait1k(e.ctx) }}, nil
			},
		},
		{
			name: "placement_group_create/removal", unit: "groups/s",
			body: "create 100 placement groups of one {CPU: 0.001} bundle, wait until each is ready, then remove them all (ray_perf.py's pg_create_removal)",
			setup: func(e *env) (*bench, error) {
				return &bench{multiplier: 100, run: func() error { return pgCreateRemoval(e.ctx, 100) }}, nil
			},
		},
	}
}

func pgCreateRemoval(ctx context.Context, n int) error {
	pgs := make([]*ray.PlacementGroupHandle, n)
	for i := range pgs {
		pg, err := ray.PlacementGroup(ctx, []ray.Bundle{{"CPU": 0.001}}, ray.StrategyPack)
		if err != nil {
			return err
		}
		pgs[i] = pg
	}
	for _, pg := range pgs {
		if err := pg.Ready(ctx); err != nil {
			return err
		}
	}
	for _, pg := range pgs {
		if err := pg.Remove(ctx); err != nil {
			return err
		}
	}
	return nil
}

// containing10k is ray_perf.py's create_object_containing_ref: 10,000 ray.put(1), their
// refs returned in a list.
var containing10k = ray.Task0("microbench.containing_10k_refs", func(ctx context.Context) ([]ray.ObjectRef[int], error) {
	refs := make([]ray.ObjectRef[int], 10000)
	for i := range refs {
		r, err := ray.Put(ctx, 1)
		if err != nil {
			return nil, err
		}
		refs[i] = r
	}
	return refs, nil
})

func tasksAsync(ctx context.Context) error {
	refs := make([]ray.ObjectRef[[]byte], 1000)
	for i := range refs {
		refs[i] = smallValue.Remote(ctx)
	}
	return getAllRelease(ctx, refs)
}

// freshTasksAsync measures single_client_tasks_async on a runtime of its own, started for
// the metric and stopped after it, so that the lineage on/off pair is measured under the
// same conditions (the main runtime carries the heap of every metric before it).
func freshTasksAsync(e *env, opts ...ray.InitOption) (*bench, error) {
	ctx, err := ray.Init(context.Background(), append(append([]ray.InitOption{}, e.initOpts...), opts...)...)
	if err != nil {
		return nil, fmt.Errorf("fresh runtime: %w", err)
	}
	return &bench{multiplier: 1000, run: func() error { return tasksAsync(ctx) },
		cleanup: func() {
			if err := ray.Shutdown(ctx); err != nil {
				logf("fresh runtime: shutdown: %v", err)
			}
		}}, nil
}

// wait1k is ray_perf.py's wait_multiple_refs:
//
//	not_ready = [small_value.remote() for _ in range(1000)]
//	for _ in range(1000):
//	    _ready, not_ready = ray.wait(not_ready)
//
// ray.Wait, like ray.wait, returns at most NumReady (default 1) ready refs, so each round
// removes exactly one ref: 1000 Wait calls over lists shrinking by one.
func wait1k(ctx context.Context) error {
	const n = 1000
	notReady := make([]ray.ObjectRef[[]byte], n)
	for i := range notReady {
		notReady[i] = smallValue.Remote(ctx)
	}
	for round := 0; round < n; round++ {
		ready, rest, err := ray.Wait(ctx, notReady)
		if err != nil {
			for _, r := range notReady {
				r.Release()
			}
			return err
		}
		if len(ready) != 1 {
			return fmt.Errorf("wait round %d: %d ready refs, want 1", round, len(ready))
		}
		ready[0].Release()
		notReady = rest
	}
	if len(notReady) != 0 {
		return fmt.Errorf("%d refs left after %d rounds", len(notReady), n)
	}
	return nil
}
