package ray

import (
	"context"
	"maps"
	"testing"

	"github.com/ray-go/ray/internal/base/eventually"
)

type insideView struct {
	Ctx   RuntimeContext
	Avail map[string]float64
}

var lookAround = Task0("test.lookAround", func(ctx context.Context) (insideView, error) {
	rc, err := GetRuntimeContext(ctx)
	if err != nil {
		return insideView{}, err
	}
	avail, err := AvailableResources(ctx)
	return insideView{Ctx: rc, Avail: avail}, err
})

// TestClusterAndRuntimeContext: the cluster's resources are its node's (4 CPUs and one
// accel in this package's runtime); what is available drops by what a running task holds;
// a task's runtime context names its job, node, task and resources, a driver's no task.
func TestClusterAndRuntimeContext(t *testing.T) {
	ctx := timeout(t)
	total, err := ClusterResources(ctx)
	if err != nil || total["CPU"] != 4 || total["accel"] != 1 {
		t.Fatalf("ClusterResources = %v, %v; want CPU 4, accel 1", total, err)
	}
	eventually.True(t, 10e9, "every CPU free between tests", func() bool {
		avail, err := AvailableResources(ctx)
		return err == nil && avail["CPU"] == 4 && avail["accel"] == 1
	})
	driver, err := GetRuntimeContext(ctx)
	if err != nil || driver.TaskID != "" || driver.Resources != nil || driver.JobID == "" || driver.NodeID == "" {
		t.Fatalf("driver's runtime context %+v, %v", driver, err)
	}
	in := mustGet(t, ctx, lookAround.Options(NumCPUs(2)).Remote(ctx))
	if in.Ctx.TaskID == "" || in.Ctx.JobID != driver.JobID || in.Ctx.NodeID != driver.NodeID || in.Ctx.Resources["CPU"] != 2 {
		t.Fatalf("a task's runtime context %+v, want its ID, the driver's job and node, CPU 2", in.Ctx)
	}
	if in.Avail["CPU"] > 2 {
		t.Fatalf("inside a task holding 2 of 4 CPUs, %v CPUs available", in.Avail["CPU"])
	}
	if _, err := ClusterResources(context.Background()); err != ErrNotInitialized {
		t.Fatalf("ClusterResources without ray.Init: %v", err)
	}
}

type ctxActor struct{ Ctor RuntimeContext }

func (a *ctxActor) Look(ctx context.Context) ([2]RuntimeContext, error) {
	rc, err := GetRuntimeContext(ctx)
	return [2]RuntimeContext{a.Ctor, rc}, err
}

var (
	ctxActorClass = Actor0("test.ctxActor", func(ctx context.Context) (*ctxActor, error) {
		rc, err := GetRuntimeContext(ctx)
		return &ctxActor{Ctor: rc}, err
	})
	ctxActorLook = Method0(ctxActorClass, "Look", (*ctxActor).Look)
)

// TestRuntimeContextInActor: an actor's constructor and methods see the actor's ID in
// their runtime context (Ray's get_actor_id()), a method its call's task ID too; a task or
// a driver sees none.
func TestRuntimeContextInActor(t *testing.T) {
	ctx := timeout(t)
	h := ctxActorClass.Remote(ctx, AtMostOnce())
	got := mustGet(t, ctx, ctxActorLook.Remote(ctx, h))
	ctor, call := got[0], got[1]
	if ctor.ActorID != h.ID() || call.ActorID != h.ID() {
		t.Fatalf("actor %s: its constructor's runtime context names actor %q, its method's %q", h.ID(), ctor.ActorID, call.ActorID)
	}
	if call.TaskID == "" || call.JobID == "" {
		t.Fatalf("an actor call's runtime context %+v, want its task and job", call)
	}
	if in := mustGet(t, ctx, lookAround.Remote(ctx)); in.Ctx.ActorID != "" {
		t.Fatalf("a task's runtime context names actor %q", in.Ctx.ActorID)
	}
	if d, err := GetRuntimeContext(ctx); err != nil || d.ActorID != "" {
		t.Fatalf("a driver's runtime context: %+v, %v", d, err)
	}
	// Its resources are the actor's (Ray's get_assigned_resources() in an actor), in the
	// constructor and in a method.
	h = ctxActorClass.Remote(ctx, AtMostOnce(), NumCPUs(1), Resources(map[string]float64{"accel": 1}))
	got = mustGet(t, ctx, ctxActorLook.Remote(ctx, h))
	want := map[string]float64{"CPU": 1, "accel": 1}
	for i, rc := range got {
		if !maps.Equal(rc.Resources, want) {
			t.Errorf("runtime context %d (0: constructor, 1: method) of an actor with CPU 1, accel 1: resources %v, want %v", i, rc.Resources, want)
		}
	}
	if err := Kill(ctx, h, true); err != nil { // gives the node's only accel back
		t.Fatal(err)
	}
}
