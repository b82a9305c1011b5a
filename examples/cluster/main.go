// Command cluster is a ray-go program meant to run on a cluster started with rayctl: it
// estimates π with Monte Carlo tasks spread over the cluster's nodes, ships a large
// object from one node to another, and keeps a running tally in an actor. See README.md
// for the walk-through.
//
//	go build -o /tmp/rayctl ./cli/rayctl
//	/tmp/rayctl start --head --num-cpus 2
//	/tmp/rayctl start --address 127.0.0.1:6379 --num-cpus 2 --session-dir /tmp/ray-go-2
//	RAY_ADDRESS=127.0.0.1:6379 go run ./examples/cluster
//	/tmp/rayctl stop
//
// Without RAY_ADDRESS it runs the same code on a local single-process cluster.
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"sort"
	"time"

	ray "github.com/ray-go/ray"
)

// sample counts the points of n random ones that fall in the unit circle, and says where
// it ran.
var sample = ray.Task2("cluster.Sample", func(ctx context.Context, seed uint64, n int) (hits, error) {
	node, err := ray.NodeID(ctx)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	in := 0
	for range n {
		x, y := r.Float64(), r.Float64()
		if x*x+y*y <= 1 {
			in++
		}
	}
	return hits{In: in, N: n, Node: node}, err
})

type hits struct {
	In, N int
	Node  string
}

// blob makes a large object; digest reads it wherever it runs.
var (
	blob = ray.Task1("cluster.Blob", func(ctx context.Context, mib int) ([]byte, error) {
		b := make([]byte, mib<<20)
		for i := range b {
			b[i] = byte(i ^ i>>11)
		}
		return b, nil
	})
	digest = ray.Task1("cluster.Digest", func(ctx context.Context, b []byte) (string, error) {
		node, err := ray.NodeID(ctx)
		return fmt.Sprintf("%x on %s", sha256.Sum256(b), node), err
	})
)

// Tally is an actor that keeps the running estimate.
type Tally struct{ In, N int } // exported: the runtime checkpoints it by itself

func (t *Tally) Add(_ context.Context, h hits) (float64, error) {
	t.In += h.In
	t.N += h.N
	return 4 * float64(t.In) / float64(t.N), nil
}

var (
	tallyClass = ray.Actor("cluster.Tally", func() *Tally { return &Tally{} })
	tallyAdd   = ray.Method1(tallyClass, "Add", (*Tally).Add)
)

func main() {
	tasks := flag.Int("tasks", 40, "Monte Carlo tasks")
	points := flag.Int("points", 2_000_000, "points per task")
	mib := flag.Int("mib", 64, "size of the object moved between nodes, MiB")
	flag.Parse()
	if err := run(*tasks, *points, *mib); err != nil {
		log.Fatal(err)
	}
}

func run(tasks, points, mib int) error {
	start := time.Now()
	ctx, err := ray.Init(context.Background())
	if err != nil {
		return err
	}
	defer ray.Shutdown(ctx)
	fmt.Printf("joined in %v (RAY_ADDRESS=%q)\n", time.Since(start).Round(time.Millisecond), os.Getenv("RAY_ADDRESS"))
	nodes, err := ray.Nodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes.Alive() { // Nodes lists dead nodes too (Alive false)
		fmt.Printf("node %s on %s (pid %d): %v\n", n.ID, n.Hostname, n.PID, n.Resources)
	}

	// Spread the tasks over the nodes; an actor keeps the tally.
	tally := tallyClass.Remote(ctx)
	refs := make([]ray.ObjectRef[hits], tasks)
	for i := range refs {
		refs[i] = sample.Options(ray.Spread()).Remote(ctx, ray.V(uint64(i)), ray.V(points))
	}
	perNode := map[string]int{}
	var estimate float64
	for _, r := range refs {
		h, err := ray.Get(ctx, r)
		if err != nil {
			return err
		}
		perNode[h.Node]++
		if estimate, err = ray.Get(ctx, tallyAdd.Remote(ctx, tally, ray.V(h))); err != nil {
			return err
		}
	}
	ids := make([]string, 0, len(perNode))
	for id := range perNode {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Printf("  %d tasks ran on node %s\n", perNode[id], id)
	}
	fmt.Printf("π ≈ %.5f from %d points\n", estimate, tasks*points)

	// A large object made on the first node and read on the last one moves between them.
	if len(nodes) > 1 {
		first, last := nodes[0].ID, nodes[len(nodes)-1].ID
		b := blob.Options(ray.NodeAffinity(first, false)).Remote(ctx, ray.V(mib))
		t0 := time.Now()
		d, err := ray.Get(ctx, digest.Options(ray.NodeAffinity(last, false)).Remote(ctx, b))
		if err != nil {
			return err
		}
		fmt.Printf("%d MiB made on %s, read in %v: sha256 %s\n", mib, first, time.Since(t0).Round(time.Millisecond), d)
	}
	return nil
}
