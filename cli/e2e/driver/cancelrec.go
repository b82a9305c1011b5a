package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	ray "github.com/ray-go/ray"
)

var (
	// cancelLeaf runs until its ctx ends (at most ten minutes): a grandchild of
	// cancelParent, in a worker process of any node.
	cancelLeaf = ray.Task0("e2e.CancelLeaf", func(ctx context.Context) (string, error) {
		select {
		case <-time.After(10 * time.Minute):
			return "not cancelled", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	// cancelMid, on the node with "far", waits for its child cancelLeaf.
	cancelMid = ray.Task0("e2e.CancelMid", func(ctx context.Context) (string, error) {
		return ray.Get(ctx, cancelLeaf.Remote(ctx))
	})
	// cancelParent, on the node with "near", waits for its child cancelMid (on the node
	// with "far": another node, so another process owns the grandchild).
	cancelParent = ray.Task0("e2e.CancelParent", func(ctx context.Context) (string, error) {
		return ray.Get(ctx, cancelMid.Options(ray.Resources(map[string]float64{"far": 1})).Remote(ctx))
	})
)

// cancelRecCheck runs on a head with {"near":1} and a node with {"far":1}
// (TestCancelRecursiveAcrossNodes): cancelParent on the head, its child on the other
// node, its grandchild anywhere; once the grandchild runs, the driver cancels the
// parent and reports the error Get of it gave, the states of the child and the grandchild
// (polled until both are CANCELLED, at most a minute) and the available resources then.
// "errors" maps each of the three functions whose task has an error to that error (a
// FAILED task's state says nothing of why); the states stay bare states.
func cancelRecCheck(ctx context.Context, out map[string]any) error {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	total, err := ray.ClusterResources(cctx)
	if err != nil {
		return err
	}
	out["total"] = total
	errs := map[string]string{}
	out["errors"] = errs
	states := func() (map[string]string, map[string]string, error) {
		st, nodes := map[string]string{}, map[string]string{}
		for _, fn := range []string{"e2e.CancelParent", "e2e.CancelMid", "e2e.CancelLeaf"} {
			ts, _, err := ray.ListTasks(cctx, ray.TaskFilter{Function: fn})
			if err != nil {
				return nil, nil, err
			}
			if len(ts) > 0 {
				st[fn], nodes[fn] = ts[0].State, ts[0].Node
				if ts[0].Error != "" {
					errs[fn] = ts[0].Error
				} else {
					delete(errs, fn)
				}
			}
		}
		return st, nodes, nil
	}
	parent := cancelParent.Options(ray.Resources(map[string]float64{"near": 1})).Remote(cctx)
	for deadline := time.Now().Add(time.Minute); ; {
		st, nodes, err := states()
		if err != nil {
			return err
		}
		if st["e2e.CancelLeaf"] == ray.TaskRunning {
			out["nodes_running"] = nodes
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the grandchild did not run within a minute: %v (errors: %v)", st, errs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := ray.Cancel(cctx, parent); err != nil {
		return fmt.Errorf("ray.Cancel: %w", err)
	}
	_, err = ray.Get(cctx, parent)
	out["parent_cancelled"] = errors.Is(err, ray.ErrCancelled)
	out["parent_error"] = fmt.Sprint(err)
	start := time.Now()
	for deadline := start.Add(time.Minute); ; {
		st, _, err := states()
		if err != nil {
			return err
		}
		avail, err := ray.AvailableResources(cctx)
		if err != nil {
			return err
		}
		out["states"], out["available"] = st, avail
		if st["e2e.CancelMid"] == ray.TaskCancelled && st["e2e.CancelLeaf"] == ray.TaskCancelled &&
			avail["far"] == total["far"] && avail["CPU"] == total["CPU"] {
			break
		}
		if time.Now().After(deadline) {
			break // the test reports what it saw
		}
		time.Sleep(100 * time.Millisecond)
	}
	out["seconds"] = time.Since(start).Seconds()
	return nil
}
