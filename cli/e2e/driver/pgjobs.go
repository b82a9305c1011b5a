package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	ray "github.com/ray-go/ray"
)

// pgJobsCheck is a placement group used across jobs:
//   - pg-holder creates a group of one bundle {CPU: 0.5}, prints "pg ready ID JOB" once it
//     is placed, and removes it at the end of its stdin.
//   - pg-other (another job) gets that group (E2E_PG) with GetPlacementGroup and puts a
//     task and an actor in it: out["task_err"] and out["actor_err"] are their errors ("" if
//     none), out["task_job"] the job the task ran in, out["job"] its own.
func pgJobsCheck(ctx context.Context, check string, out map[string]any) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rc, err := ray.GetRuntimeContext(ctx)
	if err != nil {
		return err
	}
	switch check {
	case "pg-holder":
		pg, err := ray.PlacementGroup(cctx, []ray.Bundle{{"CPU": 0.5}}, ray.StrategyStrictPack)
		if err != nil {
			return err
		}
		if err := pg.Ready(cctx); err != nil {
			return err
		}
		fmt.Println("pg ready", pg.ID(), rc.JobID)
		for sc := bufio.NewScanner(os.Stdin); sc.Scan(); {
		}
		return pg.Remove(cctx)
	case "pg-other":
		out["job"] = rc.JobID
		pg, err := ray.GetPlacementGroup(cctx, os.Getenv("E2E_PG"))
		if err != nil {
			return err
		}
		in := ray.PlacementGroupBundle(pg, 0)
		job, err := ray.Get(cctx, jobOf.Options(in, ray.NumCPUs(0.1)).Remote(cctx))
		out["task_job"], out["task_err"] = job, errString(err)
		h := accelClass.Remote(cctx, in, ray.NumCPUs(0.1))
		out["actor_err"] = errString(h.Err())
		if h.Err() == nil {
			actx, cancel := context.WithTimeout(cctx, 20*time.Second)
			defer cancel()
			_, err := ray.Get(actx, accelAdd.Remote(actx, h, ray.V(1)))
			out["actor_call_err"] = errString(err)
		}
		return nil
	}
	return fmt.Errorf("unknown check %q", check)
}

var jobOf = ray.Task0("e2e.JobOf", func(ctx context.Context) (string, error) {
	rc, err := ray.GetRuntimeContext(ctx)
	if err != nil {
		return "", err
	}
	return rc.JobID, nil
})

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
