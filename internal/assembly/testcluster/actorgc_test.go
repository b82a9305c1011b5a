// Named to run before failover_test.go (file order), which stops nodes.
package testcluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/ids"
)

// Actor lifetimes across runtimes: a non-detached actor lives while a handle to it lives in
// any node's runtime, and ends when the last one is gone.

type gcCounter struct{ N int }

type gcHolder struct{ H ray.ActorHandle[gcCounter] }

var (
	gcCounterClass = ray.Actor("testcluster.GCCounter", func() *gcCounter { return &gcCounter{} })
	gcCounterAdd   = ray.Method1(gcCounterClass, "Add", func(c *gcCounter, _ context.Context, n int) (int, error) { c.N += n; return c.N, nil })

	gcHolderClass = ray.Actor("testcluster.GCHolder", func() *gcHolder { return &gcHolder{} })
	gcHolderHold  = ray.Method1(gcHolderClass, "Hold", func(h *gcHolder, _ context.Context, c ray.ActorHandle[gcCounter]) (bool, error) {
		h.H = c
		return true, nil
	})
	gcHolderAdd = ray.Method1(gcHolderClass, "Add", func(h *gcHolder, ctx context.Context, n int) (int, error) {
		return ray.Get(ctx, gcCounterAdd.Remote(ctx, h.H, ray.V(n)))
	})
	gcHolderDrop = ray.Method0(gcHolderClass, "Drop", func(h *gcHolder, _ context.Context) (bool, error) {
		h.H = ray.ActorHandle[gcCounter]{}
		return true, nil
	})
	// gcMake creates a counter where it runs and returns its handle.
	gcMake = ray.Task0("testcluster.GCMake", func(ctx context.Context) (ray.ActorHandle[gcCounter], error) {
		h := gcCounterClass.Remote(ctx)
		return h, h.Err()
	})
)

// weakHandle is a copy of h that calls the actor but does not keep it alive.
func weakHandle[T any](t *testing.T, h ray.ActorHandle[T]) ray.ActorHandle[T] {
	t.Helper()
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var w ray.ActorHandle[T]
	if err := w.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	return w
}

func handleObject(t *testing.T, h interface{ ID() string }) ids.ObjectID {
	t.Helper()
	a, err := ids.ParseActorID(h.ID())
	if err != nil {
		t.Fatal(err)
	}
	return ids.ActorHandleID(a)
}

// awaitOutOfScope waits until the actor w names is dead of having no handle left.
func awaitOutOfScope(t *testing.T, ctx context.Context, w ray.ActorHandle[gcCounter]) {
	t.Helper()
	eventually.AfterGC(t, 30*time.Second, "the actor to go out of scope", func() bool {
		st, err := ray.GetActorState(ctx, w)
		return err == nil && st.Phase == ray.ActorDead
	})
	st, err := ray.GetActorState(ctx, w)
	if err != nil || st.Detail != lifecycle.OutOfScopeDetail {
		t.Fatalf("dead actor: %+v, %v; want detail %q", st, err, lifecycle.OutOfScopeDetail)
	}
	if _, err := ray.Get(ctx, gcCounterAdd.Remote(ctx, w, ray.V(1))); !errors.Is(err, ray.ErrActorDied) {
		t.Fatalf("a call to an actor out of scope: %v, want ErrActorDied", err)
	}
}

func alivePhase(t *testing.T, ctx context.Context, w ray.ActorHandle[gcCounter]) {
	t.Helper()
	st, err := ray.GetActorState(ctx, w)
	if err != nil || st.Phase == ray.ActorDead {
		t.Fatalf("actor: %+v, %v; want it alive", st, err)
	}
}

func TestActorLifetimeAcrossNodes(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Node 1 has the "keeper" resource: the holder actor runs there, away from the owner.
	ownerIdx, other := ownerAwayFromKeeper(t)
	ctx := cluster.Context(base, ownerIdx)
	owner := cluster.Nodes[ownerIdx].Core

	t.Run("kept by an actor on another node", func(t *testing.T) {
		k := gcHolderClass.Remote(ctx, ray.Resources(map[string]float64{"keeper": 1}), ray.AtMostOnce())
		var w ray.ActorHandle[gcCounter]
		func() {
			h := gcCounterClass.Remote(ctx)
			w = weakHandle(t, h)
			if _, err := ray.Get(ctx, gcHolderHold.Remote(ctx, k, ray.V(h))); err != nil {
				t.Fatal(err)
			}
		}()
		hid := handleObject(t, w)
		eventually.AfterGC(t, 20*time.Second, "the owner's own handle to be gone, the holder's borrow left", func() bool {
			local, _, _ := owner.Refs().Counts(hid)
			return local == 1 && owner.Lenders(hid) == 1
		})
		alivePhase(t, ctx, w)
		if n, err := ray.Get(ctx, gcHolderAdd.Remote(ctx, k, ray.V(2))); err != nil || n != 2 {
			t.Fatalf("Add through the holder on another node: %d, %v", n, err)
		}
		if _, err := ray.Get(ctx, gcHolderDrop.Remote(ctx, k)); err != nil {
			t.Fatal(err)
		}
		awaitOutOfScope(t, ctx, w)
		if err := ray.Kill(ctx, k, true); err != nil { // gives the keeper resource back now
			t.Fatal(err)
		}
	})

	t.Run("returned by a task on another node", func(t *testing.T) {
		there := ray.NodeAffinity(string(cluster.Nodes[other].ID), false)
		maker := cluster.Nodes[other].Core
		var w ray.ActorHandle[gcCounter]
		func() {
			h, err := ray.Get(ctx, gcMake.Options(there).Remote(ctx))
			if err != nil {
				t.Fatal(err)
			}
			w = weakHandle(t, h)
			if n, err := ray.Get(ctx, gcCounterAdd.Remote(ctx, h, ray.V(3))); err != nil || n != 3 {
				t.Fatalf("Add through a returned handle: %d, %v", n, err)
			}
		}()
		hid := handleObject(t, w)
		if _, _, known := maker.Refs().Counts(hid); !known {
			t.Fatal("the task's runtime does not own the handle object of the actor it created")
		}
		awaitOutOfScope(t, ctx, w)
		eventually.AfterGC(t, 10*time.Second, "the maker to forget the handle object", func() bool {
			_, _, known := maker.Refs().Counts(hid)
			return !known && maker.Lenders(hid) == 0
		})
	})
}
