package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// fakeNodes is a NodeView and SuspectView whose alive and suspect sets the test changes.
type fakeNodes struct {
	mu       sync.Mutex
	alive    map[string]sched.Resources
	suspects map[string]bool
}

func (f *fakeNodes) Suspects() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]bool, len(f.suspects))
	for n := range f.suspects {
		out[n] = true
	}
	return out
}

// suspect moves n between alive (with r) and suspect (out of Alive, a broken connection).
func (f *fakeNodes) suspect(n string, r sched.Resources, suspect bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.suspects == nil {
		f.suspects = map[string]bool{}
	}
	if suspect {
		delete(f.alive, n)
		f.suspects[n] = true
	} else {
		delete(f.suspects, n)
		f.alive[n] = r
	}
}

// gone takes n out of both sets (its process is gone).
func (f *fakeNodes) gone(n string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.alive, n)
	delete(f.suspects, n)
}

func (f *fakeNodes) Alive() map[string]sched.Resources {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]sched.Resources, len(f.alive))
	for n, r := range f.alive {
		out[n] = r
	}
	return out
}

func (f *fakeNodes) set(n string, r sched.Resources, up bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if up {
		f.alive[n] = r
	} else {
		delete(f.alive, n)
	}
}

// managerHarness runs a Manager over an in-memory GCS; an activation reports the
// constructor's success at once, like a grain whose constructor returns.
type managerHarness struct {
	t     *testing.T
	table *Table
	nodes *fakeNodes
	m     *Manager
}

func newManagerHarness(t *testing.T, nodes map[string]sched.Resources, opts ...func(*ManagerConfig)) *managerHarness {
	t.Helper()
	store := memstore.New(memstore.Options{})
	t.Cleanup(func() { store.Close() })
	h := &managerHarness{t: t, table: &Table{Store: store}, nodes: &fakeNodes{alive: nodes}}
	cfg := ManagerConfig{Node: "n1", Table: h.table, Nodes: h.nodes, Resync: 20 * time.Millisecond,
		DeadKept: 4,
		Activate: func(id string) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			info, _, err := h.table.Get(ctx, id)
			if err != nil || info.Node == "" {
				return
			}
			h.table.Step(ctx, id, lifecycle.ConstructorSucceeded{Incarnation: info.Incarnation})
		}}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	h.m = m
	return h
}

func (h *managerHarness) create(maxRestarts int, req sched.Resources) string {
	h.t.Helper()
	id := ids.NewActorID()
	info := &pb.ActorInfo{ActorId: id[:], Class: "test.C", MaxRestarts: int32(maxRestarts),
		CtorArgs: []*pb.Arg{{Data: []byte("args")}}}
	info.Resources = tasks.ResourcesToPB(req)
	if _, _, err := h.table.Create(context.Background(), info); err != nil {
		h.t.Fatal(err)
	}
	return id.String()
}

// await waits (bounded) until the cached record of id satisfies ok.
func (h *managerHarness) await(id, what string, ok func(info *pb.ActorInfo, found bool) bool) *pb.ActorInfo {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, found := h.m.Get(id)
		if ok(info, found) {
			return info
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("actor %s: never %s; last record %v (found %v)", id, what, info, found)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func phaseIs(p lifecycle.Phase) func(*pb.ActorInfo, bool) bool {
	return func(info *pb.ActorInfo, found bool) bool { return found && lifecycle.Phase(info.Phase) == p }
}

func TestManagerPlacesAndForgetsTheDead(t *testing.T) {
	h := newManagerHarness(t, map[string]sched.Resources{"n1": {}, "n2": {}})
	var idsMade []string
	for range 20 {
		idsMade = append(idsMade, h.create(0, sched.Resources{}))
	}
	load := map[string]int{}
	for _, id := range idsMade {
		info := h.await(id, "alive", phaseIs(lifecycle.Alive))
		if info.CtorArgs != nil {
			t.Fatalf("the cached record keeps the constructor arguments: %v", info.CtorArgs)
		}
		load[info.Node]++
	}
	if load["n1"] != 10 || load["n2"] != 10 {
		t.Fatalf("placement is not balanced: %v", load)
	}
	if n := len(h.m.All()); n != 20 {
		t.Fatalf("All: %d records, want 20", n)
	}
	// Kill them all: the dead leave the cache; the last DeadKept still answer Get.
	for _, id := range idsMade {
		if _, _, _, err := h.table.Step(context.Background(), id, lifecycle.Kill{NoRestart: true}); err != nil {
			t.Fatal(err)
		}
	}
	last := idsMade[len(idsMade)-1]
	info := h.await(last, "dead", phaseIs(lifecycle.Dead))
	if err := StateOf(info).Err(); err == nil || lifecycle.Cause(info.Cause) != lifecycle.CauseKilled {
		t.Fatalf("dead record of %s: cause %v, err %v", last, lifecycle.Cause(info.Cause), err)
	}
	h.await(idsMade[0], "forgotten", func(_ *pb.ActorInfo, found bool) bool { return !found })
	if n := len(h.m.All()); n != 0 {
		t.Fatalf("All after every death: %d records, want 0", n)
	}
	// An actor dead long ago is still known through Info (read from the GCS).
	if info, ok := h.m.Info(idsMade[0]); !ok || lifecycle.Phase(info.Phase) != lifecycle.Dead {
		t.Fatalf("Info of an actor dead long ago: %v, %v", info, ok)
	}
	// New actors are placed once the dead are gone: the leader's indexes hold nothing
	// of them.
	id := h.create(0, sched.Resources{})
	h.await(id, "alive", phaseIs(lifecycle.Alive))
}

// The partition of issue 21: an actor that restarts forever and needs a resource only
// one node has waits while that node is gone, and comes back with it; a new actor that
// needs it while it is gone cannot be placed.
func TestManagerRestartWaitsForAFittingNode(t *testing.T) {
	part := sched.Resources{}.With("part", sched.Unit)
	h := newManagerHarness(t, map[string]sched.Resources{"n1": sched.Resources{}.With("CPU", 2*sched.Unit), "n2": part})
	id := h.create(lifecycle.Infinite, part)
	info := h.await(id, "alive", phaseIs(lifecycle.Alive))
	if info.Node != "n2" {
		t.Fatalf("placed on %s, want n2 (the only node with part)", info.Node)
	}
	h.nodes.set("n2", sched.Resources{}, false)
	h.m.NodesChanged()
	h.await(id, "restarting", phaseIs(lifecycle.Restarting))
	// A new actor with the same needs, created while n2 is gone, cannot be placed.
	other := h.create(lifecycle.Infinite, part)
	dead := h.await(other, "dead", phaseIs(lifecycle.Dead))
	if lifecycle.Cause(dead.Cause) != lifecycle.CauseUnschedulable {
		t.Fatalf("the new actor died of %v, want Unschedulable", lifecycle.Cause(dead.Cause))
	}
	// The restarting one is still waiting after many resyncs of the leader.
	for i := 0; i < 10; i++ {
		h.m.NodesChanged()
		time.Sleep(20 * time.Millisecond)
	}
	if info, _ := h.m.Get(id); lifecycle.Phase(info.Phase) != lifecycle.Restarting || info.Node != "" {
		t.Fatalf("while n2 is gone: %v, want Restarting and not placed", info)
	}
	// Its record says why it waits: what it needs, that no node has it, what there is.
	info = h.await(id, "saying why it waits", func(info *pb.ActorInfo, found bool) bool { return found && info.Waiting != "" })
	why := StateOf(info).Why()
	for _, want := range []string{"host n2 died; restarting", "waiting for a node with {part=1}", "no alive node has part=1 (the most one has is 0)", "the 1 alive nodes have {CPU=2} in total"} {
		if !strings.Contains(why, want) {
			t.Errorf("while n2 is gone the actor's reason is %q; it does not say %q", why, want)
		}
	}
	rec, _, err := h.table.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if last := rec.History[len(rec.History)-1]; lifecycle.Phase(last.Phase) != lifecycle.Restarting || last.Detail != info.Waiting {
		t.Errorf("the history ends with %v, want the start of the wait", last)
	}
	h.nodes.set("n2", part, true)
	h.m.NodesChanged()
	info = h.await(id, "alive again", func(info *pb.ActorInfo, found bool) bool {
		return found && lifecycle.Phase(info.Phase) == lifecycle.Alive && info.Incarnation == 2
	})
	if info.Node != "n2" {
		t.Fatalf("restarted on %s, want n2", info.Node)
	}
	if info.Waiting != "" || info.Detail != "" {
		t.Fatalf("alive again, the record still says %q / %q", info.Detail, info.Waiting)
	}
}

// Actors on a node that leaves are restarted elsewhere; those elsewhere are untouched.
func TestManagerNodeLossRestartsOnlyItsActors(t *testing.T) {
	h := newManagerHarness(t, map[string]sched.Resources{"n1": {}, "n2": {}})
	var made []string
	for range 10 {
		made = append(made, h.create(1, sched.Resources{}))
	}
	on := map[string]string{}
	for _, id := range made {
		on[id] = h.await(id, "alive", phaseIs(lifecycle.Alive)).Node
	}
	h.nodes.set("n2", sched.Resources{}, false)
	h.m.NodesChanged()
	for _, id := range made {
		id := id
		want := uint64(1)
		if on[id] == "n2" {
			want = 2
		}
		info := h.await(id, fmt.Sprintf("alive at incarnation %d", want), func(info *pb.ActorInfo, found bool) bool {
			return found && lifecycle.Phase(info.Phase) == lifecycle.Alive && info.Incarnation == want
		})
		if info.Node != "n1" {
			t.Fatalf("actor %s on %s after n2 left", id, info.Node)
		}
	}
}

// A host whose connection broke (a suspect: out of Alive, its process maybe alive) keeps
// its actors, even those with no restart left, and gets no new ones; when it is back they
// run on as they were, and when it is gone they die.
func TestManagerSuspectHostKeepsItsActors(t *testing.T) {
	h := newManagerHarness(t, map[string]sched.Resources{"n1": {}, "n2": {}})
	var onN2 []string
	for range 8 {
		id := h.create(0, sched.Resources{})
		if h.await(id, "alive", phaseIs(lifecycle.Alive)).Node == "n2" {
			onN2 = append(onN2, id)
		}
	}
	if len(onN2) == 0 {
		t.Fatal("no actor placed on n2 of 8 (placement spreads them)")
	}
	stillAlive := func(what string) {
		t.Helper()
		// A negative: the leader resyncs every 20 ms, so 25 looks.
		for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			for _, id := range onN2 {
				if info, _ := h.m.Get(id); lifecycle.Phase(info.GetPhase()) != lifecycle.Alive || info.GetIncarnation() != 1 || info.GetNode() != "n2" {
					t.Fatalf("%s: actor %s is %v, want alive on n2 at incarnation 1", what, id, info)
				}
			}
		}
	}
	h.nodes.suspect("n2", sched.Resources{}, true)
	h.m.NodesChanged()
	stillAlive("n2 suspect")
	placed := h.create(0, sched.Resources{})
	if n := h.await(placed, "alive", phaseIs(lifecycle.Alive)).Node; n != "n1" {
		t.Fatalf("an actor created while n2 is suspect was placed on %s, want n1", n)
	}
	h.nodes.suspect("n2", sched.Resources{}, false)
	h.m.NodesChanged()
	stillAlive("n2 back")
	h.nodes.suspect("n2", sched.Resources{}, true)
	h.m.NodesChanged()
	stillAlive("n2 suspect again")
	h.nodes.gone("n2")
	h.m.NodesChanged()
	for _, id := range onN2 {
		info := h.await(id, "dead", phaseIs(lifecycle.Dead))
		if want := "host n2 died"; !strings.Contains(info.GetDetail(), want) {
			t.Errorf("actor %s dead with %v, want %q", id, info, want)
		}
	}
}

// LiveDetached: true while a detached actor is not dead (a non-detached one does not
// count), false once the last detached one died.
func TestManagerLiveDetached(t *testing.T) {
	h := newManagerHarness(t, map[string]sched.Resources{"n1": {}})
	plain := h.create(0, sched.Resources{})
	h.await(plain, "alive", phaseIs(lifecycle.Alive))
	if h.m.LiveDetached() {
		t.Fatal("LiveDetached with only a non-detached actor")
	}
	id := ids.NewActorID()
	info := &pb.ActorInfo{ActorId: id[:], Class: "test.C", Detached: true, Name: "d", CtorArgs: []*pb.Arg{{Data: []byte("args")}}}
	if _, _, err := h.table.Create(context.Background(), info); err != nil {
		t.Fatal(err)
	}
	h.await(id.String(), "alive", phaseIs(lifecycle.Alive))
	if !h.m.LiveDetached() {
		t.Fatal("LiveDetached is false with a detached actor alive")
	}
	if _, _, _, err := h.table.Step(context.Background(), id.String(), lifecycle.Kill{NoRestart: true}); err != nil {
		t.Fatal(err)
	}
	h.await(id.String(), "dead", phaseIs(lifecycle.Dead))
	if h.m.LiveDetached() {
		t.Fatal("LiveDetached is true after the detached actor was killed")
	}
}

// TestManagerOwnerGone: when an owner process dies (OwnerGone), the leader ends its
// non-detached actors with cause OwnerDied, leaves its detached ones and other owners'
// actors alone, and a manager that becomes the leader after the death ends them too; once
// a process is back at the address (OwnerBack), its actors live.
func TestManagerOwnerGone(t *testing.T) {
	h := newManagerHarness(t, map[string]sched.Resources{"n1": {}, "n2": {}})
	create := func(owner string, detached bool) string {
		t.Helper()
		id := ids.NewActorID()
		info := &pb.ActorInfo{ActorId: id[:], Class: "test.C", Detached: detached, Owner: &pb.PID{Address: owner, Id: "core"}}
		if _, _, err := h.table.Create(context.Background(), info); err != nil {
			t.Fatal(err)
		}
		return id.String()
	}
	owned, ownedDetached, other := create("10.0.0.1:5000", false), create("10.0.0.1:5000", true), create("10.0.0.2:5000", false)
	for _, id := range []string{owned, ownedDetached, other} {
		h.await(id, "alive", phaseIs(lifecycle.Alive))
	}
	h.m.OwnerGone("10.0.0.1:5000")
	dead := h.await(owned, "dead", func(info *pb.ActorInfo, found bool) bool {
		return found && lifecycle.Phase(info.Phase) == lifecycle.Dead
	})
	if lifecycle.Cause(dead.Cause) != lifecycle.CauseOwnerDied {
		t.Fatalf("the dead owner's actor died of %v, want OwnerDied", lifecycle.Cause(dead.Cause))
	}
	err := StateOf(dead).Err()
	if !errors.Is(err, lifecycle.ErrActorDied) || !strings.Contains(err.Error(), "owner died") {
		t.Fatalf("its calls fail with %v, want ErrActorDied saying the owner died", err)
	}
	// Another actor of the same owner, created after its death was told (a record that
	// was on its way), ends as well; the detached one and another owner's stay alive.
	late := create("10.0.0.1:5000", false)
	h.await(late, "dead", phaseIs(lifecycle.Dead))
	for _, id := range []string{ownedDetached, other} {
		if info, _ := h.m.Get(id); lifecycle.Phase(info.Phase) != lifecycle.Alive {
			t.Fatalf("actor %s is %v after another owner's (or its detached actor's owner's) death, want Alive", id, lifecycle.Phase(info.Phase))
		}
	}

	// A manager that is not the leader when it is told leaves the step to the leader;
	// when it becomes the leader (the old one died), it ends the actor itself.
	h.nodes.set("n0", sched.Resources{}, true) // n0 < n1 leads now
	h.m.NodesChanged()
	victim := create("10.0.0.3:5000", false)
	h.m.OwnerGone("10.0.0.3:5000")
	h.m.NodesChanged()
	for range 20 { // the run loop looks at least once more (Resync is 20 ms)
		time.Sleep(20 * time.Millisecond)
	}
	if info, _, err := h.table.Get(context.Background(), victim); err != nil || lifecycle.Phase(info.Phase) == lifecycle.Dead {
		t.Fatalf("a manager that is not the leader stepped the actor: %v, %v", info, err)
	}
	h.nodes.set("n0", sched.Resources{}, false) // the leader died: n1 leads again
	h.m.NodesChanged()
	info, _, err := h.table.Get(context.Background(), victim)
	for deadline := time.Now().Add(20 * time.Second); err == nil && lifecycle.Phase(info.Phase) != lifecycle.Dead && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		info, _, err = h.table.Get(context.Background(), victim)
	}
	if err != nil || lifecycle.Cause(info.Cause) != lifecycle.CauseOwnerDied {
		t.Fatalf("the new leader did not end the dead owner's actor: %v, %v", info, err)
	}

	// A new process registers at the dead owner's address (a reused port): the actors it
	// creates live.
	h.m.OwnerBack("10.0.0.1:5000")
	reborn := create("10.0.0.1:5000", false)
	h.await(reborn, "alive", phaseIs(lifecycle.Alive))
	h.m.NodesChanged()
	for range 20 { // the run loop looks at least once more
		time.Sleep(20 * time.Millisecond)
	}
	if info, _ := h.m.Get(reborn); lifecycle.Phase(info.Phase) != lifecycle.Alive {
		t.Fatalf("an actor of a new process at a dead owner's address is %v, want Alive", lifecycle.Phase(info.Phase))
	}
}

// TestManagerListsTheDead: an actor dead before a manager's first list of the table is
// known dead from that list (Info says Dead, with its cause), not unknown for good.
func TestManagerListsTheDead(t *testing.T) {
	store := memstore.New(memstore.Options{})
	t.Cleanup(func() { store.Close() })
	table := &Table{Store: store}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := ids.NewActorID()
	if _, _, err := table.Create(ctx, &pb.ActorInfo{ActorId: id[:], Class: "test.C"}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := table.Step(ctx, id.String(), lifecycle.Kill{NoRestart: true}); err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(ManagerConfig{Node: "n1", Table: table, Resync: 20 * time.Millisecond, DeadKept: 4,
		Nodes: &fakeNodes{alive: map[string]sched.Resources{"n1": {}}}, Activate: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	for m.LiveDetached() { // true until the first list is in
		if ctx.Err() != nil {
			t.Fatal("the manager never listed the table")
		}
		time.Sleep(5 * time.Millisecond)
	}
	info, ok := m.Info(id.String())
	if !ok || lifecycle.Phase(info.Phase) != lifecycle.Dead || lifecycle.Cause(info.Cause) != lifecycle.CauseKilled {
		t.Fatalf("Info of an actor killed before the list: %v, %v; want Dead, killed", info, ok)
	}
}

// slowAckStore is a GCS whose transactions take effect at once but answer their writer
// late (delay): the watch brings a step's record to the manager before the step's own
// result does, as it does now and then in a cluster.
type slowAckStore struct {
	gcs.Store
	delay atomic.Int64 // nanoseconds
}

func (s *slowAckStore) Txn(ctx context.Context, cmps []gcs.Cmp, ops []gcs.Op) (bool, int64, error) {
	ok, rev, err := s.Store.Txn(ctx, cmps, ops)
	if d := time.Duration(s.delay.Load()); d > 0 {
		time.Sleep(d)
	}
	return ok, rev, err
}

// A restart after a host's death is placed at once even when the watch brings the
// Restarting record (HostDied's) before the step's own result: the manager looks at the
// actor again when its step is done, not only at its next sweep (30 Resyncs: a node
// killed whole used to leave its actors Restarting for ~30 s in a cluster).
func TestManagerPlacesARestartWhoseRecordCameFirst(t *testing.T) {
	store := &slowAckStore{Store: memstore.New(memstore.Options{})}
	t.Cleanup(func() { store.Store.Close() })
	h := newManagerHarness(t, map[string]sched.Resources{"n1": {}, "n2": {}}, func(c *ManagerConfig) {
		c.Table = &Table{Store: store}
		c.Resync = time.Second // a sweep every 30 s: far beyond the bound below
	})
	h.table = h.m.cfg.Table
	h.await(h.create(3, sched.Resources{}), "alive", phaseIs(lifecycle.Alive)) // on n1, the leader
	id := h.create(3, sched.Resources{})
	info := h.await(id, "alive", phaseIs(lifecycle.Alive))
	victim := info.Node
	if victim != "n2" {
		t.Fatalf("the second actor is on %s, want n2 (the least loaded)", victim)
	}
	store.delay.Store(int64(300 * time.Millisecond))
	start := time.Now()
	h.nodes.set(victim, sched.Resources{}, false)
	h.m.NodesChanged()
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, _ = h.m.Get(id)
		if lifecycle.Phase(info.Phase) == lifecycle.Alive && info.Incarnation == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("actor whose host %s died: still %v at incarnation %d on %q %v later (want alive again within 5 s)",
				victim, lifecycle.Phase(info.Phase), info.Incarnation, info.Node, time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if info.Node == victim {
		t.Fatalf("restarted on the dead node %s", victim)
	}
	t.Logf("restarted on %s %v after its host died", info.Node, time.Since(start).Round(time.Millisecond))
}

// A manager whose view has not yet brought nodes that registered after its first list
// (here n0: its view holds only itself, so it takes itself for the leader) does not take
// the hosts of the actors it reads for dead while their node records are in the GCS; once
// a host's record is gone (its lease lapsed), its actors are ended as before. Before,
// a worker process that had just started failed every actor of its job on the peer it had
// not seen yet: "host ... died (no restart left)" (e2e TestAdoptionAcrossJobs).
func TestManagerUnseenRegisteredHostKeepsItsActors(t *testing.T) {
	h := newManagerHarness(t, map[string]sched.Resources{"n1": {}, "n2": {}})
	ctx := context.Background()
	for _, n := range []string{"n1", "n2"} {
		if _, err := h.table.Store.Put(ctx, gcs.NodeKey(n), []byte("registered"), 0); err != nil {
			t.Fatal(err)
		}
	}
	var made []string
	onN2 := map[string]bool{}
	for range 6 {
		id := h.create(0, sched.Resources{})
		made = append(made, id)
		if h.await(id, "alive", phaseIs(lifecycle.Alive)).Node == "n2" {
			onN2[id] = true
		}
	}
	if len(onN2) == 0 || len(onN2) == len(made) {
		t.Fatalf("%d of %d actors on n2, want some on each node (placement spreads them)", len(onN2), len(made))
	}
	// No full sweep (SweepEvery): the actors on a host whose record goes are looked at again
	// at the next Resync, not only at the sweep (~30 s): a worker process that took the lead
	// after their host died, never having seen it, left them and their callers waiting for it.
	late, err := NewManager(ManagerConfig{Node: "n0", Table: h.table, Nodes: &fakeNodes{alive: map[string]sched.Resources{"n0": {}}},
		Resync: 20 * time.Millisecond, SweepEvery: 1 << 30, Activate: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(late.Stop)
	// A negative: 100 resyncs.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for _, id := range made {
			if info, _ := h.m.Get(id); lifecycle.Phase(info.GetPhase()) != lifecycle.Alive || info.GetIncarnation() != 1 {
				t.Fatalf("actor %s is %v, want alive at incarnation 1: its host is registered", id, info)
			}
		}
	}
	if _, err := h.table.Store.Delete(ctx, gcs.NodeKey("n2")); err != nil {
		t.Fatal(err)
	}
	for _, id := range made {
		if !onN2[id] {
			continue
		}
		info := h.await(id, "dead", phaseIs(lifecycle.Dead))
		if !strings.Contains(info.GetDetail(), "host n2 died") {
			t.Errorf("actor %s on n2 dead with %v, want host n2 died", id, info)
		}
	}
	for _, id := range made {
		if info, _ := h.m.Get(id); !onN2[id] && (lifecycle.Phase(info.GetPhase()) != lifecycle.Alive || info.GetNode() != "n1") {
			t.Errorf("actor %s on n1 is %v, want alive: n1 is registered", id, info)
		}
	}
}

// joiningNodes is a fakeNodes that is also a JoiningView: joining are the nodes the GCS
// says are about to host actors (registered, or their agent starting them), and reads
// counts the GCS reads.
type joiningNodes struct {
	*fakeNodes
	jmu     sync.Mutex
	joining map[string]sched.Resources
	reads   int
}

func (j *joiningNodes) Joining(ctx context.Context, alive map[string]sched.Resources) (map[string]sched.Resources, error) {
	j.jmu.Lock()
	defer j.jmu.Unlock()
	j.reads++
	out := map[string]sched.Resources{}
	for n, r := range j.joining {
		if _, ok := alive[n]; !ok {
			out[n] = r
		}
	}
	return out, nil
}

func (j *joiningNodes) setJoining(n string, r sched.Resources, on bool) {
	j.jmu.Lock()
	defer j.jmu.Unlock()
	if on {
		j.joining[n] = r
	} else {
		delete(j.joining, n)
	}
}

// D0 of the tester's report: an actor needing a resource only other worker processes of
// the job have, created right after the job started, was found unplaceable by a leader
// whose view held only itself (the job's worker processes start together and learn of each
// other a moment later). A node the GCS says is joining makes it wait; it starts there once
// that node is in the view. With nothing joining it still cannot be placed.
func TestManagerWaitsForAJoiningNodeBeforeFindingAnActorUnplaceable(t *testing.T) {
	gpu := sched.Resources{}.With("gpuish", sched.Unit)
	cpu := sched.Resources{}.With("CPU", 2*sched.Unit)
	jn := &joiningNodes{fakeNodes: &fakeNodes{alive: map[string]sched.Resources{"n1": cpu}},
		joining: map[string]sched.Resources{"n2": gpu, "agent a3": cpu}}
	h := newManagerHarness(t, nil, func(c *ManagerConfig) { c.Nodes = jn })
	h.nodes = jn.fakeNodes
	half := sched.Resources{}.With("gpuish", sched.Unit/2)
	id := h.create(3, half)
	info := h.await(id, "waiting for the joining node", func(info *pb.ActorInfo, found bool) bool { return found && info.Waiting != "" })
	if lifecycle.Phase(info.Phase) != lifecycle.Pending || !strings.Contains(info.Waiting, "waiting for node n2, which has {gpuish=0.5} and is joining the cluster") {
		t.Fatalf("while n2 joins: phase %v, waiting %q; want Pending, waiting for n2", lifecycle.Phase(info.Phase), info.Waiting)
	}
	for i := 0; i < 10; i++ { // many passes of the leader: it still waits
		h.m.NodesChanged()
		time.Sleep(20 * time.Millisecond)
	}
	if info, _ := h.m.Get(id); lifecycle.Phase(info.Phase) != lifecycle.Pending {
		t.Fatalf("while n2 joins: %v, want Pending", info)
	}
	jn.setJoining("n2", sched.Resources{}, false)
	h.nodes.set("n2", gpu, true)
	h.m.NodesChanged()
	info = h.await(id, "alive", phaseIs(lifecycle.Alive))
	if info.Node != "n2" {
		t.Fatalf("placed on %s, want n2", info.Node)
	}
	// Nothing joining has it: the creation fails as before, saying what is missing.
	other := h.create(3, sched.Resources{}.With("tpu", sched.Unit))
	dead := h.await(other, "dead", phaseIs(lifecycle.Dead))
	if lifecycle.Cause(dead.Cause) != lifecycle.CauseUnschedulable || !strings.Contains(dead.Detail, "no node in the cluster has the resources {tpu=1}") {
		t.Fatalf("an actor no node has the resources of: cause %v, detail %q; want Unschedulable", lifecycle.Cause(dead.Cause), dead.Detail)
	}
}

// createAffine creates an actor with node affinity to node (soft or hard) and maxRestarts.
func (h *managerHarness) createAffine(node string, soft bool, maxRestarts int) string {
	h.t.Helper()
	id := ids.NewActorID()
	info := &pb.ActorInfo{ActorId: id[:], Class: "test.C", MaxRestarts: int32(maxRestarts), AffinityNode: node, AffinitySoft: soft}
	if _, _, err := h.table.Create(context.Background(), info); err != nil {
		h.t.Fatal(err)
	}
	return id.String()
}

// D2 of the tester's report: ray.NodeAffinity was ignored for actors. A hard affinity
// places the actor on its node only: a node that is not there fails the creation, and a
// restart after the node died fails too (node IDs are never reused; Ray's actor is then
// unschedulable). A soft one prefers its node and goes elsewhere when it is gone.
func TestManagerNodeAffinity(t *testing.T) {
	h := newManagerHarness(t, map[string]sched.Resources{"n1": {}, "n2": {}, "n3": {}})
	hard := h.createAffine("n3", false, 3)
	soft := h.createAffine("n2", true, 3)
	if info := h.await(hard, "alive", phaseIs(lifecycle.Alive)); info.Node != "n3" {
		t.Fatalf("hard affinity to n3: placed on %s", info.Node)
	}
	if info := h.await(soft, "alive", phaseIs(lifecycle.Alive)); info.Node != "n2" {
		t.Fatalf("soft affinity to n2: placed on %s", info.Node)
	}
	// A hard affinity to a node that is not in the cluster (nor registered) fails.
	nowhere := h.createAffine("n9", false, 3)
	dead := h.await(nowhere, "dead", phaseIs(lifecycle.Dead))
	if lifecycle.Cause(dead.Cause) != lifecycle.CauseUnschedulable || !strings.Contains(dead.Detail, "node n9, the only node it may run on (hard NodeAffinity), is gone") {
		t.Fatalf("hard affinity to n9: cause %v, detail %q; want Unschedulable", lifecycle.Cause(dead.Cause), dead.Detail)
	}
	// A soft one to such a node goes elsewhere.
	if info := h.await(h.createAffine("n9", true, 0), "alive", phaseIs(lifecycle.Alive)); info.Node == "n9" || info.Node == "" {
		t.Fatalf("soft affinity to n9: placed on %q", info.Node)
	}
	// Their nodes die: the hard one cannot restart elsewhere, the soft one does.
	h.nodes.set("n3", sched.Resources{}, false)
	h.nodes.set("n2", sched.Resources{}, false)
	h.m.NodesChanged()
	dead = h.await(hard, "dead", phaseIs(lifecycle.Dead))
	if lifecycle.Cause(dead.Cause) != lifecycle.CauseUnschedulable || !strings.Contains(dead.Detail, "node n3, the only node it may run on (hard NodeAffinity), is gone") {
		t.Fatalf("hard affinity to n3 after n3 died: cause %v, detail %q; want Unschedulable", lifecycle.Cause(dead.Cause), dead.Detail)
	}
	info := h.await(soft, "restarted", func(info *pb.ActorInfo, found bool) bool {
		return found && lifecycle.Phase(info.Phase) == lifecycle.Alive && info.Incarnation == 2
	})
	if info.Node != "n1" {
		t.Fatalf("soft affinity to n2 after n2 died: restarted on %s, want n1", info.Node)
	}
}

// A hard affinity to a node of the job registered a moment ago, not in the leader's view
// yet, waits for it; one to a node that is no node of the job (a driver's) fails.
func TestManagerNodeAffinityWaitsForAJoiningNode(t *testing.T) {
	jn := &joiningNodes{fakeNodes: &fakeNodes{alive: map[string]sched.Resources{"n1": {}}},
		joining: map[string]sched.Resources{"n2": {}}}
	h := newManagerHarness(t, nil, func(c *ManagerConfig) { c.Nodes = jn })
	h.nodes = jn.fakeNodes
	id := h.createAffine("n2", false, 0)
	info := h.await(id, "waiting for n2", func(info *pb.ActorInfo, found bool) bool { return found && info.Waiting != "" })
	if lifecycle.Phase(info.Phase) != lifecycle.Pending || !strings.Contains(info.Waiting, "node n2, the only node it may run on (hard NodeAffinity), which is registered") {
		t.Fatalf("while n2 joins: phase %v, waiting %q", lifecycle.Phase(info.Phase), info.Waiting)
	}
	driver := h.createAffine("drv", false, 0)
	if dead := h.await(driver, "dead", phaseIs(lifecycle.Dead)); lifecycle.Cause(dead.Cause) != lifecycle.CauseUnschedulable {
		t.Fatalf("hard affinity to a node of no job: cause %v (%s)", lifecycle.Cause(dead.Cause), dead.Detail)
	}
	jn.setJoining("n2", sched.Resources{}, false)
	h.nodes.set("n2", sched.Resources{}, true)
	h.m.NodesChanged()
	if info := h.await(id, "alive", phaseIs(lifecycle.Alive)); info.Node != "n2" {
		t.Fatalf("placed on %s, want n2", info.Node)
	}
}
