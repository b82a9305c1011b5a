package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/assembly/clusterview"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// TaskCounter returns the task counts of every process with a runtime.
type TaskCounter func(ctx context.Context) (TaskCounts, error)

// TaskCounts is what a TaskCounter found.
type TaskCounts struct {
	// Counts are by function and state (core.TaskQuery{Counts: true} merged over the
	// processes): ray_tasks.
	Counts []core.TaskCount
	// Finished are the attempts that ended (core.Ended), by function and
	// state, since the cluster's head started counting (FinishedTotals): the counter
	// ray_go_tasks_finished_total, which does not fall as processes exit.
	Finished []core.TaskCount
	// Missing is how many processes did not answer or could not be asked.
	Missing int
}

// FinishedTotals adds up the ended attempts of processes that come and go into totals
// that only grow (a Prometheus counter): each process counts its own since it started
// (its shards' counters), and the counts of a process that exited stay in the totals.
// Not safe for concurrent use.
type FinishedTotals struct {
	last     map[string]map[[2]string]int // by process (node ID): its counts as last seen
	departed map[[2]string]int            // the last counts of the processes that left
}

// Update takes the counts each answering process gave (node ID to its counts, of every
// state; the live ones are ignored) and returns the totals. A process that answered before
// and is absent now keeps its last counts in the totals: still counted (stay says it has
// not left: it did not answer in time, or could not be asked), or folded into those of
// the processes that left.
func (f *FinishedTotals) Update(byProcess map[string][]core.TaskCount, stay func(node string) bool) []core.TaskCount {
	if f.last == nil {
		f.last, f.departed = map[string]map[[2]string]int{}, map[[2]string]int{}
	}
	for node, counts := range byProcess {
		m := f.last[node]
		if m == nil {
			m = map[[2]string]int{}
			f.last[node] = m
		}
		for _, c := range counts {
			if !core.Ended(c.State) {
				continue
			}
			k := [2]string{c.Function, c.State}
			m[k] = max(m[k], c.Count) // a process's own counts only grow
		}
	}
	for node, m := range f.last {
		if _, ok := byProcess[node]; ok || (stay != nil && stay(node)) {
			continue
		}
		for k, n := range m {
			f.departed[k] += n
		}
		delete(f.last, node)
	}
	sum := maps.Clone(f.departed)
	for _, m := range f.last {
		for k, n := range m {
			sum[k] += n
		}
	}
	out := make([]core.TaskCount, 0, len(sum))
	for _, k := range sortedKeys(sum) {
		out = append(out, core.TaskCount{Function: k[0], State: k[1], Count: sum[k]})
	}
	return out
}

// NodeStats is what one node (a process with a raylet and an object store shard) reports.
type NodeStats struct {
	Role                                                      string // NodeInfo.role
	Budget, InMemory, Spilled, Objects, SpillErrors, InFlight int64  // object store bytes and counts
	Queued                                                    int64  // tasks in the raylet's queue
}

// NodeSource returns the stats of the nodes a Collector reports.
type NodeSource func(ctx context.Context) ([]NodeStats, error)

// LoadReports is the NodeSource of an agent: the load reports in the GCS of the nodes
// whose NodeInfo.agent_id is agent (its job's worker processes) and, with drivers (the
// head's), the object store reports of the drivers joined to the cluster (driverload/:
// no agent starts a driver, so the head counts them; their role is "driver").
func LoadReports(store gcs.Store, agent string, drivers bool) NodeSource {
	return func(ctx context.Context) ([]NodeStats, error) {
		nodes, _, err := store.List(ctx, gcs.NodesPrefix)
		if err != nil {
			return nil, err
		}
		loads, _, err := store.List(ctx, gcs.LoadPrefix)
		if err != nil {
			return nil, err
		}
		if drivers {
			more, _, err := store.List(ctx, gcs.DriverLoadPrefix)
			if err != nil {
				return nil, err
			}
			loads = append(loads, more...)
		}
		role := map[string]string{}
		for _, kv := range nodes {
			id, _ := gcs.TrimKey(gcs.NodesPrefix, kv.Key)
			n, err := clusterview.DecodeNode(id, kv.Value)
			if err != nil || n.GetAgentId() != agent && !(drivers && n.GetAgentId() == "" && n.GetRole() == driverRole) {
				continue
			}
			role[id] = n.GetRole()
		}
		out := make([]NodeStats, 0, len(role))
		for _, kv := range loads {
			id, ok := gcs.TrimKey(gcs.LoadPrefix, kv.Key)
			if !ok {
				id, _ = gcs.TrimKey(gcs.DriverLoadPrefix, kv.Key)
			}
			r, ok := role[id]
			if !ok {
				continue
			}
			l, err := clusterview.DecodeLoad(id, kv.Value)
			if err != nil {
				continue
			}
			delete(role, id)
			out = append(out, NodeStats{Role: r, Budget: l.GetStoreBudget(), InMemory: l.GetStoreInMemory(), Spilled: l.GetStoreSpilled(),
				Objects: l.GetStoreObjects(), SpillErrors: l.GetStoreSpillErrors(), InFlight: l.GetInFlightBytes(), Queued: int64(l.GetQueued())})
		}
		for _, r := range role { // no load report (a driver, or one not written yet)
			out = append(out, NodeStats{Role: r})
		}
		return out, nil
	}
}

// driverRole is a driver's NodeInfo.role (internal/assembly/node.RoleDriver, which ranks
// above this package).
const driverRole = "driver"

// Config configures a Collector.
type Config struct {
	// Nodes are the nodes whose object stores and queues this Collector reports (an agent:
	// LoadReports of its ID). Required.
	Nodes NodeSource
	// Store is the GCS, for the actor table (with Cluster).
	Store gcs.Store
	// CPUs is the CPU resource this machine offers (ray_node_cpu_count).
	CPUs float64
	// StoreBytes is the object store budget of this agent (its --object-store-memory,
	// which each of its job's worker processes is given): ray_object_store_available_memory
	// is it (plus, on the head, the drivers' budgets) less the bytes in memory, also while
	// no worker process runs here. 0: the sum of the nodes' budgets (a local runtime's one
	// node).
	StoreBytes int64
	// Cluster adds the cluster-wide gauges (ray_tasks, ray_actors) and the counter
	// ray_go_tasks_finished_total: set on one agent only,
	// the head.
	Cluster bool
	// Tasks counts the tasks of every process (with Cluster; nil: no ray_tasks).
	Tasks TaskCounter
	// Timeout bounds what one scrape waits for each source (default 5 s).
	Timeout time.Duration
	// ProcDir is where /proc is (default "/proc"; tests).
	ProcDir string
	// Logger receives why a source failed (default slog.Default(), at debug level).
	Logger *slog.Logger
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Nodes == nil:
		return errors.New("metrics: Config.Nodes is required")
	case c.Cluster && c.Store == nil:
		return errors.New("metrics: Config.Cluster needs Config.Store (the actor table)")
	case c.CPUs < 0:
		return errors.New("metrics: negative CPUs")
	case c.StoreBytes < 0:
		return errors.New("metrics: negative StoreBytes")
	case c.Timeout < 0:
		return errors.New("metrics: negative Timeout")
	}
	return nil
}

// Collector is the prometheus.Collector of an agent (or of a local runtime): every value is
// read at scrape time (see the package doc). Safe for concurrent scrapes.
type Collector struct {
	cfg Config
	cpu cpuSampler
}

// New returns a Collector.
func New(cfg Config) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.ProcDir == "" {
		cfg.ProcDir = "/proc"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Collector{cfg: cfg, cpu: cpuSampler{dir: cfg.ProcDir}}, nil
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descTasks = desc("ray_tasks", "Tasks and actor calls by function (Name) and state, of every process of the cluster: ended attempts counted since each process started, live ones as they are now (head only).", "Name", "State")
	// A counter (Prometheus's _total, TYPE counter), for rate(): ray_tasks falls as
	// processes exit with their counts.
	descFinished = desc("ray_go_tasks_finished_total", "Task and actor call attempts that ended, by function (Name) and State (FINISHED, FAILED, CANCELLED, FAILED_RETRIED), of every process of the cluster since the head started: the counts of a process that exited stay (head only).", "Name", "State")
	descActors   = desc("ray_actors", "Actors by class (Name) and state, from the GCS actor table (head only).", "Name", "State")

	descStoreMem      = desc("ray_object_store_memory", "Object store bytes of this agent's nodes (the head's: and of the drivers joined to the cluster) by Location: IN_MEMORY (the store shards' memory) or SPILLED (spill files).", "Location")
	descStoreUsed     = desc("ray_object_store_used_memory", "Object store bytes in memory on this agent's nodes (the head's: and drivers').")
	descStoreAvail    = desc("ray_object_store_available_memory", "Object store budget left on this agent (its --object-store-memory minus the bytes in memory of its worker processes' stores; the head's: plus the drivers' budgets, minus their bytes).")
	descStoreObjects  = desc("ray_object_store_num_local_objects", "Objects held by the object stores of this agent's nodes (the head's: and drivers').")
	descSpillErrors   = desc("ray_go_object_store_spill_errors", "Failed spills of this agent's nodes' stores, since each started.")
	descInFlight      = desc("ray_go_object_store_pull_bytes", "Bytes of objects this agent's nodes are pulling from other nodes now.")
	descQueued        = desc("ray_scheduler_tasks", "Tasks in the raylets' queues of this agent's nodes, by State (Queued: waiting for resources or a worker).", "State")
	descProcesses     = desc("ray_go_processes", "Processes with a runtime on this agent by role (worker: a job's worker process; the head's: driver, the drivers joined to the cluster).", "Role")
	descCPUCount      = desc("ray_node_cpu_count", "CPUs this machine offers to the scheduler (--num-cpus).")
	descCores         = desc("ray_go_node_cores", "Logical CPUs of this machine.")
	descCPUUtil       = desc("ray_node_cpu_utilization", "CPU utilization of this machine in percent, since the previous scrape (since boot at the first).")
	descMemTotal      = desc("ray_node_mem_total", "RAM of this machine in bytes.")
	descMemUsed       = desc("ray_node_mem_used", "RAM in use on this machine in bytes (total minus available).")
	descMemAvail      = desc("ray_node_mem_available", "RAM available on this machine in bytes (MemAvailable).")
	descSourceUp      = desc("ray_go_metrics_source_up", "Whether a source of this scrape answered in time (1) or not (0): nodes, tasks, actors, proc.", "Source")
	descTasksMissing  = desc("ray_go_metrics_tasks_missing_processes", "Processes that did not answer the task count query of this scrape in time, or could not be asked (a running job's driver or worker process whose lease lapsed): their tasks are not in ray_tasks.")
	descScrapeSeconds = desc("ray_go_metrics_scrape_seconds", "How long this scrape's reads took.")
)

// Describe sends the descriptors of every metric the Collector may send.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStoreMem, descStoreUsed, descStoreAvail, descStoreObjects, descSpillErrors,
		descInFlight, descQueued, descProcesses, descCPUCount, descCores, descCPUUtil, descMemTotal, descMemUsed, descMemAvail,
		descSourceUp, descScrapeSeconds} {
		ch <- d
	}
	if c.cfg.Cluster {
		ch <- descActors
		if c.cfg.Tasks != nil {
			ch <- descTasks
			ch <- descFinished
			ch <- descTasksMissing
		}
	}
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func up(ch chan<- prometheus.Metric, source string, ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	gauge(ch, descSourceUp, v, source)
}

// Collect reads every source (concurrently, each bounded by Config.Timeout) and sends the
// metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	sources := []func(ch chan<- prometheus.Metric){
		c.collectMachine,
		func(ch chan<- prometheus.Metric) { c.collectNodes(ctx, ch) },
	}
	if c.cfg.Cluster {
		sources = append(sources, func(ch chan<- prometheus.Metric) { c.collectActors(ctx, ch) })
		if c.cfg.Tasks != nil {
			sources = append(sources, func(ch chan<- prometheus.Metric) { c.collectTasks(ctx, ch) })
		}
	}
	bufs := make([]chan prometheus.Metric, len(sources))
	var wg sync.WaitGroup
	for i, f := range sources {
		bufs[i] = make(chan prometheus.Metric, 1024)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(bufs[i])
			f(bufs[i])
		}()
	}
	for _, b := range bufs {
		for m := range b {
			ch <- m
		}
	}
	wg.Wait()
	gauge(ch, descScrapeSeconds, time.Since(start).Seconds())
}

func (c *Collector) fail(source string, err error) {
	c.cfg.Logger.Debug("metrics: a source failed", "source", source, "err", err)
}

func (c *Collector) collectMachine(ch chan<- prometheus.Metric) {
	gauge(ch, descCPUCount, c.cfg.CPUs)
	gauge(ch, descCores, float64(runtime.NumCPU()))
	util, err1 := c.cpu.utilization()
	if err1 == nil {
		gauge(ch, descCPUUtil, util)
	}
	mem, err2 := readMeminfo(c.cfg.ProcDir)
	if err2 == nil {
		gauge(ch, descMemTotal, float64(mem.total))
		gauge(ch, descMemAvail, float64(mem.available))
		gauge(ch, descMemUsed, float64(mem.total-mem.available))
	}
	if err := errors.Join(err1, err2); err != nil {
		c.fail("proc", err)
	}
	up(ch, "proc", err1 == nil && err2 == nil)
}

// collectNodes reads the stats of this agent's nodes.
func (c *Collector) collectNodes(ctx context.Context, ch chan<- prometheus.Metric) {
	nodes, err := c.cfg.Nodes(ctx)
	if err != nil {
		c.fail("nodes", err)
		up(ch, "nodes", false)
		return
	}
	var sum NodeStats
	roles := map[string]int{}
	for _, n := range nodes {
		roles[n.Role]++
		if c.cfg.StoreBytes == 0 || n.Role == driverRole {
			sum.Budget += n.Budget // a driver's store is its own; the worker processes' is the agent's
		}
		sum.InMemory += n.InMemory
		sum.Spilled += n.Spilled
		sum.Objects += n.Objects
		sum.SpillErrors += n.SpillErrors
		sum.InFlight += n.InFlight
		sum.Queued += n.Queued
	}
	gauge(ch, descStoreMem, float64(sum.InMemory), "IN_MEMORY")
	gauge(ch, descStoreMem, float64(sum.Spilled), "SPILLED")
	sum.Budget += c.cfg.StoreBytes
	gauge(ch, descStoreUsed, float64(sum.InMemory))
	gauge(ch, descStoreAvail, float64(max(sum.Budget-sum.InMemory, 0)))
	gauge(ch, descStoreObjects, float64(sum.Objects))
	gauge(ch, descSpillErrors, float64(sum.SpillErrors))
	gauge(ch, descInFlight, float64(sum.InFlight))
	gauge(ch, descQueued, float64(sum.Queued), "Queued")
	for _, role := range sortedKeys(roles) {
		gauge(ch, descProcesses, float64(roles[role]), role)
	}
	up(ch, "nodes", true)
}

func (c *Collector) collectActors(ctx context.Context, ch chan<- prometheus.Metric) {
	kvs, _, err := c.cfg.Store.List(ctx, gcs.ActorsPrefix)
	if err != nil {
		c.fail("actors", err)
		up(ch, "actors", false)
		return
	}
	counts := map[[2]string]int{}
	for _, kv := range kvs {
		info := &pb.ActorInfo{}
		if proto.Unmarshal(kv.Value, info) != nil || len(info.GetActorId()) == 0 {
			continue
		}
		counts[[2]string{info.GetClass(), lifecycle.Phase(info.GetPhase()).RayName()}]++
	}
	for _, k := range sortedKeys(counts) {
		gauge(ch, descActors, float64(counts[k]), k[0], k[1])
	}
	up(ch, "actors", true)
}

func (c *Collector) collectTasks(ctx context.Context, ch chan<- prometheus.Metric) {
	tc, err := c.cfg.Tasks(ctx)
	if err != nil {
		c.fail("tasks", err)
		up(ch, "tasks", false)
		return
	}
	for _, n := range tc.Counts {
		gauge(ch, descTasks, float64(n.Count), n.Function, n.State)
	}
	for _, n := range tc.Finished {
		ch <- prometheus.MustNewConstMetric(descFinished, prometheus.CounterValue, float64(n.Count), n.Function, n.State)
	}
	gauge(ch, descTasksMissing, float64(tc.Missing))
	up(ch, "tasks", true)
}

func sortedKeys[K string | [2]string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}

// Registry returns a registry with the Collector, the Go runtime's and this process's
// collectors, and the GCS latency histogram of latency (nil: none).
func Registry(c *Collector, latency *Latency) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if latency != nil {
		reg.MustRegister(latency.hist)
	}
	return reg
}
