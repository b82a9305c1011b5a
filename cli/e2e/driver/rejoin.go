package main

import (
	"context"
	"fmt"
	"time"

	ray "github.com/ray-go/ray"
)

// rejoinCheck (TestAgentRejoinsRestartedHead) runs a task that needs the resource
// "rejoin", which only the agent that ran on through the head's restart offers, again
// and again until one lands there (or a minute passed), and reports where it ran, how
// many attempts that took and how long after start (the driver's start).
func rejoinCheck(ctx context.Context, start time.Time, out map[string]any) error {
	var last error
	attempts := 0
	for deadline := start.Add(time.Minute); time.Now().Before(deadline); {
		attempts++
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ref := busy.Options(ray.NumCPUs(0), ray.Resources(map[string]float64{"rejoin": 1})).Remote(cctx, ray.V(time.Duration(0)))
		node, err := ray.Get(cctx, ref)
		cancel()
		if err == nil {
			out["rejoin"] = map[string]any{"node": node, "attempts": attempts, "seconds": time.Since(start).Seconds()}
			return nil
		}
		last = err
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("no task needing the resource \"rejoin\" ran within a minute (%d attempts): %w", attempts, last)
}
