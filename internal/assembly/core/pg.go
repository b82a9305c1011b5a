package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/mapx"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/raylet"
	"github.com/ray-go/ray/tasks/sched"
)

// Placement groups (Ray's): a group reserves bundles of resources on nodes, placed
// together by a strategy (sched.PlaceBundles), and tasks scheduled into a bundle run on its
// node with its resources. The runtime that creates a group owns it (Ray's GCS does; here
// the group lives as long as its creator: see Remove, Close and the crash of a creator
// below): a goroutine places it, retrying while the cluster lacks the room, and commits
// each bundle at its node's raylet, which renames the bundle's resources (sched.BundleResources) so that only tasks in the group
// can use them. A bundle refused by a raylet (its last load report overstated what was
// free) releases the group everywhere and the placement starts again.
//
// A task in a group carries the group's ID and bundle index (TaskSpec.placement_group);
// the shard resolves them when it places the task (rayletFor): the bundle's node, by
// hard affinity, and its demand renamed (sched.InBundle). A task whose group is not
// placed yet waits (parked) until it is; one whose group was removed fails, and so does
// one whose group no set of the cluster's alive nodes can hold (sched.ErrInfeasible with
// the group's reason, as a task no node can run fails; the group itself stays pending,
// as Ray's does, and is placed if such nodes join). Another process learns that from the
// group's record: PENDING with PlaceBundles' infeasible reason as its detail.
//
// When a bundle's node dies (NodeGone), the group places that bundle again (replace,
// sched.ReplaceBundles: next to the other bundles as the strategy wants, which stay where
// they are); tasks in it park meanwhile and the record says RESCHEDULING. The actors in
// the lost bundle have their record's node (ActorInfo.affinity_node) moved to the
// bundle's new node (actors.Table.MoveAffinity), so their restart goes there: those this
// runtime created (addActor) and those other processes created in the group, which the
// actor records name (ActorInfo.placement_group and bundle_index; the node's actor
// manager indexes them, ActorConfig.InGroup). A record that still names a node its
// bundle has left when this runtime sees it change (one created from a stale view of the
// group) is moved then (groupActorChanged); the actor manager lets such an actor wait
// rather than fail (actors.Manager placeInBundle), and an actor is created in a bundle only
// once the bundle's node is alive (resolveWait).
//
// An actor created in a group that is not placed yet (or whose bundle is being placed
// again) is recorded at once, PENDING_CREATION with no node and why it waits (actorWaits),
// so the state API lists it as Ray's does; its creator binds it to its bundle's node once
// the group is placed (bindWhenPlaced, actors.Table.PlaceInGroup), with no deadline, and
// the actor manager never places it outside the group meanwhile.
//
// A group takes only its own job's work (groupFor): its bundles' nodes are its job's
// worker processes, so another job's task there would run in this job's process.
//
// Remove ends the group's work as Ray does, whoever put it there: this runtime's tasks in
// the group are cancelled and every actor in it, any process's, is killed for good
// (lifecycle.Kill with a reason that names the group). An actor record of a group removed
// lately that shows up afterwards (created from a stale view) is killed when seen. Another
// process's tasks in the group are cancelled by that process: it watches the record of
// each group it has tasks or actors in (watchForeignGroup) and, once the record says
// REMOVED or its creator ended without Remove (its death confirmed, or the record missing
// for Config.GroupGoneGrace), cancels those tasks and kills those actors; its tasks still waiting to be placed fail with
// ErrPlacementGroupRemoved, and those queued at a raylet for the bundle's room are denied
// there when it releases the bundle (PLACEMENT_GROUP_REMOVED, the same error).
//
// A group lives as long as its creator (Ray: as long as its creator's job; there are no
// detached groups here). A creator that stops removes its groups (Close); one that crashes
// cannot, and the processes that put work in them may have crashed with it, so the
// cluster ends them without it: every node's runtime, told of the confirmed death
// (ProcessGone), has its raylet give back the bundles that process committed there
// (pgOwnerGone, raylet.OwnerGone: a commit's sender names its creator); the group's
// record, written on the creator's lease, goes when etcd expires the lease; and the actor
// manager's leader of each job kills that job's live actors in the group (actors.Manager,
// ManagerConfig.GroupGoneGrace), the record naming the creator (creator_address) whose
// death it learns of, or, failing that, once the record has been missing for three lease
// TTLs (the creator's node writes its groups' records again after a lost lease).

// StrategyPlacementGroup is TaskSpec.strategy for a task in a placement group.
const StrategyPlacementGroup = "placement_group"

// ErrPlacementGroupRemoved: the task's placement group was removed (or never existed in
// this runtime).
var ErrPlacementGroupRemoved = errors.New("placement group removed")

// errGroupNotReady parks a task whose placement group is not placed yet.
var errGroupNotReady = errors.New("placement group not placed yet")

// PlacementGroup is a placement group this runtime created.
type PlacementGroup struct {
	ID       string
	Name     string
	Strategy sched.BundleStrategy
	Bundles  []sched.Resources

	c      *Core
	ready  chan struct{}
	ctx    context.Context // ends with Remove
	cancel context.CancelFunc

	created time.Time

	mu sync.Mutex
	// nodes is each bundle's node once placed; "" for a bundle whose node died, until
	// replace has placed it again. Copied on write: readers keep the slice they took.
	nodes     []ids.NodeID
	lostFrom  map[int]ids.NodeID // the node each lost bundle was on
	actors    []groupActor       // the actors created in the group
	replacing bool               // a replace goroutine runs
	removed   bool
	// foreign: another process created the group; this is its record as last read
	// (Config.GroupRecord), and its placement is the creator's to change.
	foreign bool
	job     string // a foreign group's job, from its record
	// tasks: this runtime's tasks placed in the group and maybe not finished (those
	// finished are pruned when the set doubles), cancelled by Remove.
	tasks   map[ids.TaskID]struct{}
	pruneAt int
	why     string // the last reason the placement waits
	// infeasible is why no set of the cluster's alive nodes can ever hold the group, as its
	// last placement attempt found (sched.ErrInfeasible: a bundle larger than every node,
	// STRICT_SPREAD over too few nodes), "" otherwise. The group keeps waiting (nodes may
	// join, as in Ray), but its tasks fail at once (resolve), as a task no node can run
	// does, instead of hanging.
	infeasible string
}

// groupActor is an actor created in a group's bundle index (-1: any).
type groupActor struct {
	id    string
	index int32
}

// addActor notes an actor created in bundle index (its record names the bundle's node).
func (pg *PlacementGroup) addActor(id string, index int32) {
	pg.mu.Lock()
	pg.actors = append(pg.actors, groupActor{id, index})
	pg.mu.Unlock()
}

// pgShared is what a runtime keeps of placement groups besides the ones it holds
// (Core.pgMore): the groups it removed lately, and the tasks it placed in groups other
// processes created.
type pgShared struct {
	mu      sync.Mutex
	gone    mapx.Recent[string]     // groups removed lately, at most pgGoneKept
	foreign map[string]*foreignWork // another process's group -> what this runtime put in it
	// abandoned: Close leaves the groups as a crash would (Abandon).
	abandoned bool
	// anyCredit: each group's rotation over its nodes for tasks and actors in any bundle
	// (sched.AnyBundle), kept here because another process's group is read anew for
	// each; forgotten past pgGoneKept groups.
	anyCredit map[string]map[string]int64
}

// foreignWork is what this runtime put in another process's group and may not have
// ended: its tasks, and the actors it created there (hex IDs).
type foreignWork struct {
	tasks  map[ids.TaskID]struct{}
	actors map[string]struct{}
}

// pgGoneKept bounds the removed groups a runtime remembers (groupActorChanged).
const pgGoneKept = 4096

// foreignGroupGrace is how long ForeignGroup looks for a group's record that is not
// there: two reads of the node's cache of records (it reads the GCS at most every 500 ms).
const foreignGroupGrace = 1200 * time.Millisecond

// foreignGroupCheck is how often a runtime with tasks in another process's group reads
// the group's record (watchForeignGroup; the node's cache reads the GCS at most every
// 500 ms).
const foreignGroupCheck = 250 * time.Millisecond

// markGone remembers that this runtime removed group id.
func (m *pgShared) markGone(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gone.Max = pgGoneKept
	m.gone.Add(id)
}

func (m *pgShared) isGone(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gone.Has(id)
}

// groupRecordWait bounds how long creating an actor in another process's group waits for
// the group's record to be read.
const groupRecordWait = 10 * time.Second

// noteTask records a task placed in the group, for Remove to cancel.
func (pg *PlacementGroup) noteTask(tid ids.TaskID) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.removed {
		return
	}
	if pg.tasks == nil {
		pg.tasks, pg.pruneAt = map[ids.TaskID]struct{}{}, 1024
	}
	pg.tasks[tid] = struct{}{}
	if len(pg.tasks) < pg.pruneAt {
		return
	}
	for t := range pg.tasks {
		if _, ready, known := pg.c.mem.Get(ids.ReturnID(t, 1)); ready || !known {
			delete(pg.tasks, t) // finished (or its result released)
		}
	}
	pg.pruneAt = max(1024, 2*len(pg.tasks))
}

// pgRetry bounds how often a group that does not fit tries again.
const (
	pgRetryMin = 20 * time.Millisecond
	pgRetryMax = time.Second
)

// CreatePlacementGroup starts placing a placement group of bundles; Ready says when it is
// placed. An invalid request (no bundles, an empty bundle) fails at once.
func (c *Core) CreatePlacementGroup(bundles []sched.Resources, strategy sched.BundleStrategy, name string) (*PlacementGroup, error) {
	if len(bundles) == 0 {
		return nil, errors.New("a placement group needs at least one bundle")
	}
	for i, b := range bundles {
		if b.IsZero() {
			return nil, fmt.Errorf("bundle %d asks for no resources: a bundle must reserve something (e.g. {\"CPU\": 1})", i)
		}
		if b.Negative() {
			return nil, fmt.Errorf("bundle %d asks for a negative amount: %v", i, b)
		}
	}
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	ctx, cancel := context.WithCancel(context.Background())
	pg := &PlacementGroup{ID: hex.EncodeToString(idb[:]), Name: name, Strategy: strategy,
		Bundles: append([]sched.Resources(nil), bundles...), c: c, ready: make(chan struct{}), ctx: ctx, cancel: cancel, created: time.Now()}
	c.pgs.Store(pg.ID, pg)
	go pg.place(ctx)
	return pg, nil
}

// foreignGroup is a view of another process's group from its record.
func (c *Core) foreignGroup(info *pb.PlacementGroupInfo) (*PlacementGroup, error) {
	st, err := sched.ParseBundleStrategy(info.Strategy)
	if err != nil {
		return nil, fmt.Errorf("placement group %s's record: %w", info.Id, err)
	}
	pg := &PlacementGroup{ID: info.Id, Name: info.Name, Strategy: st, c: c, foreign: true, job: info.JobId, ready: make(chan struct{})}
	for _, b := range info.Bundles {
		pg.Bundles = append(pg.Bundles, tasks.ResourcesFromPB(b.Resources))
	}
	switch info.State {
	case "PENDING":
		// Its creator found no set of the cluster's nodes can hold it: the record's
		// reason is PlaceBundles' (sched.ErrInfeasible), and tasks put in it fail (resolve).
		if strings.Contains(info.Detail, sched.ErrInfeasible.Error()+": ") {
			pg.infeasible = info.Detail
		}
	case "REMOVED":
		pg.removed = true
	case "CREATED", "RESCHEDULING":
		pg.nodes = make([]ids.NodeID, len(info.Bundles))
		for i, b := range info.Bundles {
			pg.nodes[i] = ids.NodeID(b.NodeId)
		}
		close(pg.ready)
	}
	return pg, nil
}

// ForeignGroup returns group id, created by this runtime or another process (read from
// the cluster's records), waiting for its record at most until ctx ends.
func (c *Core) ForeignGroup(ctx context.Context, id string) (*PlacementGroup, error) {
	if pg, ok := c.PlacementGroupByID(id); ok {
		return pg, nil
	}
	if c.cfg.GroupRecord == nil {
		return nil, fmt.Errorf("%w: placement group %q is not known to this process (a single-process runtime knows only its own groups)", ErrPlacementGroupRemoved, id)
	}
	// A group created a moment ago may have no record yet (its creator writes it in the
	// background): a group not found is looked for again for foreignGroupGrace.
	start := time.Now()
	for {
		info, pending := c.cfg.GroupRecord(id)
		if info != nil {
			return c.foreignGroup(info)
		}
		if !pending && time.Since(start) >= foreignGroupGrace {
			return nil, fmt.Errorf("%w: the cluster has no placement group %q", ErrPlacementGroupRemoved, id)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("placement group %q: reading its record: %w", id, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// refresh updates a foreign group's view from its latest record.
func (pg *PlacementGroup) refresh() {
	info, _ := pg.c.cfg.GroupRecord(pg.ID)
	if info == nil {
		return
	}
	fresh, err := pg.c.foreignGroup(info)
	if err != nil {
		return
	}
	pg.mu.Lock()
	pg.nodes, pg.removed, pg.infeasible = fresh.nodes, fresh.removed, fresh.infeasible
	pg.mu.Unlock()
}

// PlacementGroupByID returns a group this runtime created and has not removed.
func (c *Core) PlacementGroupByID(id string) (*PlacementGroup, bool) {
	v, ok := c.pgs.Load(id)
	if !ok {
		return nil, false
	}
	return v.(*PlacementGroup), true
}

// Ready waits until the group is placed, or ctx ends (the error then says why the group
// still waits).
func (pg *PlacementGroup) Ready(ctx context.Context) error {
	if pg.foreign {
		// Another process places it: watch its record.
		for {
			pg.refresh()
			pg.mu.Lock()
			nodes, removed := pg.nodes, pg.removed
			pg.mu.Unlock()
			switch {
			case removed:
				return fmt.Errorf("placement group %s: %w", pg.ID, ErrPlacementGroupRemoved)
			case nodes != nil:
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("placement group %s is not ready (its creator places it): %w", pg.ID, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	select {
	case <-pg.ready:
		pg.mu.Lock()
		defer pg.mu.Unlock()
		if pg.removed && pg.nodes == nil {
			return fmt.Errorf("placement group %s: %w before it was placed", pg.ID, ErrPlacementGroupRemoved)
		}
		return nil
	case <-ctx.Done():
		pg.mu.Lock()
		why := pg.why
		pg.mu.Unlock()
		if why == "" {
			why = "not placed yet"
		}
		return fmt.Errorf("placement group %s is not ready: %s: %w", pg.ID, why, ctx.Err())
	}
}

// Nodes returns each bundle's node (nil until the group is placed).
func (pg *PlacementGroup) Nodes() []ids.NodeID {
	if pg.foreign {
		pg.refresh()
	}
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return append([]ids.NodeID(nil), pg.nodes...)
}

// Remove gives the group's reservations back, fails the tasks still waiting for it, and
// (endWork) cancels this runtime's tasks placed in it and kills the actors created in it,
// as Ray does. Removing twice is harmless.
func (pg *PlacementGroup) Remove(ctx context.Context) error {
	if pg.foreign {
		return fmt.Errorf("placement group %s was created by another process, which owns it: remove it there (it also goes when that process ends)", pg.ID)
	}
	pg.mu.Lock()
	if pg.removed {
		pg.mu.Unlock()
		return nil
	}
	pg.c.pgMore.markGone(pg.ID) // before removed: an actor seen from now on is killed
	pg.removed = true
	nodes := pg.nodes
	placed := nodes != nil
	running, own := pg.tasks, pg.actors
	pg.tasks, pg.actors = nil, nil
	pg.mu.Unlock()
	// Ray kills what runs in a removed group: its tasks are cancelled (a queued one
	// never runs, a running one has its ctx cancelled) and its actors killed for good,
	// those of other processes too (the actor records name the group).
	actors := pg.actorIDs(own, func(*pb.ActorInfo) bool { return true })
	if len(running) > 0 || len(actors) > 0 {
		go pg.endWork(running, actors)
	}
	pg.cancel()
	if !placed {
		close(pg.ready) // the placing goroutine stops without closing it
	}
	pg.c.pgs.Delete(pg.ID)
	pg.c.ClusterChanged() // the parked tasks of the group fail
	pg.record("REMOVED")
	var errs []error
	for _, n := range distinct(nodes) {
		if err := pg.c.bundleAsk(ctx, n, &pb.BundleCommit{Group: pg.ID, Index: -1, Release: true}); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// actorIDs returns the IDs of the group's actors that match: those of own (this
// runtime's, addActor) and those of any process that the actor records name
// (ActorConfig.InGroup), each once.
func (pg *PlacementGroup) actorIDs(own []groupActor, match func(*pb.ActorInfo) bool) []string {
	var out []string
	seen := map[string]bool{} // small: the group's actors
	for _, a := range own {
		if !seen[a.id] && match(&pb.ActorInfo{BundleIndex: a.index}) {
			seen[a.id] = true
			out = append(out, a.id)
		}
	}
	if ac := pg.c.cfg.Actors; ac != nil && ac.InGroup != nil {
		for _, info := range ac.InGroup(pg.ID) {
			id := hex.EncodeToString(info.ActorId)
			if !seen[id] && match(info) {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// endWork cancels the group's tasks and kills its actors (Remove).
func (pg *PlacementGroup) endWork(running map[ids.TaskID]struct{}, actors []string) {
	for tid := range running {
		if _, ready, known := pg.c.mem.Get(ids.ReturnID(tid, 1)); !ready && known {
			_ = pg.c.Cancel(ids.ReturnID(tid, 1))
		}
	}
	for _, id := range actors {
		pg.c.killGroupActor(pg.ID, id)
	}
}

// groupRemovedReason is the Detail of an actor killed because its placement group was
// removed (killGroupActor).
func groupRemovedReason(group string) string {
	return "its placement group " + group + " was removed"
}

// diedCauses is ErrorInfo.causes of the failed calls of an actor that died of msg:
// PLACEMENT_GROUP_REMOVED when it died because its placement group was removed (killed
// with groupRemovedReason, or its creation failed with ErrPlacementGroupRemoved), so that
// its callers' errors match ErrPlacementGroupRemoved as well as ErrActorDied, as a task's
// in a removed group do. (The reason comes from the actor's record, any process's, so it
// is told by its text.)
func diedCauses(msg string) []pb.ErrorInfo_Kind {
	if strings.Contains(msg, ErrPlacementGroupRemoved.Error()) ||
		strings.Contains(msg, "its placement group ") && strings.Contains(msg, " was removed") {
		return []pb.ErrorInfo_Kind{pb.ErrorInfo_PLACEMENT_GROUP_REMOVED}
	}
	return nil
}

// killGroupActor kills actor id (hex) of group, which was removed, for good.
func (c *Core) killGroupActor(group, id string) {
	t := c.cfg.Actors.Table
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	after, _, changed, err := t.Step(ctx, id, lifecycle.Kill{NoRestart: true, Reason: groupRemovedReason(group)})
	switch {
	case errors.Is(err, lifecycle.ErrTerminal):
	case err != nil:
		select {
		case <-c.closed:
		default:
			c.cfg.Logger.Warn("core: killing an actor of a removed placement group", "group", group, "actor", id, "err", err)
		}
	case changed:
		c.ActorChanged(after) // its callers here learn at once
	}
}

// groupActorChanged looks at the record of an actor in a placement group (ActorChanged):
// in a group this runtime created, an actor whose record names a node its bundle has left
// is moved to the bundle's node, and one in a group this runtime removed is killed. Such
// records come from a process that created the actor from a stale view of the group (or
// one this runtime's actor manager had not seen yet when the bundle moved or the group
// went). It does not block.
func (c *Core) groupActorChanged(info *pb.ActorInfo) {
	if lifecycle.Phase(info.Phase) == lifecycle.Dead || c.cfg.Actors == nil {
		return
	}
	id := hex.EncodeToString(info.ActorId)
	pg, ok := c.PlacementGroupByID(info.PlacementGroup)
	if !ok || pg.foreign {
		if c.pgMore.isGone(info.PlacementGroup) {
			go c.killGroupActor(info.PlacementGroup, id)
		}
		return
	}
	pg.mu.Lock()
	nodes, removed := pg.nodes, pg.removed
	pg.mu.Unlock()
	if removed {
		go c.killGroupActor(pg.ID, id)
		return
	}
	from := ids.NodeID(info.AffinityNode)
	to := bundleNode(nodes, int(info.BundleIndex), from)
	if to == "" || to == from || from == "" {
		return
	}
	go pg.moveActors([]string{id}, from, to)
}

// bundleNode is the node an actor of bundle index (-1: any) whose record names node at
// should be on: the bundle's node ("" while it is lost, or before the group is placed),
// or, for any bundle, at itself while one of the group's bundles is there.
func bundleNode(nodes []ids.NodeID, index int, at ids.NodeID) ids.NodeID {
	switch {
	case index >= len(nodes):
		return ""
	case index >= 0:
		return nodes[index]
	case slices.Contains(nodes, at):
		return at
	}
	for _, n := range nodes {
		if n != "" {
			return n
		}
	}
	return ""
}

// noteForeignTask records a task this runtime placed in another process's group: it is
// cancelled when the group is removed (watchForeignGroup).
func (c *Core) noteForeignTask(group string, tid ids.TaskID) {
	c.noteForeign(group, func(w *foreignWork) { w.tasks[tid] = struct{}{} })
}

// noteForeignActor records an actor this runtime created in another process's group: it
// is killed when the group is removed or its creator ended without removing it
// (watchForeignGroup; the creator's Remove kills it too).
func (c *Core) noteForeignActor(group, id string) {
	c.noteForeign(group, func(w *foreignWork) { w.actors[id] = struct{}{} })
}

func (c *Core) noteForeign(group string, add func(*foreignWork)) {
	m := &c.pgMore
	m.mu.Lock()
	if m.foreign == nil {
		m.foreign = map[string]*foreignWork{}
	}
	w := m.foreign[group]
	start := w == nil
	if start {
		w = &foreignWork{tasks: map[ids.TaskID]struct{}{}, actors: map[string]struct{}{}}
		m.foreign[group] = w
	}
	add(w)
	m.mu.Unlock()
	if start {
		go c.watchForeignGroup(group)
	}
}

// actorInfo is the newest record this process has seen of actor id (ActorConfig.Info).
func (c *Core) actorInfo(id string) (*pb.ActorInfo, bool) {
	if c.cfg.Actors == nil || c.cfg.Actors.Info == nil {
		return nil, false
	}
	return c.cfg.Actors.Info(id)
}

// watchForeignGroup reads the record of another process's group while this runtime has
// unfinished tasks or live actors in it, and once the group was removed (its record says
// REMOVED, or its creator ended: its death is confirmed, or its record has been missing
// for Config.GroupGoneGrace) cancels the tasks and kills the actors, as the creator ends
// its own.
func (c *Core) watchForeignGroup(group string) {
	m := &c.pgMore
	tick := time.NewTicker(foreignGroupCheck)
	defer tick.Stop()
	var seen foreignSeen
	for {
		select {
		case <-c.closed:
			return
		case <-tick.C:
		}
		info, pending := c.cfg.GroupRecord(group)
		removed := seen.ended(info, pending, c.ownerGone, time.Now(), c.cfg.GroupGoneGrace)
		var cancel []ids.TaskID
		var kill []string
		m.mu.Lock()
		w := m.foreign[group]
		for t := range w.tasks {
			if _, ready, known := c.mem.Get(ids.ReturnID(t, 1)); ready || !known {
				delete(w.tasks, t) // finished (or its result released)
			} else if removed {
				cancel = append(cancel, t)
			}
		}
		for id := range w.actors {
			if info, ok := c.actorInfo(id); ok && lifecycle.Phase(info.Phase) == lifecycle.Dead {
				delete(w.actors, id)
			} else if removed {
				kill = append(kill, id)
			}
		}
		done := removed || len(w.tasks) == 0 && len(w.actors) == 0
		if done {
			delete(m.foreign, group)
		}
		m.mu.Unlock()
		for _, t := range cancel {
			_ = c.Cancel(ids.ReturnID(t, 1))
		}
		for _, id := range kill {
			c.killGroupActor(group, id)
		}
		if done {
			return
		}
	}
}

// foreignSeen is what watchForeignGroup knows of another process's group.
type foreignSeen struct {
	creator string    // the group's creator, from its record
	missing time.Time // since when its record is missing (zero: it is there)
}

// ended decides, from the group's record as just read (nil: missing; pending: not read
// yet), whether the group ended: its record says REMOVED, its creator's death is
// confirmed (dead), or its record has been missing for grace.
func (s *foreignSeen) ended(info *pb.PlacementGroupInfo, pending bool, dead func(address string) bool, now time.Time, grace time.Duration) bool {
	switch {
	case info != nil:
		s.missing = time.Time{}
		if info.CreatorAddress != "" {
			s.creator = info.CreatorAddress
		}
		return info.State == "REMOVED" || s.creator != "" && dead(s.creator)
	case pending:
		return false
	}
	if s.missing.IsZero() {
		s.missing = now
	}
	return s.creator != "" && dead(s.creator) || now.Sub(s.missing) >= grace
}

func distinct(nodes []ids.NodeID) []ids.NodeID {
	var out []ids.NodeID
	seen := map[ids.NodeID]bool{}
	for _, n := range nodes {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// place places the group: it picks nodes by the policy and commits each bundle, and tries
// again (backing off) while the cluster lacks room or a node refuses a bundle.
func (pg *PlacementGroup) place(ctx context.Context) {
	c := pg.c
	wait := pgRetryMin
	pg.record("PENDING")
	start := time.Now()
	for {
		nodes, why, infeasible := pg.tryPlace(ctx)
		if nodes != nil {
			pg.mu.Lock()
			if pg.removed {
				pg.mu.Unlock()
				pg.release(nodes)
				return
			}
			pg.nodes, pg.why, pg.infeasible = nodes, "", ""
			pg.mu.Unlock()
			close(pg.ready)
			c.ClusterChanged() // the tasks parked for the group go now
			pg.record("CREATED")
			for _, n := range distinct(nodes) {
				if c.cfg.Cluster != nil && !c.cfg.Cluster.Alive(n) {
					pg.nodeGone(n) // it died while the group was being placed
				}
			}
			return
		}
		// Still no room: an actor a process dropped may hold it (collect.go).
		if now := time.Now(); now.Sub(start) >= collectWaitAfter {
			c.collect.request(now)
		}
		pg.waits(why, "PENDING")
		pg.mu.Lock()
		was := pg.infeasible
		if infeasible {
			pg.infeasible = why
		} else {
			pg.infeasible = ""
		}
		pg.mu.Unlock()
		if infeasible && was == "" {
			c.ClusterChanged() // the tasks parked for the group fail now (resolve)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, pgRetryMax)
	}
}

// waits notes why the group waits, and records it in state when the reason changed.
func (pg *PlacementGroup) waits(why, state string) {
	pg.mu.Lock()
	changed := pg.why != why
	pg.why = why
	pg.mu.Unlock()
	if changed {
		pg.record(state)
	}
}

// tryPlace makes one attempt: the bundles' nodes when every bundle was committed, else
// nil and why not, and whether no set of the alive nodes can ever hold the group
// (sched.ErrInfeasible).
func (pg *PlacementGroup) tryPlace(ctx context.Context) ([]ids.NodeID, string, bool) {
	c := pg.c
	placed, err := sched.PlaceBundles(pg.Bundles, c.schedNodes(), pg.Strategy)
	if err != nil {
		return nil, err.Error(), errors.Is(err, sched.ErrInfeasible)
	}
	out := make([]ids.NodeID, len(placed))
	for i, n := range placed {
		out[i] = ids.NodeID(n)
	}
	for i, n := range out {
		err := c.bundleAsk(ctx, n, &pb.BundleCommit{Group: pg.ID, Index: int32(i), Resources: tasks.ResourcesToPB(pg.Bundles[i])})
		if err != nil {
			pg.release(out[:i])
			return nil, fmt.Sprintf("bundle %d at node %s: %v", i, n, err), false
		}
	}
	return out, "", false
}

// schedNodes is the alive nodes as the placement policy sees them: totals, and what they
// have free by their last load reports.
func (c *Core) schedNodes() []sched.Node {
	infos := []*pb.NodeInfo(nil)
	if c.cfg.Nodes != nil {
		infos = c.cfg.Nodes()
	}
	var avail map[string]sched.Resources
	if c.cfg.Available != nil {
		avail = c.cfg.Available()
	}
	var nodes []sched.Node
	for _, in := range infos {
		id := ids.NodeID(in.NodeId)
		if c.cfg.Cluster != nil && !c.cfg.Cluster.Alive(id) {
			continue
		}
		total := tasks.ResourcesFromPB(in.Total)
		a, ok := avail[in.NodeId]
		if !ok {
			a = total
		}
		nodes = append(nodes, sched.Node{ID: in.NodeId, Total: total, Available: a, Alive: true})
	}
	return nodes
}

// release gives the group's bundles back at nodes (best effort: a node that does not
// answer frees them when the owner's leases go, with its process).
func (pg *PlacementGroup) release(nodes []ids.NodeID) {
	for _, n := range distinct(nodes) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = pg.c.bundleAsk(ctx, n, &pb.BundleCommit{Group: pg.ID, Index: -1, Release: true})
		cancel()
	}
}

// nodeGone: node died. The group's bundles there are lost: tasks asking for them wait
// (resolve parks them) while a goroutine places those bundles again (replace), next to
// the group's other bundles as its strategy wants (sched.ReplaceBundles); the record says
// RESCHEDULING meanwhile, as Ray's does. The other bundles stay where they are.
func (pg *PlacementGroup) nodeGone(node ids.NodeID) {
	pg.mu.Lock()
	if pg.removed || pg.nodes == nil || !slices.Contains(pg.nodes, node) {
		pg.mu.Unlock()
		return
	}
	next := slices.Clone(pg.nodes)
	for i, n := range next {
		if n == node {
			next[i] = ""
			if pg.lostFrom == nil {
				pg.lostFrom = map[int]ids.NodeID{}
			}
			pg.lostFrom[i] = node
		}
	}
	pg.nodes = next
	pg.why = fmt.Sprintf("bundles on node %s, which died, are being placed again", node)
	start := !pg.replacing
	pg.replacing = true
	pg.mu.Unlock()
	pg.record("RESCHEDULING")
	if start {
		go pg.replace()
	}
}

// replace places the group's lost bundles again, backing off while the cluster lacks the
// room, until none is lost or the group is removed.
func (pg *PlacementGroup) replace() {
	c := pg.c
	wait := pgRetryMin
	for {
		why, done := pg.tryReplace()
		if done {
			c.ClusterChanged() // the tasks parked for the lost bundles go now
			pg.record("CREATED")
			return
		}
		if why == "" { // removed
			return
		}
		pg.waits(why, "RESCHEDULING")
		select {
		case <-pg.ctx.Done():
			return
		case <-c.closed:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, pgRetryMax)
	}
}

// moveActors moves the actors of a bundle placed again from node from to node to: those
// whose record still names from restart there (actors.Table.MoveAffinity). An actor in
// any bundle (-1) that was on from goes to this bundle's new node.
func (pg *PlacementGroup) moveActors(list []string, from, to ids.NodeID) {
	t := pg.c.cfg.Actors.Table
	if t == nil || from == "" {
		return
	}
	for _, id := range list {
		if _, err := t.MoveAffinity(pg.ctx, id, string(from), string(to)); err != nil && pg.ctx.Err() == nil {
			pg.c.cfg.Logger.Warn("placement group: could not move an actor of a bundle placed again; it waits for its old node",
				"group", pg.ID, "actor", id, "from", from, "to", to, "error", err)
		}
	}
}

// tryReplace makes one attempt at placing the lost bundles: each one committed at its new
// node counts at once (so a later refusal undoes nothing); done when none is lost any more
// (replacing is then over), else why not ("" once the group is removed).
func (pg *PlacementGroup) tryReplace() (why string, done bool) {
	c := pg.c
	pg.mu.Lock()
	placed, removed := pg.nodes, pg.removed
	if !removed && !slices.Contains(placed, "") {
		pg.replacing, pg.why = false, ""
		pg.mu.Unlock()
		return "", true
	}
	pg.mu.Unlock()
	if removed {
		return "", false
	}
	cur := make([]string, len(placed))
	for i, n := range placed {
		cur[i] = string(n)
	}
	got, err := sched.ReplaceBundles(pg.Bundles, cur, c.schedNodes(), pg.Strategy)
	if err != nil {
		return err.Error(), false
	}
	for i, n := range got {
		if cur[i] == n {
			continue
		}
		node := ids.NodeID(n)
		err := c.bundleAsk(pg.ctx, node, &pb.BundleCommit{Group: pg.ID, Index: int32(i), Resources: tasks.ResourcesToPB(pg.Bundles[i])})
		if err != nil {
			return fmt.Sprintf("bundle %d at node %s: %v", i, node, err), false
		}
		pg.mu.Lock()
		if pg.removed {
			pg.mu.Unlock()
			pg.release([]ids.NodeID{node})
			return "", false
		}
		var own []groupActor
		from := pg.lostFrom[i]
		moved := pg.nodes[i] == ""
		if moved {
			next := slices.Clone(pg.nodes)
			next[i] = node
			pg.nodes = next
			delete(pg.lostFrom, i)
			own = pg.actors
		}
		pg.mu.Unlock()
		if moved && from != "" {
			// This runtime's actors of the bundle, and any process's whose record still
			// names the node the bundle was on.
			pg.moveActors(pg.actorIDs(own, func(a *pb.ActorInfo) bool {
				return (int(a.BundleIndex) == i || a.BundleIndex < 0) && (a.AffinityNode == "" || a.AffinityNode == string(from))
			}), from, node)
		}
		if c.cfg.Cluster != nil && !c.cfg.Cluster.Alive(node) {
			pg.nodeGone(node) // it died meanwhile; its NodeGone may have come first
		}
	}
	return pg.tryReplace()
}

// bundleAsk sends m to node's raylet and waits for its answer.
func (c *Core) bundleAsk(ctx context.Context, node ids.NodeID, m *pb.BundleCommit) error {
	r := c.raylet(node)
	if r == nil {
		return fmt.Errorf("node %s has no scheduler (it is starting, or gone)", node)
	}
	timeout := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	res, err := ask.Request(c.root, r, m, timeout)
	if err != nil {
		return err
	}
	reply, ok := res.(*pb.BundleCommitReply)
	if !ok {
		return fmt.Errorf("unexpected answer %T", res)
	}
	if !reply.Ok {
		return errors.New(reply.Message)
	}
	return nil
}

// groupFor returns the placement group id of this runtime that a task or actor asking for
// req in bundle index may run in, or an error that says why it cannot.
func (c *Core) groupFor(id string, index int32, req sched.Resources) (*PlacementGroup, error) {
	pg, ok := c.PlacementGroupByID(id)
	if !ok && c.cfg.GroupRecord != nil {
		// Another process's group: its record says where its bundles are.
		info, pending := c.cfg.GroupRecord(id)
		switch {
		case info != nil:
			var err error
			if pg, err = c.foreignGroup(info); err != nil {
				return nil, err
			}
			ok = true
		case pending:
			return nil, errGroupNotReady // its record is being read; ClusterChanged follows
		}
	}
	if !ok {
		return nil, fmt.Errorf("%w: placement group %q is not known to this process or the cluster: it was removed (or its creator ended)",
			ErrPlacementGroupRemoved, id)
	}
	if pg.foreign && pg.job != "" && c.cfg.Job != "" && pg.job != string(c.cfg.Job) {
		// Its bundles are reserved in its job's worker processes (a bundle's node is one
		// of that job's): work of this job there would run in another job's process.
		return nil, fmt.Errorf("placement group %s belongs to job %s, not to this job (%s): a job can place work only in its own placement groups; create one in this job",
			pg.ID, pg.job, c.cfg.Job)
	}
	i := int(index)
	if i >= len(pg.Bundles) || i < -1 {
		return nil, fmt.Errorf("%w: placement group %s has bundles 0 to %d (or -1 for any), bundle %d was asked for",
			sched.ErrInfeasible, pg.ID, len(pg.Bundles)-1, i)
	}
	if i >= 0 && !pg.Bundles[i].Fits(req) {
		return nil, fmt.Errorf("%w: %v is more than bundle %d of placement group %s holds (%v)",
			sched.ErrInfeasible, req, i, pg.ID, pg.Bundles[i])
	}
	return pg, nil
}

// resolve returns the node of bundle index (-1: any) and the demand req renamed into the
// bundle's resources; errGroupNotReady before the group is placed.
func (pg *PlacementGroup) resolve(index int, req sched.Resources) (ids.NodeID, sched.Resources, error) {
	pg.mu.Lock()
	nodes, removed, infeasible := pg.nodes, pg.removed, pg.infeasible
	pg.mu.Unlock()
	if removed {
		return "", sched.Resources{}, fmt.Errorf("%w: placement group %s", ErrPlacementGroupRemoved, pg.ID)
	}
	if nodes == nil && infeasible != "" {
		return "", sched.Resources{}, fmt.Errorf("%w: placement group %s can never be placed on the cluster's nodes (it stays pending until nodes that can hold it join): %s",
			sched.ErrInfeasible, pg.ID, strings.ReplaceAll(infeasible, sched.ErrInfeasible.Error()+": ", ""))
	}
	if nodes == nil {
		return "", sched.Resources{}, errGroupNotReady
	}
	var node ids.NodeID
	if index >= 0 {
		node = nodes[index]
	} else {
		// Any bundle: a node whose bundles of the group can hold req, in turn among them
		// (sched.AnyBundle); "" while only a lost bundle could.
		var err error
		if node, err = pg.anyBundle(nodes, req); err != nil {
			return "", sched.Resources{}, fmt.Errorf("placement group %s: %w", pg.ID, err)
		}
	}
	if node == "" {
		return "", sched.Resources{}, errGroupNotReady // its node died: it waits to be placed again
	}
	return node, sched.InBundle(pg.ID, index, req), nil
}

// anyBundle chooses the node of a task or actor in any bundle of the group placed on
// nodes (sched.AnyBundle, with the group's rotation state).
func (pg *PlacementGroup) anyBundle(nodes []ids.NodeID, req sched.Resources) (ids.NodeID, error) {
	placed := make([]string, len(nodes))
	for i, n := range nodes {
		placed[i] = string(n)
	}
	m := &pg.c.pgMore
	m.mu.Lock()
	defer m.mu.Unlock()
	credit := m.anyCredit[pg.ID]
	if credit == nil {
		if m.anyCredit == nil || len(m.anyCredit) >= pgGoneKept {
			m.anyCredit = map[string]map[string]int64{}
		}
		credit = map[string]int64{}
		m.anyCredit[pg.ID] = credit
	}
	node, err := sched.AnyBundle(pg.Bundles, placed, req, credit)
	return ids.NodeID(node), err
}

// resolveWait is resolve for an actor being created: while its bundle's node is dead and
// the bundle not placed again yet, it waits (reading another process's group's record
// again: a record read before the node died still names it) until ctx ends. An actor
// whose record named a dead node would fail to be placed before the group's creator
// could move it.
func (pg *PlacementGroup) resolveWait(ctx context.Context, index int, req sched.Resources) (ids.NodeID, sched.Resources, error) {
	cl := pg.c.cfg.Cluster
	for {
		node, res, err := pg.resolve(index, req)
		if err == nil && cl != nil && !cl.Alive(node) {
			err = errGroupNotReady
		}
		if !errors.Is(err, errGroupNotReady) {
			return node, res, err
		}
		select {
		case <-ctx.Done():
			return "", sched.Resources{}, fmt.Errorf("placement group %s: bundle %d is being placed again (its node died): %w", pg.ID, index, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if pg.foreign {
			pg.refresh()
		}
	}
}

// actorWaits is why an actor created in bundle index (-1: any) of the group waits, while
// the group is not placed (or the bundle is being placed again).
func (pg *PlacementGroup) actorWaits(index int32) string {
	pg.mu.Lock()
	why, infeasible := pg.why, pg.infeasible
	pg.mu.Unlock()
	bundle := fmt.Sprintf("bundle %d", index)
	if index < 0 {
		bundle = "any bundle"
	}
	out := fmt.Sprintf("waiting for its placement group %s (%s) to be placed: the actor is created once the group is ready", pg.ID, bundle)
	switch {
	case infeasible != "":
		out += "; the group waits for nodes that can hold it: " + strings.ReplaceAll(infeasible, sched.ErrInfeasible.Error()+": ", "")
	case why != "":
		out += "; the group waits: " + why
	}
	return out
}

// bindWhenPlaced waits until group pg is placed and binds actor id (hex), created in its
// bundle index while it was not, to the bundle's node (actors.Table.PlaceInGroup), where
// the actor manager then starts it. The wait has no deadline, as in Ray: it ends when the
// group is removed (the actor is killed, as Remove kills the group's actors), when the
// actor is dead, or when this runtime closes (the actor ends with its creator).
func (c *Core) bindWhenPlaced(pg *PlacementGroup, id string, index int32, req sched.Resources) {
	t := c.cfg.Actors.Table
	if t == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-c.closed:
				cancel()
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				if info, ok := c.actorInfo(id); ok && lifecycle.Phase(info.Phase) == lifecycle.Dead {
					cancel() // killed meanwhile
					return
				}
			}
		}
	}()
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		err := pg.Ready(ctx)
		var node ids.NodeID
		var res sched.Resources
		if err == nil {
			node, res, err = pg.resolveWait(ctx, int(index), req)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil { // removed before it was placed
			c.killGroupActor(pg.ID, id)
			return
		}
		_, err = t.PlaceInGroup(ctx, id, pg.ID, string(node), tasks.ResourcesToPB(res))
		if err == nil || ctx.Err() != nil {
			return
		}
		c.cfg.Logger.Warn("placement group: could not bind an actor to its bundle's node; trying again",
			"group", pg.ID, "actor", id, "node", node, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// pgPlace resolves a task in a placement group: the node of its bundle and its demand
// renamed into the bundle's resources. errGroupNotReady parks the task; a group no set of
// the cluster's nodes can hold fails it (sched.ErrInfeasible, with the group's reason).
func (c *Core) pgPlace(spec *pb.TaskSpec) (ids.NodeID, sched.Resources, error) {
	req := tasks.ResourcesFromPB(spec.Resources)
	pg, err := c.groupFor(spec.PlacementGroup, spec.BundleIndex, req)
	if err != nil {
		return "", sched.Resources{}, err
	}
	node, res, err := pg.resolve(int(spec.BundleIndex), req)
	if err == nil {
		// Placed in a bundle: Remove cancels it (one still waiting for the group fails
		// with ErrPlacementGroupRemoved instead); in another process's group, this
		// runtime cancels it when the group's record says it was removed.
		if tid, terr := ids.TaskIDFromBytes(spec.TaskId); terr == nil {
			if pg.foreign {
				c.noteForeignTask(pg.ID, tid)
			} else {
				pg.noteTask(tid)
			}
		}
	}
	return node, res, err
}

// record writes the group's record in state (PENDING, CREATED, RESCHEDULING, REMOVED) through
// Config.RecordGroup, if any.
func (pg *PlacementGroup) record(state string) {
	rec := pg.c.cfg.RecordGroup
	if rec == nil {
		return
	}
	pg.mu.Lock()
	nodes, why, removed := pg.nodes, pg.why, pg.removed
	pg.mu.Unlock()
	if removed && state != "REMOVED" {
		return // a placing attempt that ended after Remove
	}
	if state == "REMOVED" {
		why = "" // why it waited, if it did, is over
	}
	info := &pb.PlacementGroupInfo{Id: pg.ID, JobId: string(pg.c.cfg.Job), Name: pg.Name, Strategy: pg.Strategy.String(),
		State: state, CreatedUnixMs: pg.created.UnixMilli(), Detail: why, CreatorAddress: pg.c.cfg.System.Address()}
	for i, b := range pg.Bundles {
		bundle := &pb.PlacementBundle{Resources: tasks.ResourcesToPB(b)}
		if i < len(nodes) {
			bundle.NodeId = string(nodes[i])
		}
		info.Bundles = append(info.Bundles, bundle)
	}
	rec(info)
}

// pgOwnerGone: the process at address died, for good (ProcessGone). The groups it created
// end with it: this node's raylet gives back the bundles that process committed here
// (raylet.OwnerGone), so the resources of a creator that crashed come back on every node
// (each node's runtime hears of the death). Its groups' records go with its lease, and
// the actors in them are ended by their job's actor manager (actors.Manager, groups).
func (c *Core) pgOwnerGone(address string) {
	if address == "" || address == c.cfg.System.Address() {
		return
	}
	if r := c.cfg.Raylet(); r != nil {
		c.root.Send(r, raylet.OwnerGone{Address: address})
	}
}

// Abandon makes Close leave this runtime's placement groups in place, as a process that
// crashed does (tests of what the cluster does then: internal/assembly/node Crash).
func (c *Core) Abandon() {
	c.pgMore.mu.Lock()
	c.pgMore.abandoned = true
	c.pgMore.mu.Unlock()
}

// closePlacementGroups removes every group this runtime still holds (Close), unless
// Abandon was called.
func (c *Core) closePlacementGroups() {
	c.pgMore.mu.Lock()
	abandoned := c.pgMore.abandoned
	c.pgMore.mu.Unlock()
	if abandoned {
		return
	}
	c.pgs.Range(func(_, v any) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = v.(*PlacementGroup).Remove(ctx)
		cancel()
		return true
	})
}
