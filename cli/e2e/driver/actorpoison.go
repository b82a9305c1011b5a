package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	ray "github.com/ray-go/ray"
)

// accelExit exits the worker process the actor runs in: a method that kills its host.
var accelExit = ray.Method0(accelClass, "Exit", func(*accel, context.Context) (int, error) {
	os.Exit(3)
	return 0, nil
})

// actorPoison is the actorpoison check (TestActorPoisonCall): on a cluster of three
// machines, 6 bystander actors (no restarts) spread over the job's worker processes, and an
// exactly-once victim (MaxRestarts(3)) takes a call, then three pipelined ones: Add(2),
// Exit (which exits its worker process), Add(3); then Add(4). The Exit call was running when
// its host died; the restart replays it once, which kills that host too; the next restart
// takes it as the cause, fails it, and runs on. It reports each call's outcome, the
// victim's state and how many bystanders died.
func actorPoison(ctx context.Context, out map[string]any) error {
	deadline := time.Now().Add(time.Minute)
	for {
		all, err := ray.Nodes(ctx)
		if err != nil {
			return err
		}
		if len(all.Alive()) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the job has %d nodes after a minute, the check needs 3", len(all.Alive()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	var bystanders []ray.ActorHandle[accel]
	for range 6 {
		h := accelClass.Remote(ctx)
		if _, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(1))); err != nil {
			return err
		}
		bystanders = append(bystanders, h)
	}
	victim := accelClass.Remote(ctx, ray.MaxRestarts(3))
	if _, err := ray.Get(ctx, accelAdd.Remote(ctx, victim, ray.V(1))); err != nil {
		return err
	}
	a2 := accelAdd.Remote(ctx, victim, ray.V(2))
	crash := accelExit.Remote(ctx, victim)
	a3 := accelAdd.Remote(ctx, victim, ray.V(3))
	gctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	res := map[string]any{}
	outcome := func(name string, r ray.ObjectRef[int]) {
		v, err := ray.Get(gctx, r)
		if err != nil {
			res[name+"_err"] = err.Error()
			res[name+"_died"] = errors.Is(err, ray.ErrActorDied)
			return
		}
		res[name] = v
	}
	outcome("add2", a2)
	outcome("exit", crash)
	outcome("add3", a3)
	outcome("add4", accelAdd.Remote(ctx, victim, ray.V(4)))
	st, err := ray.GetActorState(ctx, victim)
	if err != nil {
		return err
	}
	res["phase"], res["restarts"], res["detail"] = st.Phase, st.Restarts, st.Detail
	dead := 0
	for _, h := range bystanders {
		s, err := ray.GetActorState(ctx, h)
		if err != nil {
			return err
		}
		if s.Phase == ray.ActorDead {
			dead++
		}
	}
	res["bystanders_dead"] = dead
	out["actorpoison"] = res
	return nil
}
