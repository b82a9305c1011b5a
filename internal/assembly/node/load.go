package node

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/ask"
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

// LoadReportInterval is how often a node looks at its load, and the longest it takes a
// change that placement decisions depend on (see significantChange) to be reported.
const LoadReportInterval = 100 * time.Millisecond

// loadReportSettle is the longest any other change of the figures waits to be reported
// (a queue length within a factor of two of the last report's, a step of available
// resources smaller than an eighth of the total, the object store's figures, the demands
// waiting in the queue): every view
// of the cluster follows every report, so a busy node that rewrote its report every
// LoadReportInterval sent ten reports a second to each of N nodes.
const loadReportSettle = time.Second

// loadReportDamp is the least time between two writes of the report for a change that
// placement sees but that gives the node room (a queue shorter or empty, more resources
// available): a small node whose leases come and go crosses the policy's threshold back
// and forth several times a second, and each write goes to every view that watches the
// node. The first such change after a quiet loadReportDamp is written at once, the next
// ones within loadReportDamp of the last write (and not at all if the load went back to
// the report's meanwhile). A change that takes room away (a queue starts or doubles, a
// resource falls below one unit or none) is written at once: peers would send the node
// work it cannot start.
const loadReportDamp = 500 * time.Millisecond

// loadReportRefresh rewrites an unchanged report this often. Nothing reads a report's age
// (the report is on the node's lease, so a dead node's goes with it, and the membership
// tells liveness); the refresh only repairs a report lost some other way. Every view that
// follows the load reports gets every rewrite: at 2 s, the refreshes of 63 idle peers were
// most of the GCS bytes per task that 64 simulated nodes paced at 20 tasks/s moved
// (benchmarks/RESULTS.md).
const loadReportRefresh = 30 * time.Second

// runsTasks reports whether a node record belongs in a job's cluster view.
func runsTasks(info *pb.NodeInfo, job ids.JobID) bool {
	return info.Role != RoleDriver && (info.JobId == "" || info.JobId == string(job))
}

// loadReporter publishes the node's load report (load/<node>, leased) while the node runs.
// A driver's (RoleDriver) reports only its object store, under driverload/<node> (same
// lease, same cadence: the store asked once a second, a change written within
// loadReportSettle, an unchanged report every loadReportRefresh): the views that place
// tasks follow load/ only, so a driver's report costs them nothing and never makes the
// driver a place for tasks, while `rayctl memory` and the head's metrics count what the
// driver holds (the objects it Put and its tasks' results).
type loadReporter struct {
	n      *Node
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startLoadReporter(n *Node) *loadReporter {
	rctx, cancel := context.WithCancel(context.Background())
	r := &loadReporter{n: n, cancel: cancel}
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
	driver := r.n.cfg.Role == RoleDriver
	key, every := gcs.LoadKey(string(r.n.ID)), LoadReportInterval
	if driver {
		// Only the store's figures, which are asked once a second anyway.
		key, every = gcs.DriverLoadKey(string(r.n.ID)), time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var gate reportGate
	var storeAt time.Time
	var st *pb.StoreStatsReply
	var s *raylet.StatsReply // the raylet's last reply, asked when rayletChanges is seen
	var seen uint64          // rayletChanges when s was asked for
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rl := r.n.raylet()
		if driver {
			s = &raylet.StatsReply{} // a driver runs no tasks: no resources, no queue
		} else if rl == nil {
			continue
		}
		// The raylet's Stats change only with its messages (with a machine ledger also
		// without: ask every time then), so an idle node asks nothing: ten messages a
		// second per node, which the simulated control plane counted per task.
		if v := r.n.rayletChanges.Load(); !driver && (s == nil || v != seen || r.n.machine != nil) {
			res, err := ask.Request(r.n.system.Root, rl, raylet.Stats{}, time.Second)
			if err != nil {
				continue
			}
			reply, ok := res.(*raylet.StatsReply)
			if !ok {
				continue
			}
			s, seen = reply, v
		}
		if driver || time.Since(storeAt) >= time.Second { // a driver ticks once a second
			storeAt = time.Now()
			if sp := r.n.objectStore(); sp != nil {
				if res, err := ask.Request(r.n.system.Root, sp, &pb.StoreStats{Top: 5}, time.Second); err == nil {
					st, _ = res.(*pb.StoreStatsReply)
				}
			}
		}
		l := &pb.NodeLoad{NodeId: string(r.n.ID), Available: tasks.ResourcesToPB(s.Available), Queued: int32(s.Queued),
			StoreBudget: r.n.cfg.ObjectStoreBytes, InFlightBytes: r.n.Core.InFlightBytes()}
		if s.Machine {
			l.MachineLedger, l.InUse = true, tasks.ResourcesToPB(s.InUse)
		}
		for _, d := range s.Demands {
			l.Demands = append(l.Demands, &pb.ResourceDemand{Shape: tasks.ResourcesToPB(d.Shape), Owner: d.Owner,
				Tasks: int32(d.Tasks), Actors: int32(d.Actors), PlacementGroup: d.Group})
		}
		l.DemandsOmitted = int32(s.DemandsOmitted)
		if st != nil {
			l.StoreInMemory, l.StoreSpilled, l.StoreObjects = st.MemoryBytes, st.SpilledBytes, st.Objects
			l.StoreLargest, l.StoreSpillErrors = st.Largest, st.SpillErrors
		}
		now := time.Now()
		lease := r.n.leaseID()
		if !gate.due(l, s.Total, lease, now) {
			continue
		}
		l.UnixMs = now.UnixMilli()
		stamped, _ := proto.Marshal(l)
		l.UnixMs = 0
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := r.n.store.Put(pctx, key, stamped, lease)
		cancel()
		if err == nil {
			gate.wrote(l, lease, now)
		}
	}
}

// reportGate decides when the load reporter writes the node's report: at once when a
// figure that placement decisions use changed significantly (significantChange) so that
// the node has less room (lostRoom), or the node's GCS lease changed (the report written
// on the old one goes when it lapses); for other significant changes, at once when the
// last write is loadReportDamp old, else when it becomes so; within loadReportSettle when
// anything else in it changed, and every loadReportRefresh when nothing did. Not safe for
// concurrent use (the reporter's loop owns it).
type reportGate struct {
	last   *pb.NodeLoad // the report last written, without its time (nil: none yet)
	lease  gcs.LeaseID  // the lease it was written on
	lastAt time.Time
}

// due reports whether l (without its time) should be written now on lease; total is the
// node's resources.
func (g *reportGate) due(l *pb.NodeLoad, total sched.Resources, lease gcs.LeaseID, now time.Time) bool {
	switch {
	case g.last == nil || lease != g.lease || now.Sub(g.lastAt) >= loadReportRefresh:
		return true
	case proto.Equal(g.last, l):
		return false
	case significantChange(g.last, l, total):
		return now.Sub(g.lastAt) >= loadReportDamp || lostRoom(g.last, l, total)
	}
	return now.Sub(g.lastAt) >= loadReportSettle
}

// wrote records that l was written on lease at now.
func (g *reportGate) wrote(l *pb.NodeLoad, lease gcs.LeaseID, now time.Time) {
	g.last, g.lease, g.lastAt = l, lease, now
}

// significantChange reports whether a node's load moved from the report was to the
// figures now in a way that changes where tasks go (sched.Place and sched.Spill): its
// queue became empty or not, or doubled or halved; for some resource of the node, the
// amount available crossed one of 0 (some free or none), one whole unit (or the total,
// if smaller: a task of the common shape can run now or cannot), half the total (the
// policy's utilization threshold, sched.DefaultThreshold) or the total (idle or not), or
// moved by an eighth of the total or more.
func significantChange(was, now *pb.NodeLoad, total sched.Resources) bool {
	qa, qb := was.GetQueued(), now.GetQueued()
	if (qa == 0) != (qb == 0) || qb >= 2*qa && qb != qa || 2*qb <= qa && qb != qa {
		return true
	}
	a, b := tasks.ResourcesFromPB(was.GetAvailable()), tasks.ResourcesFromPB(now.GetAvailable())
	if a.Equal(b) {
		return false
	}
	moved := false
	total.Each(func(name string, t sched.Quantity) {
		x, y := a.Get(name), b.Get(name)
		if moved || t <= 0 || x == y {
			return
		}
		d := y - x
		if d < 0 {
			d = -d
		}
		moved = availLevel(x, t) != availLevel(y, t) || d >= max(t/8, 1)
	})
	if moved {
		return true
	}
	// A resource the node's total lacks (a report from before a change of the total)
	// changed: nothing to measure it against.
	extra := false
	b.Each(func(name string, q sched.Quantity) {
		if total.Get(name) == 0 && a.Get(name) != q {
			extra = true
		}
	})
	a.Each(func(name string, q sched.Quantity) {
		if total.Get(name) == 0 && b.Get(name) != q {
			extra = true
		}
	})
	return extra
}

// lostRoom reports whether a node's load moved from was to now in a way that leaves it
// less room than the report said for tasks of the common shapes: its queue started or
// doubled, or some resource fell below one whole unit (or the total, if smaller) or to
// none.
func lostRoom(was, now *pb.NodeLoad, total sched.Resources) bool {
	qa, qb := was.GetQueued(), now.GetQueued()
	if qa == 0 && qb > 0 || qa > 0 && qb >= 2*qa {
		return true
	}
	a, b := tasks.ResourcesFromPB(was.GetAvailable()), tasks.ResourcesFromPB(now.GetAvailable())
	lost := false
	total.Each(func(name string, t sched.Quantity) {
		if x, y := a.Get(name), b.Get(name); t > 0 && y < x && y < min(sched.Unit, t) && availLevel(y, t) < availLevel(x, t) {
			lost = true
		}
	})
	return lost
}

// availLevel is how many of the thresholds of significantChange an available amount x of
// a resource whose total is t reaches.
func availLevel(x, t sched.Quantity) int {
	n := 0
	if x > 0 {
		n++
	}
	if x >= min(sched.Unit, t) {
		n++
	}
	if x > t/2 {
		n++
	}
	if x >= t {
		n++
	}
	return n
}
