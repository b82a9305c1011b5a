package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/assembly/node"
	"github.com/ray-go/ray/internal/assembly/testcluster"
	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
)

// TestNodeRegistersAgainAfterItsLeaseExpired: a GCS outage longer than a node's lease TTL
// ends with etcd expiring the lease and deleting the node record with it (revoking the
// lease does here what the expiry does). The node takes a new lease and writes its record
// again within seconds, and its tasks keep running; before, it stayed out of the node
// table for good while it ran.
func TestNodeRegistersAgainAfterItsLeaseExpired(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := testcluster.Start(ctx, testcluster.Config{Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	n := c.Nodes[0]
	key := gcs.NodeKey(string(n.ID))
	kv, ok, err := c.GCS.Get(ctx, key)
	if err != nil || !ok || kv.Lease == 0 {
		t.Fatalf("node record: %+v %v %v; want one on a lease", kv, ok, err)
	}
	if err := c.GCS.Revoke(ctx, kv.Lease); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.GCS.Get(ctx, key); ok {
		t.Fatal("the node record outlived its lease")
	}
	var again gcs.KV
	eventually.True(t, 15*time.Second, "the node's record on a new lease", func() bool {
		kv, ok, err := c.GCS.Get(ctx, key)
		again = kv
		return err == nil && ok && kv.Lease != 0
	})
	if again.Lease == kv.Lease {
		t.Fatalf("the record came back on the revoked lease %x", kv.Lease)
	}
	// The new lease is kept alive: the record outlives the TTL. A negative check (the
	// record does not expire), so a bounded sleep past the TTL is the honest tool.
	time.Sleep(node.DefaultNodeLeaseTTL + 2*time.Second)
	if now, ok, err := c.GCS.Get(ctx, key); err != nil || !ok || now.Lease != again.Lease {
		t.Fatalf("after a TTL: %+v %v %v; want the record still on lease %x", now, ok, err, again.Lease)
	}
}
