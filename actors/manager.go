package actors

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unique"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/mapx"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// NodeView is what the manager needs to know about the cluster's nodes.
//
// Contract: Alive is cheap, safe for concurrent use, and lists only nodes believed alive
// that host actor grains, with their total resources.
type NodeView interface {
	Alive() map[string]sched.Resources
}

// SuspectView is implemented by a NodeView that also knows the nodes out of Alive only
// because a connection to them broke, while their process may live (still registered,
// its address not refusing connections). The leader places nothing on them and does not
// take their actors' host for dead: HostDied is final for an actor without restarts left,
// and a connection broken under load heals. Such a node is decided when it is alive again,
// or leaves both sets (its process is gone).
type SuspectView interface {
	Suspects() map[string]bool
}

// JoiningView is implemented by a NodeView that can read, from the GCS, the nodes about to
// host the job's actors that Alive does not list yet: a node whose record is registered
// while its member is not in this process's view, or a node agent whose worker process for
// the job has not registered yet (the worker processes of a job start together, and each
// learns of the others a moment after it runs). The leader asks it, once per pass, before
// it finds an actor being created unplaceable: it waits for such a node instead of
// deciding on a view that may be incomplete.
//
// Contract: Joining may block on the GCS (bounded by ctx); it leaves out the nodes of
// alive, and keys the nodes it returns by node ID (an agent's by "agent "+its ID). An
// error means it cannot tell.
type JoiningView interface {
	Joining(ctx context.Context, alive map[string]sched.Resources) (map[string]sched.Resources, error)
}

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	Node string // this node's ID
	// Job, when set, limits the manager to that job's actors: in a cluster every job's
	// worker processes elect their own leader among themselves (Nodes lists only them),
	// and an actor runs only where its job's binary does.
	Job   string
	Table *Table
	Nodes NodeView
	// Activate starts the grain of an actor placed on a node (cluster.Get of its identity);
	// it may block for a moment and is called on its own goroutine.
	Activate func(actorID string)
	// Resync is how often the manager looks at the alive nodes and at the actors whose
	// start it asked for without news (default 1 s); every 30 Resyncs it re-examines
	// every live actor, the bound on how long a missed event can delay a restart.
	Resync time.Duration
	// SweepEvery is how many Resyncs apart those full re-examinations are (default
	// sweepEvery, 30).
	SweepEvery int
	// DeadKept is how many dead actors Get still answers for from memory, the most
	// recent deaths (default 65536). Older ones are read from the GCS on demand (Info).
	DeadKept int
	// GroupGoneGrace, when positive, makes the leader end the actors of its job whose
	// placement group is gone (manager_groups.go): its record says REMOVED, its creator's
	// death is confirmed (OwnerGone), or its record has been missing for GroupGoneGrace
	// (its creator ended and nobody saw it: the record lives on the creator's lease).
	// Zero leaves that to the groups' creators (a single-process runtime).
	GroupGoneGrace time.Duration
	Logger         *slog.Logger
}

// Validate reports a configuration that cannot work.
func (c *ManagerConfig) Validate() error {
	if c.Node == "" || c.Table == nil || c.Nodes == nil || c.Activate == nil {
		return errors.New("actors: ManagerConfig needs Node, Table, Nodes and Activate")
	}
	if c.DeadKept < 0 {
		return errors.New("actors: ManagerConfig.DeadKept must not be negative")
	}
	if c.GroupGoneGrace < 0 {
		return errors.New("actors: ManagerConfig.GroupGoneGrace must not be negative")
	}
	return nil
}

// activateRetry is how long a start the manager asked for may go without the actor
// becoming alive before the manager asks again (the grain could not be reached).
const activateRetry = 2 * time.Second

// sweepEvery: every sweepEvery Resyncs the leader re-examines every live actor.
const sweepEvery = 30

// Manager is a node's view of the actor table and, on the leader node (the alive node
// with the smallest ID), the GCS actor manager of Ray: it places actors that wait for a
// node, starts their instances, reports the death of nodes hosting actors
// (lifecycle.HostDied), which restarts them elsewhere or lets them wait for a node, and
// ends the non-detached actors whose owner died (lifecycle.OwnerDied, OwnerGone). Every
// decision is a lifecycle step written with a revision check, so a second manager acting
// at the same time (a leader change) cannot do harm.
//
// It keeps a cache of the records of the actors that are not dead, fed by a watch, and
// tells subscribers of every change (the process runtime uses it to resend or fail
// calls). A dead actor leaves the cache: only a small tombstone of the most recent
// deaths stays (ManagerConfig.DeadKept), and the GCS keeps the record itself for the
// state API. The cached records carry no constructor arguments (the grain reads the
// record from the GCS when it activates).
//
// The leader's work costs O(changes), not O(actors), per event: the run loop looks only
// at the actors whose record changed since it last looked, at the actors waiting for a
// node when the set of nodes changes, and at the actors placed on a node that left. It
// keeps those indexes itself (they are the run loop's state, no lock): the actors of its
// job waiting for a node, and the actors of its job by node.
type Manager struct {
	cfg    ManagerConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{}

	// Read by Get, All and Info on any goroutine; written by the run loop.
	mu     sync.RWMutex
	actors map[string]*pb.ActorInfo // actors that are not dead
	dead   map[string]tomb          // the most recent deaths, at most cfg.DeadKept
	ring   []string                 // dead's keys in order of death (a ring)
	next   int                      // ring's oldest entry once it is full
	forgot bool                     // a tombstone was dropped: a miss may be a dead actor
	listed bool                     // the first list of the table is in
	subs   []func(*pb.ActorInfo)
	// byGroup: live actors by placement group, every job's (manager_groups.go).
	byGroup map[string]map[string]struct{}
	// Owners that died (OwnerGone): their addresses, at most maxGoneOwners, and the ones
	// the run loop has not looked at yet.
	goneOwners mapx.Recent[string]
	goneNew    []string

	// The run loop's own state.
	dirty     map[string]struct{}            // this job's live actors to look at
	waiting   map[string]struct{}            // this job's actors waiting for a node
	byNode    map[string]map[string]struct{} // this job's live actors with a node
	byOwner   map[string]map[string]struct{} // this job's live non-detached actors by their owner's address
	activated map[string]activation          // starts asked for and not yet alive
	inflight  map[string]string              // actors with a step under way -> the node it places them on ("" for other steps)
	recheck   map[string]struct{}            // actors with a step under way that examine skipped
	placing   map[string]int                 // node -> placements under way to it (counted as load)
	results   chan stepResult                // the steps' outcomes, back to the run loop
	slots     chan struct{}                  // bounds the steps under way
	alive     map[string]sched.Resources     // the nodes alive when the leader last looked
	seen      map[string]bool                // the nodes ever in its view (see registered)
	unseen    map[string]bool                // registered's answers in this pass
	joins     *joiningRead                   // joining's answer in this pass (nil: not read)
	suspects  map[string]bool                // and those suspect then (SuspectView)
	leading   bool
	ticks     int
	groups    groupCheck // the placement groups of the job's actors (manager_groups.go)
}

// tomb is what the manager keeps of a dead actor: what its callers need to fail their
// calls with the reason (lifecycle.State.Err) and to tell the actor's options.
type tomb struct {
	jobID          string
	detail         string
	incarnation    uint64
	restarts       int32
	maxRestarts    int32
	maxTaskRetries int32
	cause          int32
	atMostOnce     bool
	detached       bool
	ownerDead      bool
}

func tombOf(info *pb.ActorInfo) tomb {
	return tomb{jobID: info.JobId, detail: info.Detail, incarnation: info.Incarnation, restarts: info.Restarts,
		maxRestarts: info.MaxRestarts, maxTaskRetries: info.MaxTaskRetries, cause: info.Cause,
		atMostOnce: info.AtMostOnce, detached: info.Detached, ownerDead: info.OwnerDead}
}

func (t tomb) record(id string) *pb.ActorInfo {
	aid, _ := idBytes(id)
	return &pb.ActorInfo{ActorId: aid, JobId: t.jobID, Phase: int32(lifecycle.Dead), Detail: t.detail,
		Incarnation: t.incarnation, Restarts: t.restarts, MaxRestarts: t.maxRestarts, MaxTaskRetries: t.maxTaskRetries,
		Cause: t.cause, AtMostOnce: t.atMostOnce, Detached: t.detached, OwnerDead: t.ownerDead}
}

// stepResult is the outcome of a lifecycle step the run loop handed to a goroutine.
type stepResult struct {
	id      string
	node    string // Placed's node, else ""
	after   *pb.ActorInfo
	changed bool
	err     error
}

// maxSteps bounds the lifecycle steps (GCS transactions) under way at once: concurrent
// writes share etcd's commits, so placing a thousand actors costs a few fsyncs, not a
// thousand in a row.
const maxSteps = 64

// activation is a start the manager asked for: of which incarnation, and when.
type activation struct {
	inc uint64
	at  time.Time
}

// NewManager starts a manager.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Resync <= 0 {
		cfg.Resync = time.Second
	}
	if cfg.DeadKept == 0 {
		cfg.DeadKept = 1 << 16
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = sweepEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{cfg: cfg, kick: make(chan struct{}, 1), actors: map[string]*pb.ActorInfo{}, dead: map[string]tomb{},
		dirty: map[string]struct{}{}, waiting: map[string]struct{}{}, byNode: map[string]map[string]struct{}{},
		byOwner: map[string]map[string]struct{}{}, goneOwners: mapx.Recent[string]{Max: maxGoneOwners},
		activated: map[string]activation{}, inflight: map[string]string{}, recheck: map[string]struct{}{}, placing: map[string]int{},
		results: make(chan stepResult, maxSteps), slots: make(chan struct{}, maxSteps),
		groups: groupCheck{verdicts: make(chan []groupVerdict, 1), seen: map[string]*groupSeen{}}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Add(1)
	go m.run()
	return m, nil
}

// Subscribe calls fn for every actor record change seen (on the manager's goroutine; fn
// must not block). A record is told once per change; the death of an actor is told when
// the manager sees it happen (not for actors already dead when the manager started).
func (m *Manager) Subscribe(fn func(*pb.ActorInfo)) {
	m.mu.Lock()
	m.subs = append(m.subs, fn)
	m.mu.Unlock()
}

// Get returns the cached record of an actor: the newest record seen of an actor that is
// not dead (without its constructor arguments), or, for one of the most recent
// ManagerConfig.DeadKept deaths, a dead record that says why it died (ID, job, options,
// incarnation, restarts, cause and detail). A miss means the watch has not shown the
// actor yet, or it died long ago (Info reads the GCS then), or it never existed.
// The record returned must not be modified.
func (m *Manager) Get(actorID string) (*pb.ActorInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if info, ok := m.actors[actorID]; ok {
		return info, true
	}
	if t, ok := m.dead[actorID]; ok {
		return t.record(actorID), true
	}
	return nil, false
}

// Info is Get, but when the manager has dropped the tombstones of older deaths and the
// actor is not in memory, it reads the actor's record from the GCS (bounded by a few
// seconds), so that the callers of an actor dead long ago still learn why.
func (m *Manager) Info(actorID string) (*pb.ActorInfo, bool) {
	if info, ok := m.Get(actorID); ok {
		return info, true
	}
	m.mu.RLock()
	forgot := m.forgot
	m.mu.RUnlock()
	if !forgot {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(m.ctx, 3*time.Second)
	defer cancel()
	info, _, err := m.cfg.Table.Get(ctx, actorID)
	if err != nil {
		return nil, false
	}
	return info, true
}

// All returns the cached records of every actor that is not dead.
func (m *Manager) All() []*pb.ActorInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*pb.ActorInfo, 0, len(m.actors))
	for _, info := range m.actors {
		out = append(out, info)
	}
	return out
}

// LiveDetached reports whether a detached actor of this manager's job (of any job when
// ManagerConfig.Job is empty) is not dead, or the manager has not read the actor table yet
// (it cannot tell): a cluster worker process serves on after its job ended while one is
// (internal/assembly/node ServeWorker).
func (m *Manager) LiveDetached() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.listed {
		return true
	}
	for _, info := range m.actors {
		if info.Detached && m.mine(info) {
			return true
		}
	}
	return false
}

// Table is the actor table the manager reads.
func (m *Manager) Table() *Table { return m.cfg.Table }

// NodesChanged tells the manager that the set of alive nodes changed.
func (m *Manager) NodesChanged() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// maxGoneOwners bounds the dead owners a manager remembers (the most recent deaths).
const maxGoneOwners = 4096

// OwnerGone tells the manager that the process at address (a runtime, the owner of the
// actors it created) died: the leader ends every non-detached actor of its job that this
// process owned (lifecycle.OwnerDied, Ray's fate-sharing; detached actors live on). Call
// it on a definite death (membership.MemberGone), not on a broken connection: the step is
// final. Every manager remembers the most recent dead owners, so a manager that becomes
// the leader later (the old one died with the owner) ends their actors too.
func (m *Manager) OwnerGone(address string) {
	if address == "" {
		return
	}
	m.mu.Lock()
	if !m.goneOwners.Add(address) {
		m.mu.Unlock()
		return
	}
	m.goneNew = append(m.goneNew, address)
	m.mu.Unlock()
	m.NodesChanged()
}

// OwnerBack forgets the death of the owner at address: a process joined there again (a
// new process may reuse a dead one's port; its actors must not be taken for the dead
// one's). Actors of the dead owner the leader has not ended yet then end with their
// handles or their job instead.
func (m *Manager) OwnerBack(address string) {
	m.mu.Lock()
	m.goneOwners.Remove(address)
	m.mu.Unlock()
}

// ownerGone reports whether the non-detached actor of record info has an owner that died.
func (m *Manager) ownerGone(info *pb.ActorInfo) bool {
	if info.Detached || info.Owner == nil {
		return false
	}
	m.mu.RLock()
	gone := m.goneOwners.Has(info.Owner.Address)
	m.mu.RUnlock()
	return gone
}

// Stop stops the manager's goroutines.
func (m *Manager) Stop() {
	m.cancel()
	m.wg.Wait()
}

func (m *Manager) run() {
	defer m.wg.Done()
	tick := time.NewTicker(m.cfg.Resync)
	defer tick.Stop()
	for m.ctx.Err() == nil {
		kvs, rev, err := m.cfg.Table.Store.List(m.ctx, gcs.ActorsPrefix)
		if err != nil {
			if !sleep(m.ctx, 200*time.Millisecond) {
				return
			}
			continue
		}
		for _, kv := range kvs {
			m.applyBytes(kv.Value)
		}
		kvs = nil
		m.mu.Lock()
		m.listed = true
		m.mu.Unlock()
		m.leading = false // look at everything again
		m.reconcile(false)
		watch := m.cfg.Table.Store.Watch(m.ctx, gcs.ActorsPrefix, rev+1)
	loop:
		for {
			select {
			case <-m.ctx.Done():
				return
			case resp, ok := <-watch:
				if !ok || resp.Err != nil {
					break loop // list again
				}
				for _, ev := range resp.Events {
					if ev.Type == gcs.EventPut {
						m.applyBytes(ev.KV.Value)
					}
				}
				m.reconcile(false)
			case r := <-m.results:
				m.stepped(r)
				for drained := false; !drained; { // take every outcome that is in
					select {
					case r := <-m.results:
						m.stepped(r)
					default:
						drained = true
					}
				}
				m.reconcile(false)
			case <-m.kick:
				m.reconcile(false)
			case <-tick.C:
				m.ticks++
				m.retryActivations()
				m.reconcile(m.ticks%m.cfg.SweepEvery == 0)
				m.checkGroups()
			case v := <-m.groups.verdicts:
				m.endGroups(v)
			}
		}
	}
}

func (m *Manager) applyBytes(value []byte) {
	info, err := decodeInfo(value)
	if err != nil {
		m.cfg.Logger.Warn("actors: ignoring an actor record", "err", err)
		return
	}
	m.apply(info)
}

// apply takes in a record read from the GCS (the list, the watch, or a step of this
// manager). A dead record is buried (a tombstone Info answers with) and told to
// subscribers wherever it comes from: one first read in a list is an actor that died
// before this manager listed the table (killed a moment after its node started, or
// between a watch's error and the list after it), which a caller made afterwards must
// find dead (Info), since no later record of it will ever come.
func (m *Manager) apply(info *pb.ActorInfo) {
	id := idString(info.ActorId)
	info.CtorArgs = nil // the grain reads them from the GCS
	info.History = nil  // the state API reads it from the GCS
	internStrings(info)
	dead := lifecycle.Phase(info.Phase) == lifecycle.Dead
	m.mu.Lock()
	old, live := m.actors[id]
	_, tombed := m.dead[id]
	switch {
	case live && proto.Equal(old, info):
		m.mu.Unlock()
		return
	case tombed:
		m.mu.Unlock()
		return // a late record of an actor that died: a dead actor stays dead
	case dead:
		delete(m.actors, id)
		m.bury(id, info)
	default:
		m.actors[id] = info
	}
	m.indexGroup(id, old, info)
	subs := m.subs
	m.mu.Unlock()
	m.index(id, old, info)
	for _, fn := range subs {
		fn(info)
	}
}

// bury keeps a tombstone of a dead actor, dropping the oldest beyond cfg.DeadKept.
// Called with mu held.
func (m *Manager) bury(id string, info *pb.ActorInfo) {
	if len(m.ring) < m.cfg.DeadKept {
		m.ring = append(m.ring, id)
	} else {
		delete(m.dead, m.ring[m.next])
		m.ring[m.next] = id
		m.next = (m.next + 1) % len(m.ring)
		m.forgot = true
	}
	m.dead[id] = tombOf(info)
}

// mine reports whether the leader of this manager places the actor.
func (m *Manager) mine(info *pb.ActorInfo) bool {
	return info != nil && (m.cfg.Job == "" || info.JobId == m.cfg.Job)
}

// index updates the run loop's indexes for a record that changed from old (nil: not
// known) to info, and marks the actor to be looked at.
func (m *Manager) index(id string, old, info *pb.ActorInfo) {
	if m.mine(old) && old.Node != "" {
		unindex(m.byNode, old.Node, id)
	}
	if m.mine(old) && !old.Detached && old.Owner != nil {
		unindex(m.byOwner, old.Owner.Address, id)
	}
	if !m.mine(info) {
		return
	}
	if lifecycle.Phase(info.Phase) == lifecycle.Dead {
		delete(m.waiting, id)
		delete(m.dirty, id)
		delete(m.activated, id)
		return
	}
	if !info.Detached && info.Owner != nil {
		addIndex(m.byOwner, info.Owner.Address, id)
	}
	if info.Node == "" {
		m.waiting[id] = struct{}{}
	} else {
		delete(m.waiting, id)
		addIndex(m.byNode, info.Node, id)
		if n := m.inflight[id]; n != "" && n == info.Node {
			// The placed record came before the step's result: it counts in byNode now,
			// not also as a placement under way (which would skew Pick's balance).
			m.placed(n)
			m.inflight[id] = ""
		}
	}
	if a, ok := m.activated[id]; ok && (info.Incarnation != a.inc || lifecycle.Phase(info.Phase) == lifecycle.Alive) {
		delete(m.activated, id)
	}
	m.dirty[id] = struct{}{}
}

func addIndex(index map[string]map[string]struct{}, key, id string) {
	set := index[key]
	if set == nil {
		set = map[string]struct{}{}
		index[key] = set
	}
	set[id] = struct{}{}
}

func unindex(index map[string]map[string]struct{}, key, id string) {
	if set := index[key]; set != nil {
		delete(set, id)
		if len(set) == 0 {
			delete(index, key)
		}
	}
}

// retryActivations forgets the starts that went unanswered for activateRetry, so that
// the next look at those actors asks again.
func (m *Manager) retryActivations() {
	now := time.Now()
	for id, a := range m.activated {
		if now.Sub(a.at) >= activateRetry {
			delete(m.activated, id)
			m.dirty[id] = struct{}{}
		}
	}
}

// reconcile does the leader's work on what changed: place, start, and report dead
// hosts and owners. all looks at every live actor of the job (a new leader, a periodic
// sweep).
func (m *Manager) reconcile(all bool) {
	alive := m.cfg.Nodes.Alive()
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	for n := range alive {
		m.seen[n] = true
	}
	var suspects map[string]bool
	if sv, ok := m.cfg.Nodes.(SuspectView); ok {
		suspects = sv.Suspects()
	}
	prevSuspects := m.suspects
	m.suspects = suspects
	m.mu.Lock()
	goneNew := m.goneNew
	m.goneNew = nil
	m.mu.Unlock()
	if !m.leader(alive) {
		m.leading = false
		clear(m.dirty)
		m.alive = alive
		return
	}
	var work []string
	add := func(id string) { work = append(work, id) }
	if !m.leading || all {
		m.leading = true
		m.mu.RLock()
		for id, info := range m.actors {
			if m.mine(info) {
				add(id)
			}
		}
		m.mu.RUnlock()
		clear(m.dirty)
	} else {
		for id := range m.dirty {
			add(id)
		}
		clear(m.dirty)
		gone, joined := nodesDiff(m.alive, alive)
		for n := range prevSuspects {
			if !suspects[n] && !isAlive(alive, n) {
				gone = append(gone, n) // suspect, now gone
			}
		}
		for _, n := range gone {
			for id := range m.byNode[n] {
				add(id)
			}
		}
		if joined {
			for id := range m.waiting {
				add(id)
			}
		}
		for _, owner := range goneNew {
			for id := range m.byOwner[owner] {
				add(id)
			}
		}
	}
	m.alive = alive
	clear(m.unseen) // what registered and joining read is good for one pass
	m.joins = nil
	for _, id := range work {
		if m.ctx.Err() != nil {
			return
		}
		m.examine(id, alive)
	}
}

// nodesDiff returns the nodes of before that are not in after, and whether after has a
// node that before had not.
func nodesDiff(before, after map[string]sched.Resources) (gone []string, joined bool) {
	for n := range before {
		if _, ok := after[n]; !ok {
			gone = append(gone, n)
		}
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			joined = true
			break
		}
	}
	return gone, joined
}

// examine takes the leader's step for one actor, if it needs one.
func (m *Manager) examine(id string, alive map[string]sched.Resources) {
	m.mu.RLock()
	info := m.actors[id]
	m.mu.RUnlock()
	if !m.mine(info) {
		return
	}
	if _, busy := m.inflight[id]; busy {
		m.recheck[id] = struct{}{} // looked at again when the step is done (stepped)
		return
	}
	switch {
	case m.ownerGone(info):
		m.step(id, "", lifecycle.OwnerDied{})
	case info.Node == "":
		m.place(id, info, alive)
	case !isAlive(alive, info.Node):
		if m.suspects[info.Node] {
			return // its process may live: looked at again when it is alive or gone
		}
		if !m.seen[info.Node] && m.registered(info.Node) {
			// A node that joined after this view was read (see registered), or one that
			// died before this manager saw it, whose record has not lapsed yet: looked at
			// again at the next Resync, not at the next sweep (the actor's restart and
			// every caller of it waited ~30 s when a worker process that started after its
			// host died took the lead).
			m.dirty[id] = struct{}{}
			return
		}
		m.step(id, "", lifecycle.HostDied{Node: info.Node})
	case lifecycle.Phase(info.Phase) != lifecycle.Alive:
		m.activate(id, info.Incarnation)
	}
}

// registered reports whether node, never in this manager's view of the alive nodes, has
// its record in the GCS's node table (or the GCS cannot say). The view and the actors'
// records come by different watches: a process that has just started can read an actor
// placed on a node that registered after its view's first list, before the view's watch
// brings that node, and take itself for the leader (the new node's smaller ID unseen). A
// node it never saw is taken for dead only once its record is gone (its lease lapsed);
// a node it saw go is taken for dead at once, as before. Such an actor is looked at again
// by the periodic sweep of every actor. The GCS is read once per node and pass (a new
// leader may find thousands of actors on a node that died before it started).
func (m *Manager) registered(node string) bool {
	if r, ok := m.unseen[node]; ok {
		return r
	}
	ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
	defer cancel()
	_, found, err := m.cfg.Table.Store.Get(ctx, gcs.NodeKey(node))
	if m.unseen == nil {
		m.unseen = map[string]bool{}
	}
	m.unseen[node] = found || err != nil
	return m.unseen[node]
}

// joiningRead is what JoiningView said in one pass.
type joiningRead struct {
	nodes map[string]sched.Resources
	err   error
}

// readJoining asks the JoiningView (nil without one) for the nodes joining, once per pass.
func (m *Manager) readJoining(alive map[string]sched.Resources) *joiningRead {
	jv, ok := m.cfg.Nodes.(JoiningView)
	if !ok {
		return nil
	}
	if m.joins == nil {
		ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
		nodes, err := jv.Joining(ctx, alive)
		cancel()
		m.joins = &joiningRead{nodes: nodes, err: err}
	}
	return m.joins
}

// joiningNode reports whether node, not in alive, is registered in the GCS as a node that
// will host the job's actors (JoiningView; without one, any record of it: registered), or
// the GCS cannot say.
func (m *Manager) joiningNode(alive map[string]sched.Resources, node string) bool {
	j := m.readJoining(alive)
	if j == nil {
		return m.registered(node)
	}
	_, ok := j.nodes[node]
	return ok || j.err != nil && m.ctx.Err() == nil
}

// joiningFits reports whether a node about to join the view (JoiningView) could ever hold
// req, or the GCS could not say, and the reason to wait for it: an actor being created that
// no alive node fits waits rather than being found unplaceable on a view that may not have
// every node yet. The GCS is read once per pass, and only when a placement would fail.
func (m *Manager) joiningFits(alive map[string]sched.Resources, req sched.Resources) (string, bool) {
	j := m.readJoining(alive)
	if j == nil {
		return "", false
	}
	if j.err != nil {
		if m.ctx.Err() != nil {
			return "", false
		}
		return "waiting for a node with " + req.String() + ": the GCS could not list the nodes joining the cluster (" +
			j.err.Error() + ")", true
	}
	best := ""
	for n, total := range j.nodes {
		if !isAlive(alive, n) && total.Fits(req) && (best == "" || n < best) {
			best = n
		}
	}
	if best == "" {
		return "", false
	}
	return "waiting for node " + best + ", which has " + req.String() + " and is joining the cluster", true
}

// leader: the alive node with the smallest ID does the placing.
func (m *Manager) leader(alive map[string]sched.Resources) bool {
	if _, ok := alive[m.cfg.Node]; !ok {
		return false
	}
	for n := range alive {
		if n < m.cfg.Node {
			return false
		}
	}
	return true
}

// Pick is the placement policy: of the alive nodes whose total resources fit req, the
// one with the fewest actors (load), the smallest ID among equals; "" if none fits.
func Pick(alive map[string]sched.Resources, load func(node string) int, req sched.Resources) string {
	best, bestLoad := "", 0
	for n, total := range alive {
		if !total.Fits(req) {
			continue
		}
		l := load(n)
		if best == "" || l < bestLoad || l == bestLoad && n < best {
			best, bestLoad = n, l
		}
	}
	return best
}

// place places an actor waiting for a node (Pick). When no alive node fits it: an actor
// being created (Pending) cannot be placed, ever, if there is a node at all (the cluster
// that it was created in has none that fits; PlacementFailed); a restarting actor waits
// until a node that fits it is back (the nodes that fitted may be cut off for a while).
func (m *Manager) place(id string, info *pb.ActorInfo, alive map[string]sched.Resources) {
	switch {
	case info.PlacementGroup != "":
		m.placeInBundle(id, info, alive) // manager_groups.go
		return
	case info.AffinityNode != "" && !info.AffinitySoft:
		m.placeAffine(id, info, alive)
		return
	}
	req := tasks.ResourcesFromPB(info.Resources)
	best := ""
	if n := info.AffinityNode; n != "" && !m.suspects[n] && alive[n].Fits(req) && isAlive(alive, n) {
		best = n // soft node affinity: its node when it can take it
	} else {
		best = Pick(alive, func(n string) int { return len(m.byNode[n]) + m.placing[n] }, req)
	}
	if best == "" {
		if len(alive) == 0 || !StateOf(info).MayFailPlacement() {
			// Wait for a node (it stays in m.waiting), and say so in its record.
			m.wait(id, info, noNodeReason(req, alive))
			return
		}
		if why, ok := m.joiningFits(alive, req); ok {
			m.wait(id, info, why) // the view may be incomplete: a node about to join fits it
			return
		}
		m.cfg.Logger.Warn("actors: no node can host the actor", "actor", id, "resources", req)
		m.step(id, "", lifecycle.PlacementFailed{Incarnation: info.Incarnation, Message: "no node in the cluster has the resources " + req.String()})
		return
	}
	m.placing[best]++
	m.step(id, best, lifecycle.Placed{Incarnation: info.Incarnation, Node: best})
}

// placeAffine places an actor of hard node affinity (ray.NodeAffinity with soft false, no
// placement group): on its node, and nowhere else. While that node is only unreachable
// (SuspectView), or never in this view but registered in the GCS as a node of the job
// (joiningNode: a view that may be incomplete), the actor waits for it. Once it is gone the actor dies
// (Unschedulable), being created or restarting (lifecycle.PlacementFailed.NodeGone: node
// IDs are never reused), as in Ray. A node that cannot hold the actor's resources fails
// its creation too (the creator checks that first, against its own view).
func (m *Manager) placeAffine(id string, info *pb.ActorInfo, alive map[string]sched.Resources) {
	n := info.AffinityNode
	req := tasks.ResourcesFromPB(info.Resources)
	if total, ok := alive[n]; ok {
		if total.Fits(req) {
			m.placing[n]++
			m.step(id, n, lifecycle.Placed{Incarnation: info.Incarnation, Node: n})
			return
		}
		if StateOf(info).MayFailPlacement() {
			m.step(id, "", lifecycle.PlacementFailed{Incarnation: info.Incarnation,
				Message: "node " + n + ", the only node it may run on (hard NodeAffinity), has " + total.String() + ", not " + req.String()})
			return
		}
		m.wait(id, info, "waiting for node "+n+", the only node it may run on (hard NodeAffinity), to have "+req.String())
		return
	}
	waitWhy := "waiting for node " + n + ", the only node it may run on (hard NodeAffinity), to be reachable again"
	if m.suspects[n] {
		m.wait(id, info, waitWhy)
		return
	}
	if len(alive) == 0 {
		m.wait(id, info, "waiting for node "+n+", the only node it may run on (hard NodeAffinity): no node is alive")
		return
	}
	if !m.seen[n] && m.joiningNode(alive, n) { // a node this view saw go is gone (examine)
		m.wait(id, info, "waiting for node "+n+", the only node it may run on (hard NodeAffinity), which is registered and not yet in this view")
		return
	}
	phase := lifecycle.Phase(info.Phase)
	if phase != lifecycle.Pending && phase != lifecycle.Restarting {
		return
	}
	m.cfg.Logger.Warn("actors: the node of an actor's hard node affinity is gone", "actor", id, "node", n)
	m.step(id, "", lifecycle.PlacementFailed{Incarnation: info.Incarnation, NodeGone: true,
		Message: "node " + n + ", the only node it may run on (hard NodeAffinity), is gone or not a node of its job"})
}

// wait records why an actor waiting for a node waits (lifecycle.Waiting), when its
// record does not say so already.
func (m *Manager) wait(id string, info *pb.ActorInfo, reason string) {
	if info.Waiting == reason {
		return
	}
	m.step(id, "", lifecycle.Waiting{Incarnation: info.Incarnation, Reason: reason})
}

// noNodeReason says why no alive node can take resources req: the first resource every
// node is short of, the most any has of it, and what the alive nodes have in total.
func noNodeReason(req sched.Resources, alive map[string]sched.Resources) string {
	var sum sched.Resources
	for _, total := range alive {
		sum = sum.Add(total)
	}
	why := "no alive node has all of it"
	found := false
	req.Each(func(name string, q sched.Quantity) {
		most := sched.Quantity(0)
		for _, total := range alive {
			most = max(most, total.Get(name))
		}
		if !found && most < q {
			found = true
			why = "no alive node has " + name + "=" + q.String() + " (the most one has is " + most.String() + ")"
		}
	})
	return "waiting for a node with " + req.String() + ": " + why + "; the " + strconv.Itoa(len(alive)) +
		" alive nodes have " + sum.String() + " in total; it starts when a node that has it joins"
}

func (m *Manager) activate(id string, inc uint64) {
	if a, ok := m.activated[id]; ok && a.inc == inc {
		return
	}
	m.activated[id] = activation{inc: inc, at: time.Now()}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.cfg.Activate(id)
	}()
}

// step writes a lifecycle step of the actor on a goroutine of its own (at most maxSteps
// at once; it waits for a slot when all are taken); its outcome comes back to the run
// loop (stepped). node is the node a Placed step places the actor on.
func (m *Manager) step(id, node string, ev lifecycle.Event) {
	select {
	case m.slots <- struct{}{}:
	case <-m.ctx.Done():
		return
	}
	m.inflight[id] = node
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
		after, _, changed, err := m.cfg.Table.Step(ctx, id, ev)
		cancel()
		<-m.slots
		if err != nil && !errors.Is(err, lifecycle.ErrInvalidTransition) && m.ctx.Err() == nil {
			m.cfg.Logger.Warn("actors: lifecycle step failed", "actor", id, "event", ev, "err", err)
		}
		select {
		case m.results <- stepResult{id: id, node: node, after: after, changed: changed, err: err}:
		case <-m.ctx.Done():
		}
	}()
}

// placed ends the count of one placement under way to node n.
func (m *Manager) placed(n string) {
	if m.placing[n]--; m.placing[n] <= 0 {
		delete(m.placing, n)
	}
}

// stepped takes in the outcome of a step: the record it wrote, and for a placement the
// start of the instance. While the step was under way examine skipped the actor, and the
// watch may have brought the record the step wrote (or a newer one) already, which apply
// then takes as nothing new: so the actor is looked at again (the run loop reconciles
// after this) after a step that wrote, or failed for the GCS, or when a record came
// meanwhile (m.recheck). Without that look a restart whose HostDied record came by the
// watch first waited for the next sweep (sweepEvery Resyncs, ~30 s) or a node joining.
func (m *Manager) stepped(r stepResult) {
	if n := m.inflight[r.id]; n != "" {
		m.placed(n) // the watch has not brought the placed record yet
	}
	delete(m.inflight, r.id)
	_, recheck := m.recheck[r.id]
	delete(m.recheck, r.id)
	if recheck || r.err == nil && r.changed || r.err != nil && !errors.Is(r.err, lifecycle.ErrInvalidTransition) {
		m.dirty[r.id] = struct{}{}
	} // else nothing to do, or refused on the record as it is now, which the watch brings
	if r.err != nil {
		return
	}
	if r.changed {
		m.apply(r.after) // the cache drops its arguments
	}
	if r.node != "" && r.after != nil && r.after.Node == r.node && lifecycle.Phase(r.after.Phase) != lifecycle.Dead {
		m.activate(r.id, r.after.Incarnation)
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func isAlive(alive map[string]sched.Resources, node string) bool {
	_, ok := alive[node]
	return ok
}

// internStrings makes the record's strings that many actors share (class, job, node,
// namespace, owner, group) the one copy each: the manager holds a record per live actor,
// and every decode allocates its strings anew (issue 21: ~120 bytes per idle actor).
func internStrings(info *pb.ActorInfo) {
	in := func(s *string) {
		if *s != "" {
			*s = unique.Make(*s).Value()
		}
	}
	in(&info.Class)
	in(&info.JobId)
	in(&info.Node)
	in(&info.Namespace)
	in(&info.AffinityNode)
	in(&info.PlacementGroup)
	if info.Owner != nil {
		in(&info.Owner.Address)
		in(&info.Owner.Id)
	}
}
