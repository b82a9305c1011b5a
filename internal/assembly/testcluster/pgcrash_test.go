package testcluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/base/eventually"
)

// TestPlacementGroupCreatorsCrash: a placement group lives as long as its creator, and
// what is in it ends with it, whoever put it there (issue 20). Process A creates a group
// whose bundle is on node 0; process B creates a detached actor in it; then A and B both
// crash (killed: nothing removed, nothing handed over). No process that had a hand in the
// group is left, and the actor's host lives on: the cluster itself (the actor manager's
// leader) ends the actor, node 0's process cancels its own task in the group, the group's
// record goes with A's lease, and node 0 gets the bundle's resources back (a new group
// that needs them is placed). It crashes nodes 6 and 7, which no other test uses.
func TestPlacementGroupCreatorsCrash(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const creatorA, creatorB, host = nodeCreatorA, nodeCreatorB, nodeDriver
	for _, i := range []int{creatorA, creatorB, host} {
		if cluster.Stopped(i) {
			t.Fatalf("node %d must be running", i)
		}
	}
	actx := cluster.Context(base, creatorA)
	pg, err := ray.PlacementGroup(actx, []ray.Bundle{{"pgcrash": 1}}, ray.StrategyStrictPack)
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Ready(actx); err != nil {
		t.Fatal(err)
	}
	if n := pg.BundleNodes()[0]; cluster.Index(n) != host {
		t.Fatalf("the bundle is on node %d, want node %d (the only one with pgcrash)", cluster.Index(n), host)
	}
	bctx := cluster.Context(base, creatorB)
	foreign, err := ray.GetPlacementGroup(bctx, pg.ID())
	if err != nil {
		t.Fatal(err)
	}
	guest := ledgerClass.Remote(bctx, ray.V(time.Duration(0)), ray.PlacementGroupBundle(foreign, 0), ray.NumCPUs(0),
		ray.Detached(), ray.Name("pgcrash-guest"), ray.MaxRestarts(1))
	if guest.Err() != nil {
		t.Fatal(guest.Err())
	}
	if _, err := ray.Get(bctx, ledgerAdd.Remote(bctx, guest, ray.V(int64(4)))); err != nil {
		t.Fatal(err)
	}
	hctx := cluster.Context(base, host)
	if st, err := ray.GetActorState(hctx, guest); err != nil || st.Phase != "Alive" || cluster.Index(st.Node) != host {
		t.Fatalf("the actor in the group: %+v, %v; want it alive on node %d", st, err, host)
	}
	// A task that node 0's own process runs in the group: its process survives and
	// cancels it when it learns that the group's creator died.
	started := make(chan struct{})
	key := "crash-" + pg.ID()
	pgStarted.Store(key, started)
	defer pgStarted.Delete(key)
	hgroup, err := ray.GetPlacementGroup(hctx, pg.ID())
	if err != nil {
		t.Fatal(err)
	}
	running := pgHold.Options(ray.PlacementGroupBundle(hgroup, 0), ray.NumCPUs(0)).Remote(hctx, ray.V(key))
	select {
	case <-started:
	case <-base.Done():
		t.Fatal("the task in the bundle never started")
	}

	for _, i := range []int{creatorA, creatorB} {
		if err := cluster.CrashNode(base, i); err != nil {
			t.Fatal(err)
		}
	}
	eventually.True(t, 90e9, "the detached actor ended with its group, its creators crashed", func() bool {
		st, err := ray.GetActorState(hctx, guest)
		return err == nil && st.Phase == "Dead" && strings.Contains(st.Detail, "placement group "+pg.ID())
	})
	if _, err := ray.Get(hctx, ledgerState.Remote(hctx, guest)); !errors.Is(err, ray.ErrActorDied) {
		t.Fatalf("a call to the actor of a group whose creator crashed: %v, want ErrActorDied", err)
	}
	if got, err := ray.Get(hctx, running); !errors.Is(err, ray.ErrCancelled) {
		t.Fatalf("a task running in the group of a creator that crashed: %q, %v; want ErrCancelled", got, err)
	}
	eventually.True(t, 60e9, "the group's record gone with its creator's lease", func() bool {
		groups, err := clusterstate.ReadPlacementGroups(hctx, cluster.GCS)
		if err != nil {
			return false
		}
		for _, g := range groups {
			if g.ID == pg.ID() {
				return false
			}
		}
		return true
	})
	// The bundle's resources are back on node 0: a group that needs them is placed.
	again, err := ray.PlacementGroup(hctx, []ray.Bundle{{"pgcrash": 1}}, ray.StrategyStrictPack)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Remove(context.Background())
	rctx, rcancel := context.WithTimeout(hctx, 60*time.Second)
	defer rcancel()
	if err := again.Ready(rctx); err != nil {
		t.Fatalf("a group that needs the crashed creator's bundle's resources: %v", err)
	}
	if err := again.Remove(hctx); err != nil {
		t.Fatal(err)
	}
}
