package ray_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/ray-go/ray"
)

// Batch is a value holding refs: the task that receives it gets the refs, not the values.
type Batch struct {
	Parts []ray.ObjectRef[[]float64]
}

var (
	WhereAmI = ray.Task0("example.where", func(ctx context.Context) (string, error) {
		return ray.NodeID(ctx)
	})
	SumBatch = ray.Task1("example.sumBatch", func(ctx context.Context, b Batch) (float64, error) {
		total := 0.0
		for _, p := range b.Parts {
			xs, err := ray.Get(ctx, p) // the task borrows the parts; their owner keeps them meanwhile
			if err != nil {
				return 0, err
			}
			for _, x := range xs {
				total += x
			}
		}
		return total, nil
	})
)

func ExampleNodes() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2), ray.WithResources(map[string]float64{"accel": 1}))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	nodes, err := ray.Nodes(ctx) // local mode: one node; in a cluster, one worker process per machine
	if err != nil {
		log.Fatal(err)
	}
	self, _ := ray.NodeID(ctx)
	fmt.Println(len(nodes), nodes[0].ID == self, nodes[0].Role, nodes[0].Resources["CPU"], nodes[0].Resources["accel"])
	// Output: 1 true local 2 1
}

func ExampleNodeAffinity() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	nodes, _ := ray.Nodes(ctx)
	target := nodes[len(nodes)-1].ID
	where, err := ray.Get(ctx, WhereAmI.Options(ray.NodeAffinity(target, false)).Remote(ctx))
	fmt.Println(where == target, err)
	_, err = ray.Get(ctx, WhereAmI.Options(ray.NodeAffinity("no-such-node", false)).Remote(ctx))
	fmt.Println(err != nil)
	// Output:
	// true <nil>
	// true
}

func ExampleSpread() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	refs := make([]ray.ObjectRef[string], 4)
	for i := range refs {
		refs[i] = WhereAmI.Options(ray.Spread()).Remote(ctx) // rotates over the nodes
	}
	ids, err := ray.GetAll(ctx, refs)
	fmt.Println(len(ids), err)
	// Output: 4 <nil>
}

// Refs can travel inside values: in task arguments, in Put values, in return values and in
// actor state. The object lives while any holder does.
func ExampleObjectRef_nested() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	var b Batch
	for i := range 3 {
		p, err := ray.Put(ctx, []float64{float64(i), 10})
		if err != nil {
			log.Fatal(err)
		}
		b.Parts = append(b.Parts, p)
	}
	total, err := ray.Get(ctx, SumBatch.Remote(ctx, ray.V(b)))
	fmt.Println(total, err)
	// Output: 33 <nil>
}

// A driver joins a secure cluster with its join token (what `rayctl start --head`
// printed; RAY_GO_TOKEN works too). It trades the token for a certificate at the head and
// then speaks mutual TLS with the cluster.
func ExampleWithToken() {
	ctx, err := ray.Init(context.Background(),
		ray.WithAddress("10.0.0.1:6379"),
		ray.WithToken("<secret>.<CA hash>"))
	if errors.Is(err, ray.ErrNoCredentials) {
		log.Fatal("the cluster refused the token: ", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
}
