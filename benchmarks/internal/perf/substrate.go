package perf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
)

// Substrate figures: what the layers under ray-go do on this machine, measured in the same
// run, so each core figure reads as a fraction of its limit.

type ping struct{}
type pong struct{}
type tick struct{}

// sendBatch is how many messages one substrate_protoactor_send body sends.
const sendBatch = 10_000

// etcdTxnOps is the number of puts in one transaction of the etcd figures.
const etcdTxnOps = 100

// etcdConcurrent is how many transactions the concurrent etcd figure keeps in flight (the
// GCS writer's default MaxInFlight).
const etcdConcurrent = 8

func newActorSystem() *actor.ActorSystem {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }))
}

func substrateMetrics() []*metric {
	return []*metric{
		{
			name: "substrate_protoactor_request_future", unit: "round trips/s", anchor: "~237 k/s",
			body:      "one local RequestFuture(...).Result() to an echo actor, 1 caller (protoactor-go actor package directly)",
			substrate: true,
			setup: func(*env) (*bench, error) {
				sys := newActorSystem()
				msg, reply := &ping{}, &pong{}
				echo := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
					if _, ok := c.Message().(*ping); ok {
						c.Respond(reply)
					}
				}))
				return &bench{multiplier: 1, run: func() error {
					res, err := sys.Root.RequestFuture(echo, msg, 10*time.Second).Result()
					if err == nil && res != reply {
						err = fmt.Errorf("unexpected reply %T", res)
					}
					return err
				}, cleanup: func() {
					_ = sys.Root.StopFuture(echo).Wait()
					sys.Shutdown()
				}}, nil
			},
		},
		{
			name: "substrate_protoactor_send", unit: "msgs/s", anchor: "(cross-process ~1.2 M/s)",
			body:      "10,000 local fire-and-forget Sends from the root context to one counting actor, until it has counted them",
			substrate: true,
			setup: func(*env) (*bench, error) {
				sys := newActorSystem()
				msg := &tick{}
				done := make(chan struct{}, 1)
				n := 0
				counter := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
					if _, ok := c.Message().(*tick); ok {
						if n++; n == sendBatch {
							n = 0
							done <- struct{}{}
						}
					}
				}))
				return &bench{multiplier: sendBatch, run: func() error {
					for i := 0; i < sendBatch; i++ {
						sys.Root.Send(counter, msg)
					}
					select {
					case <-done:
						return nil
					case <-time.After(30 * time.Second):
						return errors.New("counter actor did not receive the batch")
					}
				}, cleanup: func() {
					_ = sys.Root.StopFuture(counter).Wait()
					sys.Shutdown()
				}}, nil
			},
		},
		{
			name: "substrate_etcd_txn100_keys", unit: "keys/s", anchor: "~110-170 k keys/s (batched)",
			body:      "one Txn of 100 puts (128-byte values) at a time to an embedded etcd (fsync on, as the node's GCS), 1 caller",
			substrate: true,
			setup:     func(e *env) (*bench, error) { return etcdBench(e, 1) },
		},
		{
			name: "substrate_etcd_txn100x8_keys", unit: "keys/s", anchor: "~110-170 k keys/s (batched)",
			body:      "8 concurrent Txns of 100 puts each (the GCS writer's default in-flight count), same embedded etcd setup",
			substrate: true,
			setup:     func(e *env) (*bench, error) { return etcdBench(e, etcdConcurrent) },
		},
	}
}

// etcdBench starts an embedded etcd the way the node starts its GCS (through
// internal/base/gcs/etcdstore, the one package allowed to use etcd) and writes transactions of
// etcdTxnOps puts, callers at a time.
func etcdBench(e *env, callers int) (*bench, error) {
	dir, err := os.MkdirTemp("", "microbench-etcd-")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	srv, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{Dir: dir})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}
	store := srv.Client()
	value := make([]byte, 128)
	seq := 0
	txn := func(ops []gcs.Op, batch int) error {
		prefix := "bench/" + strconv.Itoa(batch) + "/"
		for i := range ops {
			ops[i] = gcs.Op{Kind: gcs.OpPut, Key: prefix + strconv.Itoa(i), Value: value}
		}
		_, _, err := store.Txn(ctx, nil, ops)
		return err
	}
	opsOf := make([][]gcs.Op, callers)
	for i := range opsOf {
		opsOf[i] = make([]gcs.Op, etcdTxnOps)
	}
	errs := make([]error, callers)
	return &bench{multiplier: float64(callers * etcdTxnOps), run: func() error {
		if callers == 1 {
			seq++
			return txn(opsOf[0], seq)
		}
		var wg sync.WaitGroup
		for c := 0; c < callers; c++ {
			seq++
			wg.Add(1)
			go func(c, batch int) {
				defer wg.Done()
				errs[c] = txn(opsOf[c], batch)
			}(c, seq)
		}
		wg.Wait()
		return errors.Join(errs...)
	}, cleanup: func() {
		if err := srv.Close(); err != nil {
			logf("embedded etcd: close: %v", err)
		}
		os.RemoveAll(dir)
	}}, nil
}
