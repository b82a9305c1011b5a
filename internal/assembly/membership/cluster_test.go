package membership

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
)

const (
	testKind = "echo"
	testTTL  = 3 * time.Second // the default
)

var clusterRuns atomic.Int32

// grain bookkeeping shared by every member of the test process, keyed "node|identity".
var (
	activations sync.Map // -> *atomic.Int32, activations ever
	liveGrains  sync.Map // -> *atomic.Int32, activations not yet stopped
)

func counter(m *sync.Map, node, identity string) *atomic.Int32 {
	v, _ := m.LoadOrStore(node+"|"+identity, new(atomic.Int32))
	return v.(*atomic.Int32)
}

// echoGrain answers a StringValue with "<identity>@<node>"; "stop" stops it.
type echoGrain struct {
	node     string
	identity string
}

func (g *echoGrain) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *cluster.ClusterInit:
		g.identity = m.Identity.Identity
		counter(&activations, g.node, g.identity).Add(1)
		counter(&liveGrains, g.node, g.identity).Add(1)
	case *actor.Stopped:
		if g.identity != "" {
			counter(&liveGrains, g.node, g.identity).Add(-1)
		}
	case *wrapperspb.StringValue:
		if m.Value == "stop" {
			ctx.Respond(wrapperspb.String("stopping"))
			ctx.Stop(ctx.Self())
			return
		}
		ctx.Respond(wrapperspb.String(g.identity + "@" + g.node))
	}
}

// recorder keeps every MemberEvent a member saw, and its provider's Suspects when each
// was published.
type recorder struct {
	mu       sync.Mutex
	events   []MemberEvent
	prov     *Provider
	suspects []map[string]bool
}

func (r *recorder) add(e *MemberEvent) {
	r.mu.Lock()
	r.events = append(r.events, *e)
	r.suspects = append(r.suspects, r.prov.Suspects())
	r.mu.Unlock()
}

// index returns the position of the first event that satisfies pred (-1 if none) and the provider's Suspects when it was published.
func (r *recorder) index(pred func(MemberEvent) bool) (int, map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, e := range r.events {
		if pred(e) {
			return i, r.suspects[i]
		}
	}
	return -1, nil
}

func (r *recorder) find(pred func(MemberEvent) bool) (MemberEvent, bool) {
	return r.findSince(0, pred)
}

// mark returns a position for findSince.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func (r *recorder) findSince(mark int, pred func(MemberEvent) bool) (MemberEvent, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events[mark:] {
		if pred(e) {
			return e, true
		}
	}
	return MemberEvent{}, false
}

type testNode struct {
	id     string
	system *actor.ActorSystem
	cl     *cluster.Cluster
	prov   *Provider
	look   *Lookup
	rec    *recorder
	setup  chan struct{} // closed when cluster.StartMember reached Lookup.Setup

	topoMu  sync.Mutex
	topo    map[string]string // member ID -> address, from the last ClusterTopology
	stopped bool
}

// gatedProvider holds StartMember until the test opens the gate (see TestCluster).
type gatedProvider struct {
	*Provider
	gate chan struct{}
}

func (g gatedProvider) StartMember(c *cluster.Cluster) error {
	<-g.gate
	return g.Provider.StartMember(c)
}

func (g gatedProvider) StartClient(c *cluster.Cluster) error {
	<-g.gate
	return g.Provider.StartClient(c)
}

// signalLookup tells the test when StartMember has started the remote: protoactor's
// Remote.Start sets gRPC's global logger, so two must not run at once.
type signalLookup struct {
	*Lookup
	setup chan struct{}
}

func (s signalLookup) Setup(c *cluster.Cluster, kinds []string, isClient bool) {
	s.Lookup.Setup(c, kinds, isClient)
	close(s.setup)
}

// addr is the member's address.
func (n *testNode) addr() string { return n.system.Address() }

// hasAddr says whether n's topology lists a member at addr. It reads the topology from the
// ClusterTopology events: MemberList.Members() is not safe to call concurrently with a
// topology update.
func (n *testNode) hasAddr(addr string) bool {
	n.topoMu.Lock()
	defer n.topoMu.Unlock()
	for _, a := range n.topo {
		if a == addr {
			return true
		}
	}
	return false
}

// topology returns a copy of n's topology (member ID -> address).
func (n *testNode) topology() map[string]string {
	n.topoMu.Lock()
	defer n.topoMu.Unlock()
	return maps.Clone(n.topo)
}

func (n *testNode) topologySize() int {
	n.topoMu.Lock()
	defer n.topoMu.Unlock()
	return len(n.topo)
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newTestNode wires a member the way the node layer does.
func newTestNode(t *testing.T, store gcs.Store, nodeID string, gate chan struct{}) *testNode {
	t.Helper()
	logger := quietLogger()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }))
	prov, err := NewProvider(Config{Store: store, NodeID: nodeID, LeaseTTL: testTTL})
	if err != nil {
		t.Fatal(err)
	}
	look, err := NewLookup(LookupConfig{Store: store, Resolver: prov})
	if err != nil {
		t.Fatal(err)
	}
	opts := []cluster.ConfigOption{WithoutGossip()}
	if nodeID != "" { // "" makes a client
		opts = append(opts, cluster.WithKinds(cluster.NewKind(testKind,
			actor.PropsFromProducer(func() actor.Actor { return &echoGrain{node: nodeID} }))))
	}
	setup := make(chan struct{})
	cfg := cluster.Configure("test", gatedProvider{prov, gate}, signalLookup{look, setup}, remote.Configure("127.0.0.1", 0, remote.WithServerOptions(grpc.StreamInterceptor(BlockListInterceptor))), opts...)
	n := &testNode{id: nodeID, system: system, cl: cluster.New(system, cfg), prov: prov, look: look, rec: &recorder{prov: prov}, setup: setup}
	SubscribeMemberEvents(system, n.rec.add)
	system.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*cluster.ClusterTopology); ok {
			m := map[string]string{}
			for _, mem := range t.Members {
				m[mem.Id] = mem.Address()
			}
			n.topoMu.Lock()
			n.topo = m
			n.topoMu.Unlock()
		}
	})
	return n
}

// leave shuts a member down the way a node leaves the cluster on purpose, without
// cluster.Shutdown(true)'s 2 s sleep: its grains stop, its lease is revoked, and once the
// observers have seen it go, its remote stops.
//
// The order matters under the race detector: stopping the grains and the membership
// actor sends Terminated to remote watchers, which may open new connections to them, and
// protoactor reads its BlockList on every new inbound connection without synchronisation
// while MemberList.UpdateClusterTopology writes it for a departed member. Waiting for the
// observers orders the two.
func (n *testNode) leave(t *testing.T, observers ...*testNode) {
	t.Helper()
	if n.stopped {
		return
	}
	n.stopped = true
	n.look.Shutdown()
	if err := n.prov.Shutdown(true); err != nil {
		t.Errorf("%s: provider shutdown: %v", n.id, err)
	}
	for _, o := range observers {
		if n.id != "" && !o.stopped {
			eventually.True(t, 5*time.Second, o.id+" sees "+n.id+" leave", func() bool { return !o.hasAddr(n.addr()) })
		}
	}
	if n.id == "" {
		// cluster.Shutdown panics on a client (it touches gossip, which a client never
		// starts), so do what it does.
		n.system.Shutdown()
		n.cl.Remote.Shutdown(false)
	} else {
		n.cl.Shutdown(false) // stops the actor system and kills the remote server
	}
}

func (n *testNode) get(identity string) *actor.PID {
	return n.look.Get(cluster.NewClusterIdentity(identity, testKind))
}

func (n *testNode) ask(t *testing.T, pid *actor.PID, msg string) string {
	t.Helper()
	res, err := n.system.Root.RequestFuture(pid, wrapperspb.String(msg), 2*time.Second).Result()
	if err != nil {
		t.Fatalf("%s: request to %v: %v", n.id, pid, err)
	}
	s, ok := res.(*wrapperspb.StringValue)
	if !ok {
		t.Fatalf("%s: request to %v: got %T", n.id, pid, res)
	}
	return s.Value
}

// syncWithGRPCServer works around a data race in protoactor that the race detector
// reports whenever several remotes start in one process: remote.Start calls
// grpclog.SetLoggerV2 (a plain global write) while the goroutines of the remotes started
// before read that global (first in Server.Serve, then whenever they dial or accept). The
// race detector orders socket I/O (a write happens before any later read of a socket), so
// reading the first bytes the server sends on a new connection (its HTTP/2 SETTINGS) makes
// those earlier reads happen before our next remote.Start. The connection must stay open
// until the last remote has started (a closed one makes the server log) and be closed
// before any remote stops (grpc.Server.Stop waits for it).
func syncWithGRPCServer(t *testing.T, addr string, preface bool) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	grpcSyncConns = append(grpcSyncConns, conn)
	if preface { // etcd serves gRPC behind cmux, which routes on the HTTP/2 preface
		if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		t.Fatalf("reading from the gRPC server at %s: %v", addr, err)
	}
	// Read the rest of what it sent, so that closing sends FIN rather than RST (which
	// would make the server log an error).
	buf := make([]byte, 1024)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := conn.Read(buf); err != nil {
			break
		}
	}
}

var grpcSyncConns []net.Conn

func closeGRPCSyncConns() {
	for _, c := range grpcSyncConns {
		c.Close()
	}
	grpcSyncConns = nil
}

// activatedOnce checks that identity was activated want times on node. Get returns once
// the grain is spawned, before it has processed ClusterInit (where it counts itself): wait
// for the count, then make sure no other activation follows.
func activatedOnce(t *testing.T, node, identity string, want int32) {
	t.Helper()
	eventually.True(t, time.Second, fmt.Sprintf("%s activated %d times on %s", identity, want, node), func() bool {
		return counter(&activations, node, identity).Load() >= want
	})
	time.Sleep(20 * time.Millisecond) // a negative check: no second activation in a bounded window
	if n := counter(&activations, node, identity).Load(); n != want {
		t.Fatalf("%s activated %d times on %s, want %d", identity, n, node, want)
	}
}

func TestCluster(t *testing.T) {
	if clusterRuns.Add(1) > 1 && raceEnabled {
		// The members of an earlier run leave gRPC client goroutines behind (protoactor's
		// non-graceful remote shutdown keeps its endpoint writers), and the next
		// remote.Start races with them (see syncWithGRPCServer).
		t.Skip("under -race a protoactor cluster can start only once per test process; use -count=1")
	}
	activations.Clear()
	liveGrains.Clear()
	store, etcdAddr := newTestStore(t)
	ctx := context.Background()

	// Start the members at once (cluster.StartMember sleeps 1 s at its end), but keep the
	// race detector happy despite protoactor: remote.Start writes a gRPC global (the logger)
	// that every gRPC goroutine in the process reads. So the remotes start one after the
	// other, each after syncWithGRPCServer has ordered the reads of the servers started
	// before (etcd's included), and no member registers (so no member dials another)
	// before the last remote has started.
	gate := make(chan struct{})
	syncWithGRPCServer(t, etcdAddr, true)
	nodes := []*testNode{newTestNode(t, store, "A", gate), newTestNode(t, store, "B", gate), newTestNode(t, store, "C", gate)}
	a, b, c := nodes[0], nodes[1], nodes[2]
	client := newTestNode(t, store, "", gate)
	var wg sync.WaitGroup
	for _, n := range append(nodes, client) {
		wg.Add(1)
		if n == client {
			go func() { defer wg.Done(); n.cl.StartClient() }()
		} else {
			go func() { defer wg.Done(); n.cl.StartMember() }()
		}
		<-n.setup // its remote has started
		syncWithGRPCServer(t, n.system.Address(), false)
	}
	close(gate)
	wg.Wait()
	closeGRPCSyncConns()
	defer client.leave(t)
	defer func() {
		for _, n := range nodes {
			n.leave(t, append(nodes, client)...)
		}
	}()

	t.Run("membership appears everywhere", func(t *testing.T) {
		for _, n := range nodes {
			eventually.True(t, 10*time.Second, n.id+" sees 3 members", func() bool {
				if n.topologySize() != 3 {
					return false
				}
				for _, m := range nodes {
					if !n.hasAddr(m.addr()) {
						return false
					}
					if got, ok := n.prov.MemberForNode(m.id); !ok || got.Address != m.system.Address() {
						return false
					}
				}
				return true
			})
		}
		kvs, _, err := store.List(ctx, gcs.MembersPrefix)
		if err != nil || len(kvs) != 3 {
			t.Fatalf("members/ holds %d keys (%v), want 3", len(kvs), err)
		}
		for _, kv := range kvs {
			if kv.Lease == 0 {
				t.Errorf("%s has no lease", kv.Key)
			}
		}
	})

	t.Run("a registered member that refuses connections is unreachable at once", func(t *testing.T) {
		// A process killed before its lease lapsed, as a process that joined later sees it:
		// its key is there, and nobody listens on its address. (The key has no lease here,
		// so only the connection check can tell; protoactor's own endpoint would give up
		// after 5 connection attempts 2 s apart.)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().(*net.TCPAddr)
		l.Close()
		ghost := MemberInfo{ID: "ghost#1", NodeID: "G", Address: addr.String(), Host: "127.0.0.1", Port: addr.Port, Kinds: []string{testKind}}
		if _, err := store.Put(ctx, gcs.MemberKey(ghost.ID), ghost.marshal(), 0); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if _, err := store.Delete(ctx, gcs.MemberKey(ghost.ID)); err != nil {
				t.Error(err)
			}
			for _, n := range []*testNode{a, b} {
				eventually.True(t, 5*time.Second, n.id+" sees the ghost leave", func() bool {
					_, ok := n.rec.find(func(e MemberEvent) bool { return e.Type == MemberLeft && e.Member.ID == ghost.ID })
					return ok
				})
			}
		}()
		start := time.Now()
		for _, n := range []*testNode{a, b} {
			eventually.True(t, 5*time.Second, n.id+" sees the ghost unreachable", func() bool {
				_, ok := n.rec.find(func(e MemberEvent) bool { return e.Type == MemberUnreachable && e.Member.ID == ghost.ID })
				return ok
			})
		}
		t.Logf("a registered member nobody listens for: unreachable after %v", time.Since(start))
		if _, ok := a.prov.Nodes()["G"]; ok {
			t.Fatal("an unreachable member is still in the node index")
		}
		if pid := a.get(NodeIdentity("G", "pinned")); pid != nil {
			t.Fatalf("Get on the ghost = %v", pid)
		}
	})

	t.Run("node-pinned identity resolves to its node", func(t *testing.T) {
		for _, from := range nodes {
			for _, to := range nodes {
				identity := NodeIdentity(to.id, "pinned")
				pid := from.get(identity)
				if pid == nil {
					t.Fatalf("%s: Get(%s) = nil", from.id, identity)
				}
				if pid.Address != to.system.Address() {
					t.Fatalf("%s: Get(%s) on %s, want %s", from.id, identity, pid.Address, to.system.Address())
				}
				if got, want := from.ask(t, pid, "hi"), identity+"@"+to.id; got != want {
					t.Fatalf("answer %q, want %q", got, want)
				}
			}
		}
		for _, to := range nodes {
			activatedOnce(t, to.id, NodeIdentity(to.id, "pinned"), 1)
		}
		// Through the cluster API too.
		pid := a.cl.Get(NodeIdentity("B", "pinned"), testKind)
		if pid == nil || pid.Address != b.system.Address() {
			t.Fatalf("cluster.Get = %v", pid)
		}
		res, err := a.cl.Request(NodeIdentity("C", "pinned"), testKind, wrapperspb.String("x"))
		if err != nil || res.(*wrapperspb.StringValue).Value != "n/C/pinned@C" {
			t.Fatalf("cluster.Request = %v, %v", res, err)
		}
	})

	t.Run("a client resolves without registering", func(t *testing.T) {
		if _, ok := client.prov.Self(); ok {
			t.Fatal("the client registered")
		}
		eventually.True(t, 5*time.Second, "the client sees the 3 members", func() bool {
			return client.topologySize() == 3 && len(client.prov.Nodes()) == 3
		})
		pid := client.get(NodeIdentity("B", "pinned"))
		if pid == nil || pid.Address != b.system.Address() {
			t.Fatalf("client Get = %v", pid)
		}
		if got := client.ask(t, pid, "hi"); got != "n/B/pinned@B" {
			t.Fatalf("answer %q", got)
		}
		activatedOnce(t, "B", NodeIdentity("B", "pinned"), 1)
		kvs, _, err := store.List(ctx, gcs.MembersPrefix)
		if err != nil || len(kvs) != 3 {
			t.Fatalf("members/ holds %d keys (%v), want 3", len(kvs), err)
		}
	})

	t.Run("a broken connection to a live member heals", func(t *testing.T) {
		// What A's remote does when its connection to B breaks: every remote Watch on B
		// gets Terminated, as when B dies. A probes B, finds it alive and routes to it again.
		pid := a.get(NodeIdentity("B", "pinned"))
		bSelf, _ := b.prov.Self()
		a.system.EventStream.Publish(&remote.EndpointTerminatedEvent{Address: b.system.Address()})
		eventually.True(t, 5*time.Second, "A sees B unreachable, then reachable", func() bool {
			_, down := a.rec.find(func(e MemberEvent) bool { return e.Type == MemberUnreachable && e.Member.ID == bSelf.ID })
			_, up := a.rec.find(func(e MemberEvent) bool { return e.Type == MemberReachable && e.Member.ID == bSelf.ID })
			return down && up
		})
		if !a.hasAddr(b.addr()) {
			t.Fatal("B left A's topology")
		}
		// While it was unreachable it was a suspect, never down: its process lives and
		// its address answers.
		if i, sus := a.rec.index(func(e MemberEvent) bool { return e.Type == MemberUnreachable && e.Member.ID == bSelf.ID }); i < 0 || !sus["B"] {
			t.Errorf("B unreachable (event %d): A's suspects then %v, want B among them", i, sus)
		}
		if i, _ := a.rec.index(func(e MemberEvent) bool { return e.Type == MemberDown && e.Member.ID == bSelf.ID }); i >= 0 {
			t.Errorf("A took B, alive, for down (event %d)", i)
		}
		if a.prov.Suspects()["B"] {
			t.Error("B, reachable again, is still a suspect")
		}
		eventually.True(t, 5*time.Second, "A resolves B's grain again", func() bool {
			p := a.get(NodeIdentity("B", "pinned"))
			return p != nil && p.Equal(pid)
		})
		if got := a.ask(t, pid, "hi"); got != "n/B/pinned@B" {
			t.Fatalf("answer %q", got)
		}
	})

	t.Run("50 concurrent Gets activate once", func(t *testing.T) {
		identity := NodeIdentity("B", "concurrent")
		pids := make(chan *actor.PID, 150)
		var wg sync.WaitGroup
		for i := 0; i < 50; i++ {
			for _, from := range nodes {
				wg.Add(1)
				go func() { defer wg.Done(); pids <- from.get(identity) }()
			}
		}
		wg.Wait()
		close(pids)
		var first *actor.PID
		for pid := range pids {
			if pid == nil {
				t.Fatal("a Get returned nil")
			}
			if first == nil {
				first = pid
			} else if !first.Equal(pid) {
				t.Fatalf("two PIDs: %v and %v", first, pid)
			}
		}
		activatedOnce(t, "B", identity, 1)
	})

	t.Run("a stopped grain leaves every cache", func(t *testing.T) {
		identity := NodeIdentity("A", "stopme")
		pidA, pidB := a.get(identity), b.get(identity)
		if pidA == nil || !pidA.Equal(pidB) {
			t.Fatalf("PIDs %v, %v", pidA, pidB)
		}
		b.ask(t, pidB, "stop")
		eventually.True(t, 5*time.Second, "cache entries dropped", func() bool {
			return a.look.pids.get(identity, testKind) == nil && b.look.pids.get(identity, testKind) == nil
		})
		again := b.get(identity)
		if again == nil || again.Equal(pidA) {
			t.Fatalf("after stop: %v (old %v)", again, pidA)
		}
		activatedOnce(t, "A", identity, 2)
		if got := b.ask(t, again, "hi"); got != identity+"@A" {
			t.Fatalf("answer %q", got)
		}
	})

	t.Run("actor identity follows its placement key", func(t *testing.T) {
		const actorID = "actor1"
		identity := ActorIdentity(actorID)
		if pid := c.get(identity); pid != nil {
			t.Fatalf("no placement yet, got %v", pid)
		}
		if _, err := store.Put(ctx, gcs.PlacementKey(actorID), []byte("A"), 0); err != nil {
			t.Fatal(err)
		}
		pid := c.get(identity) // may be served by a direct read before the watch catches up
		if pid == nil || pid.Address != a.system.Address() {
			t.Fatalf("placed on A, Get = %v", pid)
		}
		if got := c.ask(t, pid, "hi"); got != identity+"@A" {
			t.Fatalf("answer %q", got)
		}
		if _, err := store.Put(ctx, gcs.PlacementKey(actorID), []byte("B"), 0); err != nil {
			t.Fatal(err)
		}
		eventually.True(t, 5*time.Second, "Get follows the move to B", func() bool {
			p := c.get(identity)
			return p != nil && p.Address == b.system.Address()
		})
		eventually.True(t, 5*time.Second, "the activation on A stops", func() bool {
			return counter(&liveGrains, "A", identity).Load() == 0
		})
		if got := c.ask(t, c.get(identity), "hi"); got != identity+"@B" {
			t.Fatalf("answer %q", got)
		}
		if _, err := store.Delete(ctx, gcs.PlacementKey(actorID)); err != nil {
			t.Fatal(err)
		}
		eventually.True(t, 5*time.Second, "Get returns nil once the placement is gone", func() bool {
			return c.get(identity) == nil && counter(&liveGrains, "B", identity).Load() == 0
		})
	})

	t.Run("bad identity or unknown node gives nil quickly", func(t *testing.T) {
		for _, identity := range []string{"bogus", "n/", "a/", "x/y", NodeIdentity("nosuchnode", "w")} {
			start := time.Now()
			if pid := a.get(identity); pid != nil {
				t.Fatalf("Get(%q) = %v", identity, pid)
			}
			if d := time.Since(start); d > 50*time.Millisecond {
				t.Fatalf("Get(%q) took %v", identity, d)
			}
		}
	})

	t.Run("timings", func(t *testing.T) {
		identity := NodeIdentity("B", "hot")
		ci := cluster.NewClusterIdentity(identity, testKind)
		start := time.Now()
		if a.look.Get(ci) == nil {
			t.Fatal("nil")
		}
		remoteFirst := time.Since(start)
		start = time.Now()
		if a.get(NodeIdentity("A", "hot")) == nil {
			t.Fatal("nil")
		}
		localFirst := time.Since(start)
		if _, err := store.Put(ctx, gcs.PlacementKey("timed"), []byte("C"), 0); err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		if a.get(ActorIdentity("timed")) == nil {
			t.Fatal("nil")
		}
		actorFirst := time.Since(start)
		const n = 200000
		start = time.Now()
		for i := 0; i < n; i++ {
			a.look.Get(ci)
		}
		hot := time.Since(start) / n
		start = time.Now()
		for i := 0; i < n; i++ {
			a.cl.Get(identity, testKind)
		}
		hotCluster := time.Since(start) / n
		t.Logf("first activation: local %v, remote %v, actor (placement just written, remote) %v; hot Get %v (via cluster.Get %v)",
			localFirst, remoteFirst, actorFirst, hot, hotCluster)
	})

	t.Run("lost lease re-registers", func(t *testing.T) {
		old, _ := b.prov.Self()
		kv, ok, err := store.Get(ctx, gcs.MemberKey(old.ID))
		if err != nil || !ok || kv.Lease == 0 {
			t.Fatalf("B's key: %v %v %v", kv, ok, err)
		}
		pinned := b.get(NodeIdentity("B", "pinned"))
		before := map[*testNode]map[string]string{}
		for _, n := range nodes {
			before[n] = n.topology()
		}
		mark := c.rec.mark()
		if err := store.Revoke(ctx, kv.Lease); err != nil {
			t.Fatal(err)
		}
		took := eventually.True(t, 5*time.Second, "B registers a new incarnation", func() bool {
			cur, _ := b.prov.Self()
			if cur.ID == old.ID {
				return false
			}
			_, ok, _ := store.Get(ctx, gcs.MemberKey(cur.ID))
			return ok
		})
		cur, _ := b.prov.Self()
		t.Logf("re-registered as %s in %v", cur.ID, took)
		for _, n := range nodes {
			eventually.True(t, 5*time.Second, n.id+" resolves B to its new incarnation", func() bool {
				m, ok := n.prov.MemberForNode("B")
				return ok && m.ID == cur.ID
			})
			// The MemberList keeps B under the ID it first knew, so nothing churns.
			if after := n.topology(); !maps.Equal(after, before[n]) {
				t.Errorf("%s: topology changed from %v to %v", n.id, before[n], after)
			}
		}
		if _, ok := a.rec.find(func(e MemberEvent) bool { return e.Type == MemberLeft && e.Member.ID == old.ID }); !ok {
			t.Error("A saw no MemberLeft for B's old incarnation")
		}
		if _, ok := a.rec.find(func(e MemberEvent) bool { return e.Type == MemberJoined && e.Member.ID == cur.ID }); !ok {
			t.Error("A saw no MemberJoined for B's new incarnation")
		}
		if _, ok := b.rec.find(func(e MemberEvent) bool { return e.Type == MemberLeft && e.Member.ID == old.ID && e.Self }); !ok {
			t.Error("B saw no self MemberLeft for its old incarnation")
		}
		if _, ok := c.rec.findSince(mark, func(e MemberEvent) bool { return e.Type == MemberUnreachable }); ok {
			t.Error("C saw a member unreachable: the re-registration tore down a connection")
		}
		if e, ok := c.rec.findSince(mark, func(e MemberEvent) bool { return e.Type == MemberGone }); ok {
			t.Errorf("C took a process for gone during B's re-registration: %+v", e)
		}
		// B's grains survive its re-registration and are found again.
		eventually.True(t, 5*time.Second, "pinned grain on B resolves", func() bool {
			p := a.get(NodeIdentity("B", "pinned"))
			return p != nil && p.Equal(pinned)
		})
		if got := a.ask(t, a.get(NodeIdentity("B", "pinned")), "hi"); got != "n/B/pinned@B" {
			t.Fatalf("answer %q", got)
		}
	})

	// What peers see of a member during a GCS outage longer than its lease: its key goes
	// (here deleted while its lease lives on, so it does not register again by itself),
	// and its node stays, with its grains reachable, for the grace period (LeaseTTL); only
	// then is its process gone.
	t.Run("a reachable member whose key went keeps its node for the grace period", func(t *testing.T) {
		self, _ := b.prov.Self()
		kv, ok, err := store.Get(ctx, gcs.MemberKey(self.ID))
		if err != nil || !ok {
			t.Fatalf("B's key: %v %v %v", kv, ok, err)
		}
		mark := a.rec.mark()
		if _, err := store.Delete(ctx, gcs.MemberKey(self.ID)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		eventually.True(t, 5*time.Second, "A sees B's incarnation leave", func() bool {
			_, ok := a.rec.findSince(mark, func(e MemberEvent) bool { return e.Type == MemberLeft && e.Member.ID == self.ID })
			return ok
		})
		if _, ok := a.prov.Nodes()["B"]; !ok && time.Since(start) < testTTL/2 {
			t.Fatalf("A dropped B's node %v after its key went, within the grace period", time.Since(start))
		}
		if got := a.ask(t, a.get(NodeIdentity("B", "pinned")), "hi"); got != "n/B/pinned@B" {
			t.Fatalf("B's grain during the grace period answered %q", got)
		}
		eventually.True(t, testTTL+5*time.Second, "A takes B's process for gone after the grace period", func() bool {
			_, ok := a.rec.findSince(mark, func(e MemberEvent) bool { return e.Type == MemberGone && e.Member.Address == self.Address })
			return ok
		})
		if gone := time.Since(start); gone < testTTL-500*time.Millisecond {
			t.Errorf("MemberGone for B after %v, before the grace period (%v) was over", gone, testTTL)
		}
		if _, ok := a.prov.Nodes()["B"]; ok {
			t.Error("B's node still in A's index after MemberGone")
		}
		// B joins again once its lease goes too.
		if err := store.Revoke(ctx, kv.Lease); err != nil {
			t.Fatal(err)
		}
		for _, n := range []*testNode{a, c} {
			eventually.True(t, 10*time.Second, n.id+" sees B again", func() bool {
				_, ok := n.prov.Nodes()["B"]
				return ok && n.topologySize() == 3
			})
		}
	})

	t.Run("a dead member is detected at once and leaves within the TTL", func(t *testing.T) {
		self, _ := c.prov.Self()
		if a.get(NodeIdentity("C", "pinned")) == nil {
			t.Fatal("C not resolvable before the kill")
		}
		start := time.Now()
		// A crash: the remote server dies and nothing else of C runs any more (its
		// provider and lookup stop their loops when they see the actor system stopped; its
		// actors linger in this process but receive nothing). The lease is not revoked.
		c.cl.Shutdown(false)
		c.stopped = true
		for _, n := range []*testNode{a, b} {
			eventually.True(t, 5*time.Second, n.id+" sees C unreachable", func() bool {
				_, ok := n.rec.find(func(e MemberEvent) bool { return e.Type == MemberUnreachable && e.Member.ID == self.ID })
				return ok
			})
		}
		unreachable := time.Since(start)
		// Its address refuses connections: down, not a suspect, well before its lease
		// lapses (MemberLeft).
		for _, n := range []*testNode{a, b} {
			eventually.True(t, testTTL, n.id+" sees C down", func() bool {
				i, sus := n.rec.index(func(e MemberEvent) bool { return e.Type == MemberDown && e.Member.ID == self.ID })
				return i >= 0 && !sus["C"]
			})
		}
		if pid := a.get(NodeIdentity("C", "pinned")); pid != nil {
			t.Fatalf("Get on dead C = %v", pid) // the cached PID went with the Unreachable event
		}
		if pid := a.get(NodeIdentity("C", "fresh")); pid != nil {
			t.Fatalf("Get on dead C = %v", pid)
		}
		for _, n := range []*testNode{a, b, client} {
			eventually.True(t, testTTL+5*time.Second, n.id+" drops C from the topology", func() bool {
				return !n.hasAddr(c.addr()) && n.topologySize() == 2 &&
					(n == client || len(n.prov.Nodes()) == 2)
			})
		}
		left := time.Since(start)
		t.Logf("C killed: unreachable after %v, out of the topology after %v (TTL %v)", unreachable, left, testTTL)
		if _, ok := a.rec.find(func(e MemberEvent) bool { return e.Type == MemberLeft && e.Member.ID == self.ID }); !ok {
			t.Error("no MemberLeft for C")
		}
		downAt, _ := a.rec.index(func(e MemberEvent) bool { return e.Type == MemberDown && e.Member.ID == self.ID })
		leftAt, _ := a.rec.index(func(e MemberEvent) bool { return e.Type == MemberLeft && e.Member.ID == self.ID })
		if downAt > leftAt {
			t.Errorf("A saw C down (event %d) only after its key went (event %d): the refused dial did not tell it", downAt, leftAt)
		}
		eventually.True(t, 5*time.Second, "A sees C's process gone", func() bool { // published after the topology
			_, ok := a.rec.find(func(e MemberEvent) bool { return e.Type == MemberGone && e.Member.Address == self.Address })
			return ok
		})
	})

	t.Run("graceful leave revokes the lease", func(t *testing.T) {
		self, _ := a.prov.Self()
		start := time.Now()
		a.leave(t, b, client)
		eventually.True(t, 5*time.Second, "B drops A", func() bool { return !b.hasAddr(a.addr()) && b.topologySize() == 1 })
		t.Logf("graceful leave seen by B after %v", time.Since(start))
		if _, ok, _ := store.Get(ctx, gcs.MemberKey(self.ID)); ok {
			t.Error("A's key still there")
		}
		if pid := b.get(NodeIdentity("A", "pinned")); pid != nil {
			t.Fatalf("Get on departed A = %v", pid)
		}
	})
}

func TestIdentity(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Identity
		ok   bool
	}{
		{"n/node1/worker/3", Identity{Kind: NodePinned, NodeID: "node1", Rest: "worker/3"}, true},
		{"n/node1", Identity{Kind: NodePinned, NodeID: "node1"}, true},
		{"n/node1/", Identity{Kind: NodePinned, NodeID: "node1"}, true},
		{"a/00ff", Identity{Kind: ActorPlaced, ActorID: "00ff"}, true},
		{"a/x/y", Identity{Kind: ActorPlaced, ActorID: "x/y"}, true},
		{"n/", Identity{}, false},
		{"n//x", Identity{}, false},
		{"a/", Identity{}, false},
		{"", Identity{}, false},
		{"node1", Identity{}, false},
	} {
		got, err := ParseIdentity(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseIdentity(%q) = %+v, %v", tc.in, got, err)
		}
	}
	if s := NodeIdentity("n1", "w/2"); s != "n/n1/w/2" {
		t.Error(s)
	}
	if s := NodeIdentity("n1", ""); s != "n/n1" {
		t.Error(s)
	}
	if s := ActorIdentity("ab"); s != "a/ab" {
		t.Error(s)
	}
	id, _ := ParseIdentity("n/n1/w/2")
	if id.String() != "n/n1/w/2" {
		t.Error(id.String())
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := NewProvider(Config{}); err == nil {
		t.Error("no store accepted")
	}
	if _, err := NewProvider(Config{Store: memstore.New(memstore.Options{}), NodeID: "a/b"}); err == nil {
		t.Error("node ID with / accepted")
	}
	if _, err := NewLookup(LookupConfig{}); err == nil {
		t.Error("no store accepted")
	}

}

// newTestStore starts an embedded etcd for the test and returns an in-process client and
// the server's client address (host:port).
func newTestStore(t *testing.T) (gcs.Store, string) {
	t.Helper()
	e, err := etcdstore.StartEmbedded(context.Background(), etcdstore.EmbedConfig{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	u, err := url.Parse(e.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	return e.Client(), u.Host
}
