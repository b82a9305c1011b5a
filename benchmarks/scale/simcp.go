package main

// The -nodes benchmark, part two: a simulated control plane (issue 20). N nodes run in this
// process (internal/assembly/testcluster: each a real protoactor member with its own
// remote, raylet, workers, store and runtime) over one embedded etcd, and run the workload
// of part one: one submitter per node (a driver on that node) submitting M empty tasks
// pinned to its own node and waiting for them ("local"), and the same pinned to the next
// node ("remote": every task crosses nodes). Over the timed window the benchmark counts
// the messages the nodes' actors handled (each node's counter, summed) and the GCS traffic
// of the nodes (a counting wrapper around the GCS client they share): write operations and
// bytes (keys and values put, keys deleted), read bytes (values got and listed) and bytes
// delivered to watches, each divided by the tasks run. It also counts the same over an idle
// second after the warm-up: the background traffic N nodes make with nothing to do.
//
// The messages are also counted by type (simtypes.go: receiver role, sender, Go type),
// through the nodes' message tap (node.Config.MessageTap), which is off in every other
// use. With -sim-rate each submitter is paced at a fixed rate, so that every node runs the
// same task rate at every N: as fast as they go, N nodes share this machine's two cores and
// each runs 1/N of the tasks per second, so that whatever a node sends per unit of time
// (timers, lease ages, load reports) counts N times as much per task although nothing in
// the protocol grew with N.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/benchmarks/internal/perf"
	"github.com/ray-go/ray/internal/assembly/clusterview"
	"github.com/ray-go/ray/internal/assembly/testcluster"
	"github.com/ray-go/ray/internal/base/gcs"
)

// gcsCounts counts the traffic through a countingStore.
type gcsCounts struct {
	writes, writeBytes   atomic.Int64 // Put, Delete, Txn (one per call); key and value bytes
	reads, readBytes     atomic.Int64 // Get, List, Count; bytes of the keys and values returned
	watchEvents, watched atomic.Int64 // events delivered to watches; their key and value bytes
	leases               atomic.Int64 // Grant, KeepAlive, Revoke calls
	byPrefix             sync.Map     // key prefix (keyPrefix) -> *atomic.Int64 bytes written
}

// keyPrefix is a key up to its first '/' (or its first 24 bytes): the table it is in.
func keyPrefix(key string) string {
	for i := 0; i < len(key) && i < 24; i++ {
		if key[i] == '/' {
			return key[:i+1]
		}
	}
	return key[:min(len(key), 24)]
}

func (c *gcsCounts) wrote(key string, n int) {
	c.writeBytes.Add(int64(n))
	v, ok := c.byPrefix.Load(keyPrefix(key))
	if !ok {
		v, _ = c.byPrefix.LoadOrStore(keyPrefix(key), new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(int64(n))
}

// prefixes returns the bytes written per key prefix so far.
func (c *gcsCounts) prefixes() map[string]int64 {
	out := map[string]int64{}
	c.byPrefix.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

type gcsSnapshot struct {
	Writes, WriteBytes, Reads, ReadBytes, WatchEvents, Watched, Leases int64
}

func (c *gcsCounts) snapshot() gcsSnapshot {
	return gcsSnapshot{c.writes.Load(), c.writeBytes.Load(), c.reads.Load(), c.readBytes.Load(), c.watchEvents.Load(), c.watched.Load(), c.leases.Load()}
}

func (a gcsSnapshot) sub(b gcsSnapshot) gcsSnapshot {
	return gcsSnapshot{a.Writes - b.Writes, a.WriteBytes - b.WriteBytes, a.Reads - b.Reads, a.ReadBytes - b.ReadBytes,
		a.WatchEvents - b.WatchEvents, a.Watched - b.Watched, a.Leases - b.Leases}
}

// countingStore is a gcs.Store that counts what passes through it.
type countingStore struct {
	gcs.Store
	c *gcsCounts
}

func kvBytes(kv gcs.KV) int64 { return int64(len(kv.Key) + len(kv.Value)) }

func (s countingStore) Get(ctx context.Context, key string) (gcs.KV, bool, error) {
	kv, ok, err := s.Store.Get(ctx, key)
	s.c.reads.Add(1)
	if ok {
		s.c.readBytes.Add(kvBytes(kv))
	}
	return kv, ok, err
}

func (s countingStore) List(ctx context.Context, prefix string) ([]gcs.KV, int64, error) {
	kvs, rev, err := s.Store.List(ctx, prefix)
	s.c.reads.Add(1)
	var n int64
	for _, kv := range kvs {
		n += kvBytes(kv)
	}
	s.c.readBytes.Add(n)
	return kvs, rev, err
}

func (s countingStore) Count(ctx context.Context, prefix string) (int64, error) {
	s.c.reads.Add(1)
	return s.Store.Count(ctx, prefix)
}

func (s countingStore) Put(ctx context.Context, key string, value []byte, lease gcs.LeaseID) (int64, error) {
	s.c.writes.Add(1)
	s.c.wrote(key, len(key)+len(value))
	return s.Store.Put(ctx, key, value, lease)
}

func (s countingStore) Delete(ctx context.Context, key string) (int64, error) {
	s.c.writes.Add(1)
	s.c.wrote(key, len(key))
	return s.Store.Delete(ctx, key)
}

func (s countingStore) Txn(ctx context.Context, cmps []gcs.Cmp, ops []gcs.Op) (bool, int64, error) {
	s.c.writes.Add(1)
	for _, c := range cmps {
		s.c.wrote(c.Key, len(c.Key))
	}
	for _, o := range ops {
		s.c.wrote(o.Key, len(o.Key)+len(o.Value))
	}
	return s.Store.Txn(ctx, cmps, ops)
}

func (s countingStore) Watch(ctx context.Context, prefix string, fromRev int64) <-chan gcs.WatchResponse {
	in := s.Store.Watch(ctx, prefix, fromRev)
	out := make(chan gcs.WatchResponse)
	go func() {
		defer close(out)
		for r := range in {
			var n int64
			for _, e := range r.Events {
				n += kvBytes(e.KV)
			}
			s.c.watchEvents.Add(int64(len(r.Events)))
			s.c.watched.Add(n)
			select {
			case out <- r:
			case <-ctx.Done():
				// The watcher is gone; drain in until the store closes it (ctx is done).
				for range in {
				}
				return
			}
		}
	}()
	return out
}

func (s countingStore) Grant(ctx context.Context, ttl time.Duration) (gcs.LeaseID, error) {
	s.c.leases.Add(1)
	return s.Store.Grant(ctx, ttl)
}

func (s countingStore) KeepAlive(ctx context.Context, id gcs.LeaseID) (<-chan struct{}, error) {
	s.c.leases.Add(1)
	return s.Store.KeepAlive(ctx, id)
}

func (s countingStore) Revoke(ctx context.Context, id gcs.LeaseID) error {
	s.c.leases.Add(1)
	return s.Store.Revoke(ctx, id)
}

// Close closes nothing: the nodes share the store, which the cluster closes.
func (s countingStore) Close() error { return nil }

// simConfig is the simulated control plane's part.
type simConfig struct {
	counts []int
	tasks  int     // per node (submitter)
	rate   float64 // tasks/s per submitter (0: as fast as it goes)
	cpus   float64
	heap   string // "": no heap profiles; else write DIR/heap-<n>nodes.pprof after each count
}

// simWorkloads (-sim-workloads): "local", every submitter's tasks pinned to its own node
// (the workload of the real clusters); "remote", pinned to the next node (i+1 mod N), so
// that from 2 nodes on every task crosses nodes: the control plane's worst case for
// messages; "default" (not run unless asked for), placed by the policy, so that every
// node's view follows the load reports (a view follows none while it places only tasks
// bound to a node).
var simWorkloads = []string{"local", "remote"}

// simPoint is one workload's figures at one node count: per task over the timed window.
type simPoint struct {
	Tasks     int     `json:"tasks"`
	TasksPerS float64 `json:"tasks_per_s"` // all nodes in one process on this machine: not a speed figure
	// CoresUsed: the process's CPU time over the timed round ÷ its wall time. All nodes
	// share this process's cores: near the machine's core count, the simulated nodes starve
	// (leases and timers run late), which a real cluster's nodes, each with its own cores,
	// do not.
	CoresUsed     float64 `json:"cores_used"`
	Messages      float64 `json:"messages_per_task"`
	GCSWrites     float64 `json:"gcs_writes_per_task"`
	GCSWriteBytes float64 `json:"gcs_write_bytes_per_task"`
	GCSReadBytes  float64 `json:"gcs_read_bytes_per_task"`
	GCSWatchBytes float64 `json:"gcs_watch_bytes_per_task"`
	GCSBytes      float64 `json:"gcs_bytes_per_task"` // written + read + watched
	// Net of idle: the per-task figures less what the nodes send with nothing to do
	// (the idle rates times the timed window), i.e. what the tasks themselves cost.
	MessagesNet float64 `json:"messages_per_task_net_of_idle"`
	GCSBytesNet float64 `json:"gcs_bytes_per_task_net_of_idle"`
	// WriteBytesByPrefix: the bytes written per task, by key prefix (the tables).
	WriteBytesByPrefix map[string]float64 `json:"gcs_write_bytes_per_task_by_prefix,omitempty"`
	// ByType: the messages per task by receiver, sender and Go type (simtypes.go), those of
	// at least 0.0005 per task, largest net of idle first.
	ByType []msgTypeRow `json:"messages_by_type,omitempty"`
}

// simCount is one node count's figures.
type simCount struct {
	Workloads map[string]simPoint `json:"workloads"`
	// Idle: the counts per second with no work, after the warm-up: what n nodes cost
	// doing nothing (membership, load reports, leases).
	IdleMessagesPerS  float64 `json:"idle_messages_per_s"`
	IdleGCSWritesPerS float64 `json:"idle_gcs_writes_per_s"`
	IdleGCSBytesPerS  float64 `json:"idle_gcs_bytes_per_s"`
	IdleCoresUsed     float64 `json:"idle_cores_used"` // the process's CPU time ÷ wall, idle
	StartSeconds      float64 `json:"start_s"`
	RoundsRetried     int     `json:"rounds_retried,omitempty"` // rounds that failed and ran again (simRoundRetries at most)
	HeapMiB           float64 `json:"heap_mib"`
	Load              string  `json:"load"`
}

// simReport is the simulated control plane's report.
type simReport struct {
	TasksPerNode int                 `json:"tasks_per_node"`
	RatePerNode  float64             `json:"rate_per_node,omitempty"` // -sim-rate: each submitter paced at this many tasks/s
	CPUsPerNode  float64             `json:"cpus_per_node"`
	Counts       map[string]simCount `json:"nodes"`
	// Ratio: per workload, each per-task figure at the largest node count over the figure
	// at the smallest (local) or at the smallest count of 2 or more nodes (remote: at 1
	// node its tasks are local). Goal: <= 1.2 up to 64 nodes.
	Ratio map[string]map[string]float64 `json:"ratio"`
	Goal  []simGoal                     `json:"goals,omitempty"`
	// Stopped says where and why the node counts stopped short of those asked for;
	// Retried, the node counts that failed once and were run again.
	Stopped string   `json:"stopped,omitempty"`
	Retried []string `json:"retried,omitempty"`
}

type simGoal struct {
	Workload  string  `json:"workload"`
	FromNodes int     `json:"from_nodes"`
	ToNodes   int     `json:"to_nodes"`
	MaxRatio  float64 `json:"max_ratio"`
	Met       bool    `json:"met"`
}

func runSim(ctx context.Context, cfg simConfig) (*simReport, error) {
	rep := &simReport{TasksPerNode: cfg.tasks, RatePerNode: cfg.rate, CPUsPerNode: cfg.cpus, Counts: map[string]simCount{}, Ratio: map[string]map[string]float64{}}
	var done []int
	// Heap per pair of nodes until measured (simMemory): 36 MiB with protoactor's
	// preallocated endpoint queues, ~2 MiB since they start at 1,024 slots (16 nodes:
	// 1.1-1.25 GiB of heap, 2026-11-27).
	perPair := int64(2 << 20)
	for _, n := range cfg.counts {
		if need, avail := simMemory(n, perPair), memAvailable(); avail > 0 && need > avail*6/10 {
			rep.Stopped = fmt.Sprintf("before %d nodes: they would need about %d MiB of heap (%.1f MiB per pair of nodes as measured at the last count, or assumed: each node's protoactor endpoint queue and connection per peer), more than 60%% of the %d MiB available",
				n, need>>20, float64(perPair)/(1<<20), avail>>20)
			logf("simulated control plane: stopped %s", rep.Stopped)
			break
		}
		c, err := simOne(ctx, n, cfg)
		if err != nil && ctx.Err() == nil {
			// Many nodes in one process on a shared machine fail now and then to start or to
			// stay in each other's views (RESULTS.md): once more before giving up.
			logf("simulated control plane: %d nodes failed (%v); once more", n, err)
			rep.Retried = append(rep.Retried, fmt.Sprintf("%d nodes: %v", n, err))
			c, err = simOne(ctx, n, cfg)
		}
		if err != nil {
			if len(done) == 0 {
				return nil, fmt.Errorf("%d in-process node(s): %w", n, err)
			}
			rep.Stopped = fmt.Sprintf("at %d nodes: %v", n, err)
			logf("simulated control plane: stopped %s", rep.Stopped)
			break
		}
		done = append(done, n)
		rep.Counts[strconv.Itoa(n)] = c
		if n >= 4 {
			perPair = max(int64((c.HeapMiB-40*float64(n))*(1<<20))/int64(n*(n-1)), 64<<10)
		}
		for _, w := range simWorkloads {
			p := c.Workloads[w]
			logf("simulated, %2d node(s), %-6s: %.3f messages/task (net of idle %.3f), GCS %.4f writes/task, %.2f B/task (written %.2f, read %.2f, watched %.2f); %d tasks at %.0f/s, %.2f cores used",
				n, w, p.Messages, p.MessagesNet, p.GCSWrites, p.GCSBytes, p.GCSWriteBytes, p.GCSReadBytes, p.GCSWatchBytes, p.Tasks, p.TasksPerS, p.CoresUsed)
			for _, r := range p.ByType {
				logf("    %.4f/task (net of idle %.4f)  %s", r.PerTask, r.NetOfIdle, r.Key)
			}
		}
		logf("simulated, %2d node(s), idle: %.0f messages/s, %.1f GCS writes/s, %.0f GCS B/s, %.2f cores used; start %.1f s, heap %.0f MiB; load %s",
			n, c.IdleMessagesPerS, c.IdleGCSWritesPerS, c.IdleGCSBytesPerS, c.IdleCoresUsed, c.StartSeconds, c.HeapMiB, c.Load)
	}
	ratio := func(a, b float64) float64 {
		if a == 0 {
			if b == 0 {
				return 1
			}
			return math.Inf(1)
		}
		return b / a
	}
	if len(done) == 0 {
		return nil, fmt.Errorf("no node count ran: %s", rep.Stopped)
	}
	top := done[len(done)-1]
	for _, w := range simWorkloads {
		from := done[0]
		if w == "remote" {
			from = 0
			for _, n := range done {
				if n >= 2 {
					from = n
					break
				}
			}
			if from == 0 || from == top {
				continue
			}
		} else if from == top {
			continue
		}
		lo, hi := rep.Counts[strconv.Itoa(from)].Workloads[w], rep.Counts[strconv.Itoa(top)].Workloads[w]
		r := map[string]float64{
			"messages_per_task":             ratio(lo.Messages, hi.Messages),
			"messages_per_task_net_of_idle": ratio(lo.MessagesNet, hi.MessagesNet),
			"gcs_writes_per_task":           ratio(lo.GCSWrites, hi.GCSWrites),
			"gcs_bytes_per_task":            ratio(lo.GCSBytes, hi.GCSBytes),
		}
		for k, v := range r {
			if math.IsInf(v, 1) {
				r[k] = -1 // JSON has no infinity: -1 says "from 0 to more than 0"
			}
		}
		rep.Ratio[w] = r
		g := simGoal{Workload: w, FromNodes: from, ToNodes: top, MaxRatio: 1.2, Met: true}
		for _, k := range []string{"messages_per_task", "gcs_bytes_per_task"} {
			if v := r[k]; v > 1.2 || v < 0 {
				g.Met = false
			}
		}
		rep.Goal = append(rep.Goal, g)
	}
	return rep, nil
}

// simOne starts n nodes, runs the workloads, and stops them.
func simOne(ctx context.Context, n int, cfg simConfig) (c simCount, err error) {
	counts := &gcsCounts{}
	types := newMsgTypes()
	startAt := time.Now()
	cl, err := testcluster.Start(ctx, testcluster.Config{Nodes: n, CPUs: cfg.cpus,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		WrapGCS:    func(s gcs.Store) gcs.Store { return countingStore{Store: s, c: counts} },
		MessageTap: types.tap, LeaseTTL: simLeaseTTL})
	if err != nil {
		return c, err
	}
	addrs := make([]string, len(cl.Nodes))
	for i, nd := range cl.Nodes {
		addrs[i] = nd.System().Address()
	}
	types.setAddrs(addrs)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if serr := cl.Stop(sctx); serr != nil && err == nil {
			err = fmt.Errorf("stop: %w", serr)
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := cl.AwaitViews(wctx); err != nil {
		return c, err
	}
	c.StartSeconds = time.Since(startAt).Seconds()
	messages := func() int64 {
		var s int64
		for _, nd := range cl.Nodes {
			s += nd.Core.MessagesHandled()
		}
		return s
	}
	drivers := make([]context.Context, n)
	for i := range drivers {
		drivers[i] = cl.Context(wctx, i)
	}
	round := func(workload string, m int, warm bool) error {
		// Every node must see every node (a node whose lease lapsed under load leaves the
		// others' views until it registers again).
		actx, acancel := context.WithTimeout(wctx, 30*time.Second)
		err := cl.AwaitViews(actx)
		acancel()
		if err != nil {
			return fmt.Errorf("%s: %w", workload, err)
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				target := i
				if workload == "remote" {
					target = (i + 1) % n
				}
				task := nodesEmpty.Options(ray.NodeAffinity(string(cl.Nodes[target].ID), false))
				if workload == "default" {
					task = nodesEmpty
				}
				refs := make([]ray.ObjectRef[int], m)
				if cfg.rate > 0 && !warm {
					// Paced: the tasks due by now every simTick, from the round's start.
					t0 := time.Now()
					for j := 0; j < m; {
						due := min(m, int(time.Since(t0).Seconds()*cfg.rate)+1)
						for ; j < due; j++ {
							refs[j] = task.Remote(drivers[i])
						}
						if j < m {
							time.Sleep(simTick)
						}
					}
				} else {
					for j := range refs {
						refs[j] = task.Remote(drivers[i])
					}
				}
				_, errs[i] = ray.GetAll(drivers[i], refs)
				for _, r := range refs {
					r.Release()
				}
			}(i)
		}
		wg.Wait()
		for i, e := range errs {
			if e != nil {
				return fmt.Errorf("%s: node %d's submitter: %w", workload, i, e)
			}
		}
		return nil
	}
	// again: a round failed by a node that dropped out of the views for a moment (hard
	// affinity fails at once then; a node whose scheduler a view could not resolve is left
	// out for clusterview.SuspectFor) is run once more after that, and the count goes on;
	// at most simRoundRetries times per node count.
	again := func(w string, err error) bool {
		if err == nil || ctx.Err() != nil || c.RoundsRetried >= simRoundRetries {
			return false
		}
		c.RoundsRetried++
		logf("simulated, %2d node(s), %s: %v; the round once more", n, w, err)
		time.Sleep(clusterview.SuspectFor + 500*time.Millisecond)
		return true
	}
	for _, w := range simWorkloads {
		err := round(w, max(cfg.tasks/10, 1), true)
		for again(w, err) {
			err = round(w, max(cfg.tasks/10, 1), true)
		}
		if err != nil {
			return c, fmt.Errorf("warm-up: %w", err)
		}
	}
	// Idle: what n nodes cost with nothing to run (load reports settle first).
	time.Sleep(300 * time.Millisecond)
	m0, g0, y0, t0 := messages(), counts.snapshot(), types.snapshot(), time.Now()
	cpu0 := perf.ProcessCPU()
	time.Sleep(time.Second)
	idle := time.Since(t0).Seconds()
	c.IdleCoresUsed = (perf.ProcessCPU() - cpu0).Seconds() / idle
	dm, dg := messages()-m0, counts.snapshot().sub(g0)
	idleTypes := map[msgKey]float64{}
	for k, v := range subCounts(types.snapshot(), y0) {
		idleTypes[k] = float64(v) / idle
	}
	c.IdleMessagesPerS = float64(dm) / idle
	c.IdleGCSWritesPerS = float64(dg.Writes) / idle
	c.IdleGCSBytesPerS = float64(dg.WriteBytes+dg.ReadBytes+dg.Watched) / idle
	c.Workloads = map[string]simPoint{}
	for _, w := range simWorkloads {
		// Timed: the workload, and the counters until the nodes have reported their last
		// load change (100 ms reports: 300 ms after the last result).
		m0, g0, y0, t0 = messages(), counts.snapshot(), types.snapshot(), time.Now()
		pre := counts.prefixes()
		cpu0 = perf.ProcessCPU()
		err := round(w, cfg.tasks, false)
		for again(w, err) {
			m0, g0, y0, t0 = messages(), counts.snapshot(), types.snapshot(), time.Now()
			pre, cpu0 = counts.prefixes(), perf.ProcessCPU()
			err = round(w, cfg.tasks, false)
		}
		if err != nil {
			return c, err
		}
		wall := time.Since(t0).Seconds()
		cores := (perf.ProcessCPU() - cpu0).Seconds() / wall
		time.Sleep(300 * time.Millisecond)
		window := time.Since(t0).Seconds()
		dm, dg = messages()-m0, counts.snapshot().sub(g0)
		dy := subCounts(types.snapshot(), y0)
		tasks := float64(n * cfg.tasks)
		var p simPoint
		p.Tasks = n * cfg.tasks
		p.TasksPerS = tasks / wall
		p.CoresUsed = cores
		p.Messages = float64(dm) / tasks
		p.GCSWrites = float64(dg.Writes) / tasks
		p.GCSWriteBytes = float64(dg.WriteBytes) / tasks
		p.GCSReadBytes = float64(dg.ReadBytes) / tasks
		p.GCSWatchBytes = float64(dg.Watched) / tasks
		p.GCSBytes = p.GCSWriteBytes + p.GCSReadBytes + p.GCSWatchBytes
		for k, v := range counts.prefixes() {
			if d := v - pre[k]; d > 0 {
				if p.WriteBytesByPrefix == nil {
					p.WriteBytesByPrefix = map[string]float64{}
				}
				p.WriteBytesByPrefix[k] = float64(d) / tasks
			}
		}
		p.MessagesNet = p.Messages - c.IdleMessagesPerS*window/tasks
		p.GCSBytesNet = p.GCSBytes - c.IdleGCSBytesPerS*window/tasks
		p.ByType = typeRows(dy, idleTypes, window, tasks, 0.0005)
		c.Workloads[w] = p
	}
	if cfg.heap != "" {
		if err := writeHeapProfile(filepath.Join(cfg.heap, fmt.Sprintf("heap-%dnodes.pprof", n))); err != nil {
			return c, err
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c.HeapMiB = float64(ms.HeapInuse) / (1 << 20)
	c.Load = perf.LoadAvg()
	return c, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// simLeaseTTL is the simulated nodes' registration lease: dozens of nodes in one process
// on two shared cores starve for CPU long enough to lose the default 6 s lease now and then
// (RESULTS.md), and the count of messages is not about failure detection.
const simLeaseTTL = 30 * time.Second

// simRoundRetries bounds the rounds of one node count run again after a failure.
const simRoundRetries = 3

// simTick is how often a paced submitter (-sim-rate) submits the tasks due.
const simTick = 5 * time.Millisecond

// simMemory estimates the heap n in-process nodes take: protoactor's remote gives each
// node an endpoint writer per peer whose mailbox is a ring buffer of
// remote.Config.EndpointWriterQueueSize slots, 1,000,000 by default: measured 1150 MiB of
// heap at 8 nodes (56 pairs; -sim-heap-profiles: goring.New) and 8631 MiB at 16 (240
// pairs), so 36 MiB a pair; since the queues start at 1,024 slots (main 0935b22) about
// 2 MiB a pair (perPair until a count of 4 or more measured it), plus ~40 MiB a node.
func simMemory(n int, perPair int64) int64 { return int64(n*(n-1))*perPair + int64(n)*40<<20 }

// memAvailable is the machine's MemAvailable in bytes (0 when unknown).
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
