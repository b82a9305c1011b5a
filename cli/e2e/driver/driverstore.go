package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	ray "github.com/ray-go/ray"
)

// driverStoreCheck (driverstore, TestDriverObjectStore and TestDriverUnreachable): a driver
// that puts 8 MiB (into its own object store: larger than the inline limit), runs one
// small task (so that its job has a worker process), prints "store ready NODE_ID JOB_ID"
// and holds the object until its stdin ends; then it runs one more task (at most 30 s) and
// prints "after: " and its error ("<nil>"), and returns (and shuts down).
func driverStoreCheck(ctx context.Context) error {
	obj, err := ray.Put(ctx, make([]byte, 8<<20))
	if err != nil {
		return err
	}
	if n, err := ray.Get(ctx, add.Remote(ctx, ray.V(1), ray.V(2))); err != nil || n != 3 {
		return fmt.Errorf("a task: %d, %w", n, err)
	}
	rc, err := ray.GetRuntimeContext(ctx)
	if err != nil {
		return err
	}
	fmt.Println("store ready", rc.NodeID, rc.JobID)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
	}
	runtime.KeepAlive(obj)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = ray.Get(cctx, add.Remote(cctx, ray.V(1), ray.V(2)))
	fmt.Println("after:", err)
	return nil
}
