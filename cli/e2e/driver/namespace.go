package main

import (
	"context"
	"fmt"
	"time"

	ray "github.com/ray-go/ray"
)

// nsLookup finds the actor named "counter" by name alone from a task (in the job's worker
// process) and answers its ID and the namespace the task runs in.
var nsLookup = ray.Task0("e2e.NSLookup", func(ctx context.Context) ([2]string, error) {
	h, err := ray.GetActor(ctx, accelClass, "counter")
	if err != nil {
		return [2]string{}, err
	}
	rc, err := ray.GetRuntimeContext(ctx)
	return [2]string{h.ID(), rc.Namespace}, err
})

// Flags of the namespace check.
var (
	nsOther string // -ns-other: also get and kill the "counter" of this namespace
	nsKill  bool   // -ns-kill: kill the "counter" this job found by name at the end
)

// namespaceCheck is one job of TestJobNamespaces: it reports its namespace, creates the
// detached actor "counter" without a namespace (reporting its ID, or why it could not),
// gets "counter" by name alone from the driver and from a task, gets and kills the
// "counter" of -ns-other if given, and kills its own with -ns-kill.
func namespaceCheck(ctx context.Context, out map[string]any) error {
	rep := map[string]any{}
	out["ns"] = rep
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	rc, err := ray.GetRuntimeContext(ctx)
	if err != nil {
		return err
	}
	rep["namespace"] = rc.Namespace
	h := accelClass.Remote(cctx, ray.Name("counter"), ray.Detached())
	if err := h.Err(); err != nil {
		rep["create_err"] = err.Error()
	} else {
		rep["id"] = h.ID()
		if _, err := ray.Get(cctx, accelAdd.Remote(cctx, h, ray.V(1))); err != nil {
			return fmt.Errorf("call the new actor: %w", err)
		}
	}
	g, err := ray.GetActor(cctx, accelClass, "counter")
	if err != nil {
		return fmt.Errorf("GetActor(counter): %w", err)
	}
	rep["found"] = g.ID()
	got, err := ray.Get(cctx, nsLookup.Remote(cctx))
	if err != nil {
		return fmt.Errorf("a task's GetActor(counter): %w", err)
	}
	rep["task_found"], rep["task_namespace"] = got[0], got[1]
	if nsOther != "" {
		o, err := ray.GetActor(cctx, accelClass, "counter", nsOther)
		if err != nil {
			return fmt.Errorf("GetActor(counter, %q): %w", nsOther, err)
		}
		rep["other_found"] = o.ID()
		if err := ray.Kill(cctx, o, true); err != nil {
			return err
		}
	}
	if nsKill {
		return ray.Kill(cctx, g, true)
	}
	return nil
}
