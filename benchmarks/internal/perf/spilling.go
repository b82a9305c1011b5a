package perf

import (
	"context"
	"errors"

	"github.com/ray-go/ray"
)

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
