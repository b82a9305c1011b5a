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

// runsTasks reports whether a node record belongs in a job's cluster view.
func runsTasks(info *pb.NodeInfo, job ids.JobID) bool {
	return info.Role != RoleDriver && (info.JobId == "" || info.JobId == string(job))
}

// loadReporter publishes the node's load report (load/<node>, leased) while the node runs.
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
	t := time.NewTicker(LoadReportInterval)
	defer t.Stop()
	var last []byte
	var lastAt time.Time
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
		if rl == nil {
			continue
		}
		// The raylet's Stats change only with its messages (with a machine ledger also
		// without: ask every time then), so an idle node asks nothing: ten messages a
		// second per node, which the simulated control plane counted per task.
		if v := r.n.rayletChanges.Load(); s == nil || v != seen || r.n.machine != nil {
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
		if time.Since(storeAt) >= time.Second {
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
		_, err := r.n.store.Put(pctx, gcs.LoadKey(string(r.n.ID)), stamped, r.n.leaseID())
		cancel()
		if err == nil {
			last, lastAt = b, time.Now()
		}
	}
}
