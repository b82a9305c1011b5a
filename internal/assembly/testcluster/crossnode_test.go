// Tests here run before failover_test.go's (file order), which stop nodes.
package testcluster_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
)

var (
	whereAmI = ray.Task0("testcluster.WhereAmI", func(ctx context.Context) (string, error) {
		return ray.NodeID(ctx)
	})
	busyWhere = ray.Task1("testcluster.BusyWhere", func(ctx context.Context, d time.Duration) (string, error) {
		time.Sleep(d)
		return ray.NodeID(ctx)
	})
	makeBlob = ray.Task1("testcluster.MakeBlob", func(ctx context.Context, n int) ([]byte, error) {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + i>>9)
		}
		return b, nil
	})
	blobWhere = ray.Task1("testcluster.BlobWhere", func(ctx context.Context, b []byte) (string, error) {
		if len(b) == 0 {
			return "", errors.New("empty blob")
		}
		return ray.NodeID(ctx)
	})
)

// alive returns the indexes of the nodes not stopped by earlier tests.
func alive(t *testing.T) []int {
	var out []int
	for i := range cluster.Nodes {
		if !cluster.Stopped(i) {
			out = append(out, i)
		}
	}
	if len(out) < 2 {
		t.Fatalf("need 2 running nodes, have %d", len(out))
	}
	return out
}

func nodesOf(t *testing.T, ctx context.Context, refs []ray.ObjectRef[string]) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, r := range refs {
		id, err := ray.Get(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if cluster.Index(id) < 0 {
			t.Fatalf("task ran on unknown node %q", id)
		}
		seen[id]++
	}
	return seen
}

// TestSpreadStrategy: Spread puts successive tasks on different nodes.
func TestSpreadStrategy(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := alive(t)
	ctx := cluster.Context(base, up[0])
	nodes, err := ray.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != len(up) {
		t.Fatalf("ray.Nodes lists %d nodes, %d run", len(nodes), len(up))
	}
	var refs []ray.ObjectRef[string]
	for range 4 * len(up) {
		refs = append(refs, whereAmI.Options(ray.Spread()).Remote(ctx))
	}
	seen := nodesOf(t, ctx, refs)
	if len(seen) != len(up) {
		t.Fatalf("spread tasks ran on %d of %d nodes: %v", len(seen), len(up), seen)
	}
}

// TestDefaultStrategySpillsOver: tasks stay on the submitting node while it has room and
// go to other nodes when it is busy.
func TestDefaultStrategySpillsOver(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := alive(t)
	ctx := cluster.Context(base, up[0])
	self, _ := ray.NodeID(ctx)
	// One short task on an idle cluster runs locally. The view may still hold the load of
	// the previous test's tasks until the next load reports (every 100 ms): the cluster is
	// idle once they arrive, so the task must run locally within a few report intervals.
	for try := 0; ; try++ {
		got, err := ray.Get(ctx, whereAmI.Remote(ctx))
		if err == nil && got == self {
			break
		}
		if try == 20 {
			t.Fatalf("a lone task ran on %q (err %v), want the submitting node %q (20 tries, 100 ms apart)", got, err, self)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Twice the CPUs of one node, all at once: the rest of the cluster takes some.
	var refs []ray.ObjectRef[string]
	for range 2 * len(up) {
		refs = append(refs, busyWhere.Remote(ctx, ray.V(300*time.Millisecond)))
	}
	seen := nodesOf(t, ctx, refs)
	if len(seen) < 2 {
		t.Fatalf("a burst of %d tasks stayed on %v", len(refs), seen)
	}
}

// TestLocalityAndTransfer: a task whose large argument lives on another node runs there;
// the driver reads a large result from another node by pulling it.
func TestLocalityAndTransfer(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := alive(t)
	ctx := cluster.Context(base, up[0])
	target := string(cluster.Nodes[up[len(up)-1]].ID)
	const size = 6<<20 + 12345
	blob := makeBlob.Options(ray.NodeAffinity(target, false)).Remote(ctx, ray.V(size))
	for range 3 {
		where, err := ray.Get(ctx, blobWhere.Remote(ctx, blob))
		if err != nil {
			t.Fatal(err)
		}
		if where != target {
			t.Fatalf("the task using a %d-byte argument on %s ran on %s", size, target, where)
		}
	}
	// The driver's runtime accounts the bytes while they come in, and none after.
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if v := cluster.Nodes[up[0]].Core.InFlightBytes(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	got, err := ray.Get(ctx, blob)
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	// (the encoded object: the bytes and a short CBOR header)
	if p, now := peak.Load(), cluster.Nodes[up[0]].Core.InFlightBytes(); p < size || p > size+16 || now != 0 {
		t.Errorf("in-flight bytes: peak %d during the pull (want the object, %d bytes and its header), %d after (want 0)", p, size, now)
	}
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i>>9)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the object read from another node differs from what the task returned")
	}
}

// TestIdleConnectionsDoNotDelayGet: 500 connections to a node's data port that ask for
// nothing do not delay a cross-node Get of 8 MiB from that node by more than a second
// (they used to hold its 64 serving slots for 10 s each: 13.7 s for such a Get).
func TestIdleConnectionsDoNotDelayGet(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := alive(t)
	ctx := cluster.Context(base, up[0])
	holder := cluster.Nodes[up[len(up)-1]]
	const size = 8 << 20
	blob := func() ray.ObjectRef[[]byte] {
		r := makeBlob.Options(ray.NodeAffinity(string(holder.ID), false)).Remote(ctx, ray.V(size))
		if _, _, err := ray.Wait(ctx, []ray.ObjectRef[[]byte]{r}, ray.NumReady(1)); err != nil {
			t.Fatal(err)
		}
		return r
	}
	get := func(r ray.ObjectRef[[]byte]) time.Duration {
		start := time.Now()
		b, err := ray.Get(ctx, r)
		if err != nil || len(b) != size {
			t.Fatalf("cross-node Get: %d bytes, %v", len(b), err)
		}
		return time.Since(start)
	}
	baseline := get(blob())
	addr := holder.DataAddress()
	if addr == "" {
		t.Fatal("the node has no data address")
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 500 {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	r := blob()
	d := get(r)
	if d > baseline+time.Second {
		t.Fatalf("a cross-node Get of 8 MiB took %v behind 500 idle connections (%v without)", d, baseline)
	}
	t.Logf("cross-node Get of 8 MiB: %v behind 500 idle connections, %v without", d, baseline)
}

// TestNodeAffinity: hard affinity to an unknown node fails; soft affinity runs elsewhere.
func TestNodeAffinity(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := alive(t)
	ctx := cluster.Context(base, up[0])
	for _, i := range up {
		id := string(cluster.Nodes[i].ID)
		got, err := ray.Get(ctx, whereAmI.Options(ray.NodeAffinity(id, false)).Remote(ctx))
		if err != nil || got != id {
			t.Fatalf("affinity to %s: ran on %q, err %v", id, got, err)
		}
	}
	_, err := ray.Get(ctx, whereAmI.Options(ray.NodeAffinity("no-such-node", false)).Remote(ctx))
	if !errors.Is(err, ray.ErrInfeasible) || !strings.Contains(err.Error(), "no-such-node") {
		t.Fatalf("hard affinity to an unknown node: %v, want ErrInfeasible naming the node", err)
	}
	if got, err := ray.Get(ctx, whereAmI.Options(ray.NodeAffinity("no-such-node", true)).Remote(ctx)); err != nil || cluster.Index(got) < 0 {
		t.Fatalf("soft affinity to an unknown node: ran on %q, err %v", got, err)
	}
}

var (
	// echoSum returns a 99 KiB value derived from its four arguments: every spec carries
	// about 400 KiB inline and every result about 100 KiB inline.
	echoSum = ray.Task4("testcluster.EchoSum", func(_ context.Context, a, b, c, d []byte) ([]byte, error) {
		return echoSumOf(a, b, c, d), nil
	})
	inlineArg = func(seed, n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(seed + i*13)
		}
		return p
	}
)

// TestManyLargeInlineMessages: 300 tasks on another node, each with 396 KiB of inline
// arguments and a 99 KiB inline result, submitted at once: about 120 MiB of specs and 30
// MiB of results in flight between two members whose gRPC messages are limited to 64 MiB
// (maxMessageBytes) and sent up to 32 at a time. Every result arrives and is right. (That
// no push exceeds its bound is checked where pushes are made: internal/assembly/core's
// TestPushesAreBoundedInBytes.)
func TestManyLargeInlineMessages(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	up := alive(t)
	ctx := cluster.Context(base, up[0])
	target := string(cluster.Nodes[up[1]].ID)
	const n, size = 300, 99 << 10
	refs := make([]ray.ObjectRef[[]byte], n)
	for i := range refs {
		refs[i] = echoSum.Options(ray.NodeAffinity(target, false)).Remote(ctx,
			ray.V(inlineArg(i, size)), ray.V(inlineArg(i+1, size)), ray.V(inlineArg(i+2, size)), ray.V(inlineArg(i+3, size)))
	}
	for i, r := range refs {
		got, err := ray.Get(ctx, r)
		if err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
		if !bytes.Equal(got, echoSumOf(inlineArg(i, size), inlineArg(i+1, size), inlineArg(i+2, size), inlineArg(i+3, size))) {
			t.Fatalf("task %d: wrong result", i)
		}
		r.Release()
	}
}

func echoSumOf(ps ...[]byte) []byte {
	out := make([]byte, 99<<10)
	for _, p := range ps {
		for i, x := range p {
			out[i%len(out)] += x
		}
	}
	return out
}
