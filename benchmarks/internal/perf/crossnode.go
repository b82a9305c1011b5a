package perf

import (
	"context"
	"errors"
	"fmt"

	"github.com/ray-go/ray"
)

// The cross-node suite: work that lands on another node process. It runs against a
// cluster (-address); on a local runtime there is no other node and the metrics fail
// their setup with a message saying so.

var (
	// transferLen reads its argument, which lives on another node, and returns its length.
	transferLen = ray.Task1("microbench.transfer_len", func(_ context.Context, b []byte) (int, error) { return len(b), nil })
	// transferMake makes the transferred object (random-looking bytes: nothing compresses).
	transferMake = ray.Task1("microbench.transfer_make", func(_ context.Context, n int) ([]byte, error) {
		b := make([]byte, n)
		x := uint64(0x9E3779B97F4A7C15)
		for i := 0; i+8 <= n; i += 8 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			for k := range 8 {
				b[i+k] = byte(x >> (8 * k))
			}
		}
		return b, nil
	})
)

// otherNodes returns the job's nodes other than the caller's.
func otherNodes(ctx context.Context) ([]ray.Node, error) {
	self, err := ray.NodeID(ctx)
	if err != nil {
		return nil, err
	}
	nodes, err := ray.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []ray.Node
	for _, n := range nodes.Alive() {
		if n.ID != self {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no other node: run against a cluster (-address, with `rayctl start`)")
	}
	return out, nil
}

func crossNodeMetrics() []*metric {
	return []*metric{
		{
			name: "cross_node_tasks_async", unit: "tasks/s",
			body: "submit 1000 small_value pinned (NodeAffinity) to another node process, GetAll",
			setup: func(e *env) (*bench, error) {
				others, err := otherNodes(e.ctx)
				if err != nil {
					return nil, err
				}
				f := smallValue.Options(ray.NodeAffinity(others[0].ID, false))
				return &bench{multiplier: 1000, run: func() error {
					refs := make([]ray.ObjectRef[[]byte], 1000)
					for i := range refs {
						refs[i] = f.Remote(e.ctx)
					}
					return getAllRelease(e.ctx, refs)
				}}, nil
			},
		},
		{
			name: "cross_node_object_transfer_gigabytes", unit: "GB/s",
			body: "a task on node B reads a 200 MiB object (random bytes) made on node A (32 MiB with -quick); " +
				"with one node, the driver reads it",
			setup: func(e *env) (*bench, error) {
				others, err := otherNodes(e.ctx)
				if err != nil {
					return nil, err
				}
				size := e.sizes.transferBytes
				obj := transferMake.Options(ray.NodeAffinity(others[0].ID, false)).Remote(e.ctx, ray.V(size))
				if _, _, err := ray.Wait(e.ctx, []ray.ObjectRef[[]byte]{obj}); err != nil {
					return nil, err
				}
				gb := float64(size) / 1e9
				if len(others) == 1 {
					return &bench{multiplier: gb, run: func() error {
						b, err := ray.Get(e.ctx, obj)
						if err == nil && len(b) != size {
							err = fmt.Errorf("read %d bytes, want %d", len(b), size)
						}
						return err
					}, cleanup: obj.Release}, nil
				}
				reader := transferLen.Options(ray.NodeAffinity(others[1].ID, false))
				return &bench{multiplier: gb, run: func() error {
					n, err := ray.Get(e.ctx, reader.Remote(e.ctx, obj))
					if err == nil && n != size {
						err = fmt.Errorf("the reader saw %d bytes, want %d", n, size)
					}
					return err
				}, cleanup: obj.Release}, nil
			},
		},
	}
}
