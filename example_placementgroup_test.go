package ray_test

import (
	"context"
	"errors"
	"fmt"
	"log"
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

// A task in a group removed before it could run fails with ErrPlacementGroupRemoved.
func ExamplePlacementGroupBundle() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(1))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// STRICT_SPREAD over one node cannot be placed: the group waits, and its task with it.
	pg, err := ray.PlacementGroup(ctx, []ray.Bundle{{"CPU": 0.5}, {"CPU": 0.5}}, ray.StrategyStrictSpread)
	if err != nil {
		log.Fatal(err)
	}
	ref := WhereAmI.Options(ray.PlacementGroupBundle(pg, 0), ray.NumCPUs(0.5)).Remote(ctx)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	fmt.Println(pg.Ready(short) != nil)
	_ = pg.Remove(ctx)
	_, err = ray.Get(ctx, ref)
	fmt.Println(errors.Is(err, ray.ErrPlacementGroupRemoved))
	// Output:
	// true
	// true
}
