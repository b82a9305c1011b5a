package ray_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/ray-go/ray"
)

// A placement group reserves resources for a set of tasks (gang scheduling): here two
// bundles of one CPU on the one local node, each running a task.
func ExamplePlacementGroup() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(4))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	pg, err := ray.PlacementGroup(ctx, []ray.Bundle{{"CPU": 1}, {"CPU": 1}}, ray.StrategyPack)
	if err != nil {
		log.Fatal(err)
	}
	if err := pg.Ready(ctx); err != nil { // every bundle reserved
		log.Fatal(err)
	}
	self, _ := ray.NodeID(ctx)
	nodes := pg.BundleNodes()
	fmt.Println(len(pg.ID()) > 0, len(nodes), nodes[0] == self, pg.Bundles()[1]["CPU"])
	avail, _ := ray.AvailableResources(ctx)
	fmt.Println("CPUs outside the group:", avail["CPU"])

	var refs []ray.ObjectRef[string]
	for i := range nodes {
		refs = append(refs, WhereAmI.Options(ray.PlacementGroupBundle(pg, i)).Remote(ctx))
	}
	where, err := ray.GetAll(ctx, refs)
	fmt.Println(where[0] == nodes[0], where[1] == nodes[1], err)

	if err := pg.Remove(ctx); err != nil {
		log.Fatal(err)
	}
	for range 100 { // the node's scheduler takes the CPUs back in a moment
		if avail, _ = ray.AvailableResources(ctx); avail["CPU"] == 4 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("after Remove:", avail["CPU"])
	// Output:
	// true 2 true 1
	// CPUs outside the group: 2
	// true true <nil>
	// after Remove: 4
}

// A task in a group that no set of the cluster's nodes can hold fails at once with
// ErrInfeasible and the group's reason (the group itself stays pending, as in Ray: nodes
// that can hold it may join); a task in a removed group fails with ErrPlacementGroupRemoved.
func ExamplePlacementGroupBundle() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(1))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// STRICT_SPREAD over one node cannot be placed: the group waits, its task fails.
	pg, err := ray.PlacementGroup(ctx, []ray.Bundle{{"CPU": 0.5}, {"CPU": 0.5}}, ray.StrategyStrictSpread)
	if err != nil {
		log.Fatal(err)
	}
	_, err = ray.Get(ctx, WhereAmI.Options(ray.PlacementGroupBundle(pg, 0), ray.NumCPUs(0.5)).Remote(ctx))
	fmt.Println(errors.Is(err, ray.ErrInfeasible), strings.Contains(err.Error(), "STRICT_SPREAD needs 2 nodes"))
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	fmt.Println(pg.Ready(short) != nil)
	_ = pg.Remove(ctx)
	_, err = ray.Get(ctx, WhereAmI.Options(ray.PlacementGroupBundle(pg, 0), ray.NumCPUs(0.5)).Remote(ctx))
	fmt.Println(errors.Is(err, ray.ErrPlacementGroupRemoved))
	// Output:
	// true true
	// true
	// true
}

// inGroup runs in a bundle of a group and puts a child task into the same group.
var inGroup = ray.Task0("example.InGroup", func(ctx context.Context) (string, error) {
	pg, ok, err := ray.CurrentPlacementGroup(ctx)
	if err != nil || !ok {
		return "", fmt.Errorf("not in a group: %v", err)
	}
	return ray.Get(ctx, WhereAmI.Options(ray.PlacementGroupBundle(pg, 1), ray.NumCPUs(0.5)).Remote(ctx))
})

// A task running in a placement group finds it with CurrentPlacementGroup and places its
// children in it (in a cluster, from whichever process it runs in).
func ExampleCurrentPlacementGroup() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	pg, err := ray.PlacementGroup(ctx, []ray.Bundle{{"CPU": 0.5}, {"CPU": 0.5}}, ray.StrategyPack)
	if err != nil {
		log.Fatal(err)
	}
	defer pg.Remove(ctx)
	where, err := ray.Get(ctx, inGroup.Options(ray.PlacementGroupBundle(pg, 0), ray.NumCPUs(0.5)).Remote(ctx))
	fmt.Println(where == pg.BundleNodes()[1], err)
	_, ok, _ := ray.CurrentPlacementGroup(ctx) // a driver runs in no group
	fmt.Println(ok)
	// Output:
	// true <nil>
	// false
}

// GetPlacementGroup finds a group by its ID: one this process made, or, in a cluster, one
// another process of the job made (which still owns it: only it can remove it).
func ExampleGetPlacementGroup() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	pg, err := ray.PlacementGroup(ctx, []ray.Bundle{{"CPU": 1}}, ray.StrategyPack)
	if err != nil {
		log.Fatal(err)
	}
	defer pg.Remove(ctx)
	same, err := ray.GetPlacementGroup(ctx, pg.ID())
	fmt.Println(err == nil && same.ID() == pg.ID(), same.Ready(ctx))
	_, err = ray.GetPlacementGroup(ctx, "no-such-group")
	fmt.Println(errors.Is(err, ray.ErrPlacementGroupRemoved))
	// Output:
	// true <nil>
	// true
}
