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
// An actor call made then fails with ray.ErrClusterLost too, not as the actor's death; a
// task's result read before stays ready for Wait and readable.
func clusterLostCheck(ctx context.Context, out map[string]any) error {
	first := add.Remote(ctx, ray.V(1), ray.V(2))
	if n, err := ray.Get(ctx, first); err != nil || n != 3 {
		return fmt.Errorf("a first task: %d, %w", n, err)
	}
	h := accelClass.Remote(ctx)
	if n, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(5))); err != nil || n != 5 {
		return fmt.Errorf("a first actor call: %d, %w", n, err)
	}
	napping := accelNap.Remote(ctx, h, ray.V(10*time.Minute))
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

	// The actor's calls: the one running (its host stopped with the cluster: it may fail
	// as the actor's death, which it is), and one made now, which fails as the loss.
	var actorErrs []string
	for i := range 2 {
		r := napping
		if i == 1 {
			r = accelAdd.Remote(ctx, h, ray.V(1)) // after the loss (the Gets above returned with it)
		}
		_, err := ray.Get(ctx, r)
		if err == nil {
			err = errors.New("<nil>")
		}
		actorErrs = append(actorErrs, err.Error())
		rep["later_call_lost"], rep["later_call_died"] = errors.Is(err, ray.ErrClusterLost), errors.Is(err, ray.ErrActorDied)
	}
	rep["actor_errors"] = actorErrs

	// What was ready stays ready: a Wait returns it, a Get reads it.
	ready, _, err := ray.Wait(ctx, []ray.ObjectRef[int]{refs[0], first}, ray.Timeout(time.Minute))
	switch {
	case err != nil:
		rep["ready_wait"] = err.Error()
	case len(ready) != 1 || ready[0] != first:
		rep["ready_wait"] = fmt.Sprintf("ready %v, want the first task's result", ready)
	default:
		rep["ready_wait"] = "ok"
	}
	if n, err := ray.Get(ctx, first); err != nil || n != 3 {
		rep["ready_get"] = fmt.Sprintf("%d, %v", n, err)
	} else {
		rep["ready_get"] = "ok"
	}
	return nil
}

// The clusterlost-actor check (TestClusterLostActorLivesOn): an actor on the node that
// has "accel" (not the head), a first call answered, a long call running, then "lost
// ready"; the test kills the head alone (its GCS with it), so the actor lives on while
// the driver takes its cluster for lost. It reports the errors of the running call and of
// a call made after, and whether they match ray.ErrClusterLost and ray.ErrActorDied.
func clusterLostActorCheck(ctx context.Context, out map[string]any) error {
	h := accelClass.Remote(ctx, ray.Resources(map[string]float64{"accel": 1}))
	first := accelAdd.Remote(ctx, h, ray.V(5))
	if n, err := ray.Get(ctx, first); err != nil || n != 5 {
		return fmt.Errorf("a first actor call: %d, %w", n, err)
	}
	napping := accelNap.Remote(ctx, h, ray.V(10*time.Minute))
	time.Sleep(time.Second) // it runs
	fmt.Println("lost ready")
	var errs []string
	var lost, died []bool
	note := func(r ray.ObjectRef[int]) {
		// The call's result (a *ray.TaskError), not only a Get's wait that the loss ended.
		var err error
		for range 200 {
			var te *ray.TaskError
			if _, err = ray.Get(ctx, r); err == nil || errors.As(err, &te) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err == nil {
			err = errors.New("<nil>")
		}
		errs = append(errs, err.Error())
		lost, died = append(lost, errors.Is(err, ray.ErrClusterLost)), append(died, errors.Is(err, ray.ErrActorDied))
	}
	note(napping)
	note(accelAdd.Remote(ctx, h, ray.V(1))) // after the loss: the first Get returned with it
	_, firstErr := ray.Get(ctx, first)      // ready before: still readable
	out["clusterlost_actor"] = map[string]any{"errors": errs, "lost": lost, "died": died, "first_ok": firstErr == nil}
	return nil
}
