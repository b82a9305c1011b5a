package node

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/membership"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/raylet"
	"github.com/ray-go/ray/tasks/sched"
)

// Roles of a node (NodeInfo.role).
const (
	// RoleLocal is a node that runs tasks and drivers in one process: ray.Init with no
	// address, and the nodes of internal/assembly/testcluster.
	RoleLocal = "local"
	// RoleDriver is a driver that joined a cluster: it owns tasks and objects, runs none.
	RoleDriver = "driver"
	// RoleWorker is a worker process a node agent started for a job.
	RoleWorker = "worker"
)

// LoadReportInterval is how often a node's load report is refreshed while it changes (and
// the longest a placement decision works from a stale report, besides its own placements).
const LoadReportInterval = 100 * time.Millisecond

// loadReportRefresh rewrites an unchanged report this often, so that readers can tell a
// silent node from a stale report.
const loadReportRefresh = 2 * time.Second

// clusterView is a node's view of the nodes of its job that run tasks: their resources
// from the node table, their load from load reports, liveness from membership. It places
// tasks (sched.Place) and accounts for its own placements between two load reports. It
// implements core.Cluster.
type clusterView struct {
	self     ids.NodeID
	job      ids.JobID
	store    gcs.Store
	provider *membership.Provider
	grains   func(node ids.NodeID, what, kind string) *actor.PID
	changed  func() // called after the view changed (parked tasks may now be placed)

	mu     sync.Mutex
	nodes  map[string]*viewNode
	data   map[string]string // every node's data server address (drivers too)
	spread uint64
	// gone are nodes the membership reported unreachable or left: not placed on (and not
	// alive) from then on, although their records last until their leases lapse. A node
	// that comes back after a crash has a new ID.
	gone map[string]bool
	// suspect are nodes whose scheduler could not be resolved (starting, or dead but not
	// yet reported to this process: a process that joined after a node died sees no event
	// for it, only its record until its lease lapses): not placed on until the time given.
	suspect map[string]time.Time
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type viewNode struct {
	info    *pb.NodeInfo
	total   sched.Resources
	avail   sched.Resources // last report minus what this view placed since
	queued  int
	placed  sched.Resources // placed by this view since the last report, not done yet
	raylet  *actor.PID
	storeP  *actor.PID
	hasLoad bool
}

// runsTasks reports whether a node record belongs in a job's view.
func runsTasks(info *pb.NodeInfo, job ids.JobID) bool {
	return info.Role != RoleDriver && (info.JobId == "" || info.JobId == string(job))
}

// start lists the node table and the load reports and watches both.
func (v *clusterView) start(ctx context.Context) error {
	nodes, rev, err := v.store.List(ctx, gcs.NodesPrefix)
	if err != nil {
		return fmt.Errorf("node: read the node table: %w", err)
	}
	loads, lrev, err := v.store.List(ctx, gcs.LoadPrefix)
	if err != nil {
		return fmt.Errorf("node: read the load reports: %w", err)
	}
	v.mu.Lock()
	for _, kv := range nodes {
		v.putNodeLocked(kv.Value)
	}
	for _, kv := range loads {
		v.putLoadLocked(kv.Value)
	}
	wctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	v.mu.Unlock()
	v.wg.Add(2)
	go v.watch(wctx, gcs.NodesPrefix, rev+1)
	go v.watch(wctx, gcs.LoadPrefix, lrev+1)
	return nil
}

func (v *clusterView) stop() {
	v.mu.Lock()
	cancel := v.cancel
	v.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	v.wg.Wait()
}

// watch follows one prefix; after a compaction it lists again.
func (v *clusterView) watch(ctx context.Context, prefix string, rev int64) {
	defer v.wg.Done()
	for ctx.Err() == nil {
		for resp := range v.store.Watch(ctx, prefix, rev) {
			if resp.Err != nil {
				break
			}
			v.mu.Lock()
			for _, e := range resp.Events {
				rev = max(rev, e.KV.ModRev+1)
				id, _ := gcs.TrimKey(prefix, e.KV.Key)
				switch {
				case e.Type == gcs.EventDelete && prefix == gcs.NodesPrefix:
					delete(v.nodes, id)
					delete(v.data, id)
				case e.Type == gcs.EventDelete:
					if n := v.nodes[id]; n != nil {
						n.hasLoad = false
					}
				case prefix == gcs.NodesPrefix:
					v.putNodeLocked(e.KV.Value)
				default:
					v.putLoadLocked(e.KV.Value)
				}
			}
			v.mu.Unlock()
			if v.changed != nil {
				v.changed()
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
		kvs, lrev, err := v.store.List(lctx, prefix)
		cancel()
		if err != nil {
			continue
		}
		v.mu.Lock()
		if prefix == gcs.NodesPrefix {
			seen := map[string]bool{}
			for _, kv := range kvs {
				if info := v.putNodeLocked(kv.Value); info != nil {
					seen[info.NodeId] = true
				}
			}
			for id := range v.nodes {
				if !seen[id] {
					delete(v.nodes, id)
				}
			}
		} else {
			for _, kv := range kvs {
				v.putLoadLocked(kv.Value)
			}
		}
		v.mu.Unlock()
		rev = lrev + 1
	}
}

func (v *clusterView) putNodeLocked(b []byte) *pb.NodeInfo {
	var info pb.NodeInfo
	if proto.Unmarshal(b, &info) != nil || info.NodeId == "" {
		return nil
	}
	if info.DataAddress != "" {
		v.data[info.NodeId] = info.DataAddress
	}
	if !runsTasks(&info, v.job) {
		return &info
	}
	n := v.nodes[info.NodeId]
	if n == nil {
		n = &viewNode{}
		v.nodes[info.NodeId] = n
	}
	n.info = &info
	n.total = tasks.ResourcesFromPB(info.Total)
	if !n.hasLoad {
		n.avail = n.total.Sub(n.placed)
	}
	return &info
}

func (v *clusterView) putLoadLocked(b []byte) {
	var l pb.NodeLoad
	if proto.Unmarshal(b, &l) != nil {
		return
	}
	n := v.nodes[l.NodeId]
	if n == nil {
		return
	}
	// The report includes what this view placed before it was taken; what was placed
	// since is not known to be in it. Counting it again only errs towards spreading.
	n.placed = sched.Resources{}
	n.avail = tasks.ResourcesFromPB(l.Available)
	n.queued = int(l.Queued)
	n.hasLoad = true
}

// snapshot returns the alive nodes in ID order (Place's Spread rotation needs a stable order).
func (v *clusterView) snapshotLocked() []sched.Node {
	alive := v.provider.Nodes()
	out := make([]sched.Node, 0, len(v.nodes))
	for id, n := range v.nodes {
		_, up := alive[id]
		up = up && !v.gone[id] && !time.Now().Before(v.suspect[id])
		if id == string(v.self) {
			up = true
		}
		out = append(out, sched.Node{ID: id, Total: n.total, Available: n.avail, Queued: n.queued, Alive: up})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Place implements core.Cluster.
func (v *clusterView) Place(req sched.Request) (ids.NodeID, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	nodes := v.snapshotLocked()
	opt := sched.Options{}
	if req.Strategy == sched.Spread {
		opt.SpreadCounter = v.spread
		v.spread++
	}
	d, err := sched.Place(req, nodes, string(v.self), opt)
	if err != nil {
		return "", err
	}
	if n := v.nodes[d.Node]; n != nil {
		n.avail = n.avail.Sub(req.Resources)
		n.placed = n.placed.Add(req.Resources)
		if !d.RunNow {
			n.queued++
		}
	}
	return ids.NodeID(d.Node), nil
}

// Done implements core.Cluster: a task this view placed on node finished.
func (v *clusterView) Done(node ids.NodeID, res sched.Resources) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.nodes[string(node)]
	if n == nil {
		return
	}
	if n.placed.Fits(res) {
		n.placed = n.placed.Sub(res)
	}
	// A load report taken while the task ran counts it as busy: give its resources back
	// (never beyond the total) rather than wait for the next report.
	if after := n.avail.Add(res); n.total.Fits(after) {
		n.avail = after
	}
}

// Feasible implements core.Cluster: nil while no node of the job is known (tasks wait for
// one), else whether some node could ever run req.
func (v *clusterView) Feasible(req sched.Resources) error {
	v.mu.Lock()
	nodes := v.snapshotLocked()
	v.mu.Unlock()
	// The policy's own check: an *InfeasibleError names the resource and the most any
	// alive node has. With no alive node, tasks wait for one.
	if _, err := sched.Place(sched.Request{Resources: req}, nodes, "", sched.Options{}); err != nil && !errors.Is(err, sched.ErrNoNodes) {
		return err
	}
	return nil
}

// Raylet implements core.Cluster.
func (v *clusterView) Raylet(node ids.NodeID) *actor.PID {
	v.mu.Lock()
	n := v.nodes[string(node)]
	var p *actor.PID
	if n != nil {
		p = n.raylet
	}
	v.mu.Unlock()
	if p == nil {
		p = v.grains(node, "raylet", KindRaylet)
		v.mu.Lock()
		if n := v.nodes[string(node)]; n != nil {
			n.raylet = p
		}
		if p == nil {
			if v.suspect == nil {
				v.suspect = map[string]time.Time{}
			}
			v.suspect[string(node)] = time.Now().Add(suspectFor)
		}
		v.mu.Unlock()
	}
	return p
}

// startClusterView starts the view of the cluster that node n's runtime places tasks
// with (cluster mode): it resolves nodes' grains through n's cluster member and tells n's
// runtime when the nodes change.
func startClusterView(ctx context.Context, n *Node) (*clusterView, error) {
	v := &clusterView{self: n.ID, job: n.cfg.Job, store: n.store, provider: n.provider, nodes: map[string]*viewNode{}, data: map[string]string{},
		grains: func(node ids.NodeID, what, kind string) *actor.PID {
			n.mu.Lock()
			stopped := n.stopped
			n.mu.Unlock()
			if stopped {
				return nil
			}
			return n.cluster.Get(membership.NodeIdentity(string(node), what), kind)
		},
		changed: func() {
			if c := n.core.Load(); c != nil {
				c.ClusterChanged()
			}
		}}
	if err := v.start(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

// suspectFor is how long a node whose scheduler could not be resolved is left out of
// placement.
const suspectFor = 2 * time.Second

// Store implements core.Cluster: the store shard of any node (objects live on drivers too).
func (v *clusterView) Store(node ids.NodeID) *actor.PID {
	v.mu.Lock()
	n := v.nodes[string(node)]
	var p *actor.PID
	if n != nil {
		p = n.storeP
	}
	v.mu.Unlock()
	if p == nil {
		p = v.grains(node, "store/0", KindStore)
		v.mu.Lock()
		if n := v.nodes[string(node)]; n != nil {
			n.storeP = p
		}
		v.mu.Unlock()
	}
	return p
}

// Alive implements core.Cluster.
func (v *clusterView) Alive(node ids.NodeID) bool {
	if node == v.self {
		return true
	}
	v.mu.Lock()
	gone := v.gone[string(node)]
	v.mu.Unlock()
	_, ok := v.provider.Nodes()[string(node)]
	return ok && !gone
}

// MarkGone records that the membership reported node unreachable or left.
func (v *clusterView) MarkGone(node ids.NodeID) {
	v.mu.Lock()
	if v.gone == nil {
		v.gone = map[string]bool{}
	}
	v.gone[string(node)] = true
	v.mu.Unlock()
}

// MarkAlive undoes MarkGone: the membership reported node reachable (again) or joined.
func (v *clusterView) MarkAlive(node ids.NodeID) {
	v.mu.Lock()
	delete(v.gone, string(node))
	v.mu.Unlock()
}

// DataAddress implements core.Cluster.
func (v *clusterView) DataAddress(node ids.NodeID) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.data[string(node)]
}

// Nodes returns the alive nodes of the view with their records.
func (v *clusterView) Nodes() []*pb.NodeInfo {
	alive := v.provider.Nodes()
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]*pb.NodeInfo, 0, len(v.nodes))
	for id, n := range v.nodes {
		if _, up := alive[id]; up && !v.gone[id] || id == string(v.self) {
			out = append(out, n.info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeId < out[j].NodeId })
	return out
}

// loadReporter publishes the node's load report (load/<node>, leased) while the node runs.
type loadReporter struct {
	n      *Node
	lease  gcs.LeaseID
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startLoadReporter(n *Node) *loadReporter {
	rctx, cancel := context.WithCancel(context.Background())
	r := &loadReporter{n: n, lease: n.lease, cancel: cancel}
	r.wg.Add(1)
	go r.run(rctx)
	return r
}

// stop stops reporting (the report goes with the node's lease).
func (r *loadReporter) stop() {
	r.cancel()
	r.wg.Wait()
}

func (r *loadReporter) run(ctx context.Context) {
	defer r.wg.Done()
	t := time.NewTicker(LoadReportInterval)
	defer t.Stop()
	var last []byte
	var lastAt time.Time
	var storeAt time.Time
	var st *pb.StoreStatsReply
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rl := r.n.raylet()
		if rl == nil {
			continue
		}
		res, err := r.n.system.Root.RequestFuture(rl, raylet.Stats{}, time.Second).Result()
		if err != nil {
			continue
		}
		s, ok := res.(*raylet.StatsReply)
		if !ok {
			continue
		}
		if time.Since(storeAt) >= time.Second {
			storeAt = time.Now()
			if sp := r.n.objectStore(); sp != nil {
				if res, err := r.n.system.Root.RequestFuture(sp, &pb.StoreStats{Top: 5}, time.Second).Result(); err == nil {
					st, _ = res.(*pb.StoreStatsReply)
				}
			}
		}
		l := &pb.NodeLoad{NodeId: string(r.n.ID), Available: tasks.ResourcesToPB(s.Available), Queued: int32(s.Queued),
			StoreBudget: r.n.cfg.ObjectStoreBytes, InFlightBytes: r.n.Core.InFlightBytes()}
		if st != nil {
			l.StoreInMemory, l.StoreSpilled, l.StoreObjects = st.MemoryBytes, st.SpilledBytes, st.Objects
			l.StoreLargest, l.StoreSpillErrors = st.Largest, st.SpillErrors
		}
		b, _ := proto.Marshal(l)
		if string(b) == string(last) && time.Since(lastAt) < loadReportRefresh {
			continue
		}
		l.UnixMs = time.Now().UnixMilli()
		stamped, _ := proto.Marshal(l)
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = r.n.store.Put(pctx, gcs.LoadKey(string(r.n.ID)), stamped, r.lease)
		cancel()
		if err == nil {
			last, lastAt = b, time.Now()
		}
	}
}
