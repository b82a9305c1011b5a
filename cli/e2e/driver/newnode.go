package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	ray "github.com/ray-go/ray"
)

// newNodeCheck (newnode, TestTaskForAMachineJustStarted): prints "newnode ready" once
// its runtime is up; on a stdin line (sent right after `rayctl start` of a machine that
// has the resource "fresh" returned) it submits a task needing fresh=1 at once and prints
// "newnode ok" when its result comes within a minute, else "newnode failed: ...". The
// machine's worker process of this job registers a moment after its agent started: the
// task waits for it, as Ray keeps a task pending until a node can run it.
func newNodeCheck(ctx context.Context) error {
	fmt.Println("newnode ready")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return nil
	}
	gctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	v, err := ray.Get(gctx, add.Options(ray.Resources(map[string]float64{"fresh": 1})).Remote(ctx, ray.V(40), ray.V(2)))
	switch {
	case err != nil:
		fmt.Printf("newnode failed: %v\n", err)
	case v != 42:
		fmt.Printf("newnode failed: 40+2 = %d\n", v)
	default:
		fmt.Println("newnode ok")
	}
	for in.Scan() {
	}
	return nil
}
