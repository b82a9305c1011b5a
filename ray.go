package ray

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/ray-go/ray/internal/core"
	"github.com/ray-go/ray/internal/node"
	"github.com/ray-go/ray/tasks/sched"
)

// AddressEnv is the environment variable naming a cluster to join (as Ray's RAY_ADDRESS).
const AddressEnv = "RAY_ADDRESS"

type runtimeKey struct{}

// session is what Init started and Shutdown stops.
type session struct {
	node *node.Node
	once sync.Once
	err  error
}

// Init starts ray-go and returns a context carrying the runtime; pass it (or contexts
// derived from it) to every ray call. With no address (WithAddress or RAY_ADDRESS) it starts
// a complete single-node cluster inside this process: an embedded etcd as the GCS in a
// temporary directory, one protoactor cluster member with the node's scheduler, worker and
// object store grains. Shutdown stops all of it and removes what it created.
func Init(ctx context.Context, opts ...InitOption) (context.Context, error) {
	cfg := initConfig{cpus: float64(runtime.NumCPU())}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.address == "" {
		cfg.address = os.Getenv(AddressEnv)
	}
	if cfg.address != "" {
		return nil, fmt.Errorf("ray: Init: joining the cluster at %q is not available in this version; "+
			"unset %s (and drop WithAddress) to start a local cluster", cfg.address, AddressEnv)
	}
	m := map[string]float64{sched.CPU: cfg.cpus, sched.GPU: cfg.gpus}
	for k, v := range cfg.resources {
		if k == sched.CPU || k == sched.GPU {
			return nil, fmt.Errorf("ray: Init: set %s with WithNumCPUs/WithNumGPUs, not WithResources", k)
		}
		m[k] = v
	}
	res, err := sched.FromMap(m)
	if err != nil {
		return nil, fmt.Errorf("ray: Init: node resources: %w", err)
	}
	if cfg.objectStoreBytes < 0 {
		return nil, fmt.Errorf("ray: Init: object store memory must be positive, got %d", cfg.objectStoreBytes)
	}
	n, err := node.Start(ctx, node.Config{
		Resources: res, ObjectStoreBytes: cfg.objectStoreBytes, Dir: cfg.dir,
		Lineage: !cfg.noLineage, Logger: cfg.logger,
	})
	if err != nil {
		return nil, fmt.Errorf("ray: Init: %w", err)
	}
	s := &session{node: n}
	ctx = context.WithValue(ctx, runtimeKey{}, s)
	return core.WithTask(ctx, n.Core.NewDriver()), nil
}

// Shutdown stops what Init started. Calling it again returns the first result.
func Shutdown(ctx context.Context) error {
	s, ok := ctx.Value(runtimeKey{}).(*session)
	if !ok {
		return errors.New("ray: Shutdown needs the context returned by Init")
	}
	s.once.Do(func() { s.err = s.node.Stop(context.WithoutCancel(ctx)) })
	return s.err
}

// nodeOf returns the node Init started (tests and benchmarks).
func nodeOf(ctx context.Context) *node.Node {
	if s, ok := ctx.Value(runtimeKey{}).(*session); ok {
		return s.node
	}
	return nil
}
