package raylet

import (
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/machine"
	"github.com/ray-go/ray/tasks/sched"
)

// harness runs a raylet in a plain actor system, with probe actors standing in for its
// workers and for the owners that ask it for leases.
type harness struct {
	t       *testing.T
	sys     *actor.ActorSystem
	raylet  *actor.PID
	live    *Live // the raylet's Config.Live
	workers []*actor.PID
	owner   *owner
	n       uint64
	asks    *atomic.Int64 // ledger asks the raylet made (with a machine)
}

// countingMachine counts a raylet's asks of its machine's ledger.
type countingMachine struct {
	Machine
	asks atomic.Int64
}

func (c *countingMachine) Ask(id uint64, res sched.Resources, now bool) error {
	c.asks.Add(1)
	return c.Machine.Ask(id, res, now)
}

// owner is a probe owner: it collects the grants it gets, and apart the word that a
// request waits (LeaseGrant.queued).
type owner struct {
	pid     *actor.PID
	grants  chan *pb.LeaseGrant
	queued  chan uint64 // request IDs
	revokes chan *pb.LeaseRevoke
}

func newHarness(t *testing.T, total map[string]float64, workers int) *harness {
	t.Helper()
	return newHarnessOn(t, total, workers, "")
}

// newHarnessOn is newHarness with the raylet on the machine ledger served at path (package
// tasks/machine; none when empty), as a worker process's raylet is.
func newHarnessOn(t *testing.T, total map[string]float64, workers int, path string) *harness {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &harness{t: t, sys: actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))}
	t.Cleanup(h.sys.Shutdown)
	h.workers = make([]*actor.PID, workers)
	for i := range h.workers {
		h.workers[i] = h.sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	}
	res, err := sched.FromMap(total)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Node: "n1", Total: res, Workers: workers, Worker: func(i int) *actor.PID { return h.workers[i] }}
	if path != "" {
		var self atomic.Pointer[actor.PID]
		var live atomic.Pointer[Live]
		c, err := machine.Dial(path, t.Name(), func(m *pb.MachineMsg) {
			if l := live.Load(); l != nil && m.Op != pb.MachineMsg_RECLAIM {
				l.MachineChanged()
			}
			switch m.Op {
			case pb.MachineMsg_GRANT:
				h.sys.Root.Send(self.Load(), MachineGrant{ID: m.Id, Res: tasks.ResourcesFromPB(m.Resources)})
			case pb.MachineMsg_DENY:
				h.sys.Root.Send(self.Load(), MachineDeny{ID: m.Id, Message: m.Message})
			case pb.MachineMsg_RECLAIM:
				h.sys.Root.Send(self.Load(), MachineReclaim{Res: tasks.ResourcesFromPB(m.Resources)})
			case pb.MachineMsg_FREE:
				if p := self.Load(); p != nil {
					h.sys.Root.Send(p, MachineFree{})
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		cm := &countingMachine{Machine: c}
		cfg.Machine, cfg.TrimAfter, h.asks = cm, 5*time.Millisecond, &cm.asks
		h.live = NewLive(c)
		live.Store(h.live)
		cfg.Live = h.live
		h.raylet = h.sys.Root.Spawn(Props(cfg))
		self.Store(h.raylet)
	} else {
		h.live = NewLive(nil)
		cfg.Live = h.live
		h.raylet = h.sys.Root.Spawn(Props(cfg))
	}
	h.owner = h.newOwner()
	return h
}

func (h *harness) newOwner() *owner {
	o := &owner{grants: make(chan *pb.LeaseGrant, 64), queued: make(chan uint64, 256), revokes: make(chan *pb.LeaseRevoke, 64)}
	o.pid = h.sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *pb.LeaseGrant:
			if m.Queued {
				o.queued <- m.RequestId
				return
			}
			o.grants <- m
		case *pb.LeaseRevoke:
			o.revokes <- m
		}
	}))
	return o
}

// ask sends a lease request of res from o and returns its request ID.
func (h *harness) ask(o *owner, res map[string]float64) uint64 {
	h.t.Helper()
	r, err := sched.FromMap(res)
	if err != nil {
		h.t.Fatal(err)
	}
	h.n++
	h.sys.Root.Send(h.raylet, &pb.LeaseRequest{RequestId: h.n, Resources: tasks.ResourcesToPB(r), Backlog: 3,
		Owner: &pb.PID{Address: o.pid.Address, Id: o.pid.Id}})
	return h.n
}

func (h *harness) send(msgs ...any) {
	for _, m := range msgs {
		h.sys.Root.Send(h.raylet, m)
	}
}

// grants collects exactly n grants to o, failing after a bounded wait.
func (h *harness) grants(o *owner, n int) []*pb.LeaseGrant {
	h.t.Helper()
	var out []*pb.LeaseGrant
	for len(out) < n {
		select {
		case g := <-o.grants:
			out = append(out, g)
		case <-time.After(5 * time.Second):
			h.t.Fatalf("got %d grants, want %d", len(out), n)
		}
	}
	return out
}

// noGrant checks that nothing more is granted to o (after a Stats round trip, so the raylet
// has handled everything sent before).
func (h *harness) noGrant(o *owner) {
	h.t.Helper()
	h.stats()
	select {
	case g := <-o.grants:
		h.t.Fatalf("unexpected grant %+v", g)
	case <-time.After(20 * time.Millisecond):
	}
}

func (h *harness) stats() *StatsReply {
	h.t.Helper()
	res, err := h.sys.Root.RequestFuture(h.raylet, Stats{}, 5*time.Second).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	return res.(*StatsReply)
}

func release(g *pb.LeaseGrant) *pb.LeaseRelease { return &pb.LeaseRelease{LeaseId: g.LeaseId} }

var cpu1 = map[string]float64{sched.CPU: 1}

// TestGrantQueueRelease: leases are granted while resources last, spread over the workers,
// the rest wait in arrival order and are told so at once (LeaseGrant.queued); a release
// grants the next; a repeated release is harmless.
func TestGrantQueueRelease(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 2}, 2)
	a, b, c := h.ask(h.owner, cpu1), h.ask(h.owner, cpu1), h.ask(h.owner, cpu1)
	got := h.grants(h.owner, 2)
	h.noGrant(h.owner)
	if got[0].RequestId != a || got[1].RequestId != b {
		t.Fatalf("granted requests %d and %d, want %d and %d", got[0].RequestId, got[1].RequestId, a, b)
	}
	if st := h.stats(); st.Requests != 1 || st.Queued != 3 || st.Leases != 2 || st.Available.Get(sched.CPU) != 0 {
		t.Fatalf("stats %+v", st)
	}
	if got[0].Worker.Id == got[1].Worker.Id {
		t.Errorf("both leases on worker %s; want them spread", got[0].Worker.Id)
	}
	if string(got[0].LeaseId) == string(got[1].LeaseId) {
		t.Fatal("two leases share an ID")
	}
	// The third is told at once that it waits; the two granted at once are not.
	select {
	case id := <-h.owner.queued:
		if id != c {
			t.Fatalf("word that request %d waits, want %d (the one not granted)", id, c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no word that the third request waits")
	}
	if len(h.owner.queued) != 0 {
		t.Fatalf("%d more words of waiting requests, want none", len(h.owner.queued))
	}
	h.send(release(got[0]), release(got[0]))
	third := h.grants(h.owner, 1)[0]
	if third.RequestId != c {
		t.Fatalf("granted request %d, want the queued %d", third.RequestId, c)
	}
	h.send(release(got[1]), release(third))
	if st := h.stats(); st.Available.Get(sched.CPU) != 2*sched.Unit || st.Leases != 0 || st.Granted != 3 || st.Released != 3 {
		t.Fatalf("after every release: %+v", st)
	}
}

// TestInfeasibleDeniedAtOnce: a request the node can never hold is denied at once.
func TestInfeasibleDeniedAtOnce(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 2, "accel": 1}, 1)
	for _, res := range []map[string]float64{{sched.GPU: 1}, {sched.CPU: 3}, {"accel": 2}, {"tpu": 1}} {
		id := h.ask(h.owner, res)
		g := h.grants(h.owner, 1)[0]
		if g.RequestId != id || g.Denied == nil || g.Denied.Kind != pb.ErrorInfo_INFEASIBLE || len(g.LeaseId) != 0 {
			t.Errorf("%v: grant %+v, want INFEASIBLE", res, g)
		}
	}
	if st := h.stats(); st.Requests != 0 || st.Leases != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestSmallShapeNotBlockedByLarge: a request that does not fit waits without holding up a
// later request of a smaller shape (per-class queues).
func TestSmallShapeNotBlockedByLarge(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 2}, 2)
	h.ask(h.owner, cpu1)
	first := h.grants(h.owner, 1)[0]
	big := h.ask(h.owner, map[string]float64{sched.CPU: 2})
	small := h.ask(h.owner, cpu1)
	if g := h.grants(h.owner, 1)[0]; g.RequestId != small {
		t.Fatalf("granted request %d, want the small one %d (the large one waits)", g.RequestId, small)
	}
	h.noGrant(h.owner)
	h.send(release(first))
	h.noGrant(h.owner) // one CPU free: the large request still waits
	if st := h.stats(); st.Requests != 1 {
		t.Fatalf("%d requests waiting, want the large one", st.Requests)
	}
	_ = big
}

// TestBlockedLeaseLendsItsCPU: a lease whose task blocks lends its CPU out while it waits,
// and takes it back when it resumes, even over the node's total.
func TestBlockedLeaseLendsItsCPU(t *testing.T) {
	h := newHarness(t, cpu1, 1)
	h.ask(h.owner, cpu1)
	parent := h.grants(h.owner, 1)[0]
	h.ask(h.owner, cpu1)
	h.noGrant(h.owner) // the child waits for the only CPU
	h.send(&pb.TaskBlocked{LeaseId: parent.LeaseId})
	child := h.grants(h.owner, 1)[0] // the lent CPU runs the child
	h.send(release(child), &pb.TaskUnblocked{LeaseId: parent.LeaseId})
	if st := h.stats(); st.Available.Get(sched.CPU) != 0 {
		t.Fatalf("after unblock: available %v, want CPU=0", st.Available)
	}
	// Oversubscription: unblocking while another lease holds the lent CPU takes it anyway.
	h.send(&pb.TaskBlocked{LeaseId: parent.LeaseId})
	h.ask(h.owner, cpu1)
	other := h.grants(h.owner, 1)[0]
	h.send(&pb.TaskUnblocked{LeaseId: parent.LeaseId})
	if st := h.stats(); st.Available.Get(sched.CPU) != -sched.Unit {
		t.Fatalf("oversubscribed: available %v, want CPU=-1", st.Available)
	}
	h.send(release(other), release(parent))
	if st := h.stats(); st.Available.Get(sched.CPU) != sched.Unit {
		t.Fatalf("at rest: available %v, want CPU=1", st.Available)
	}
	// A lease released while blocked gives back only what it still held.
	h.ask(h.owner, cpu1)
	g := h.grants(h.owner, 1)[0]
	h.send(&pb.TaskBlocked{LeaseId: g.LeaseId}, release(g))
	if st := h.stats(); st.Available.Get(sched.CPU) != sched.Unit {
		t.Fatalf("released while blocked: available %v, want CPU=1", st.Available)
	}
}

// TestOwnerDeathFreesItsLeases: the raylet watches the owners it granted leases to; when
// one stops, its leases return and its waiting requests go, and another owner gets the
// resources.
func TestOwnerDeathFreesItsLeases(t *testing.T) {
	h := newHarness(t, cpu1, 1)
	doomed := h.newOwner()
	h.ask(doomed, cpu1)
	h.grants(doomed, 1)
	h.ask(doomed, cpu1) // waits
	h.ask(h.owner, cpu1)
	h.noGrant(h.owner)
	h.sys.Root.Stop(doomed.pid)
	g := h.grants(h.owner, 1)[0]
	if len(g.LeaseId) == 0 {
		t.Fatalf("grant %+v", g)
	}
	if st := h.stats(); st.Requests != 0 || st.Leases != 1 {
		t.Fatalf("after the owner stopped: %+v", st)
	}
}

// TestReservations: an actor's resources are held from grant to release, granted ahead of
// waiting lease requests as soon as they are free, and requests are idempotent by key.
func TestReservations(t *testing.T) {
	h := newHarness(t, map[string]float64{"CPU": 2}, 2)
	cpu := func(n float64) []*pb.ResourceQty {
		r, _ := sched.FromMap(map[string]float64{"CPU": n})
		return tasks.ResourcesToPB(r)
	}
	ask := func(key string, n float64) (*pb.ReserveResourcesReply, error) {
		res, err := h.sys.Root.RequestFuture(h.raylet, &pb.ReserveResources{Key: key, Resources: cpu(n)}, 200*time.Millisecond).Result()
		if err != nil {
			return nil, err
		}
		return res.(*pb.ReserveResourcesReply), nil
	}
	if r, err := ask("a/1", 1); err != nil || r.Key != "a/1" {
		t.Fatalf("first reservation: %v, %v", r, err)
	}
	if _, err := ask("a/1", 1); err != nil { // a retry of a granted request
		t.Fatalf("repeated reservation: %v", err)
	}
	if got := h.stats().Available.Get(sched.CPU).Float(); got != 1 {
		t.Fatalf("available CPU after one reservation of 1 (asked twice): %v, want 1", got)
	}
	// A lease needing 2 CPUs waits while the actor holds one.
	h.ask(h.owner, map[string]float64{"CPU": 2})
	h.noGrant(h.owner)
	// A second actor wanting 2 CPUs waits too (no grant within the request's timeout).
	if _, err := ask("a/2", 2); err == nil {
		t.Fatal("a reservation larger than what is free was granted")
	}
	// Releasing the first frees the CPU: the waiting reservation (ahead of the lease
	// request) is granted, the request still waits.
	h.send(&pb.ReserveResources{Key: "a/1", Release: true})
	// Asking again for a/2 (idempotent by key) is answered once it is granted: the release
	// is handled first (one sender's messages keep their order).
	if r, err := h.sys.Root.RequestFuture(h.raylet, &pb.ReserveResources{Key: "a/2", Resources: cpu(2)}, 5*time.Second).Result(); err != nil || r.(*pb.ReserveResourcesReply).Key != "a/2" {
		t.Fatalf("the waiting reservation after the release: %v, %v", r, err)
	}
	if got := h.stats().Available.Get(sched.CPU).Float(); got != 0 {
		t.Fatalf("available CPU after the second reservation was granted: %v, want 0", got)
	}
	h.noGrant(h.owner)
	h.send(&pb.ReserveResources{Key: "a/2", Release: true})
	if g := h.grants(h.owner, 1); len(g[0].LeaseId) == 0 {
		t.Fatalf("request not granted after every reservation was released")
	}
}

// TestRevokeForAnotherOwner: a request that waits has other owners asked for leases back
// (enough for it to fit), never its own owner; once given back, it is granted.
func TestRevokeForAnotherOwner(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 2}, 2)
	h.ask(h.owner, cpu1)
	h.ask(h.owner, cpu1)
	held := h.grants(h.owner, 2)
	h.ask(h.owner, cpu1) // the same owner waits: nothing is revoked from it
	h.stats()
	select {
	case r := <-h.owner.revokes:
		t.Fatalf("an owner was asked to give a lease back for its own request: %x", r.LeaseId)
	case <-time.After(20 * time.Millisecond):
	}
	other := h.newOwner()
	h.ask(other, cpu1)
	var r *pb.LeaseRevoke
	select {
	case r = <-h.owner.revokes:
	case <-time.After(5 * time.Second):
		t.Fatal("no lease was revoked for another owner's request")
	}
	select {
	case r2 := <-h.owner.revokes:
		t.Fatalf("a second lease was revoked (%x); one frees enough", r2.LeaseId)
	case <-time.After(20 * time.Millisecond):
	}
	if string(r.LeaseId) != string(held[0].LeaseId) && string(r.LeaseId) != string(held[1].LeaseId) {
		t.Fatalf("revoked %x, not a lease of the owner", r.LeaseId)
	}
	h.send(&pb.LeaseRelease{LeaseId: r.LeaseId})
	// The oldest request waiting goes first: the owner's own third request, then the other.
	g := h.grants(h.owner, 1)[0]
	if len(g.LeaseId) == 0 {
		t.Fatalf("grant %+v", g)
	}
	// The other owner asked before that lease existed, so its ask revoked none of it: the
	// lease is revoked as it is granted (the owner runs what it has on it, then gives it
	// back rather than keeping it idle while the other waits).
	select {
	case r := <-h.owner.revokes:
		if string(r.LeaseId) != string(g.LeaseId) {
			t.Fatalf("revoked %x, want the lease just granted (%x)", r.LeaseId, g.LeaseId)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a lease granted while another owner's request waits was not revoked")
	}
	h.send(&pb.LeaseRelease{LeaseId: g.LeaseId})
	if g := h.grants(other, 1)[0]; len(g.LeaseId) == 0 {
		t.Fatalf("the other owner's grant %+v", g)
	}
	// Nothing waits now: the other owner's lease is its to keep.
	h.stats()
	select {
	case r := <-other.revokes:
		t.Fatalf("a lease granted with nothing waiting was revoked: %x", r.LeaseId)
	case <-time.After(20 * time.Millisecond):
	}
}

// TestNoRevokeAtGrantForTheSameClass: a lease granted while only its own owner's requests of
// its class wait is not revoked (the owner has more work than its leases take).
func TestNoRevokeAtGrantForTheSameClass(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 1}, 1)
	h.ask(h.owner, cpu1)
	first := h.grants(h.owner, 1)[0]
	h.ask(h.owner, cpu1)
	h.ask(h.owner, cpu1)
	h.send(&pb.LeaseRelease{LeaseId: first.LeaseId})
	h.grants(h.owner, 1)
	h.stats()
	select {
	case r := <-h.owner.revokes:
		t.Fatalf("a lease was revoked for its own owner's request of its class: %x", r.LeaseId)
	case <-time.After(20 * time.Millisecond):
	}
}

// commit sends a BundleCommit and returns the reply.
func (h *harness) commit(m *pb.BundleCommit) *pb.BundleCommitReply {
	h.t.Helper()
	res, err := h.sys.Root.RequestFuture(h.raylet, m, 5*time.Second).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	return res.(*pb.BundleCommitReply)
}

func bundleMsg(group string, index int32, res map[string]float64, release bool) *pb.BundleCommit {
	r, _ := sched.FromMap(res)
	return &pb.BundleCommit{Group: group, Index: index, Resources: tasks.ResourcesToPB(r), Release: release}
}

// TestBundles: a committed bundle takes its resources from the node and only tasks in the
// bundle use them; a bundle that does not fit is refused; giving a group back returns what
// is free at once and what a running task holds when its lease is released.
func TestBundles(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 3}, 4)
	if r := h.commit(bundleMsg("g", 0, map[string]float64{sched.CPU: 2}, false)); !r.Ok {
		t.Fatalf("commit: %v", r.Message)
	}
	if r := h.commit(bundleMsg("g", 0, map[string]float64{sched.CPU: 2}, false)); !r.Ok {
		t.Fatalf("a repeated commit must be answered ok: %v", r.Message)
	}
	if r := h.commit(bundleMsg("g", 1, map[string]float64{sched.CPU: 2}, false)); r.Ok || r.Message == "" {
		t.Fatalf("a bundle larger than what is free must be refused with a reason: %+v", r)
	}
	if st := h.stats(); st.Available.Get(sched.CPU) != sched.Unit || st.Total.Get("CPU_group_g") != 2*sched.Unit {
		t.Fatalf("after the commit: total %v, available %v", st.Total, st.Available)
	}
	inBundle := func(index int, n float64) map[string]float64 {
		return sched.InBundle("g", index, sched.Resources{}.With(sched.CPU, sched.Quantity(n*float64(sched.Unit)))).Map()
	}
	// Two 1-CPU tasks in the bundle and one outside it run; a third in the bundle waits.
	h.ask(h.owner, inBundle(0, 1))
	h.ask(h.owner, inBundle(-1, 1))
	h.ask(h.owner, cpu1)
	g := h.grants(h.owner, 3)
	h.ask(h.owner, inBundle(0, 1))
	h.noGrant(h.owner)
	// A task in a bundle the node does not hold is infeasible here.
	h.ask(h.owner, inBundle(1, 1))
	if d := h.grants(h.owner, 1)[0]; d.Denied == nil || d.Denied.Kind != pb.ErrorInfo_INFEASIBLE {
		t.Fatalf("a task in an unknown bundle: %+v", d)
	}
	// Release one bundle task: the waiting one runs.
	h.send(release(g[0]))
	g4 := h.grants(h.owner, 1)[0]
	// Give the group back while g[1] and g4 run in it: nothing of it is free, so the
	// node's CPUs come back only as they end.
	if r := h.commit(bundleMsg("g", 0, nil, true)); !r.Ok {
		t.Fatal(r.Message)
	}
	if st := h.stats(); st.Total.Get("CPU_group_g") != 0 || st.Available.Get(sched.CPU) != 0 {
		t.Fatalf("right after giving it back: total %v, available %v", st.Total, st.Available)
	}
	h.send(release(g[1]), release(g4), release(g[2]))
	st := h.stats()
	if st.Available.Get(sched.CPU) != 3*sched.Unit || !st.Available.Equal(sched.Resources{}.With(sched.CPU, 3*sched.Unit)) {
		t.Fatalf("after every lease ended: available %v, want CPU=3 and nothing else", st.Available)
	}
	if !st.Total.Equal(sched.Resources{}.With(sched.CPU, 3*sched.Unit)) {
		t.Fatalf("total %v, want CPU=3", st.Total)
	}
}

// TestReleasedBundleFailsQueuedRequests: a lease request waiting for a bundle's room fails
// at once, with PLACEMENT_GROUP_REMOVED, when the group is given back (Ray fails the tasks
// of a removed group); a request for a group the node no longer holds is refused the same
// way, and the other owners' requests are not touched.
func TestReleasedBundleFailsQueuedRequests(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 2}, 2)
	if r := h.commit(bundleMsg("g", 0, map[string]float64{sched.CPU: 1}, false)); !r.Ok {
		t.Fatalf("commit: %v", r.Message)
	}
	inBundle := sched.InBundle("g", 0, sched.Resources{}.With(sched.CPU, sched.Unit)).Map()
	h.ask(h.owner, inBundle)
	running := h.grants(h.owner, 1)[0]
	waiting := h.ask(h.owner, inBundle) // the bundle is full: it waits
	other := h.newOwner()
	h.ask(other, cpu1)
	h.grants(other, 1)
	h.ask(other, cpu1) // the node is full: it waits too, outside the group
	h.noGrant(h.owner)
	h.noGrant(other)
	if st := h.stats(); st.Requests != 2 {
		t.Fatalf("%d requests queued, want 2", st.Requests)
	}

	if r := h.commit(bundleMsg("g", -1, nil, true)); !r.Ok {
		t.Fatal(r.Message)
	}
	d := h.grants(h.owner, 1)[0]
	if d.RequestId != waiting || d.Denied == nil || d.Denied.Kind != pb.ErrorInfo_PLACEMENT_GROUP_REMOVED {
		t.Fatalf("the request queued for the released bundle: %+v, want request %d denied PLACEMENT_GROUP_REMOVED", d, waiting)
	}
	if st := h.stats(); st.Requests != 1 || st.Queued != 3 {
		t.Fatalf("after the release: %d requests (%d tasks) queued, want the other owner's 1 (3)", st.Requests, st.Queued)
	}
	// A request for the group now: refused the same way, not as infeasible.
	id := h.ask(h.owner, inBundle)
	if d := h.grants(h.owner, 1)[0]; d.RequestId != id || d.Denied == nil || d.Denied.Kind != pb.ErrorInfo_PLACEMENT_GROUP_REMOVED {
		t.Fatalf("a request for the released group: %+v, want it denied PLACEMENT_GROUP_REMOVED", d)
	}
	// The running task's lease ends: its CPU goes to the other owner's waiting request.
	h.send(release(running))
	if g := h.grants(other, 1)[0]; g.Denied != nil {
		t.Fatalf("the other owner's request: %+v", g)
	}
}

// TestOwnerGoneReleasesItsBundles: OwnerGone releases the groups whose bundles the dead
// process committed (the address its commits came from), and only those.
func TestOwnerGoneReleasesItsBundles(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 3}, 2)
	// "mine" is committed by this system's root (its replies come back here); "theirs"
	// by a process at another address.
	if r := h.commit(bundleMsg("mine", 0, map[string]float64{sched.CPU: 1}, false)); !r.Ok {
		t.Fatalf("commit: %v", r.Message)
	}
	dead := actor.NewPID("10.0.0.9:4000", "ask1")
	h.sys.Root.RequestWithCustomSender(h.raylet, bundleMsg("theirs", 0, map[string]float64{sched.CPU: 1}, false), dead)
	h.sys.Root.RequestWithCustomSender(h.raylet, bundleMsg("theirs", 1, map[string]float64{sched.CPU: 1}, false), dead)
	if st := h.stats(); st.Available.Get(sched.CPU) != 0 || st.Total.Get("CPU_group_theirs") != 2*sched.Unit {
		t.Fatalf("after the commits: total %v, available %v", st.Total, st.Available)
	}
	inBundle := sched.InBundle("theirs", 1, sched.Resources{}.With(sched.CPU, sched.Unit)).Map()
	h.ask(h.owner, inBundle)
	h.grants(h.owner, 1)
	h.ask(h.owner, inBundle) // the bundle is full: it waits
	h.noGrant(h.owner)

	h.send(OwnerGone{Address: "10.0.0.9:4001"}) // another process: nothing changes
	if st := h.stats(); st.Total.Get("CPU_group_theirs") != 2*sched.Unit {
		t.Fatalf("a bundle of a live owner was released: total %v", st.Total)
	}
	h.send(OwnerGone{Address: dead.Address})
	if d := h.grants(h.owner, 1)[0]; d.Denied == nil || d.Denied.Kind != pb.ErrorInfo_PLACEMENT_GROUP_REMOVED {
		t.Fatalf("a request queued for the dead owner's group: %+v, want it denied PLACEMENT_GROUP_REMOVED", d)
	}
	st := h.stats()
	if st.Available.Get(sched.CPU) != sched.Unit || st.Total.Get("CPU_group_theirs") != 0 || st.Total.Get("CPU_group_mine") != sched.Unit {
		t.Fatalf("after the owner's death: total %v, available %v; want the free CPU of its bundles back at once and the other group kept", st.Total, st.Available)
	}
}

// TestRevokeForAnotherClassOfTheSameOwner: an owner's request of another shape (another
// scheduling class) that waits has that owner's leases of other shapes asked back, so a
// busy class it keeps its leases for (up to sched.MaxAge) does not hold up its other
// classes; its leases of the waiting request's own shape are left alone.
func TestRevokeForAnotherClassOfTheSameOwner(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 2}, 2)
	h.ask(h.owner, cpu1)
	h.ask(h.owner, cpu1)
	held := h.grants(h.owner, 2)
	h.ask(h.owner, cpu1) // more of the same class: nothing is revoked
	h.stats()
	select {
	case r := <-h.owner.revokes:
		t.Fatalf("a lease of the waiting request's own class was revoked: %x", r.LeaseId)
	case <-time.After(20 * time.Millisecond):
	}
	h.ask(h.owner, map[string]float64{sched.CPU: 2}) // another class of the same owner
	var r *pb.LeaseRevoke
	select {
	case r = <-h.owner.revokes:
	case <-time.After(5 * time.Second):
		t.Fatal("no lease was revoked for the owner's request of another class")
	}
	if string(r.LeaseId) != string(held[0].LeaseId) && string(r.LeaseId) != string(held[1].LeaseId) {
		t.Fatalf("revoked %x, not a lease of the owner", r.LeaseId)
	}
}
