package main

import (
	"context"
	"fmt"
	"os"
	"time"

	ray "github.com/ray-go/ray"
)

// jobEndCheck is for TestJobStopKeepsTasks and TestExitedDriverListedDead (run by rayctl
// job submit): three e2e.Add tasks, then "jobstop ready" and a long e2e.Busy until the
// job is stopped (jobstop), or an exit with status 3 without ray.Shutdown (exit3). Neither
// handles a signal.
func jobEndCheck(ctx context.Context, check string) error {
	for i := range 3 {
		if _, err := ray.Get(ctx, add.Remote(ctx, ray.V(i), ray.V(1))); err != nil {
			return err
		}
	}
	if check == "exit3" {
		fmt.Println("exit3 exiting")
		os.Exit(3)
	}
	fmt.Println("jobstop ready")
	_, err := ray.Get(ctx, busy.Remote(ctx, ray.V(10*time.Minute)))
	return err
}
