// Tests here run before failover_test.go's (file order), which stop nodes.
package testcluster_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/objects/transfer"
	"github.com/ray-go/ray/tasks"
)

var (
	whereAmI = ray.Task0("testcluster.WhereAmI", func(ctx context.Context) (string, error) {
		return ray.NodeID(ctx)
	})
	busyWhere = ray.Task1("testcluster.BusyWhere", func(ctx context.Context, d time.Duration) (string, error) {
		time.Sleep(d)
		return ray.NodeID(ctx)
	})
	// blobOwned says how many of its arguments its task reads as its own (tasks.ArgOwned).
	blobOwned = ray.Task1("testcluster.BlobOwned", func(ctx context.Context, b []byte) (int, error) {
		if tasks.ArgOwned(ctx, 0) {
			return 1, nil
		}
		return 0, nil
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
	all, err := ray.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if nodes := all.Alive(); len(nodes) != len(up) {
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

// holds are the gates of holdNode tasks, by key.
var holds sync.Map

type hold struct {
	node    chan string   // where the task runs, once it started
	release chan struct{} // closed to let it end
}

// holdLane takes a node's "lane" (a custom resource nodes 0 and 2 have one of, see
// TestMain) until its gate opens.
var holdLane = ray.Task1("testcluster.HoldLane", func(ctx context.Context, key string) (string, error) {
	v, ok := holds.Load(key)
	if !ok {
		return "", errors.New("no gate " + key)
	}
	h := v.(*hold)
	id, err := ray.NodeID(ctx)
	if err != nil {
		return "", err
	}
	h.node <- id
	<-h.release
	return id, nil
}).Options(ray.NumCPUs(0), ray.Resources(map[string]float64{"lane": 1}))

// TestQueuedTaskSpillsBack: a task that waits in the queue of a busy node moves to another
// node once that one becomes free (spillback, paper §4.2.2), rather than waiting for the
// node it was placed on. Nodes 0 and 2 have one "lane" each; a task holds each. The next
// task that needs a lane queues at node 0, the submitting node (the policy's tie-break
// among busy nodes); freeing node 2's lane lets it run there while node 0's is held.
func TestQueuedTaskSpillsBack(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if cluster.Stopped(nodeDriver) || cluster.Stopped(nodeLane) {
		t.Fatal("nodes 0 and 2 must run")
	}
	ctx := cluster.Context(base, nodeDriver)
	self, other := string(cluster.Nodes[nodeDriver].ID), string(cluster.Nodes[nodeLane].ID)
	byNode := map[string]*hold{}
	var held []ray.ObjectRef[string]
	var gates []*hold
	defer func() {
		for _, h := range gates {
			select {
			case <-h.release:
			default:
				close(h.release)
			}
		}
		for _, r := range held {
			_, _ = ray.Get(ctx, r)
		}
	}()
	for _, key := range []string{"a", "b"} {
		key = t.Name() + "/" + key
		h := &hold{node: make(chan string, 1), release: make(chan struct{})}
		holds.Store(key, h)
		gates = append(gates, h)
		held = append(held, holdLane.Remote(ctx, ray.V(key)))
	}
	for _, h := range gates {
		select {
		case id := <-h.node:
			if byNode[id] != nil {
				t.Fatalf("two tasks hold the one lane of %s at once", id)
			}
			byNode[id] = h
		case <-time.After(30 * time.Second):
			t.Fatalf("the holding tasks did not both start within 30 s (%d did: %v): one waited at a busy node while another was free", len(byNode), byNode)
		}
	}
	if byNode[self] == nil || byNode[other] == nil {
		t.Fatalf("the lanes are held on %v, want %s and %s", byNode, self, other)
	}
	next := whereAmI.Options(ray.NumCPUs(0), ray.Resources(map[string]float64{"lane": 1})).Remote(ctx)
	// Let the task be placed (it queues: no lane is free), then free node 2's.
	time.Sleep(200 * time.Millisecond)
	close(byNode[other].release)
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	got, err := ray.Get(wctx, next)
	if err != nil {
		t.Fatalf("the queued task did not run within 20 s of node %s's lane becoming free while %s's stays held: %v", other, self, err)
	}
	if got != other {
		t.Fatalf("the queued task ran on %s, want %s (the only free lane)", got, other)
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
	// The driver's runtime accounts the bytes while they come in, and none after. (The
	// pull lasts milliseconds: a goroutine sampling InFlightBytes once saw none of it.)
	driver := cluster.Nodes[up[0]].Core
	driver.TakeInFlightPeak()
	got, err := ray.Get(ctx, blob)
	if err != nil {
		t.Fatal(err)
	}
	// (the encoded object: the bytes and a short CBOR header)
	if p, now := driver.TakeInFlightPeak(), driver.InFlightBytes(); p < size || p > size+16 || now != 0 {
		t.Errorf("in-flight bytes: peak %d during the pull (want the object, %d bytes and its header), %d after (want 0)", p, size, now)
	}
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i>>9)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the object read from another node differs from what the task returned")
	}
	// Read from another node, the bytes are the reader's own (decoded without a copy,
	// codec.UnmarshalOwned): writing to them changes nothing another read sees.
	tc, _ := core.FromContext(ctx)
	id, err := ids.ParseObjectID(blob.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, owned, err := tc.GetInOwned(ctx, id, nil); err != nil || !owned {
		t.Errorf("GetInOwned of an object on another node: owned %v, %v (want the reader's own buffer)", owned, err)
	}
	for i := range got {
		got[i] = 0
	}
	again, err := ray.Get(ctx, blob)
	if err != nil || !bytes.Equal(again, want) {
		t.Fatalf("a second read after the first's bytes were overwritten: %v (equal %v)", err, bytes.Equal(again, want))
	}
	// Its argument in a task on the node that holds it is the store's own bytes: not owned.
	if n, err := ray.Get(ctx, blobOwned.Options(ray.NodeAffinity(target, false)).Remote(ctx, blob)); err != nil || n != 0 {
		t.Errorf("a task on the object's own node: %d arguments owned, %v (want 0)", n, err)
	}
	if other := string(cluster.Nodes[up[0]].ID); other != target {
		if n, err := ray.Get(ctx, blobOwned.Options(ray.NodeAffinity(other, false)).Remote(ctx, blob)); err != nil || n != 1 {
			t.Errorf("a task on another node: %d arguments owned, %v (want 1)", n, err)
		}
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
	// Over TCP, as from another machine: without the node's Unix socket (kept
	// connections closed first) a peer falls back to its TCP address.
	transfer.CloseIdleConnections()
	if s := holder.DataSocket(); s != "" {
		if err := os.Remove(strings.TrimPrefix(s, transfer.UnixPrefix)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
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

// TestSameMachineSocket: nodes on one machine read each other's objects over the data
// server's Unix socket (no TLS, no TCP); once the socket is gone (a container of the same
// host that does not share the file), over TCP, with the same bytes.
func TestSameMachineSocket(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := alive(t)
	ctx := cluster.Context(base, up[0])
	holder := cluster.Nodes[up[1]]
	sock := holder.DataSocket()
	if !strings.HasPrefix(sock, transfer.UnixPrefix) {
		t.Fatalf("node %d's data socket: %q", up[1], sock)
	}
	const size = 3<<20 + 7
	read := func() (all, local int64) {
		t.Helper()
		all0, local0 := holder.DataConns()
		r := makeBlob.Options(ray.NodeAffinity(string(holder.ID), false)).Remote(ctx, ray.V(size))
		got, err := ray.Get(ctx, r)
		if err != nil || len(got) != size || !bytes.Equal(got[size-16:], blobTail(size)) {
			t.Fatalf("cross-node Get: %d bytes, %v", len(got), err)
		}
		all1, local1 := holder.DataConns()
		return all1 - all0, local1 - local0
	}
	transfer.CloseIdleConnections()
	if all, local := read(); all != 1 || local != 1 {
		t.Fatalf("a Get from a node on the same machine opened %d connections, %d through the socket; want 1 through it", all, local)
	}
	transfer.CloseIdleConnections()
	if err := os.Remove(strings.TrimPrefix(sock, transfer.UnixPrefix)); err != nil {
		t.Fatal(err)
	}
	if all, local := read(); all != 1 || local != 0 {
		t.Fatalf("without the socket: %d connections, %d through the socket; want 1 over TCP", all, local)
	}
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

// blobTail is the last 16 bytes makeBlob makes for n.
func blobTail(n int) []byte {
	out := make([]byte, 16)
	for i := range out {
		j := n - 16 + i
		out[i] = byte(j*7 + j>>9)
	}
	return out
}
