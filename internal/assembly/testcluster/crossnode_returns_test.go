// Runs with crossnode_test.go's tests (file order: before dataloss_test.go stops a node).
package testcluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
)

var (
	// blobPair returns a large value (through its node's store) and a small one.
	blobPair = ray.Task1R2("testcluster.BlobPair", func(ctx context.Context, n int) ([]byte, string, error) {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i * 3)
		}
		node, err := ray.NodeID(ctx)
		return b, node, err
	})
	// blobStream yields count values of n bytes each, then its node.
	blobStream = ray.Generator2("testcluster.BlobStream", func(ctx context.Context, count, n int, yield func([]byte) error) error {
		for k := range count {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(k + i)
			}
			if err := yield(b); err != nil {
				return err
			}
		}
		node, err := ray.NodeID(ctx)
		if err != nil {
			return err
		}
		return yield([]byte(node))
	})
)

// TestReturnsAndGeneratorAcrossNodes: a task of two returns and a generator with
// backpressure run on another node than their caller: results, items (inline and in the
// remote node's store) and the generator's acks cross the members' remotes.
func TestReturnsAndGeneratorAcrossNodes(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := alive(t)
	ctx := cluster.Context(base, up[0])
	other := string(cluster.Nodes[up[1]].ID)
	there := ray.NodeAffinity(other, false)

	const big = 1 << 20
	b, node := blobPair.Options(there).Remote(ctx, ray.V(big))
	if got, err := ray.Get(ctx, node); err != nil || got != other {
		t.Fatalf("the small return: %q, %v; want the node %s", got, err, other)
	}
	blob, err := ray.Get(ctx, b)
	if err != nil || len(blob) != big || blob[big-1] != byte((big-1)*3%256) {
		t.Fatalf("the large return: %d bytes, %v", len(blob), err)
	}

	for _, size := range []int{100, 300 << 10} { // inline, then through the remote store
		gen := blobStream.Options(there, ray.GeneratorBackpressure(1)).Remote(ctx, ray.V(5), ray.V(size))
		for k := range 5 {
			ref, err := gen.Next(ctx)
			if err != nil {
				t.Fatalf("item %d of %d bytes: %v", k+1, size, err)
			}
			v, err := ray.Get(ctx, ref)
			if err != nil || len(v) != size || v[0] != byte(k) || v[size-1] != byte(k+size-1) {
				t.Fatalf("item %d: %d bytes, %v", k+1, len(v), err)
			}
		}
		ref, err := gen.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if where, err := ray.Get(ctx, ref); err != nil || string(where) != other {
			t.Fatalf("the generator ran on %q, %v; want %s", where, err, other)
		}
		if _, err := gen.Next(ctx); !errors.Is(err, ray.ErrGeneratorDone) {
			t.Fatalf("end of the stream: %v", err)
		}
	}
}
