package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	ray "github.com/ray-go/ray"
)

// detachedCheck is one job of the detached-actor scenario (TestDetachedActor):
//
//   - detached-a creates the detached actor "det" (namespace "e2e", MaxRestarts 3) and a
//     non-detached named actor "nondet", adds 1..5 to det (15) and 7 to nondet, reports
//     det's node and that node's process, and ends.
//   - detached-b gets det, adds 100 to it (115 if job A's state is there), reports whether
//     nondet is still found and where det runs, then kills det for good.
//   - detached-c reports what GetActor says of det.
//   - detached-killed creates the detached actor "detk" (MaxRestarts 3), adds 1..5 to it,
//     prints "detached ready" and waits to be killed; detached-b with -actor detk then
//     uses it from another job.
//
// actorName is detached-b's actor (flag -actor).
var actorName = "det"

// Every call has a deadline, so a hang is reported as an error, not a stuck driver.
func detachedCheck(ctx context.Context, check string, out map[string]any) error {
	rep := map[string]any{}
	out["detached"] = rep
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	name := actorName
	switch check {
	case "detached-a":
		det := accelClass.Remote(ctx, ray.Name("det"), ray.Namespace("e2e"), ray.Detached(), ray.MaxRestarts(3))
		nd := accelClass.Remote(ctx, ray.Name("nondet"), ray.Namespace("e2e"))
		sum := 0
		for i := 1; i <= 5; i++ {
			v, err := ray.Get(cctx, accelAdd.Remote(cctx, det, ray.V(i)))
			if err != nil {
				return fmt.Errorf("detached actor call %d: %w", i, err)
			}
			sum = v
		}
		v, err := ray.Get(cctx, accelAdd.Remote(cctx, nd, ray.V(7)))
		if err != nil {
			return fmt.Errorf("non-detached actor call: %w", err)
		}
		where, err := ray.Get(cctx, accelWhere.Remote(cctx, det))
		if err != nil {
			return err
		}
		rep["sum"], rep["nondet"], rep["node"], rep["id"] = sum, v, where, det.ID()
		nodes, err := ray.Nodes(ctx)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if n.ID == where {
				rep["pid"] = n.PID
			}
		}
		runtime.KeepAlive(nd)
	case "detached-b":
		if _, err := ray.GetActor(cctx, accelClass, "nondet", "e2e"); err != nil {
			rep["nondet_err"] = err.Error()
		}
		h, err := ray.GetActor(cctx, accelClass, name, "e2e")
		if err != nil {
			return fmt.Errorf("GetActor %s: %w", name, err)
		}
		v, err := ray.Get(cctx, accelAdd.Remote(cctx, h, ray.V(100)))
		if err != nil {
			return fmt.Errorf("detached actor call from job B: %w", err)
		}
		rep["sum"] = v
		if rep["node"], err = ray.Get(cctx, accelWhere.Remote(cctx, h)); err != nil {
			return err
		}
		if err := ray.Kill(cctx, h, true); err != nil {
			return fmt.Errorf("kill %s: %w", name, err)
		}
	case "detached-killed":
		det := accelClass.Remote(ctx, ray.Name("detk"), ray.Namespace("e2e"), ray.Detached(), ray.MaxRestarts(3))
		for i := 1; i <= 5; i++ {
			if _, err := ray.Get(cctx, accelAdd.Remote(cctx, det, ray.V(i))); err != nil {
				return fmt.Errorf("detached actor call %d: %w", i, err)
			}
		}
		fmt.Println("detached ready") // the test kills this driver now
		time.Sleep(10 * time.Minute)
	case "detached-c":
		if _, err := ray.GetActor(cctx, accelClass, "det", "e2e"); err != nil {
			rep["det_err"] = err.Error()
		}
	default:
		return fmt.Errorf("unknown check %q", check)
	}
	return nil
}
