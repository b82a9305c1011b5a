package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	ray "github.com/ray-go/ray"
)

// subFailCheck submits two tasks that fail as they are submitted: a name no function is
// registered under (e2e.NoSuchFunction) and e2e.Add asking for 1000 CPUs. It prints
// "subfail ready" once both failed as they should, then waits to be killed (the state
// API's records of a driver's tasks live in the driver).
func subFailCheck(ctx context.Context) error {
	if _, err := ray.Get(ctx, ray.Call[int](ctx, "e2e.NoSuchFunction", nil)); !errors.Is(err, ray.ErrUnknownFunction) {
		return fmt.Errorf("calling e2e.NoSuchFunction: %v, want ErrUnknownFunction", err)
	}
	if _, err := ray.Get(ctx, add.Options(ray.NumCPUs(1000)).Remote(ctx, ray.V(1), ray.V(2))); !errors.Is(err, ray.ErrInfeasible) {
		return fmt.Errorf("e2e.Add of 1000 CPUs: %v, want ErrInfeasible", err)
	}
	fmt.Println("subfail ready")
	time.Sleep(10 * time.Minute)
	return nil
}
