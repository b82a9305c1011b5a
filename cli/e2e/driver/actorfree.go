package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	ray "github.com/ray-go/ray"
)

// The actorfree check (TestDeadActorFreesBorrowedObjects): an actor in the job's worker
// process keeps refs to three objects the driver Put and then released, so the actor's
// state holds the only refs (borrowed, in the worker process). The actor then ends: killed,
// its only handle dropped, or killed as an at-most-once actor. Once the worker process
// collects garbage (a task there runs runtime.GC, as a busy process would on its own) the
// dead instance, and with it its borrows, must be gone, and the driver frees the objects.
// Before the fix the grain of a stopped actor kept its instance for the life of the
// process: the objects stayed in the driver's store for good. It reports, per variant, how
// many seconds after an actor's death at most the objects were gone, or the error.
type freeKeeper struct{ Refs []ray.ObjectRef[[]byte] }

type freeRefs struct{ List []ray.ObjectRef[[]byte] }

var (
	freeKeeperClass = ray.Actor("e2e.FreeKeeper", func() *freeKeeper { return &freeKeeper{} })
	freeKeep        = ray.Method1(freeKeeperClass, "Keep", func(k *freeKeeper, ctx context.Context, r freeRefs) (string, error) {
		k.Refs = append(k.Refs, r.List...)
		return ray.NodeID(ctx)
	})
	// freeCollect collects garbage in the process it runs in, and says which.
	freeCollect = ray.Task0("e2e.FreeCollect", func(ctx context.Context) (string, error) {
		runtime.GC()
		runtime.GC()
		return ray.NodeID(ctx)
	})
)

func actorFreeCheck(ctx context.Context, out map[string]any) error {
	rep := map[string]any{}
	out["actorfree"] = rep
	self, err := ray.NodeID(ctx)
	if err != nil {
		return err
	}
	// Each variant three times: which stopped grains something still reaches varies from
	// run to run (a PID copy kept somewhere), so one actor may be freed by chance.
	for _, variant := range []string{"kill", "drop", "atmostonce"} {
		most := 0.0
		for round := 1; round <= 3; round++ {
			secs, err := actorFreeVariant(ctx, self, variant)
			if err != nil {
				return fmt.Errorf("%s, actor %d: %w", variant, round, err)
			}
			most = max(most, secs)
		}
		rep[variant+"_seconds"] = most
	}
	return nil
}

func actorFreeVariant(ctx context.Context, self, variant string) (float64, error) {
	var opts []ray.TaskOption
	if variant == "atmostonce" {
		opts = append(opts, ray.AtMostOnce())
	}
	ids, host, w, err := func() ([]string, string, ray.ActorHandle[freeKeeper], error) {
		h := freeKeeperClass.Remote(ctx, opts...)
		var refs freeRefs
		var ids []string
		for i := 0; i < 3; i++ {
			r, err := ray.Put(ctx, make([]byte, 1<<20+i))
			if err != nil {
				return nil, "", h, err
			}
			refs.List = append(refs.List, r)
			ids = append(ids, r.ID())
		}
		host, err := ray.Get(ctx, freeKeep.Remote(ctx, h, ray.V(refs)))
		if err != nil {
			return nil, "", h, err
		}
		for _, r := range refs.List {
			r.Release()
		}
		if variant != "drop" {
			return ids, host, h, ray.Kill(ctx, h, true)
		}
		// A copy that does not count (the handle's binary encoding): the only counting
		// handle goes with this function.
		b, err := h.MarshalBinary()
		if err != nil {
			return nil, "", h, err
		}
		var w ray.ActorHandle[freeKeeper]
		return ids, host, w, w.UnmarshalBinary(b)
	}()
	if err != nil {
		return 0, err
	}
	if host == self {
		return 0, fmt.Errorf("the actor ran in the driver (%s), not in a worker process", host)
	}
	held := func() (int, error) {
		n := 0
		for _, id := range ids {
			_, total, err := ray.ListObjects(ctx, ray.ObjectFilter{ObjectID: id})
			if err != nil {
				return 0, err
			}
			n += total
		}
		return n, nil
	}
	if n, err := held(); err != nil || n == 0 {
		return 0, fmt.Errorf("the objects the actor keeps: %d references listed, %v", n, err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		runtime.GC() // the driver's handle, for "drop"
		st, err := ray.GetActorState(ctx, w)
		if err != nil {
			return 0, err
		}
		if st.Phase == ray.ActorDead {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the actor is still %s 60 s after it was ended", st.Phase)
		}
	}
	start := time.Now()
	for deadline := start.Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		where, err := ray.Get(ctx, freeCollect.Remote(ctx))
		if err != nil {
			return 0, err
		}
		n, err := held()
		if err != nil {
			return 0, err
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("60 s after the actor died (garbage collected in %s, the actor ran in %s) %d references to the objects it kept are still listed: its dead instance keeps them", where, host, n)
		}
	}
	return time.Since(start).Seconds(), nil
}
