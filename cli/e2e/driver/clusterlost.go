package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	ray "github.com/ray-go/ray"
)

// The clusterlost check (TestClusterLost): six tasks that run for ten minutes on a
// cluster of two nodes of two CPUs, then "lost ready"; the test stops the whole cluster
// (both agents, the head's GCS with them). With RAY_GCS_RECONNECT_TIMEOUT set low, the
// driver takes its cluster for lost once the GCS has not answered that long after its
// lease lapsed: every Get fails with ray.ErrClusterLost, and so do a Wait and a task
// submitted after it. It reports each error and how long after "lost ready" they came.
func clusterLostCheck(ctx context.Context, out map[string]any) error {
	if n, err := ray.Get(ctx, add.Remote(ctx, ray.V(1), ray.V(2))); err != nil || n != 3 {
		return fmt.Errorf("a first task: %d, %w", n, err)
	}
	var refs []ray.ObjectRef[int]
	for i := range 6 {
		refs = append(refs, slowDouble.Remote(ctx, ray.V(i), ray.V(10*time.Minute)))
	}
	time.Sleep(time.Second) // the first four run, two wait
	fmt.Println("lost ready")
	start := time.Now()
	rep := map[string]any{}
	out["clusterlost"] = rep
	var errs []string
	lost := 0
	note := func(err error) {
		if err == nil {
			errs = append(errs, "<nil>")
			return
		}
		errs = append(errs, err.Error())
		if errors.Is(err, ray.ErrClusterLost) {
			lost++
		}
	}
	for _, r := range refs {
		_, err := ray.Get(ctx, r)
		note(err)
	}
	rep["seconds"] = time.Since(start).Seconds()
	_, err := ray.Get(ctx, add.Remote(ctx, ray.V(1), ray.V(2)))
	note(err)
	_, _, err = ray.Wait(ctx, []ray.ObjectRef[int]{slowDouble.Remote(ctx, ray.V(7), ray.V(time.Second))}, ray.Timeout(time.Minute))
	if err == nil {
		err = errors.New("ray.Wait returned no error")
	}
	note(err)
	rep["errors"], rep["lost"] = errs, lost
	return nil
}
