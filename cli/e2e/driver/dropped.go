package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	ray "github.com/ray-go/ray"
)

// The dropped check (TestDroppedActorElsewhere) runs against a cluster of one node with
// one "accel": an actor needing it is dropped (no Kill) in one process while another
// process waits for "accel". The dropped handle is released only when a garbage
// collection in the process that dropped it finds it gone, and that process is not the
// one waiting:
//
//   - "driver's handle": the driver, with its own automatic collections off
//     (debug.SetGCPercent(-1), as a quiet program that collects every 2 minutes), drops
//     its actor; a task (in the node's worker process) creates another actor needing
//     "accel" and calls it.
//   - "worker's handle": a task keeps a handle it was given (a package variable of the
//     worker process); the driver drops its own, a second task forgets the kept one, and
//     the driver creates another actor needing "accel" and calls it.
//
// Each reports how long the second actor took to answer (seconds), or the error.
var (
	accelNeed = ray.Resources(map[string]float64{"accel": 1})

	// useNext creates an actor needing "accel", calls it and kills it: the wait is in
	// the worker process.
	useNext = ray.Task0("e2e.UseNext", func(ctx context.Context) (int, error) {
		h := accelClass.Remote(ctx, accelNeed, ray.AtMostOnce())
		n, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(5)))
		if kerr := ray.Kill(ctx, h, true); err == nil {
			err = kerr
		}
		return n, err
	})
	keepHandle = ray.Task1("e2e.KeepHandle", func(ctx context.Context, h ray.ActorHandle[accel]) (int, error) {
		keptMu.Lock()
		kept = append(kept, h)
		keptMu.Unlock()
		return ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(1)))
	})
	forgetHandles = ray.Task0("e2e.ForgetHandles", func(context.Context) (int, error) {
		keptMu.Lock()
		defer keptMu.Unlock()
		n := len(kept)
		kept = nil
		return n, nil
	})
)

var (
	keptMu sync.Mutex
	kept   []ray.ActorHandle[accel] // the worker process's, kept by keepHandle
)

func droppedCheck(ctx context.Context, out map[string]any) error {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	rep := map[string]any{}
	out["dropped"] = rep
	wait := 60 * time.Second

	// The driver's handle.
	if err := func() error {
		h := accelClass.Remote(ctx, accelNeed, ray.AtMostOnce())
		_, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(1)))
		return err
	}(); err != nil {
		return fmt.Errorf("the first actor: %w", err)
	}
	start := time.Now()
	c, cancel := context.WithTimeout(ctx, wait)
	n, err := ray.Get(c, useNext.Remote(c))
	cancel()
	if err != nil || n != 5 {
		return fmt.Errorf("the driver dropped its actor; a task's actor needing the same resource: %d, %w (after %v)", n, err, time.Since(start).Round(time.Millisecond))
	}
	rep["driver_seconds"] = time.Since(start).Seconds()

	// The worker process's handle.
	if err := func() error {
		h := accelClass.Remote(ctx, accelNeed, ray.AtMostOnce())
		_, err := ray.Get(ctx, keepHandle.Remote(ctx, ray.V(h)))
		return err
	}(); err != nil {
		return fmt.Errorf("the kept actor: %w", err)
	}
	if k, err := ray.Get(ctx, forgetHandles.Remote(ctx)); err != nil || k != 1 {
		return fmt.Errorf("the worker process forgot %d handles, %v; want 1 (one worker process)", k, err)
	}
	start = time.Now()
	c, cancel = context.WithTimeout(ctx, wait)
	defer cancel()
	h := accelClass.Remote(c, accelNeed, ray.AtMostOnce())
	if n, err := ray.Get(c, accelAdd.Remote(c, h, ray.V(7))); err != nil || n != 7 {
		return fmt.Errorf("a worker process dropped an actor; the driver's actor needing the same resource: %d, %w (after %v)", n, err, time.Since(start).Round(time.Millisecond))
	}
	rep["worker_seconds"] = time.Since(start).Seconds()
	return ray.Kill(ctx, h, true)
}
