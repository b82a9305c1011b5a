package clusterview

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// fixture is a view over an in-memory GCS, with a membership and grain resolution the
// test controls.
type fixture struct {
	t       *testing.T
	store   *memstore.Store
	selfID  string
	v       *View
	members sync.Map // node ID -> bool
	noRay   sync.Map // node IDs whose raylet does not resolve
	suspect sync.Map // node IDs the membership suspects
	changed atomic.Int64
	// loadsIdle is Config.LoadsIdle; loadWatches counts the watches of the load reports
	// opened, loadWatching those open now.
	loadsIdle                 time.Duration
	loadWatches, loadWatching atomic.Int64
	// local is Config.Local (nil: none).
	local func(known uint64) (LocalLoad, bool)
	// followPeers and othersRefresh are Config.FollowPeers and Config.OthersRefresh;
	// keyWatching counts the watches of one node's report open now (key -> *atomic.Int64),
	// loadLists the listings of the load reports.
	followPeers   int
	othersRefresh time.Duration
	keyWatching   sync.Map
	loadLists     atomic.Int64
	// loadGets are the keys of the reports read one by one, in order.
	getMu    sync.Mutex
	loadGets []string
	// nodesGate, if set, holds the watch's events of the node table until it is closed.
	nodesGate chan struct{}
	// job is Config.Job.
	job string
}

// watchCounter counts the fixture's watches of the load reports.
type watchCounter struct {
	gcs.Store
	f *fixture
}

func (w watchCounter) Get(ctx context.Context, key string) (gcs.KV, bool, error) {
	if strings.HasPrefix(key, gcs.LoadPrefix) {
		w.f.getMu.Lock()
		w.f.loadGets = append(w.f.loadGets, key)
		w.f.getMu.Unlock()
	}
	return w.Store.Get(ctx, key)
}

func (w watchCounter) List(ctx context.Context, prefix string) ([]gcs.KV, int64, error) {
	if prefix == gcs.LoadPrefix {
		w.f.loadLists.Add(1)
	}
	return w.Store.List(ctx, prefix)
}

func (w watchCounter) Watch(ctx context.Context, prefix string, rev int64) <-chan gcs.WatchResponse {
	in := w.Store.Watch(ctx, prefix, rev)
	if gate := w.f.nodesGate; prefix == gcs.NodesPrefix && gate != nil {
		return relay(ctx, in, func() {
			select {
			case <-gate:
			case <-ctx.Done():
			}
		}, func() {})
	}
	open := &w.f.loadWatching
	switch {
	case prefix == gcs.LoadPrefix:
		w.f.loadWatches.Add(1)
	case strings.HasPrefix(prefix, gcs.LoadPrefix):
		c, _ := w.f.keyWatching.LoadOrStore(prefix, new(atomic.Int64))
		open = c.(*atomic.Int64)
	default:
		return in
	}
	open.Add(1)
	return relay(ctx, in, func() {}, func() { open.Add(-1) })
}

// relay passes in's responses on, after before returned, until in ends or ctx does (then
// it drains in); after runs when it stops.
func relay(ctx context.Context, in <-chan gcs.WatchResponse, before, after func()) <-chan gcs.WatchResponse {
	out := make(chan gcs.WatchResponse)
	go func() {
		defer after()
		defer close(out)
		before()
		for r := range in {
			select {
			case out <- r:
			case <-ctx.Done():
				for range in {
				}
				return
			}
		}
	}()
	return out
}

func res(t *testing.T, cpu float64) sched.Resources {
	t.Helper()
	r, err := sched.FromMap(map[string]float64{"CPU": cpu})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newFixture(t *testing.T, self string) *fixture {
	f := &fixture{t: t, store: memstore.New(memstore.Options{}), selfID: self}
	f.members.Store(self, true)
	return f
}

func (f *fixture) start() {
	v, err := Start(context.Background(), Config{
		Self: ids.NodeID(f.self()), Store: watchCounter{Store: f.store, f: f}, LoadsIdle: f.loadsIdle,
		FollowPeers: f.followPeers, OthersRefresh: f.othersRefresh, Job: f.job,
		RunsTasks: func(info *pb.NodeInfo) bool { return info.Role != "driver" },
		Member:    func(node string) bool { _, ok := f.members.Load(node); return ok },
		Suspect:   func(node string) bool { _, ok := f.suspect.Load(node); return ok },
		Raylet: func(node ids.NodeID) *actor.PID {
			if _, no := f.noRay.Load(string(node)); no {
				return nil
			}
			return actor.NewPID("addr-"+string(node), "raylet")
		},
		StoreGrain: func(node ids.NodeID) *actor.PID { return actor.NewPID("addr-"+string(node), "store") },
		Changed:    func() { f.changed.Add(1) },
		Local:      f.local,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.v = v
	f.t.Cleanup(v.Stop)
}

func (f *fixture) self() string { return f.selfID }

func (f *fixture) putNode(id, role string, cpu float64, data string) {
	f.t.Helper()
	b, _ := proto.Marshal(&pb.NodeInfo{NodeId: id, Role: role, DataAddress: data, Total: tasks.ResourcesToPB(res(f.t, cpu))})
	if _, err := f.store.Put(context.Background(), gcs.NodeKey(id), b, 0); err != nil {
		f.t.Fatal(err)
	}
	f.members.Store(id, true)
}

func (f *fixture) putLoad(id string, avail float64, queued int) {
	f.t.Helper()
	b, _ := proto.Marshal(&pb.NodeLoad{NodeId: id, Available: tasks.ResourcesToPB(res(f.t, avail)), Queued: int32(queued)})
	if _, err := f.store.Put(context.Background(), gcs.LoadKey(id), b, 0); err != nil {
		f.t.Fatal(err)
	}
}

func TestPlaceCountsOwnPlacementsUntilTheNextReport(t *testing.T) {
	f := newFixture(t, "a")
	f.putNode("a", "local", 2, "")
	f.start()
	p := f.v.Placer(0)
	req := sched.Request{Resources: res(t, 1)}
	for i := 0; i < 2; i++ {
		if n, err := p.Place(req); err != nil || n != "a" {
			t.Fatalf("placement %d: %v %v", i, n, err)
		}
	}
	if got := p.own["a"].avail; !got.IsZero() {
		t.Fatalf("after two placements of 1 CPU on a 2-CPU node, the placer counts %v available", got)
	}
	// A second placer of the same view does not see the first's placements.
	if got := f.v.Placer(1).account(f.v.load(), 0).avail; !got.Equal(res(t, 2)) {
		t.Fatalf("another placer starts from %v, want the node's 2 CPUs", got)
	}
	p.Done("a", res(t, 1))
	if got := p.own["a"].avail; !got.Equal(res(t, 1)) {
		t.Fatalf("after Done the placer counts %v available, want 1 CPU", got)
	}
	// A load report starts the account again from the node's own figure.
	f.putLoad("a", 0.5, 3)
	eventually.True(t, 5*time.Second, "the load report", func() bool { return f.v.load().reports[0] != 0 })
	if _, err := p.Place(req); err != nil {
		t.Fatal(err)
	}
	if got, want := p.own["a"].avail, res(t, 0.5).Sub(res(t, 1)); !got.Equal(want) {
		t.Fatalf("after the report and one placement: %v available, want %v", got, want)
	}
	// Done of a placement made before a report that counted it as busy gives its
	// resources back at once (never beyond the total).
	f.putLoad("a", 1, 0)
	eventually.True(t, 5*time.Second, "the second load report", func() bool { return f.v.load().nodes[0].Available.Equal(res(t, 1)) })
	p.Done("a", res(t, 1))
	if a := p.own["a"]; a.report != f.v.load().reports[0] || !a.avail.Equal(res(t, 2)) {
		t.Fatalf("after Done of an older placement: account at report %d with %v, want the new report with 2 CPUs", a.report, a.avail)
	}
	p.Done("a", res(t, 1))
	if a := p.own["a"]; !a.avail.Equal(res(t, 2)) {
		t.Fatalf("Done gave back beyond the total: %v", a.avail)
	}
}

func TestPlaceSpillsToAnotherNodeOnceTheLocalOneIsFull(t *testing.T) {
	f := newFixture(t, "a")
	f.putNode("a", "local", 1, "")
	f.putNode("b", "worker", 4, "")
	f.start()
	p := f.v.Placer(0)
	req := sched.Request{Resources: res(t, 1)}
	seen := map[ids.NodeID]int{}
	for i := 0; i < 5; i++ {
		n, err := p.Place(req)
		if err != nil {
			t.Fatal(err)
		}
		seen[n]++
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Fatalf("5 one-CPU tasks on a 1-CPU local node and a 4-CPU node went to %v; want both used", seen)
	}
}

func TestSpreadRotatesPerPlacer(t *testing.T) {
	f := newFixture(t, "a")
	for _, id := range []string{"a", "b", "c"} {
		f.putNode(id, "worker", 8, "")
	}
	f.start()
	p := f.v.Placer(0)
	req := sched.Request{Resources: res(t, 1), Strategy: sched.Spread}
	seen := map[ids.NodeID]bool{}
	for i := 0; i < 3; i++ {
		n, err := p.Place(req)
		if err != nil {
			t.Fatal(err)
		}
		seen[n] = true
	}
	if len(seen) != 3 {
		t.Fatalf("3 spread placements used %d node(s): %v", len(seen), seen)
	}
}

func TestGoneSuspectAndDrivers(t *testing.T) {
	f := newFixture(t, "a")
	f.putNode("a", "local", 1, "a:1")
	f.putNode("b", "worker", 1, "b:1")
	f.putNode("d", "driver", 0, "d:1")
	f.start()
	v := f.v
	if got := len(v.Nodes()); got != 2 {
		t.Fatalf("Nodes() = %d records, want 2 (the driver runs no tasks)", got)
	}
	if v.DataAddress("d") != "d:1" {
		t.Fatalf("a driver's data address is kept: got %q", v.DataAddress("d"))
	}
	v.MarkGone("b", "test")
	if v.Alive("b") || len(v.Nodes()) != 1 {
		t.Fatalf("after MarkGone: Alive(b)=%v, %d nodes", v.Alive("b"), len(v.Nodes()))
	}
	if !v.Alive("a") {
		t.Fatal("a view's own node is always alive")
	}
	v.MarkAlive("b")
	if !v.Alive("b") {
		t.Fatal("MarkAlive did not undo MarkGone")
	}
	// A node whose scheduler does not resolve is left out of placement for a while.
	f.noRay.Store("b", true)
	if v.Raylet("b") != nil {
		t.Fatal("Raylet(b) resolved a node told to fail")
	}
	p := v.Placer(0)
	for i := 0; i < 4; i++ {
		n, err := p.Place(sched.Request{Resources: res(t, 1), Strategy: sched.Spread})
		if err != nil {
			t.Fatal(err)
		}
		if n == "b" {
			t.Fatal("placed on a suspect node")
		}
	}
	// A member that left is not alive, whatever its record says.
	f.members.Delete("b")
	if v.Alive("b") {
		t.Fatal("a node that left the membership is alive")
	}
}

// TestAffinityTakesAnAgentID: a hard NodeAffinity may name the machine by its agent's ID,
// as `rayctl list nodes` shows it; the job's worker process there is the node. It failed
// with "not in the cluster view": the worker process's ID changes with every job.
func TestAffinityTakesAnAgentID(t *testing.T) {
	f := newFixture(t, "a")
	f.putNode("a", "local", 2, "")
	b, _ := proto.Marshal(&pb.NodeInfo{NodeId: "b", Role: "worker", AgentId: "m2", Total: tasks.ResourcesToPB(res(t, 2))})
	if _, err := f.store.Put(context.Background(), gcs.NodeKey("b"), b, 0); err != nil {
		t.Fatal(err)
	}
	f.members.Store("b", true)
	f.start()
	p := f.v.Placer(0)
	for _, target := range []string{"m2", "b"} {
		if n, err := p.Place(sched.Request{Resources: res(t, 1), Strategy: sched.NodeAffinity, AffinityNode: target}); err != nil || n != "b" {
			t.Fatalf("hard affinity to %q: %q, %v; want the worker process b", target, n, err)
		}
		p.Done("b", res(t, 1))
	}
	f.v.MarkGone("b", "test")
	if _, err := p.Place(sched.Request{Resources: res(t, 1), Strategy: sched.NodeAffinity, AffinityNode: "m2"}); !errors.Is(err, sched.ErrAffinityUnavailable) {
		t.Fatalf("hard affinity to the agent of a dead worker process: %v, want ErrAffinityUnavailable", err)
	}
}

// A hard node affinity for a node that may live (its scheduler unresolved for now, or its
// connection broken while the membership suspects it) waits; for a node known dead it fails.
func TestHardAffinityWaitsForASuspectNode(t *testing.T) {
	f := newFixture(t, "a")
	f.putNode("a", "local", 1, "a:1")
	f.putNode("b", "worker", 1, "b:1")
	f.putNode("c", "worker", 1, "c:1")
	f.start()
	v, p := f.v, f.v.Placer(0)
	hard := func(node string) error {
		_, err := p.Place(sched.Request{Resources: res(t, 1), Strategy: sched.NodeAffinity, AffinityNode: node})
		return err
	}
	if err := hard("b"); err != nil {
		t.Fatalf("an alive node: %v", err)
	}
	p.Done("b", res(t, 1))

	// Its scheduler does not resolve (starting, or dead and not yet reported here).
	f.noRay.Store("b", true)
	if v.Raylet("b") != nil {
		t.Fatal("Raylet(b) resolved a node told to fail")
	}
	if err := hard("b"); !errors.Is(err, sched.ErrAffinitySuspect) {
		t.Fatalf("a node whose scheduler is unresolved for now: %v, want ErrAffinitySuspect", err)
	}
	// Not a member (yet, or any more) while nothing said it is gone: it waits.
	f.members.Delete("b")
	if err := hard("b"); !errors.Is(err, sched.ErrAffinitySuspect) {
		t.Fatalf("a node whose record is here and its member not: %v, want ErrAffinitySuspect", err)
	}
	// The membership reports it gone (MemberUnreachable or MemberGone): dead.
	v.MarkGone("b", "test")
	if err := hard("b"); !errors.Is(err, sched.ErrAffinityUnavailable) {
		t.Fatalf("a node that left the membership: %v, want ErrAffinityUnavailable", err)
	}

	// Unreachable (MarkGone) while the membership suspects it: it waits, and is placed on
	// again once reachable.
	v.MarkGone("c", "test")
	f.members.Delete("c")
	f.suspect.Store("c", true)
	if err := hard("c"); !errors.Is(err, sched.ErrAffinitySuspect) {
		t.Fatalf("a node the membership suspects: %v, want ErrAffinitySuspect", err)
	}
	if n, err := p.Place(sched.Request{Resources: res(t, 1)}); err != nil || n != "a" {
		t.Fatalf("a default request placed on %q (%v): nothing goes to a suspect", n, err)
	}
	p.Done("a", res(t, 1))
	f.suspect.Delete("c")
	f.members.Store("c", true)
	v.MarkAlive("c")
	if err := hard("c"); err != nil {
		t.Fatalf("a suspect that answered again: %v", err)
	}
	p.Done("c", res(t, 1))
	// Unreachable, then known down (the membership no longer suspects it): it fails.
	v.MarkGone("c", "test")
	f.members.Delete("c")
	if err := hard("c"); !errors.Is(err, sched.ErrAffinityUnavailable) {
		t.Fatalf("a node known down: %v, want ErrAffinityUnavailable", err)
	}
}

// TestANodeNotYetAMemberIsWaitedFor: a node registers its member and then its record, and
// this process's membership can learn of the member after the view learns of the record (a
// worker process started beside the submitter). A task that only that node could run waits
// for it (sched.ErrSuspectOnly; Feasible says nothing against it) and is placed there once
// it is a member; it fails as infeasible only once the node is known gone. Before, it failed
// at once as infeasible (e2e TestCancelRecursiveAcrossNodes, once a process no longer slept
// a second after it joined).
func TestANodeNotYetAMemberIsWaitedFor(t *testing.T) {
	f := newFixture(t, "a")
	f.putNode("a", "local", 2, "")
	f.start()
	far, err := sched.FromMap(map[string]float64{"CPU": 1, "far": 1})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := proto.Marshal(&pb.NodeInfo{NodeId: "b", Role: "worker", Total: tasks.ResourcesToPB(far)})
	if _, err := f.store.Put(context.Background(), gcs.NodeKey("b"), b, 0); err != nil { // the record; no member yet
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "node b's record", func() bool { _, ok := f.v.load().index["b"]; return ok })
	v, p := f.v, f.v.Placer(0)
	if err := v.Feasible(far); err != nil {
		t.Fatalf("Feasible of what only a node not yet a member has: %v, want nil (the task waits)", err)
	}
	for _, strategy := range []sched.Strategy{sched.Default, sched.Spread} {
		if n, err := p.Place(sched.Request{Resources: far, Strategy: strategy}); !errors.Is(err, sched.ErrSuspectOnly) {
			t.Fatalf("%v placement of what only a node not yet a member has: %q, %v; want sched.ErrSuspectOnly", strategy, n, err)
		}
	}
	f.members.Store("b", true) // its member reaches this process's membership
	if n, err := p.Place(sched.Request{Resources: far}); err != nil || n != "b" {
		t.Fatalf("once b is a member: placed on %q, %v; want b", n, err)
	}
	p.Done("b", far)
	f.members.Delete("b")
	v.MarkGone("b", "killed in the test") // and then it dies
	var inf *sched.InfeasibleError
	err = v.Feasible(far)
	if !errors.As(err, &inf) {
		t.Fatalf("Feasible once the only node that had it is gone: %v, want an *InfeasibleError", err)
	}
	// The error says which node had it and why it is gone (it read as if none ever had).
	if !strings.Contains(err.Error(), "node b, which had it, died") || !strings.Contains(err.Error(), "(killed in the test)") {
		t.Fatalf("Feasible's error %q does not name the dead node that had it", err)
	}
	if _, err := p.Place(sched.Request{Resources: far}); !errors.As(err, &inf) {
		t.Fatalf("placement once the only node that had it is gone: %v, want an *InfeasibleError", err)
	}
}

// TestFeasibleReadsTheNodeTableBeforeItSaysNo: a node registered a moment ago whose record
// the view's watch has not delivered yet may hold what a task asks for; Feasible reads the
// node table before it says a request is infeasible, and applies the newer records.
func TestFeasibleReadsTheNodeTableBeforeItSaysNo(t *testing.T) {
	f := newFixture(t, "a")
	f.nodesGate = make(chan struct{})
	f.putNode("a", "local", 2, "")
	f.start()
	far, err := sched.FromMap(map[string]float64{"CPU": 1, "far": 1})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := proto.Marshal(&pb.NodeInfo{NodeId: "b", Role: "worker", Total: tasks.ResourcesToPB(far)})
	if _, err := f.store.Put(context.Background(), gcs.NodeKey("b"), b, 0); err != nil {
		t.Fatal(err)
	}
	f.members.Store("b", true)
	if _, ok := f.v.load().index["b"]; ok {
		t.Fatal("the view has b's record although its watch holds the events")
	}
	if err := f.v.Feasible(far); err != nil {
		t.Fatalf("Feasible of what a node registered a moment ago has: %v, want nil", err)
	}
	if n, err := f.v.Placer(0).Place(sched.Request{Resources: far}); err != nil || n != "b" {
		t.Fatalf("placed on %q, %v; want b (its record read by Feasible)", n, err)
	}
	var inf *sched.InfeasibleError
	if err := f.v.Feasible(res(t, 64)); !errors.As(err, &inf) {
		t.Fatalf("64 CPUs: %v, want an *InfeasibleError", err)
	}
	close(f.nodesGate) // the watch delivers b's record again, and a deletion after it
	if _, err := f.store.Delete(context.Background(), gcs.NodeKey("b")); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "b's record to go", func() bool { _, ok := f.v.load().index["b"]; return !ok })
	if err := f.v.Feasible(far); !errors.As(err, &inf) {
		t.Fatalf("once b's record is gone: %v, want an *InfeasibleError", err)
	}
}

// TestATaskWaitsForAMachineWhoseWorkerProcessIsToCome: a machine that joins a running
// job's cluster (`rayctl start`) starts a worker process for the job, which registers a
// moment later. A task that only that machine could run waits for it (Feasible says
// nothing against it, placement says sched.ErrSuspectOnly) and is placed on the worker
// process once it registers; when the agent says the job cannot run there (UNSUPPORTED),
// or the agent is gone, the task is infeasible. Before, it failed as infeasible at once,
// telling the user to add the machine they had just added.
func TestATaskWaitsForAMachineWhoseWorkerProcessIsToCome(t *testing.T) {
	f := newFixture(t, "a")
	f.job = "j1"
	f.putNode("a", "local", 2, "")
	f.start()
	ctx := context.Background()
	far, err := sched.FromMap(map[string]float64{"CPU": 1, "far": 1})
	if err != nil {
		t.Fatal(err)
	}
	put := func(key string, m proto.Message) {
		t.Helper()
		b, _ := proto.Marshal(m)
		if _, err := f.store.Put(ctx, key, b, 0); err != nil {
			t.Fatal(err)
		}
	}
	var inf *sched.InfeasibleError
	if err := f.v.Feasible(far); !errors.As(err, &inf) {
		t.Fatalf("before the machine joins: %v, want an *InfeasibleError", err)
	}
	// The machine joins: its agent's record and alive key; no worker process of j1 yet.
	put(gcs.AgentKey("m2"), &pb.AgentInfo{AgentId: "m2", Total: tasks.ResourcesToPB(far)})
	if _, err := f.store.Put(ctx, gcs.AgentAliveKey("m2"), []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.v.Feasible(far); err != nil {
		t.Fatalf("a machine whose worker process of the job is to come has it: %v, want nil (the task waits)", err)
	}
	p := f.v.Placer(0)
	if n, err := p.Place(sched.Request{Resources: far}); !errors.Is(err, sched.ErrSuspectOnly) {
		t.Fatalf("placement while the worker process is to come: %q, %v; want sched.ErrSuspectOnly", n, err)
	}
	// Another job's worker process there does not count.
	put(gcs.JobWorkerKey("j2", "m2"), &pb.JobWorker{JobId: "j2", AgentId: "m2", State: pb.JobWorker_RUNNING, NodeId: "w-j2"})
	if err := f.v.Feasible(far); err != nil {
		t.Fatalf("with another job's worker process there: %v, want nil", err)
	}
	// Its worker process of j1 registers: the task is placed there.
	put(gcs.JobWorkerKey("j1", "m2"), &pb.JobWorker{JobId: "j1", AgentId: "m2", State: pb.JobWorker_RUNNING, NodeId: "b"})
	b, _ := proto.Marshal(&pb.NodeInfo{NodeId: "b", Role: "worker", Total: tasks.ResourcesToPB(far)})
	if _, err := f.store.Put(ctx, gcs.NodeKey("b"), b, 0); err != nil {
		t.Fatal(err)
	}
	f.members.Store("b", true)
	eventually.True(t, 5*time.Second, "b placed on", func() bool {
		n, err := p.Place(sched.Request{Resources: far})
		if err == nil {
			p.Done(n, far)
		}
		return err == nil && n == "b"
	})
	// It goes, and the agent says the job cannot run there: infeasible again.
	if _, err := f.store.Delete(ctx, gcs.NodeKey("b")); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "b's record to go", func() bool { _, ok := f.v.load().index["b"]; return !ok })
	// A waiting placement keeps the reading fresh (askComing), so it learns that.
	put(gcs.JobWorkerKey("j1", "m2"), &pb.JobWorker{JobId: "j1", AgentId: "m2", State: pb.JobWorker_UNSUPPORTED, Message: "GOOS"})
	eventually.True(t, 5*time.Second, "placement infeasible once the agent cannot run the job", func() bool {
		_, err := p.Place(sched.Request{Resources: far})
		return errors.As(err, &inf)
	})
	// A STARTING worker process is coming again; not once its agent is gone.
	put(gcs.JobWorkerKey("j1", "m2"), &pb.JobWorker{JobId: "j1", AgentId: "m2", State: pb.JobWorker_STARTING})
	if err := f.v.Feasible(far); err != nil {
		t.Fatalf("a STARTING worker process: %v, want nil", err)
	}
	if _, err := f.store.Delete(ctx, gcs.AgentAliveKey("m2")); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "placement infeasible once the agent is gone", func() bool {
		_, err := p.Place(sched.Request{Resources: far})
		return errors.As(err, &inf)
	})
	if err := f.v.Feasible(far); !errors.As(err, &inf) {
		t.Fatalf("Feasible once the agent is gone: %v, want an *InfeasibleError", err)
	}
	// A reading is not used once comingFor old.
	if _, err := f.store.Put(ctx, gcs.AgentAliveKey("m2"), []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.v.refreshComing(ctx); err != nil {
		t.Fatal(err)
	}
	if nodes := f.v.load().addComing(nil, time.Now()); len(nodes) != 1 {
		t.Fatalf("a fresh reading gives %v, want the one coming node", nodes)
	}
	late := time.Now().Add(comingFor)
	if nodes := f.v.load().addComing(nil, late); len(nodes) != 0 {
		t.Fatalf("a reading %v old is used: %v", comingFor, nodes)
	}
}

func TestRayletIsCachedAndNodesLeave(t *testing.T) {
	f := newFixture(t, "a")
	f.putNode("a", "local", 1, "")
	f.start()
	calls := 0
	f.v.cfg.Raylet = func(node ids.NodeID) *actor.PID { calls++; return actor.NewPID("x", "raylet") }
	for i := 0; i < 3; i++ {
		if f.v.Raylet("a") == nil {
			t.Fatal("no raylet")
		}
	}
	if calls != 1 {
		t.Fatalf("Raylet resolved %d times, want once (cached)", calls)
	}
	f.putNode("b", "worker", 2, "")
	eventually.True(t, 5*time.Second, "node b", func() bool { return len(f.v.Nodes()) == 2 })
	if f.changed.Load() == 0 {
		t.Fatal("Changed was not called after a node joined")
	}
	if _, err := f.store.Delete(context.Background(), gcs.NodeKey("b")); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "node b's record to go", func() bool { return len(f.v.Nodes()) == 1 })
}

func TestFeasible(t *testing.T) {
	f := newFixture(t, "a")
	f.start()
	if err := f.v.Feasible(res(t, 64)); err != nil {
		t.Fatalf("with no node known, tasks wait: got %v", err)
	}
	f.putNode("a", "local", 2, "")
	eventually.True(t, 5*time.Second, "node a", func() bool { return len(f.v.Nodes()) == 1 })
	var inf *sched.InfeasibleError
	if err := f.v.Feasible(res(t, 64)); !errors.As(err, &inf) {
		t.Fatalf("64 CPUs on a 2-CPU cluster: got %v, want an *InfeasibleError", err)
	}
	if err := f.v.Feasible(res(t, 2)); err != nil {
		t.Fatal(err)
	}
}

// TestPlacersDoNotShareState: placers of one view used from many goroutines at once while
// the view changes (run with -race: a shared map or counter would be reported).
func TestPlacersDoNotShareState(t *testing.T) {
	f := newFixture(t, "a")
	f.putNode("a", "local", 4, "")
	f.putNode("b", "worker", 4, "")
	f.start()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		p := f.v.Placer(uint64(g))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				n, err := p.Place(sched.Request{Resources: res(t, 1)})
				if err != nil {
					t.Error(err)
					return
				}
				p.Done(n, res(t, 1))
				_ = f.v.Alive(n)
				_ = f.v.Raylet(n)
			}
		}()
	}
	for i := 0; i < 20; i++ {
		f.putLoad("b", float64(i%4), i)
		f.v.MarkGone("b", "test")
		f.v.MarkAlive("b")
	}
	wg.Wait()
}

// TestLoadsFollowedOnlyWhilePlacementsNeedThem: a view whose placements are all bound to
// a node (hard affinity) watches no load report; one that places a task by the policy
// follows them, and stops LoadsIdle after the last such placement; Available reads the
// reports as they are now, followed or not.
func TestLoadsFollowedOnlyWhilePlacementsNeedThem(t *testing.T) {
	f := newFixture(t, "a")
	f.loadsIdle = 50 * time.Millisecond
	f.putNode("a", "local", 2, "")
	f.putNode("b", "worker", 2, "")
	f.start()
	p := f.v.Placer(0)
	pinned := sched.Request{Resources: res(t, 1), Strategy: sched.NodeAffinity, AffinityNode: "b"}
	for range 10 {
		if n, err := p.Place(pinned); err != nil || n != "b" {
			t.Fatalf("a task pinned to b: %v %v", n, err)
		}
		if _, ok := p.Spill(pinned, "b"); ok {
			t.Fatal("a task pinned to b spilled")
		}
	}
	f.putLoad("b", 0, 5)
	if f.v.FollowingLoads() || f.loadWatches.Load() != 0 {
		t.Fatalf("after placements bound to a node only: following %v, %d load watches opened, want none", f.v.FollowingLoads(), f.loadWatches.Load())
	}
	// Available lists the reports now, whether followed or not.
	if got := f.v.Available()["b"]; !got.IsZero() {
		t.Fatalf("Available()[b] = %v right after b reported 0 free, want 0", got)
	}
	// A task the policy places makes the view follow the reports: it sees b's next one.
	if _, err := p.Place(sched.Request{Resources: res(t, 1)}); err != nil {
		t.Fatal(err)
	}
	if !f.v.FollowingLoads() {
		t.Fatal("a policy placement did not start following the load reports")
	}
	eventually.True(t, 5*time.Second, "the load watch", func() bool { return f.loadWatching.Load() == 1 })
	f.putLoad("b", 2, 0)
	eventually.True(t, 5*time.Second, "b's report in the view", func() bool {
		s := f.v.load()
		return s.nodes[s.index["b"]].Available.Equal(res(t, 2))
	})
	// With no placement needing them, the view stops following (and watching) them.
	eventually.True(t, 5*time.Second, "the follower to stop", func() bool {
		return !f.v.FollowingLoads() && f.loadWatching.Load() == 0
	})
	// A report written meanwhile is not in the snapshot; Available still gives it, and a
	// new placement by the policy follows again.
	f.putLoad("b", 1, 0)
	if got := f.v.Available()["b"]; !got.Equal(res(t, 1)) {
		t.Fatalf("Available()[b] = %v after b reported 1 free while not followed, want 1", got)
	}
	eventually.True(t, 5*time.Second, "the follower to stop again", func() bool {
		return !f.v.FollowingLoads() && f.loadWatching.Load() == 0
	})
	if _, err := p.Place(sched.Request{Resources: res(t, 1), Strategy: sched.Spread}); err != nil {
		t.Fatal(err)
	}
	if !f.v.FollowingLoads() {
		t.Fatal("a spread placement did not start following the load reports")
	}
}

// TestDeadNodesAreKept: a node whose record goes (its process ended) leaves Nodes but is
// listed by DeadNodes (Ray's ray.nodes() keeps dead nodes, Alive false); so is one the
// membership reported gone while its record lasts; each says when and why it died.
func TestDeadNodesAreKept(t *testing.T) {
	f := newFixture(t, "a")
	f.putNode("a", "local", 1, "")
	f.putNode("b", "worker", 2, "")
	f.putNode("c", "worker", 2, "")
	f.start()
	eventually.True(t, 5*time.Second, "nodes b and c", func() bool { return len(f.v.Nodes()) == 3 })
	if d := f.v.DeadNodes(); len(d) != 0 {
		t.Fatalf("DeadNodes with every node alive: %v", d)
	}
	before := time.Now()
	if _, err := f.store.Delete(context.Background(), gcs.NodeKey("b")); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "node b's record to go", func() bool { return len(f.v.Nodes()) == 2 })
	if d := f.v.DeadNodes(); len(d) != 1 || d[0].Info.NodeId != "b" || d[0].Why != recordGone || d[0].At.Before(before) {
		t.Fatalf("DeadNodes after b's record went: %+v, want b, its record deleted after %v", d, before)
	}
	f.v.MarkGone("c", "unreachable")
	eventually.True(t, 5*time.Second, "node c to be gone", func() bool { return len(f.v.Nodes()) == 1 })
	d := f.v.DeadNodes()
	if len(d) != 2 || d[0].Info.NodeId != "b" || d[1].Info.NodeId != "c" || d[1].Why != "unreachable" || d[1].At.Before(d[0].At) {
		t.Fatalf("DeadNodes after c was reported gone: %+v, want b and c (unreachable)", d)
	}
	// c's record goes too: it keeps the time and reason of the membership's report.
	cAt := d[1].At
	if _, err := f.store.Delete(context.Background(), gcs.NodeKey("c")); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "node c's record to go", func() bool {
		_, listed := f.v.load().index["c"]
		return !listed
	})
	if d := f.v.DeadNodes(); len(d) != 2 || d[1].Info.NodeId != "c" || d[1].Why != "unreachable" || !d[1].At.Equal(cAt) {
		t.Fatalf("DeadNodes after c's record went: %+v, want c as the membership reported it at %v", d, cAt)
	}
}
