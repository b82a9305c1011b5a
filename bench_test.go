package ray

import (
	"context"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
)

var tiny = Task0("bench.tiny", func(context.Context) ([]byte, error) { return []byte("ok"), nil })

func BenchmarkTasksSync(b *testing.B) {
	ctx := shared
	for i := 0; i < b.N; i++ {
		r := tiny.Remote(ctx)
		if _, err := Get(ctx, r); err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
}

func BenchmarkTasksAsync(b *testing.B) {
	ctx := shared
	refs := make([]ObjectRef[[]byte], 0, 1000)
	for i := 0; i < b.N; i++ {
		refs = append(refs, tiny.Remote(ctx))
		if len(refs) == cap(refs) || i == b.N-1 {
			if _, err := GetAll(ctx, refs); err != nil {
				b.Fatal(err)
			}
			for _, r := range refs {
				r.Release()
			}
			refs = refs[:0]
		}
	}
}

func BenchmarkPut(b *testing.B) {
	ctx := shared
	for i := 0; i < b.N; i++ {
		r, err := Put(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
}

func BenchmarkGet(b *testing.B) {
	ctx := shared
	r, err := Put(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Get(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutGigabytes(b *testing.B) {
	ctx := shared
	xs := make([]int64, 100<<20) // 800 MiB
	for i := range xs {
		xs[i] = int64(i)
	}
	b.SetBytes(int64(len(xs)) * 8)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Put(ctx, xs)
		if err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
}

type benchActor struct{}

func (*benchActor) Small(context.Context) ([]byte, error) { return []byte("ok"), nil }

var (
	benchActorClass = Actor("bench.Actor", func() *benchActor { return &benchActor{} })
	benchSmall      = Method0(benchActorClass, "small", (*benchActor).Small)
)

// newBenchActor makes an at-most-once benchActor, ready (one call answered), killed when b
// ends.
func newBenchActor(b *testing.B) ActorHandle[benchActor] {
	ctx := shared
	h := benchActorClass.Remote(ctx, AtMostOnce())
	if _, err := Get(ctx, benchSmall.Remote(ctx, h)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = Kill(ctx, h, true) })
	return h
}

// BenchmarkActorCallsAsync is microbench's 1_1_actor_calls_async: batches of 1000 calls
// to one at-most-once actor, then GetAll.
func BenchmarkActorCallsAsync(b *testing.B) {
	ctx := shared
	h := newBenchActor(b)
	refs := make([]ObjectRef[[]byte], 0, 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		refs = append(refs, benchSmall.Remote(ctx, h))
		if len(refs) == cap(refs) || i == b.N-1 {
			if _, err := GetAll(ctx, refs); err != nil {
				b.Fatal(err)
			}
			for _, r := range refs {
				r.Release()
			}
			refs = refs[:0]
		}
	}
}

func (*benchActor) Step(_ context.Context, n int, _ int64) (int, error) { return n, nil }

var benchStep = Method2(benchActorClass, "step", (*benchActor).Step)

// BenchmarkActorCallsPipelined is benchmarks/rl's asynchronous run with one worker:
// two calls with two by-value arguments queued on one at-most-once actor; the driver
// gets the oldest call's result, releases it and submits the next, so every call pays
// Remote, Get and Release on its own.
func BenchmarkActorCallsPipelined(b *testing.B) {
	ctx := shared
	h := newBenchActor(b)
	var ring [2]ObjectRef[int]
	for k := range ring {
		ring[k] = benchStep.Remote(ctx, h, V(k), V(int64(0)))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % len(ring)
		if _, err := Get(ctx, ring[k]); err != nil {
			b.Fatal(err)
		}
		ring[k].Release()
		ring[k] = benchStep.Remote(ctx, h, V(i), V(int64(0)))
	}
	b.StopTimer()
	for _, r := range ring {
		if _, err := Get(ctx, r); err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
}

// BenchmarkWaitCheck: what Wait's check of its refs (checkWait: unique, not zero) costs
// for 1000 refs, the list single_client_wait_1k_refs starts from.
func BenchmarkWaitCheck(b *testing.B) {
	root := ids.NewRootTaskID()
	refs := make([]ObjectRef[int], 1000)
	for i := range refs {
		refs[i] = ObjectRef[int]{h: &handle{id: ids.ReturnID(ids.ChildTaskID(root, uint64(i)), 1)}}
	}
	o := waitOpts{k: 1, timeout: -1}
	for b.Loop() {
		if err := checkWait(refs, func(r ObjectRef[int]) *handle { return r.h }, o); err != nil {
			b.Fatal(err)
		}
	}
}
