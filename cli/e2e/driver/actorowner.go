package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"time"

	ray "github.com/ray-go/ray"
)

// The actorowner check (TestActorOwnerDeath): a task on one of the job's worker
// processes creates two named actors, a non-detached "od-nondet" and a detached "od-det"
// (both MaxRestarts 3, so a host's death alone restarts them), calls each once and
// returns their handles: that process owns them. The driver kills the process with
// SIGKILL. The non-detached actor dies with its owner (Ray's fate-sharing): its calls
// fail with ErrActorDied saying the owner died, its state says so, and GetActor answers
// at once with an error; the detached one lives on with its state, and the driver ends
// it with Kill.

type ownedActors struct {
	Nondet ray.ActorHandle[accel]
	Det    ray.ActorHandle[accel]
	Node   string
}

var makeActors = ray.Task0("e2e.MakeActors", func(ctx context.Context) (ownedActors, error) {
	node, err := ray.NodeID(ctx)
	if err != nil {
		return ownedActors{}, err
	}
	nd := accelClass.Remote(ctx, ray.Name("od-nondet"), ray.Namespace("e2e"), ray.MaxRestarts(3))
	det := accelClass.Remote(ctx, ray.Name("od-det"), ray.Namespace("e2e"), ray.Detached(), ray.MaxRestarts(3))
	for _, h := range []ray.ActorHandle[accel]{nd, det} {
		if _, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(1))); err != nil {
			return ownedActors{}, err
		}
	}
	return ownedActors{Nondet: nd, Det: det, Node: node}, nil
})

// Every call has a deadline, so a hang is reported as an error, not a stuck driver.
func actorOwnerCheck(ctx context.Context, nodes []ray.Node, out map[string]any) error {
	rep := map[string]any{}
	out["actorowner"] = rep
	victim := nodes[0]
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	a, err := ray.Get(cctx, makeActors.Options(ray.NodeAffinity(victim.ID, false)).Remote(cctx))
	cancel()
	if err != nil {
		return fmt.Errorf("makeActors: %w", err)
	}
	if a.Node != victim.ID {
		return fmt.Errorf("makeActors ran on %s, not on %s", a.Node, victim.ID)
	}
	rep["victim"] = victim.ID
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill worker process %d: %w", victim.PID, err)
	}
	start := time.Now()
	// Calls to the non-detached actor go on until it is ended (the membership says the
	// owner is gone after its lease lapses); bounded.
	var callErr error
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, callErr = ray.Get(cctx, accelAdd.Remote(cctx, a.Nondet, ray.V(1)))
		cancel()
		if callErr != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if callErr == nil {
		return errors.New("the non-detached actor still answers 90 s after its owner was killed")
	}
	rep["seconds"] = time.Since(start).Seconds()
	rep["call_err"] = callErr.Error()
	rep["call_actor_died"] = errors.Is(callErr, ray.ErrActorDied)
	cctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	st, err := ray.GetActorState(cctx, a.Nondet)
	if err != nil {
		return fmt.Errorf("GetActorState: %w", err)
	}
	rep["state"], rep["detail"] = st.Phase, st.Detail
	t0 := time.Now()
	_, err = ray.GetActor(cctx, accelClass, "od-nondet", "e2e")
	rep["getactor_seconds"] = time.Since(t0).Seconds()
	if err == nil {
		return errors.New("GetActor found the non-detached actor of a dead owner")
	}
	rep["getactor_err"] = err.Error()
	t0 = time.Now()
	det, err := ray.GetActor(cctx, accelClass, "od-det", "e2e")
	rep["getactor_det_seconds"] = time.Since(t0).Seconds()
	if err != nil {
		return fmt.Errorf("GetActor of the detached actor of a dead owner: %w", err)
	}
	v, err := ray.Get(cctx, accelAdd.Remote(cctx, det, ray.V(100)))
	if err != nil {
		return fmt.Errorf("a call to the detached actor of a dead owner: %w", err)
	}
	rep["det_sum"] = v
	// The handle the dead owner returned works too.
	if v, err = ray.Get(cctx, accelAdd.Remote(cctx, a.Det, ray.V(0))); err != nil || v != 101 {
		return fmt.Errorf("the returned handle of the detached actor: %d, %v", v, err)
	}
	if err := ray.Kill(cctx, det, true); err != nil {
		return fmt.Errorf("kill od-det: %w", err)
	}
	if strings.TrimSpace(rep["getactor_err"].(string)) == "" {
		return errors.New("GetActor's error says nothing")
	}
	return nil
}

// actorOwnerDriverCheck (actorowner-driver) creates the non-detached named actor
// "odd-nondet", calls it once, prints "owner ready" and waits to be killed: the driver is
// the owner that dies.
func actorOwnerDriverCheck(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	h := accelClass.Remote(ctx, ray.Name("odd-nondet"), ray.Namespace("e2e"))
	if _, err := ray.Get(cctx, accelAdd.Remote(cctx, h, ray.V(1))); err != nil {
		return err
	}
	fmt.Println("owner ready") // the test stops, continues, then kills this driver now
	time.Sleep(10 * time.Minute)
	runtime.KeepAlive(h) // the actor lives as long as its handle: this driver holds it
	return nil
}
