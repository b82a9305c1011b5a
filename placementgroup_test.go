package ray

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
)

// notReadyWithin reports whether r is still not ready after d (the resources it needs are
// held by something else).
func notReadyWithin[T any](t *testing.T, ctx context.Context, r ObjectRef[T], d time.Duration) bool {
	t.Helper()
	ready, _, err := Wait(ctx, []ObjectRef[T]{r}, Timeout(d))
	if err != nil {
		t.Fatal(err)
	}
	return len(ready) == 0
}

func cpusFree(t *testing.T, ctx context.Context, want float64) {
	t.Helper()
	eventually.True(t, 10e9, "CPUs free", func() bool {
		avail, err := AvailableResources(ctx)
		return err == nil && avail["CPU"] == want
	})
}

// TestPlacementGroup (local mode, 4 CPUs): a group reserves its bundles' CPUs, which only
// its tasks use; a task in a bundle runs with the bundle's resources and one larger than
// its bundle fails; a task submitted before its group is placed waits for it; Remove gives
// the CPUs back and fails the tasks still waiting for the group.
func TestPlacementGroup(t *testing.T) {
	ctx := timeout(t)
	cpusFree(t, ctx, 4)
	pg, err := PlacementGroup(ctx, []Bundle{{"CPU": 1}, {"CPU": 2}}, StrategyPack)
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if nodes := pg.BundleNodes(); len(nodes) != 2 || nodes[0] != nodes[1] || nodes[0] == "" {
		t.Fatalf("bundle nodes %v: want both on the one node", nodes)
	}
	cpusFree(t, ctx, 1) // 3 of 4 reserved

	// In the bundles: a 2-CPU task in bundle 1 and a 1-CPU task in any bundle run at once
	// (3 CPUs, while the node has only 1 outside the group).
	gate := uniqueName(t)
	a := blockUntil.Options(PlacementGroupBundle(pg, 1), NumCPUs(2)).Remote(ctx, V(gate+"/a"))
	b := blockUntil.Options(PlacementGroupBundle(pg, -1), NumCPUs(1)).Remote(ctx, V(gate+"/b"))
	// Outside: a 1.5-CPU task cannot run while the group holds 3 of the 4 CPUs. (A shape no
	// other test uses: the lease policy remembers how long a shape's tasks ran.)
	outside := blockUntil.Options(NumCPUs(1.5)).Remote(ctx, V(gate+"/out"))
	eventually.True(t, 10e9, "both group tasks running", func() bool {
		in := mustGet(t, ctx, lookAround.Options(NumCPUs(0)).Remote(ctx))
		return in.Avail["CPU_group_"+pg.ID()] == 0
	})
	if !notReadyWithin(t, ctx, outside, 300*time.Millisecond) {
		t.Fatal("a 1.5-CPU task ran although the group holds 3 of the node's 4 CPUs")
	}
	close(gateOf(gate + "/a"))
	close(gateOf(gate + "/b"))
	if mustGet(t, ctx, a) != gate+"/a" || mustGet(t, ctx, b) != gate+"/b" {
		t.Fatal("the group's tasks answered wrong")
	}

	// A task larger than its bundle fails and says so.
	_, err = Get(ctx, lookAround.Options(PlacementGroupBundle(pg, 0), NumCPUs(2)).Remote(ctx))
	if err == nil || !strings.Contains(err.Error(), "more than bundle 0") {
		t.Fatalf("a 2-CPU task in a 1-CPU bundle: %v", err)
	}
	_, err = Get(ctx, lookAround.Options(PlacementGroupBundle(pg, 5)).Remote(ctx))
	if err == nil || !strings.Contains(err.Error(), "bundles 0 to 1") {
		t.Fatalf("a task in bundle 5 of 2: %v", err)
	}

	// Remove: the CPUs come back, the waiting task outside runs.
	if err := pg.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	close(gateOf(gate + "/out"))
	if mustGet(t, ctx, outside) != gate+"/out" {
		t.Fatal("the task outside the group answered wrong")
	}
	cpusFree(t, ctx, 4)
	avail, _ := AvailableResources(ctx)
	for name := range avail {
		if strings.Contains(name, "_group_") || strings.HasPrefix(name, "bundle") {
			t.Fatalf("after Remove the node still has %s: %v", name, avail)
		}
	}
	// A task in a removed group fails with ErrPlacementGroupRemoved.
	_, err = Get(ctx, lookAround.Options(PlacementGroupBundle(pg, 0)).Remote(ctx))
	if !errors.Is(err, ErrPlacementGroupRemoved) {
		t.Fatalf("a task in a removed group: %v", err)
	}
	if err := pg.Remove(ctx); err != nil {
		t.Fatalf("removing twice: %v", err)
	}
}

// TestPlacementGroupWaits: a group that does not fit now waits (Ready's error says why)
// and its tasks wait with it; when the resources are freed it is placed and they run. One
// that can never fit says why too, and Remove fails its waiting tasks.
func TestPlacementGroupWaits(t *testing.T) {
	ctx := timeout(t)
	cpusFree(t, ctx, 4)
	gate := uniqueName(t)
	hog := blockUntil.Options(NumCPUs(3)).Remote(ctx, V(gate))
	cpusFree(t, ctx, 1)
	pg, err := PlacementGroup(ctx, []Bundle{{"CPU": 2}}, StrategyStrictPack)
	if err != nil {
		t.Fatal(err)
	}
	in := lookAround.Options(PlacementGroupBundle(pg, 0), NumCPUs(2)).Remote(ctx)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = pg.Ready(short)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("Ready of a group that does not fit now: %v", err)
	}
	if !notReadyWithin(t, ctx, in, 100*time.Millisecond) {
		t.Fatal("a task ran in a group that is not placed")
	}
	close(gateOf(gate))
	mustGet(t, ctx, hog)
	if err := pg.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if v := mustGet(t, ctx, in); v.Ctx.NodeID == "" {
		t.Fatalf("the task in the group: %+v", v)
	}
	if err := pg.Remove(ctx); err != nil {
		t.Fatal(err)
	}

	// A group that waits for room, removed: the task waiting for it fails.
	hog = blockUntil.Options(NumCPUs(3)).Remote(ctx, V(gate+"/again"))
	cpusFree(t, ctx, 1)
	gone, err := PlacementGroup(ctx, []Bundle{{"CPU": 2}}, StrategyPack)
	if err != nil {
		t.Fatal(err)
	}
	waiting := lookAround.Options(PlacementGroupBundle(gone, 0)).Remote(ctx)
	if !notReadyWithin(t, ctx, waiting, 300*time.Millisecond) {
		t.Fatal("a task ran in a group that is not placed")
	}
	if err := gone.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(ctx, waiting); !errors.Is(err, ErrPlacementGroupRemoved) {
		t.Fatalf("a task waiting for a group that was removed: %v", err)
	}
	if err := gone.Ready(ctx); !errors.Is(err, ErrPlacementGroupRemoved) {
		t.Fatalf("Ready of a group removed before it was placed: %v", err)
	}
	close(gateOf(gate + "/again"))
	mustGet(t, ctx, hog)

	// A group no node can hold waits (Ready says why), but its task fails at once, with
	// ErrInfeasible and the group's reason (TestPlacementGroupInfeasible).
	never, err := PlacementGroup(ctx, []Bundle{{"CPU": 3}, {"CPU": 3}}, StrategyStrictPack)
	if err != nil {
		t.Fatal(err)
	}
	doomed := lookAround.Options(PlacementGroupBundle(never, 0)).Remote(ctx)
	short, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
	err = never.Ready(short)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "STRICT_PACK needs one node") {
		t.Fatalf("Ready of a group no node can hold: %v", err)
	}
	if _, err := Get(ctx, doomed); !errors.Is(err, ErrInfeasible) || !strings.Contains(err.Error(), "STRICT_PACK needs one node") {
		t.Fatalf("a task in a group no node can hold: %v, want ErrInfeasible saying why", err)
	}
	if err := never.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	cpusFree(t, ctx, 4)
}

// TestPlacementGroupInfeasible: a task in a group that no node of the cluster can hold
// fails promptly, with ErrInfeasible and the group's reason ("Submission errors never
// hang"), not with the caller's deadline; the state API lists it FAILED with that reason.
// The group stays pending, as Ray's does (nodes that can hold it may join).
func TestPlacementGroupInfeasible(t *testing.T) {
	ctx := timeout(t)
	pg, err := PlacementGroup(ctx, []Bundle{{"CPU": 100}}, StrategyPack)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Remove(ctx)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = pg.Ready(short)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "CPU=100") {
		t.Fatalf("Ready of a group needing 100 CPUs: %v", err)
	}
	for _, submitted := range []string{"after Ready's wait", "at once"} {
		if submitted == "at once" { // before the group's first placement attempt, maybe
			pg2, err := PlacementGroup(ctx, []Bundle{{"CPU": 100}}, StrategyPack)
			if err != nil {
				t.Fatal(err)
			}
			defer pg2.Remove(ctx)
			pg = pg2
		}
		r := lookAround.Options(PlacementGroupBundle(pg, 0), NumCPUs(1)).Remote(ctx)
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = Get(gctx, r)
		cancel()
		if !errors.Is(err, ErrInfeasible) {
			t.Fatalf("a task in a group needing 100 CPUs, submitted %s: %v, want ErrInfeasible", submitted, err)
		}
		for _, want := range []string{pg.ID(), "CPU=100", "can never be placed"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error %q does not say %q", err, want)
			}
		}
		if n := strings.Count(err.Error(), ErrInfeasible.Error()); n != 1 {
			t.Errorf("the error %q says %q %d times, want once", err, ErrInfeasible, n)
		}
		t.Log(err)
	}
	failed, _, err := ListTasks(ctx, TaskFilter{State: TaskFailed, Function: lookAround.Name()})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ti := range failed {
		found = found || (ti.ErrorType == "INFEASIBLE" && strings.Contains(ti.Error, pg.ID()))
	}
	if !found {
		t.Errorf("ListTasks does not list the task as FAILED (INFEASIBLE) for its group: %+v", failed)
	}
	short, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
	err = pg.Ready(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the group after its task failed: %v, want still pending", err)
	}
}

// TestPlacementGroupBadInput: what cannot work fails at once and says why.
func TestPlacementGroupBadInput(t *testing.T) {
	ctx := timeout(t)
	for _, tc := range []struct {
		bundles  []Bundle
		strategy PlacementStrategy
		want     string
	}{
		{[]Bundle{{"CPU": 1}}, "pack", "unknown placement strategy"},
		{nil, StrategyPack, "at least one bundle"},
		{[]Bundle{{"CPU": 1}, {}}, StrategyPack, "bundle 1 asks for no resources"},
		{[]Bundle{{"CPU": -1}}, StrategyPack, "bundle 0"},
	} {
		if _, err := PlacementGroup(ctx, tc.bundles, tc.strategy); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PlacementGroup(%v, %q): %v; want an error containing %q", tc.bundles, tc.strategy, err, tc.want)
		}
	}
	if _, err := PlacementGroup(context.Background(), []Bundle{{"CPU": 1}}, StrategyPack); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("without Init: %v", err)
	}
	// (A nil group: TestPlacementGroupBundleErrors.)
}

// TestActorInPlacementGroup: an actor in a bundle holds the bundle's CPUs, not the node's;
// one larger than its bundle, or in a bundle that does not exist, fails at once.
func TestActorInPlacementGroup(t *testing.T) {
	ctx := timeout(t)
	cpusFree(t, ctx, 4)
	pg, err := PlacementGroup(ctx, []Bundle{{"CPU": 1}, {"CPU": 2}}, StrategyPack)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Remove(context.Background())
	// Created before the group is ready: the actor waits for it.
	h := accountClass.Remote(ctx, V("pg"), NumCPUs(2), PlacementGroupBundle(pg, 1), AtMostOnce())
	if v := mustGet(t, ctx, deposit.Remote(ctx, h, V(int64(7)))); v != 7 {
		t.Fatalf("deposit: %d", v)
	}
	st, err := GetActorState(ctx, h)
	if err != nil || st.Node != pg.BundleNodes()[1] {
		t.Fatalf("actor state %+v, %v: want it on bundle 1's node %s", st, err, pg.BundleNodes()[1])
	}
	eventually.True(t, 10e9, "the actor holds bundle 1's CPUs and the node's free CPU is the one outside the group", func() bool {
		avail, err := AvailableResources(ctx)
		return err == nil && avail["CPU"] == 1 && avail["CPU_group_1_"+pg.ID()] == 0 && avail["CPU_group_0_"+pg.ID()] == 1
	})
	big := accountClass.Remote(ctx, V("big"), NumCPUs(2), PlacementGroupBundle(pg, 0), AtMostOnce())
	if err := big.Err(); err == nil || !strings.Contains(err.Error(), "more than bundle 0") {
		t.Fatalf("an actor larger than its bundle: %v", big.Err())
	}
	if err := Kill(ctx, h, true); err != nil {
		t.Fatal(err)
	}
	if err := pg.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	cpusFree(t, ctx, 4)
}

// TestRemovePlacementGroupEndsItsWork: removing a group ends what runs in it, as Ray's
// remove_placement_group does: a task in it is cancelled (a running one's ctx ends; its
// Get reports ErrCancelled) and an actor created in it is killed for good (ErrActorDied); the
// group's CPUs come back.
func TestRemovePlacementGroupEndsItsWork(t *testing.T) {
	ctx := timeout(t)
	cpusFree(t, ctx, 4)
	pg, err := PlacementGroup(ctx, []Bundle{{"CPU": 2}}, StrategyPack)
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	gate := uniqueName(t) // never opened: the task runs until its ctx ends
	running := blockUntil.Options(PlacementGroupBundle(pg, 0), NumCPUs(1)).Remote(ctx, V(gate))
	h := clockClass.Remote(ctx, PlacementGroupBundle(pg, 0), NumCPUs(1), AtMostOnce())
	if _, err := Get(ctx, clockTick.Remote(ctx, h)); err != nil {
		t.Fatal(err)
	}
	// (Running or still queued, the task is cancelled: a queued one never runs.)
	if err := pg.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(ctx, running); !errors.Is(err, ErrCancelled) {
		t.Fatalf("the group's running task after Remove: %v, want ErrCancelled", err)
	}
	eventually.True(t, 10e9, "the group's actor dead", func() bool {
		_, err := Get(ctx, clockTick.Remote(ctx, h))
		return errors.Is(err, ErrActorDied)
	})
	if _, err := Get(ctx, clockTick.Remote(ctx, h)); !errors.Is(err, ErrPlacementGroupRemoved) {
		t.Fatalf("a call of the removed group's actor: %v, want ErrPlacementGroupRemoved too", err)
	}
	cpusFree(t, ctx, 4)
}
