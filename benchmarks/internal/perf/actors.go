package perf

import (
	"context"
	"fmt"
	"runtime"

	"github.com/ray-go/ray"
)

// The actors of ray_perf.py: Actor (small_value, small_value_arg) and Client (batches of
// calls from inside an actor).
type perfActor struct{}

func (*perfActor) SmallValue(context.Context) ([]byte, error)         { return []byte("ok"), nil }
func (*perfActor) SmallValueArg(context.Context, int) ([]byte, error) { return []byte("ok"), nil }

// The benchmark actors keep no state, but a logged actor without a Checkpointer keeps its
// whole method log; as in any long-lived exactly-once actor, a checkpoint bounds it.
func (*perfActor) SaveCheckpoint(context.Context) ([]byte, error)  { return nil, nil }
func (*perfActor) RestoreCheckpoint(context.Context, []byte) error { return nil }

type perfClient struct {
	servers []ray.ActorHandle[perfActor]
}

func (*perfClient) SaveCheckpoint(context.Context) ([]byte, error)  { return nil, nil }
func (*perfClient) RestoreCheckpoint(context.Context, []byte) error { return nil }

var (
	perfActorClass = ray.Actor("microbench.Actor", func() *perfActor { return &perfActor{} })
	perfSmallValue = ray.Method0(perfActorClass, "small_value", (*perfActor).SmallValue)
	perfSmallArg   = ray.Method1(perfActorClass, "small_value_arg", (*perfActor).SmallValueArg)

	perfClientClass = ray.Actor1("microbench.Client", func(_ context.Context, servers []ray.ActorHandle[perfActor]) (*perfClient, error) {
		return &perfClient{servers: servers}, nil
	})
	// small_value_batch: n calls to each server, then get them all.
	perfClientBatch = ray.Method1(perfClientClass, "small_value_batch", func(c *perfClient, ctx context.Context, n int) (int, error) {
		refs := make([]ray.ObjectRef[[]byte], 0, n*len(c.servers))
		for _, s := range c.servers {
			for range n {
				refs = append(refs, perfSmallValue.Remote(ctx, s))
			}
		}
		return 0, getAllRelease(ctx, refs)
	})
	// small_value_batch_arg: the same, each call passing a ref to one put object.
	perfClientBatchArg = ray.Method1(perfClientClass, "small_value_batch_arg", func(c *perfClient, ctx context.Context, n int) (int, error) {
		x, err := ray.Put(ctx, 0)
		if err != nil {
			return 0, err
		}
		defer x.Release()
		refs := make([]ray.ObjectRef[[]byte], 0, n*len(c.servers))
		for _, s := range c.servers {
			for range n {
				refs = append(refs, perfSmallArg.Remote(ctx, s, x))
			}
		}
		return 0, getAllRelease(ctx, refs)
	})

	// submitterClass is ray_perf.py's multi_client_tasks_async submitter: an actor that
	// submits n small_value tasks and gets them.
	submitterClass = ray.Actor("microbench.Submitter", func() *perfClient { return &perfClient{} })
	submitBatch    = ray.Method1(submitterClass, "small_value_batch", func(_ *perfClient, ctx context.Context, n int) (int, error) {
		refs := make([]ray.ObjectRef[[]byte], n)
		for i := range refs {
			refs[i] = smallValue.Remote(ctx)
		}
		return 0, getAllRelease(ctx, refs)
	})

	// nnWork is ray_perf.py's work task of n_n_actor_calls_async: n calls round-robin over
	// the actors, then get them all.
	nnWork = ray.Task2("microbench.nn_work", func(ctx context.Context, actors []ray.ActorHandle[perfActor], n int) (int, error) {
		refs := make([]ray.ObjectRef[[]byte], n)
		for i := range refs {
			refs[i] = perfSmallValue.Remote(ctx, actors[i%len(actors)])
		}
		return 0, getAllRelease(ctx, refs)
	})
	nnWork0 = nnWork.Options(ray.NumCPUs(0))
)

// actorMode is one delivery guarantee the actor metrics run under.
type actorMode struct {
	suffix string // appended to Ray's metric name
	opts   []ray.TaskOption
	what   string
}

var actorModes = []actorMode{
	{"", []ray.TaskOption{ray.AtMostOnce()}, "at-most-once actors (Ray's default)"},
	{"_exactly_once", nil, "exactly-once actors (method log in etcd)"},
}

// nActors is ray_perf.py's n_cpu = cpu_count() // 2, at least 2 so that "n" is plural.
func nActors() int { return max(2, runtime.NumCPU()/2) }

func killAll[T any](ctx context.Context, hs ...ray.ActorHandle[T]) {
	for _, h := range hs {
		if err := ray.Kill(ctx, h, true); err != nil {
			logf("kill %s: %v", h, err)
		}
	}
}

func newActors(ctx context.Context, n int, opts []ray.TaskOption) ([]ray.ActorHandle[perfActor], error) {
	hs := make([]ray.ActorHandle[perfActor], n)
	for i := range hs {
		hs[i] = perfActorClass.Remote(ctx, opts...)
		if err := hs[i].Err(); err != nil {
			return nil, err
		}
		// Wait for the constructor, as ray_perf.py's first timed call would.
		if _, err := ray.Get(ctx, perfSmallValue.Remote(ctx, hs[i])); err != nil {
			return nil, err
		}
	}
	return hs, nil
}

func actorCalls(ctx context.Context, h ray.ActorHandle[perfActor], n int) error {
	refs := make([]ray.ObjectRef[[]byte], n)
	for i := range refs {
		refs[i] = perfSmallValue.Remote(ctx, h)
	}
	return getAllRelease(ctx, refs)
}

// actorMetrics are the actor workloads of ray_perf.py, once per mode, each exactly-once
// metric right after its at-most-once twin (the pairs' ratios are derived metrics).
func actorMetrics() []*metric {
	var per [][]*metric
	for _, mode := range actorModes {
		var ms []*metric
		mode := mode
		ms = append(ms,
			&metric{
				name: "1_1_actor_calls_sync" + mode.suffix, unit: "calls/s",
				body: "one small_value call to a 0-CPU actor, Get it; " + mode.what,
				setup: func(e *env) (*bench, error) {
					hs, err := newActors(e.ctx, 1, mode.opts)
					if err != nil {
						return nil, err
					}
					return &bench{multiplier: 1, run: func() error {
						r := perfSmallValue.Remote(e.ctx, hs[0])
						_, err := ray.Get(e.ctx, r)
						r.Release()
						return err
					}, cleanup: func() { killAll(e.ctx, hs...) }}, nil
				},
			},
			&metric{
				name: "1_1_actor_calls_async" + mode.suffix, unit: "calls/s",
				body: "1000 small_value calls to one actor, then GetAll; " + mode.what,
				setup: func(e *env) (*bench, error) {
					hs, err := newActors(e.ctx, 1, mode.opts)
					if err != nil {
						return nil, err
					}
					return &bench{multiplier: 1000, run: func() error { return actorCalls(e.ctx, hs[0], 1000) },
						cleanup: func() { killAll(e.ctx, hs...) }}, nil
				},
			},
			&metric{
				name: "1_1_actor_calls_concurrent" + mode.suffix, unit: "calls/s",
				body: "as 1_1_actor_calls_async, actor with MaxConcurrency(16); " + mode.what,
				setup: func(e *env) (*bench, error) {
					hs, err := newActors(e.ctx, 1, append([]ray.TaskOption{ray.MaxConcurrency(16)}, mode.opts...))
					if err != nil {
						return nil, err
					}
					return &bench{multiplier: 1000, run: func() error { return actorCalls(e.ctx, hs[0], 1000) },
						cleanup: func() { killAll(e.ctx, hs...) }}, nil
				},
			},
			&metric{
				name: "1_n_actor_calls_async" + mode.suffix, unit: "calls/s",
				body: fmt.Sprintf("a client actor calls each of %d actors 5000 times, then GetAll; %s", nActors(), mode.what),
				setup: func(e *env) (*bench, error) {
					n := e.sizes.actorCalls
					hs, err := newActors(e.ctx, nActors(), mode.opts)
					if err != nil {
						return nil, err
					}
					client := perfClientClass.Remote(e.ctx, ray.V(hs), mode.opts...)
					if err := client.Err(); err != nil {
						return nil, err
					}
					return &bench{multiplier: float64(n * len(hs)), run: func() error {
						r := perfClientBatch.Remote(e.ctx, client, ray.V(n))
						_, err := ray.Get(e.ctx, r)
						r.Release()
						return err
					}, cleanup: func() { killAll(e.ctx, hs...); killAll(e.ctx, client) }}, nil
				},
			},
			&metric{
				name: "n_n_actor_calls_async" + mode.suffix, unit: "calls/s",
				body: fmt.Sprintf("%d actors; 4 tasks (0 CPU) each make 5000 calls round-robin and GetAll; %s", nActors(), mode.what),
				setup: func(e *env) (*bench, error) {
					n := e.sizes.actorCalls
					hs, err := newActors(e.ctx, nActors(), mode.opts)
					if err != nil {
						return nil, err
					}
					return &bench{multiplier: float64(4 * n), run: func() error {
						refs := make([]ray.ObjectRef[int], 4)
						for i := range refs {
							refs[i] = nnWork0.Remote(e.ctx, ray.V(hs), ray.V(n))
						}
						return getAllRelease(e.ctx, refs)
					}, cleanup: func() { killAll(e.ctx, hs...) }}, nil
				},
			},
			&metric{
				name: "n_n_actor_calls_with_arg_async" + mode.suffix, unit: "calls/s",
				body: fmt.Sprintf("%d actors, each with a client actor making 1000 calls passing a ref to Put(0), then GetAll; %s", nActors(), mode.what),
				setup: func(e *env) (*bench, error) {
					const n = 1000
					hs, err := newActors(e.ctx, nActors(), mode.opts)
					if err != nil {
						return nil, err
					}
					clients := make([]ray.ActorHandle[perfClient], len(hs))
					for i, h := range hs {
						clients[i] = perfClientClass.Remote(e.ctx, ray.V([]ray.ActorHandle[perfActor]{h}), mode.opts...)
						if err := clients[i].Err(); err != nil {
							return nil, err
						}
					}
					return &bench{multiplier: float64(n * len(clients)), run: func() error {
						refs := make([]ray.ObjectRef[int], len(clients))
						for i, c := range clients {
							refs[i] = perfClientBatchArg.Remote(e.ctx, c, ray.V(n))
						}
						return getAllRelease(e.ctx, refs)
					}, cleanup: func() { killAll(e.ctx, hs...); killAll(e.ctx, clients...) }}, nil
				},
			},
			&metric{
				name: "multi_client_tasks_async" + mode.suffix, unit: "tasks/s",
				body: "4 submitter actors (0 CPU), each submits 10,000 (quick: 1,000) small_value tasks and GetAlls them; " + mode.what,
				setup: func(e *env) (*bench, error) {
					n := e.sizes.batchTasks
					subs := make([]ray.ActorHandle[perfClient], 4)
					for i := range subs {
						subs[i] = submitterClass.Remote(e.ctx, mode.opts...)
						if err := subs[i].Err(); err != nil {
							return nil, err
						}
					}
					return &bench{multiplier: float64(4 * n), run: func() error {
						refs := make([]ray.ObjectRef[int], len(subs))
						for i, s := range subs {
							refs[i] = submitBatch.Remote(e.ctx, s, ray.V(n))
						}
						return getAllRelease(e.ctx, refs)
					}, cleanup: func() { killAll(e.ctx, subs...) }}, nil
				},
			},
		)
		per = append(per, ms)
	}
	var out []*metric
	for i := range per[0] {
		for _, ms := range per {
			out = append(out, ms[i])
		}
	}
	return out
}
