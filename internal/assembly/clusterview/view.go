package clusterview

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/netx"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// Config is what a View needs from the node that runs it.
type Config struct {
	// Self is the node the view belongs to: always alive to itself, the local node of
	// placement.
	Self ids.NodeID
	// Store is the GCS the node table and the load reports are read from.
	Store gcs.Store
	// RunsTasks reports whether a node record belongs in the view (nodes that run this
	// job's tasks); the data addresses of every node are kept whatever it says.
	RunsTasks func(info *pb.NodeInfo) bool
	// Member reports whether a node is a member of the cluster now (the membership's
	// index; called per node per placement, so it must be cheap and lock-free).
	Member func(node string) bool
	// Suspect, if set, reports whether the membership holds a node unreachable while nothing
	// says its process is gone (membership.Provider.Suspects; cheap and lock-free too).
	Suspect func(node string) bool
	// Raylet and StoreGrain resolve a node's scheduler and object store grains (nil if
	// they cannot be resolved now). They may block on the cluster's identity lookup.
	Raylet, StoreGrain func(node ids.NodeID) *actor.PID
	// Changed, if set, is called after the view changed (tasks parked for want of a node
	// may now be placed).
	Changed func()
	// Job, if set, is the job whose worker processes the view holds: a node agent that is
	// alive and has not registered that job's worker process yet (it starts one for each
	// job, and a machine that joins starts one for every running job) is a node coming, and
	// a request only it could hold waits for it (sched.ErrSuspectOnly) instead of failing as
	// infeasible. See refreshComing.
	Job string
	// LoadsIdle is how long the view follows the load reports after the last placement
	// that needed them (0: DefaultLoadsIdle).
	LoadsIdle time.Duration
	// Local, if set, is Self's load as its scheduler has it now (the node: its raylet's
	// raylet.Live): placement judges the local node by it instead of the node's last load
	// report, and the other nodes by their reports, as Ray's hybrid policy does. It is
	// called once per placement, so it must be cheap and lock-free; it fills the figures
	// only when their version differs from known, and returns false while there is none
	// (the report is used then).
	Local func(known uint64) (LocalLoad, bool)
	// FollowPeers bounds how many peers' load reports the view watches while it follows
	// them (0: DefaultFollowPeers; negative: every peer's). See followSet.
	FollowPeers int
	// OthersRefresh is the least time between two reads of reports of peers the view does
	// not watch, which placements ask for (0: DefaultOthersRefresh).
	OthersRefresh time.Duration
}

// LocalLoad is the local node's load as its scheduler has it now (Config.Local).
type LocalLoad struct {
	// Version changes whenever the figures may have; 0 is never one.
	Version uint64
	// Available and Queued are as in a load report.
	Available sched.Resources
	Queued    int
}

// DefaultLoadsIdle is how long a view follows the nodes' load reports after the last
// placement that used them (one that may choose among nodes: not a hard node affinity)
// or the last Available: a view whose runtime places only tasks bound to a node watches
// no load report, as every view following every node's reports costs the GCS N x N
// events for N busy nodes.
const DefaultLoadsIdle = 10 * time.Second

// DefaultFollowPeers is how many peers' load reports a view watches while it follows them:
// with more peers than this, it watches its own report and those of the DefaultFollowPeers
// peers after it in the ring of node IDs, so that each node's report goes to at most that
// many views (plus its own) whatever the cluster's size, and every node is watched by
// that many. The reports of the other peers are from the follower's first listing, or
// read since (that many at a time, round the ring) when a placement asked
// (refreshOthers): the watched nodes had no room under the policy's threshold.
const DefaultFollowPeers = 4

// DefaultOthersRefresh is the least time between two reads of reports of peers a view
// does not watch (readOthers).
const DefaultOthersRefresh = time.Second

// availableWait bounds how long Available waits for the load reports' listing.
const availableWait = 5 * time.Second

// SuspectFor is how long a node whose scheduler could not be resolved is left out of
// placement.
const SuspectFor = 2 * time.Second

// View is a node's view of the cluster's nodes. Its tables change only with the GCS's
// node and load events and the membership's reports, under one mutex; each change
// publishes an immutable snapshot, which is all that the per-task paths (Place, Alive,
// Raylet, Store, DataAddress) read.
type View struct {
	cfg Config

	mu    sync.Mutex
	nodes map[string]*node
	data  map[string]string // every node's data server address (drivers too)
	// socket: the data server's Unix socket of the nodes on this machine.
	socket map[string]string
	// jobs: the job each node (every role, every job) serves ("" for none).
	jobs map[string]string
	// addrJobs: the job of the node at each member address, kept after its record is
	// deleted (JobAt), at most maxAddrJobs (cleared when full).
	addrJobs map[string]string
	// gone are nodes the membership reported unreachable or left: not placed on (and not
	// alive) from then on, although their records last until their leases lapse. A node
	// that comes back after a crash has a new ID.
	gone map[string]bool
	// goneWhy is when and why the membership reported each node of gone (DeadNodes).
	goneWhy map[string]Death
	// suspect are nodes whose scheduler could not be resolved (starting, or dead but not
	// yet reported to this process: a process that joined after a node died sees no event
	// for it, only its record until its lease lapses): not placed on until the time given.
	suspect map[string]time.Time
	reports uint64 // load reports applied, numbering them
	// applied is the revision of the node table the view has applied: its listing's, then
	// the last event's its watch delivered (catchUp reads what is newer).
	applied int64
	// coming are the node agents that will register a worker process of Config.Job (as
	// Suspect nodes: sched.ErrSuspectOnly), as refreshComing last read them at comingAt;
	// comingAsked is when a placement last asked for a read (unix ns).
	coming      []sched.Node
	comingAt    time.Time
	comingAsked atomic.Int64
	// dead are the records of nodes that ran tasks and whose records were deleted (their
	// process ended), newest last, at most maxDead and deadFor old: DeadNodes lists them.
	dead []deadNode

	// The load reports are followed (listed, then watched) only while placements need
	// them: wantAt is when one last did (unix ns); following is set while a follower runs
	// (the per-placement check: it is written under mu); loadsReady is closed once the
	// running follower applied its first listing.
	wantAt     atomic.Int64
	following  atomic.Bool
	loadsReady chan struct{}
	watchCtx   context.Context // the view's watches end with it (nil once stopped)

	// follow is the set of nodes whose reports the running follower watches (nil: every
	// node's, under the prefix); reset tells the follower that the set to watch changed
	// (nodes came or went), refresh that a placement asks for a listing of the others'
	// reports, last asked at refreshAt (unix ns).
	follow    map[string]bool
	reset     chan struct{}
	refresh   chan struct{}
	refreshAt atomic.Int64
	// othersNext: the last peer whose report readOthers read (its next read starts after).
	othersNext string

	snap   atomic.Pointer[snapshot]
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// node is what the view knows of one node. Its fields are guarded by View.mu; the grain
// caches are atomic since the per-task paths fill them.
type node struct {
	info    *pb.NodeInfo
	total   sched.Resources
	avail   sched.Resources // from the last load report (the total before the first)
	queued  int
	report  uint64 // the number of the load report avail comes from (0: none yet)
	hasLoad bool
	raylet  atomic.Pointer[actor.PID]
	store   atomic.Pointer[actor.PID]
}

// snapshot is the view at one moment, never changed once published.
type snapshot struct {
	nodes   []sched.Node // in ID order (Spread's rotation needs a stable order)
	entries []*node      // entries[i] is nodes[i]'s
	reports []uint64     // reports[i] numbers the load report nodes[i].Available comes from
	suspect []time.Time  // not placed on before
	// watched[i]: nodes[i]'s reports are watched by the running follower (all of them
	// when the view watches every report, none while it follows none).
	watched []bool
	bounded bool // the follower watches some nodes' reports only (followSet)
	// coming are the node agents whose worker process of the job is still to come (Suspect,
	// never placed on), read at comingAt: used until comingFor after it.
	coming   []sched.Node
	comingAt time.Time
	// agents maps a node agent's ID to its worker process of the job in the view (a hard
	// NodeAffinity may name the machine as `rayctl list nodes` does).
	agents map[string]string
	index  map[string]int
	data   map[string]string
	socket map[string]string
	jobs   map[string]string
	gone   map[string]bool
}

// Start lists the node table and the load reports and watches the node table until Stop;
// it follows the load reports while placements need them (DefaultLoadsIdle).
func Start(ctx context.Context, cfg Config) (*View, error) {
	if cfg.LoadsIdle <= 0 {
		cfg.LoadsIdle = DefaultLoadsIdle
	}
	if cfg.FollowPeers == 0 {
		cfg.FollowPeers = DefaultFollowPeers
	}
	if cfg.OthersRefresh <= 0 {
		cfg.OthersRefresh = DefaultOthersRefresh
	}
	v := &View{cfg: cfg, nodes: map[string]*node{}, data: map[string]string{}, socket: map[string]string{}, jobs: map[string]string{},
		reset: make(chan struct{}, 1), refresh: make(chan struct{}, 1)}
	nodes, rev, err := cfg.Store.List(ctx, gcs.NodesPrefix)
	if err != nil {
		return nil, fmt.Errorf("clusterview: read the node table: %w", err)
	}
	loads, _, err := cfg.Store.List(ctx, gcs.LoadPrefix)
	if err != nil {
		return nil, fmt.Errorf("clusterview: read the load reports: %w", err)
	}
	v.mu.Lock()
	for _, kv := range nodes {
		v.putNodeLocked(kv)
	}
	v.applied = rev
	for _, kv := range loads {
		v.putLoadLocked(kv)
	}
	v.publishLocked()
	wctx, cancel := context.WithCancel(context.Background())
	v.cancel, v.watchCtx = cancel, wctx
	v.mu.Unlock()
	v.wg.Add(1)
	go v.watch(wctx, gcs.NodesPrefix, rev+1)
	return v, nil
}

// Stop stops watching; the view keeps what it last knew.
func (v *View) Stop() {
	v.mu.Lock()
	cancel := v.cancel
	v.watchCtx = nil
	v.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	v.wg.Wait()
}

// needLoads notes that a placement at now uses the nodes' loads, and starts following
// the load reports if the view does not (the placement goes on with what the view has:
// the reports come within a listing's time).
func (v *View) needLoads(now time.Time) {
	// Written only when an eighth of LoadsIdle old: the shards of a runtime place tasks
	// at once, and one cache line written by every placement would bounce between them.
	if ns := now.UnixNano(); ns-v.wantAt.Load() >= int64(v.cfg.LoadsIdle/8) {
		v.wantAt.Store(ns)
	}
	if !v.following.Load() {
		v.startFollowing()
	}
}

// startFollowing starts a follower of the load reports unless one runs (or the view
// stopped), and returns the channel closed once the running follower's first listing is
// in the view (nil once stopped).
func (v *View) startFollowing() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.following.Load() || v.watchCtx == nil {
		return v.loadsReady
	}
	v.following.Store(true)
	v.loadsReady = make(chan struct{})
	v.wg.Add(1)
	go v.followLoads(v.watchCtx, v.loadsReady)
	return v.loadsReady
}

// FollowingLoads reports whether the view follows the load reports now.
func (v *View) FollowingLoads() bool { return v.following.Load() }

// followLoads lists the load reports and watches them (the followSet's) until no
// placement needed them for LoadsIdle (or the view stops); after a compaction or a GCS
// error it lists again, and when the set to watch changed.
func (v *View) followLoads(ctx context.Context, ready chan struct{}) {
	defer v.wg.Done()
	idle := time.NewTicker(max(v.cfg.LoadsIdle/4, time.Millisecond))
	defer idle.Stop()
	first := true
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		kvs, rev, err := v.cfg.Store.List(lctx, gcs.LoadPrefix)
		cancel()
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		v.mu.Lock()
		for _, kv := range kvs {
			v.putLoadLocked(kv)
		}
		select {
		case <-v.reset: // the set is taken now
		default:
		}
		select {
		case <-v.refresh: // listed now
		default:
		}
		v.follow = v.followSetLocked()
		keys := []string{gcs.LoadPrefix}
		if v.follow != nil {
			keys = keys[:0]
			for id := range v.follow {
				keys = append(keys, gcs.LoadKey(id))
			}
			sort.Strings(keys)
		}
		v.publishLocked()
		v.mu.Unlock()
		if first {
			close(ready)
			first = false
		}
		if v.cfg.Changed != nil {
			v.cfg.Changed()
		}
		wctx, wcancel := context.WithCancel(ctx)
		var wwg sync.WaitGroup
		ch := v.watchKeys(wctx, keys, rev+1, &wwg)
		end := v.followEvents(ctx, ch, idle.C)
		wcancel()
		wwg.Wait()
		switch end {
		case followIdle:
			return
		case followReset:
			continue
		}
		// The watch ended (compaction, GCS unreachable): list again after a pause.
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// errWatchEnded is what watchKeys sends when one of its watches ended without an error.
var errWatchEnded = errors.New("clusterview: a load watch ended")

// watchKeys watches each of keys (gcs.LoadPrefix: every report; else one node's report
// each) from rev and sends their responses on one channel until ctx is done (wg counts its
// goroutines); a watch that ends sends a response with Err.
func (v *View) watchKeys(ctx context.Context, keys []string, rev int64, wg *sync.WaitGroup) <-chan gcs.WatchResponse {
	out := make(chan gcs.WatchResponse)
	for _, key := range keys {
		in := v.cfg.Store.Watch(ctx, key, rev)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				for range in { // the store closes it once ctx is done
				}
			}()
			for r := range in {
				if key != gcs.LoadPrefix && r.Err == nil {
					// A node's key as a prefix: only that key (IDs of one length never
					// meet, but a longer one would).
					evs := r.Events[:0:0]
					for _, e := range r.Events {
						if e.KV.Key == key {
							evs = append(evs, e)
						}
					}
					if r.Events = evs; len(evs) == 0 {
						continue
					}
				}
				select {
				case out <- r:
				case <-ctx.Done():
					return
				}
				if r.Err != nil {
					return
				}
			}
			select {
			case out <- gcs.WatchResponse{Err: errWatchEnded}:
			case <-ctx.Done():
			}
		}()
	}
	return out
}

// How followEvents ended.
const (
	followEnded = iota // the watch ended: list again after a pause
	followIdle         // no placement needed the loads for LoadsIdle: the follower stopped
	followReset        // the set of nodes to watch changed: list and watch again now
)

// followEvents applies the load watch's events, and the listings of the reports not
// watched that placements ask for, until the watch ends, the set to watch changes, or no
// placement needed the loads for LoadsIdle.
func (v *View) followEvents(ctx context.Context, ch <-chan gcs.WatchResponse, idle <-chan time.Time) int {
	for {
		select {
		case resp := <-ch:
			if resp.Err != nil {
				return followEnded
			}
			v.mu.Lock()
			for _, e := range resp.Events {
				id, _ := gcs.TrimKey(gcs.LoadPrefix, e.KV.Key)
				if e.Type == gcs.EventDelete {
					if n := v.nodes[id]; n != nil {
						n.hasLoad, n.avail, n.report = false, n.total, 0
					}
					continue
				}
				v.putLoadLocked(e.KV)
			}
			v.publishLocked()
			v.mu.Unlock()
			if v.cfg.Changed != nil {
				v.cfg.Changed()
			}
		case <-v.reset:
			return followReset
		case <-v.refresh:
			v.readOthers(ctx)
		case now := <-idle:
			if v.stopFollowing(now) {
				return followIdle
			}
		case <-ctx.Done():
			return followIdle
		}
	}
}

// readOthers reads the reports of the next FollowPeers peers that the follower does not
// watch, going round the ring after the watched ones from where the last read stopped
// (one Get each: the bytes of a read do not grow with the cluster, as a listing's would).
// A watched node's report is as new from its watch, and is left alone.
func (v *View) readOthers(ctx context.Context) {
	v.mu.Lock()
	if v.follow == nil {
		v.mu.Unlock()
		return
	}
	var others []string
	for id := range v.nodes {
		if !v.follow[id] && !v.gone[id] {
			others = append(others, id)
		}
	}
	sort.Strings(others)
	var read []string
	if len(others) > 0 {
		// From the first peer after the last one read (or after Self, the first time),
		// in the ring's order.
		from := v.othersNext
		if from == "" {
			from = string(v.cfg.Self)
		}
		i := sort.Search(len(others), func(i int) bool { return others[i] > from })
		for j := range min(v.cfg.FollowPeers, len(others)) {
			read = append(read, others[(i+j)%len(others)])
		}
		v.othersNext = read[len(read)-1]
	}
	v.mu.Unlock()
	var kvs []gcs.KV
	for _, id := range read {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		kv, found, err := v.cfg.Store.Get(gctx, gcs.LoadKey(id))
		cancel()
		if err == nil && found {
			kvs = append(kvs, kv)
		}
	}
	if len(kvs) == 0 {
		return
	}
	v.mu.Lock()
	for _, kv := range kvs {
		if id, _ := gcs.TrimKey(gcs.LoadPrefix, kv.Key); v.follow != nil && !v.follow[id] {
			v.putLoadLocked(kv)
		}
	}
	v.publishLocked()
	v.mu.Unlock()
	if v.cfg.Changed != nil {
		v.cfg.Changed()
	}
}

// refreshOthers asks the follower to read some of the reports it does not watch
// (readOthers), at most once per OthersRefresh (a placement found no room under the threshold on the nodes it
// watches, or chose one it does not watch).
func (v *View) refreshOthers(now time.Time) {
	last := v.refreshAt.Load()
	if now.UnixNano()-last < int64(v.cfg.OthersRefresh) || !v.refreshAt.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	select {
	case v.refresh <- struct{}{}:
	default:
	}
}

// followSetLocked is the set of nodes whose reports the view watches: nil (every node's)
// when the view has at most FollowPeers peers (nodes other than Self not marked gone) or
// FollowPeers is negative; else Self and the FollowPeers peers after Self in the ring of
// their IDs in order. Each node is then in the set of FollowPeers views (theirs, and of
// the runtimes of drivers, placed in the ring by their IDs too).
func (v *View) followSetLocked() map[string]bool {
	k := v.cfg.FollowPeers
	if k < 0 {
		return nil
	}
	peers := make([]string, 0, len(v.nodes))
	for id := range v.nodes {
		if id != string(v.cfg.Self) && !v.gone[id] {
			peers = append(peers, id)
		}
	}
	if len(peers) <= k {
		return nil
	}
	return ringSet(peers, string(v.cfg.Self), k)
}

// ringSet is self and the k IDs of peers (not containing self, k < len(peers)) after self
// in the ring of peers and self in order.
func ringSet(peers []string, self string, k int) map[string]bool {
	sort.Strings(peers)
	set := make(map[string]bool, k+1)
	set[self] = true
	i := sort.SearchStrings(peers, self)
	for j := range k {
		set[peers[(i+j)%len(peers)]] = true
	}
	return set
}

// followSetChangedLocked tells the running follower to watch again if the nodes it should
// watch are no longer those it does (nodes came, went, or were reported gone).
func (v *View) followSetChangedLocked() {
	if !v.following.Load() {
		return
	}
	if now := v.followSetLocked(); maps.Equal(now, v.follow) && (now == nil) == (v.follow == nil) {
		return
	}
	select {
	case v.reset <- struct{}{}:
	default:
	}
}

// stopFollowing stops following the loads if no placement needed them for LoadsIdle
// (7/8 of it at least: needLoads leaves a fresh wantAt alone). needLoads writes wantAt
// (or finds it at most LoadsIdle/8 old), then reads following; this writes following,
// then reads wantAt again: one of the two sees the other's write, so a placement that
// needs the loads as the follower stops either starts a new one or keeps this one.
func (v *View) stopFollowing(now time.Time) bool {
	if now.Sub(time.Unix(0, v.wantAt.Load())) < v.cfg.LoadsIdle {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.following.Store(false)
	if now.Sub(time.Unix(0, v.wantAt.Load())) < v.cfg.LoadsIdle {
		v.following.Store(true)
		return false
	}
	return true
}

// watch follows the node table; after a compaction it lists again.
func (v *View) watch(ctx context.Context, prefix string, rev int64) {
	defer v.wg.Done()
	for ctx.Err() == nil {
		for resp := range v.cfg.Store.Watch(ctx, prefix, rev) {
			if resp.Err != nil {
				break
			}
			v.mu.Lock()
			for _, e := range resp.Events {
				rev = max(rev, e.KV.ModRev+1)
				id, _ := gcs.TrimKey(prefix, e.KV.Key)
				if e.Type == gcs.EventDelete {
					v.buryLocked(id)
					delete(v.nodes, id)
					delete(v.data, id)
					delete(v.socket, id)
					delete(v.jobs, id)
					continue
				}
				v.putNodeLocked(e.KV)
			}
			v.applied = max(v.applied, rev-1)
			v.followSetChangedLocked()
			v.publishLocked()
			v.mu.Unlock()
			if v.cfg.Changed != nil {
				v.cfg.Changed()
			}
		}
		if ctx.Err() != nil {
			return
		}
		// The watch ended (compaction, GCS unreachable): list again after a pause.
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		kvs, lrev, err := v.cfg.Store.List(lctx, prefix)
		cancel()
		if err != nil {
			continue
		}
		v.mu.Lock()
		seen := map[string]bool{}
		for _, kv := range kvs {
			if info := v.putNodeLocked(kv); info != nil {
				seen[info.NodeId] = true
			}
		}
		for id := range v.nodes {
			if !seen[id] {
				v.buryLocked(id)
				delete(v.nodes, id)
			}
		}
		v.applied = max(v.applied, lrev)
		v.followSetChangedLocked()
		v.publishLocked()
		v.mu.Unlock()
		rev = lrev + 1
	}
}

// comingFor is how long a reading of the coming nodes is used; comingAskEvery the least
// time between two reads a placement asks for (while a task waits for a coming node, its
// placements, every parkRetry or view change, keep the reading fresh).
const (
	comingFor      = 2 * time.Second
	comingAskEvery = 500 * time.Millisecond
)

// addComing appends s's coming nodes to nodes while their reading is fresh.
func (s *snapshot) addComing(nodes []sched.Node, now time.Time) []sched.Node {
	if len(s.coming) > 0 && now.Sub(s.comingAt) < comingFor {
		nodes = append(nodes, s.coming...)
	}
	return nodes
}

// askComing has the coming nodes read again, off the caller's goroutine, at most once per
// comingAskEvery: a placement waits for one (sched.ErrSuspectOnly).
func (v *View) askComing(now time.Time) {
	last := v.comingAsked.Load()
	if v.cfg.Job == "" || now.UnixNano()-last < int64(comingAskEvery) || !v.comingAsked.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	v.mu.Lock()
	wctx := v.watchCtx
	v.mu.Unlock()
	if wctx == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(wctx, catchUpTimeout)
		defer cancel()
		_ = v.refreshComing(ctx)
	}()
}

// refreshComing reads which node agents are alive and have no worker process of the
// view's job registered yet (none, one STARTING, or one RUNNING whose node record the view
// does not have yet): each is a coming node of its machine's total, Suspect, never placed
// on. A task that only such a node could run waits for it (as Ray keeps a task pending
// until a node can run it) rather than failing as infeasible: without this, a running
// driver's task that needed the resource of a machine just started with `rayctl start`
// failed, telling the user to add the machine they had just added. An agent whose worker
// process cannot run the job (UNSUPPORTED) or exited is not coming. It publishes the
// reading and calls Changed.
func (v *View) refreshComing(ctx context.Context) error {
	if v.cfg.Job == "" {
		return nil
	}
	s := v.load()
	agents, err := ComingAgents(ctx, v.cfg.Store, v.cfg.Job, func(node string) bool { _, ok := s.index[node]; return ok })
	if err != nil {
		return err
	}
	coming := make([]sched.Node, 0, len(agents))
	for _, id := range slices.Sorted(maps.Keys(agents)) {
		coming = append(coming, sched.Node{ID: "agent " + id, Total: agents[id], Available: agents[id], Suspect: true})
	}
	v.mu.Lock()
	v.coming, v.comingAt = coming, time.Now()
	v.publishLocked()
	v.mu.Unlock()
	if v.cfg.Changed != nil {
		v.cfg.Changed()
	}
	return nil
}

// ComingAgents reads which node agents are alive and will register a worker process of job
// that known does not hold (known is asked of a node ID): none recorded yet, one STARTING,
// or one RUNNING on a node known does not hold. An agent whose worker process cannot run
// the job (UNSUPPORTED) or exited is not coming. It returns each such agent's total
// resources (its worker process gets them), by agent ID. The view's coming nodes
// (refreshComing) and the actor leader's joining nodes (node.nodeView.Joining) are read by
// it, so that a task and an actor wait for the same machines.
func ComingAgents(ctx context.Context, store gcs.Store, job string, known func(node string) bool) (map[string]sched.Resources, error) {
	alive, _, err := store.List(ctx, gcs.AgentAlivePrefix)
	if err != nil {
		return nil, err
	}
	agents, _, err := store.List(ctx, gcs.AgentsPrefix)
	if err != nil {
		return nil, err
	}
	workers, _, err := store.List(ctx, gcs.JobWorkersOf(job))
	if err != nil {
		return nil, err
	}
	isAlive := make(map[string]bool, len(alive))
	for _, kv := range alive {
		id, _ := gcs.TrimKey(gcs.AgentAlivePrefix, kv.Key)
		isAlive[id] = true
	}
	state := make(map[string]*pb.JobWorker, len(workers))
	for _, kv := range workers {
		agent, ok := gcs.TrimKey(gcs.JobWorkersOf(job), kv.Key)
		if !ok {
			continue
		}
		if w, err := pb.DecodeJobWorker(job, agent, kv.Value); err == nil {
			state[agent] = w
		}
	}
	out := map[string]sched.Resources{}
	for _, kv := range agents {
		id, _ := gcs.TrimKey(gcs.AgentsPrefix, kv.Key)
		if !isAlive[id] {
			continue
		}
		var info pb.AgentInfo
		if proto.Unmarshal(kv.Value, &info) != nil {
			continue
		}
		w := state[id]
		switch {
		case w == nil || w.State == pb.JobWorker_STARTING:
		case w.State == pb.JobWorker_RUNNING && !known(w.NodeId):
		default:
			continue // its worker process is known, or will not come
		}
		out[id] = tasks.ResourcesFromPB(info.Total)
	}
	return out, nil
}

// catchUp reads the node table and applies the records newer than what the view has
// applied: a node that registered before the caller asked and whose record the watch has
// not delivered yet. It deletes nothing (a record deleted since the view's revision is
// absent from the listing and its event is still to come: the watch applies it). It
// reports whether it applied anything.
func (v *View) catchUp(ctx context.Context) bool {
	kvs, rev, err := v.cfg.Store.List(ctx, gcs.NodesPrefix)
	if err != nil {
		return false
	}
	v.mu.Lock()
	if rev <= v.applied || v.watchCtx == nil {
		v.mu.Unlock()
		return false
	}
	applied := false
	for _, kv := range kvs {
		if kv.ModRev > v.applied && v.putNodeLocked(kv) != nil {
			applied = true
		}
	}
	if applied {
		v.followSetChangedLocked()
		v.publishLocked()
	}
	v.mu.Unlock()
	if applied && v.cfg.Changed != nil {
		v.cfg.Changed()
	}
	return applied
}

// putNodeLocked applies a node record; a record DecodeNode refuses is left out (and
// returned nil).
func (v *View) putNodeLocked(kv gcs.KV) *pb.NodeInfo {
	id, _ := gcs.TrimKey(gcs.NodesPrefix, kv.Key)
	info, err := DecodeNode(id, kv.Value)
	if err != nil {
		return nil
	}
	if info.DataAddress != "" {
		v.data[info.NodeId] = info.DataAddress
	}
	v.jobs[info.NodeId] = info.JobId
	if info.Address != "" {
		if v.addrJobs == nil || len(v.addrJobs) >= maxAddrJobs {
			v.addrJobs = map[string]string{}
		}
		v.addrJobs[info.Address] = info.JobId
	}
	if m := netx.MachineID(); info.DataSocket != "" && m != "" && info.MachineId == m {
		v.socket[info.NodeId] = info.DataSocket
	}
	if v.cfg.RunsTasks != nil && !v.cfg.RunsTasks(info) {
		return info
	}
	n := v.nodes[info.NodeId]
	if n == nil {
		n = &node{}
		v.nodes[info.NodeId] = n
	}
	n.info = info
	n.total = tasks.ResourcesFromPB(info.Total)
	if !n.hasLoad {
		n.avail = n.total
	}
	return info
}

// putLoadLocked applies a load report that DecodeLoad accepts.
func (v *View) putLoadLocked(kv gcs.KV) {
	id, _ := gcs.TrimKey(gcs.LoadPrefix, kv.Key)
	l, err := DecodeLoad(id, kv.Value)
	if err != nil {
		return
	}
	n := v.nodes[l.NodeId]
	if n == nil {
		return
	}
	// A new report number: the placers' own placements since the last report are in it
	// (or finished), so they start again from it.
	v.reports++
	n.report = v.reports
	n.avail = tasks.ResourcesFromPB(l.Available)
	n.queued = int(l.Queued)
	n.hasLoad = true
}

// publishLocked publishes the tables as a new snapshot (v.mu held).
func (v *View) publishLocked() {
	s := &snapshot{index: make(map[string]int, len(v.nodes)), data: make(map[string]string, len(v.data)), socket: maps.Clone(v.socket), jobs: maps.Clone(v.jobs),
		gone: make(map[string]bool, len(v.gone))}
	ids := make([]string, 0, len(v.nodes))
	for id := range v.nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for i, id := range ids {
		n := v.nodes[id]
		s.index[id] = i
		if a := n.info.GetAgentId(); a != "" && !v.gone[id] {
			if s.agents == nil {
				s.agents = map[string]string{}
			}
			s.agents[a] = id
		}
		s.entries = append(s.entries, n)
		s.nodes = append(s.nodes, sched.Node{ID: id, Total: n.total, Available: n.avail, Queued: n.queued, Alive: !v.gone[id]})
		s.reports = append(s.reports, n.report)
		s.suspect = append(s.suspect, v.suspect[id])
		s.watched = append(s.watched, v.following.Load() && (v.follow == nil || v.follow[id]))
	}
	for id, a := range v.data {
		s.data[id] = a
	}
	for id := range v.gone {
		s.gone[id] = true
	}
	s.bounded = v.following.Load() && v.follow != nil
	s.coming, s.comingAt = v.coming, v.comingAt
	v.snap.Store(s)
}

func (v *View) load() *snapshot { return v.snap.Load() }

// Raylet resolves a node's scheduler (cached once resolved). A node whose scheduler cannot
// be resolved is left out of placement for SuspectFor.
func (v *View) Raylet(id ids.NodeID) *actor.PID {
	s := v.load()
	var n *node
	if i, ok := s.index[string(id)]; ok {
		n = s.entries[i]
		if p := n.raylet.Load(); p != nil {
			return p
		}
	}
	p := v.cfg.Raylet(id)
	if p != nil {
		if n != nil {
			n.raylet.Store(p)
		}
		return p
	}
	v.mu.Lock()
	if v.suspect == nil {
		v.suspect = map[string]time.Time{}
	}
	v.suspect[string(id)] = time.Now().Add(SuspectFor)
	v.publishLocked()
	v.mu.Unlock()
	return nil
}

// Store resolves the store shard of any node (objects live on drivers too).
func (v *View) Store(id ids.NodeID) *actor.PID {
	s := v.load()
	var n *node
	if i, ok := s.index[string(id)]; ok {
		n = s.entries[i]
		if p := n.store.Load(); p != nil {
			return p
		}
	}
	p := v.cfg.StoreGrain(id)
	if p != nil && n != nil {
		n.store.Store(p)
	}
	return p
}

// Alive reports whether a node is a member of the cluster now and was not reported gone.
func (v *View) Alive(id ids.NodeID) bool {
	if id == v.cfg.Self {
		return true
	}
	return v.cfg.Member(string(id)) && !v.load().gone[string(id)]
}

// MarkGone records that the membership reported node unreachable or left, and why (what
// DeadNodes says of it; the first report's time and reason are kept until MarkAlive).
func (v *View) MarkGone(id ids.NodeID, why string) {
	v.mu.Lock()
	if v.gone == nil {
		v.gone = map[string]bool{}
	}
	v.gone[string(id)] = true
	if v.goneWhy == nil {
		v.goneWhy = map[string]Death{}
	}
	if _, known := v.goneWhy[string(id)]; !known {
		v.goneWhy[string(id)] = Death{At: time.Now(), Why: why}
	}
	v.followSetChangedLocked()
	v.publishLocked()
	v.mu.Unlock()
}

// MarkAlive undoes MarkGone: the membership reported node reachable (again) or joined.
func (v *View) MarkAlive(id ids.NodeID) {
	v.mu.Lock()
	delete(v.gone, string(id))
	delete(v.goneWhy, string(id))
	v.followSetChangedLocked()
	v.publishLocked()
	v.mu.Unlock()
}

// DataAddress is a node's object data server address ("" if unknown).
func (v *View) DataAddress(id ids.NodeID) string { return v.load().data[string(id)] }

// JobOf is the job node serves (its record's job ID; "" for a node the view has no record
// of, or one that serves every job).
func (v *View) JobOf(id ids.NodeID) string { return v.load().jobs[string(id)] }

// maxAddrJobs bounds the addresses JobAt remembers.
const maxAddrJobs = 4096

// JobAt is the job of the node whose member address is addr, as its record said (ok
// false when no record at that address was seen, or it was forgotten): also after the
// record was deleted, so that what happens to a departed peer's connection can be judged
// by the job it served. Not for the task path (it takes the view's lock).
func (v *View) JobAt(addr string) (job string, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	job, ok = v.addrJobs[addr]
	return job, ok
}

// DataSocket is the Unix socket of the data server of a node on this machine ("" for a
// node elsewhere, or without one).
func (v *View) DataSocket(id ids.NodeID) string { return v.load().socket[string(id)] }

// Nodes returns the alive nodes of the view with their records, in ID order.
func (v *View) Nodes() []*pb.NodeInfo {
	s := v.load()
	out := make([]*pb.NodeInfo, 0, len(s.nodes))
	for i, n := range s.nodes {
		if n.ID == string(v.cfg.Self) || n.Alive && v.cfg.Member(n.ID) {
			out = append(out, s.entries[i].info)
		}
	}
	return out
}

// deadNode is a node record kept after the node died (DeadNodes).
type deadNode struct {
	info  *pb.NodeInfo
	at    time.Time // when its record went (the list is bounded by it)
	death Death
}

// DeadNode is a node DeadNodes lists: its last record, and when and why it died as this
// process saw it.
type DeadNode struct {
	Info *pb.NodeInfo
	Death
}

// Death is when a node died, as this process first learned of it (zero: not known), and
// why ("" unknown).
type Death struct {
	At  time.Time
	Why string
}

// recordGone is why a node whose record was deleted died, when the membership had said
// nothing of it before.
const recordGone = "its node record was deleted: its process stopped, or its lease lapsed after it crashed or lost the GCS"

// maxDead and deadFor bound the dead nodes DeadNodes lists.
const (
	maxDead = 100
	deadFor = time.Hour
)

// buryLocked keeps the record of node id, whose record is being deleted (v.mu held).
func (v *View) buryLocked(id string) {
	n := v.nodes[id]
	if n == nil || n.info == nil || id == string(v.cfg.Self) {
		return
	}
	now := time.Now()
	death, reported := v.goneWhy[id]
	if !reported {
		death = Death{At: now, Why: recordGone}
	}
	delete(v.goneWhy, id)
	v.dead = slices.DeleteFunc(v.dead, func(d deadNode) bool { return d.info.NodeId == id || now.Sub(d.at) > deadFor })
	v.dead = append(v.dead, deadNode{info: n.info, at: now, death: death})
	if len(v.dead) > maxDead {
		v.dead = slices.Delete(v.dead, 0, len(v.dead)-maxDead)
	}
}

// DeadNodes lists the nodes that ran tasks and died (Ray's ray.nodes() keeps them, with
// Alive false): those whose records were deleted within the last deadFor (at most maxDead,
// oldest first), then those Nodes leaves out because the membership reported them gone
// (or does not list them) while their records last; each with when and why it died, as
// far as this process knows.
func (v *View) DeadNodes() []DeadNode {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []DeadNode
	now := time.Now()
	for _, d := range v.dead {
		if _, back := v.nodes[d.info.NodeId]; !back && now.Sub(d.at) <= deadFor {
			out = append(out, DeadNode{Info: d.info, Death: d.death})
		}
	}
	s := v.load()
	for i, n := range s.nodes {
		if n.ID != string(v.cfg.Self) && !(n.Alive && v.cfg.Member(n.ID)) {
			death, reported := v.goneWhy[n.ID]
			if !reported {
				death.Why = "the cluster's membership does not list it (it left, or was never seen to join)"
			}
			out = append(out, DeadNode{Info: s.entries[i].info, Death: death})
		}
	}
	return out
}

// Available returns, for each node Nodes lists, its resources not in use as its last load
// report said. A view that did not follow the load reports starts to and waits (up to
// availableWait) for their listing; one that watches only some nodes' reports (followSet)
// lists them all.
func (v *View) Available() map[string]sched.Resources {
	v.wantAt.Store(time.Now().UnixNano())
	if ready := v.startFollowing(); ready != nil {
		select {
		case <-ready:
		case <-time.After(availableWait):
		}
	}
	s := v.load()
	var listed map[string]sched.Resources
	if s.bounded {
		// The reports of the peers not watched may be old: read them all now.
		listed = v.listAvailable()
	}
	out := make(map[string]sched.Resources, len(s.nodes))
	for _, n := range s.nodes {
		if n.ID == string(v.cfg.Self) || n.Alive && v.cfg.Member(n.ID) {
			out[n.ID] = n.Available
			if a, ok := listed[n.ID]; ok {
				out[n.ID] = a
			}
		}
	}
	return out
}

// listAvailable lists the load reports: each node's available resources (nil when the
// GCS did not answer within availableWait).
func (v *View) listAvailable() map[string]sched.Resources {
	ctx, cancel := context.WithTimeout(context.Background(), availableWait)
	defer cancel()
	kvs, _, err := v.cfg.Store.List(ctx, gcs.LoadPrefix)
	if err != nil {
		return nil
	}
	out := make(map[string]sched.Resources, len(kvs))
	for _, kv := range kvs {
		id, _ := gcs.TrimKey(gcs.LoadPrefix, kv.Key)
		if l, err := DecodeLoad(id, kv.Value); err == nil {
			out[l.NodeId] = tasks.ResourcesFromPB(l.Available)
		}
	}
	return out
}

// Feasible is nil while no node is known (tasks wait for one) or only a Suspect node could
// run req (sched.ErrSuspectOnly: they wait for it), else whether some alive node could ever
// run req (an *sched.InfeasibleError names what is missing). Before it says a request is
// infeasible it reads the node table once (catchUp): a node registered a moment ago, whose
// record the watch has not delivered yet, may hold it.
func (v *View) Feasible(req sched.Resources) error {
	err := v.feasible(req)
	if errors.Is(err, sched.ErrInfeasible) {
		ctx, cancel := context.WithTimeout(context.Background(), catchUpTimeout)
		caught := v.catchUp(ctx)
		if v.cfg.Job != "" && v.refreshComing(ctx) == nil {
			caught = true
		}
		cancel()
		if caught {
			err = v.feasible(req)
		}
		if errors.Is(err, sched.ErrInfeasible) {
			err = v.withDeadHolder(err, req)
		}
	}
	return err
}

// withDeadHolder adds to the error of a request no node can hold which node that could,
// of those that died in the last deadFor, died most recently, when and why: the message
// said "the largest node has far=0" as if no node had ever had it.
func (v *View) withDeadHolder(err error, req sched.Resources) error {
	var best *DeadNode
	for _, d := range v.DeadNodes() {
		if d.Info == nil || !tasks.ResourcesFromPB(d.Info.Total).Fits(req) {
			continue
		}
		if best == nil || d.At.After(best.At) {
			best = &d
		}
	}
	if best == nil {
		return err
	}
	when := ""
	if !best.At.IsZero() {
		when = fmt.Sprintf(" %s ago", time.Since(best.At).Round(time.Second))
	}
	why := best.Why
	if why == "" {
		why = "unknown"
	}
	return fmt.Errorf("%w; node %s, which had it, died%s (%s)", err, best.Info.NodeId, when, why)
}

// catchUpTimeout bounds Feasible's read of the node table.
const catchUpTimeout = 5 * time.Second

func (v *View) feasible(req sched.Resources) error {
	now := time.Now()
	s := v.load()
	nodes := v.alive(s, nil, now)
	nodes = s.addComing(nodes, now)
	if _, err := sched.Place(sched.Request{Resources: req}, nodes, "", sched.Options{}); err != nil &&
		!errors.Is(err, sched.ErrNoNodes) && !errors.Is(err, sched.ErrSuspectOnly) {
		return err
	}
	return nil
}

// alive copies s's nodes into buf with their liveness now.
func (v *View) alive(s *snapshot, buf []sched.Node, now time.Time) []sched.Node {
	buf = append(buf[:0], s.nodes...)
	for i := range buf {
		n := &buf[i]
		if n.ID == string(v.cfg.Self) {
			n.Alive = true
			continue
		}
		member, unresolved := v.cfg.Member(n.ID), now.Before(s.suspect[i])
		wasAlive := n.Alive // not marked gone
		n.Alive = wasAlive && member && !unresolved
		// Not placed on, but not known dead: its scheduler could not be resolved for now,
		// or the membership lost its connection while its process may live, or the node's
		// record is here and its member is not yet (it has just started: a node registers
		// its member, then its record, and the membership's watch can trail this view's;
		// a node that dies is marked gone, or its record goes with its lease). A hard
		// affinity for it waits (sched.ErrAffinitySuspect), and so does a request that
		// only it could hold (sched.ErrSuspectOnly), rather than failing.
		n.Suspect = !n.Alive && (wasAlive && (!member || unresolved) || v.cfg.Suspect != nil && v.cfg.Suspect(n.ID))
	}
	return buf
}
