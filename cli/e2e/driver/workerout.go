package main

import (
	"context"
	"fmt"
	"os"

	ray "github.com/ray-go/ray"
)

// shout prints its marker to its worker process's stdout and stderr (TestWorkerOutput:
// the driver shows both, prefixed).
var shout = ray.Task1("e2e.Shout", func(ctx context.Context, marker string) (int, error) {
	fmt.Println("workerout stdout", marker)
	fmt.Fprintln(os.Stderr, "workerout stderr", marker)
	return os.Getpid(), nil
})

// workerOutCheck (-check workerout) runs shout with a marker of its own and reports the marker and the pid
// of the worker process that printed it.
func workerOutCheck(ctx context.Context, out map[string]any) error {
	marker := fmt.Sprintf("mark-%d", os.Getpid())
	pid, err := ray.Get(ctx, shout.Remote(ctx, ray.V(marker)))
	out["marker"], out["pid"] = marker, pid
	return err
}
