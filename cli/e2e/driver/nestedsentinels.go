package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	ray "github.com/ray-go/ray"
)

// sentinels are the sentinel errors nestedSentinelsCheck reports matches of.
var sentinels = map[string]error{"object_lost": ray.ErrObjectLost, "actor_died": ray.ErrActorDied, "cancelled": ray.ErrCancelled,
	"infeasible": ray.ErrInfeasible, "too_large": ray.ErrObjectTooLarge, "pg_removed": ray.ErrPlacementGroupRemoved}

// quotaErr is an error type registered with ray.RegisterError: a task's error of this type
// comes back to the driver whole, across processes.
type quotaErr struct {
	User  string
	Limit int
}

func (e *quotaErr) Error() string { return fmt.Sprintf("%s is over the quota of %d", e.User, e.Limit) }

func init() { ray.RegisterError[*quotaErr]("e2e.quotaErr") }

var (
	// nestedFailure makes a nested failure in a worker process and returns the error its
	// Get gave: a call to an actor killed for good, a cancelled task, an object released.
	nestedFailure = ray.Task1("e2e.NestedFailure", func(ctx context.Context, how string) (int, error) {
		switch how {
		case "killed actor":
			h := accelClass.Remote(ctx)
			if _, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(1))); err != nil {
				return 0, fmt.Errorf("a call to the live actor: %v", err)
			}
			if err := ray.Kill(ctx, h, true); err != nil {
				return 0, fmt.Errorf("ray.Kill: %v", err)
			}
			return ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(1)))
		case "cancelled task":
			r := busy.Remote(ctx, ray.V(time.Minute))
			if err := ray.Cancel(ctx, r); err != nil {
				return 0, fmt.Errorf("ray.Cancel: %v", err)
			}
			_, err := ray.Get(ctx, r)
			return 0, err
		case "typed error":
			return 0, fmt.Errorf("charging: %w", &quotaErr{User: "ann", Limit: 10})
		case "released object":
			r, err := ray.Put(ctx, "gone soon")
			if err != nil {
				return 0, fmt.Errorf("ray.Put: %v", err)
			}
			r.Release()
			_, err = ray.Get(ctx, r)
			return 0, err
		}
		return 0, fmt.Errorf("no nested failure %q", how)
	})
	// nestedFailure2 returns nestedFailure's error, wrapped, a level up.
	nestedFailure2 = ray.Task1("e2e.NestedFailure2", func(ctx context.Context, how string) (int, error) {
		_, err := ray.Get(ctx, nestedFailure.Remote(ctx, ray.V(how)))
		return 0, fmt.Errorf("level 2: %w", err)
	})
)

// nestedSentinelsCheck runs each nested failure of nestedFailure two levels down (tasks in
// the job's worker processes) and reports, for each, the driver's error and which
// sentinels it matches (TestSentinelsThroughNestingAcrossProcesses).
func nestedSentinelsCheck(ctx context.Context, out map[string]any) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, how := range []string{"killed actor", "cancelled task", "released object"} {
		_, err := ray.Get(cctx, nestedFailure2.Remote(cctx, ray.V(how)))
		if err == nil {
			return fmt.Errorf("%s: no error", how)
		}
		var te *ray.TaskError
		matches := map[string]bool{}
		for name, s := range sentinels {
			matches[name] = errors.Is(err, s)
		}
		out[how] = map[string]any{"error": err.Error(), "task_error": errors.As(err, &te), "matches": matches}
	}
	// A registered error type, returned two levels down (wrapped at both levels).
	_, err := ray.Get(cctx, nestedFailure2.Remote(cctx, ray.V("typed error")))
	var qe *quotaErr
	if !errors.As(err, &qe) {
		return fmt.Errorf("typed error: errors.As(%v, *quotaErr) is false", err)
	}
	out["typed error"] = map[string]any{"error": err.Error(), "user": qe.User, "limit": qe.Limit}
	return nil
}
