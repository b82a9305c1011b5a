package metrics

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// fakeProc writes a /proc with the given stat cpu line and meminfo.
func fakeProc(t *testing.T, cpu string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(cpu+"\ncpu0 1 2 3 4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "meminfo"), []byte("MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    400 kB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		line      string
		busy, all uint64
		bad       bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{line: "cpu  10 0 10 70 10 0 0 0 5 5", busy: 20, all: 100},
		{line: "cpu 1 2 3 4", busy: 6, all: 10},
		{line: "cpu0 1 2 3 4", bad: true},
		{line: "cpu 1 x 3 4", bad: true},
	} {
		busy, all, err := parseStat([]byte(tc.line + "\n"))
		if (err != nil) != tc.bad || (!tc.bad && (busy != tc.busy || all != tc.all)) {
			t.Errorf("%q: %d %d %v", tc.line, busy, all, err)
		}
	}
}

// The collector from fake sources: the machine from a fake /proc (utilization between two
// scrapes), the nodes summed, the task counts; a failing source drops its metrics and says
// so in ray_go_metrics_source_up, without failing the scrape.
func TestCollector(t *testing.T) {
	dir := fakeProc(t, "cpu 0 0 0 100 0 0 0 0")
	nodes := []NodeStats{{Role: "worker", Budget: 100, InMemory: 30, Spilled: 5, Objects: 2, Queued: 4},
		{Role: "worker", Budget: 100, InMemory: 10, Objects: 1, Queued: 1}, {Role: "driver"}}
	var nodesErr error
	c, err := New(Config{CPUs: 4, ProcDir: dir, Cluster: false,
		Nodes: func(context.Context) ([]NodeStats, error) { return nodes, nodesErr }})
	if err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(c); got < 15 {
		t.Errorf("%d metrics", got)
	}
	// 100 more ticks, 25 of them busy: 25%.
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte("cpu 20 0 5 175 0 0 0 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP ray_node_cpu_utilization CPU utilization of this machine in percent, since the previous scrape (since boot at the first).
# TYPE ray_node_cpu_utilization gauge
ray_node_cpu_utilization 25
# HELP ray_node_mem_used RAM in use on this machine in bytes (total minus available).
# TYPE ray_node_mem_used gauge
ray_node_mem_used 614400
# HELP ray_object_store_available_memory Object store budget left on this agent (its --object-store-memory minus the bytes in memory of its worker processes' stores; the head's: plus the drivers' budgets, minus their bytes).
# TYPE ray_object_store_available_memory gauge
ray_object_store_available_memory 160
# HELP ray_object_store_memory Object store bytes of this agent's nodes (the head's: and of the drivers joined to the cluster) by Location: IN_MEMORY (the store shards' memory) or SPILLED (spill files).
# TYPE ray_object_store_memory gauge
ray_object_store_memory{Location="IN_MEMORY"} 40
ray_object_store_memory{Location="SPILLED"} 5
# HELP ray_scheduler_tasks Tasks in the raylets' queues of this agent's nodes, by State (Queued: waiting for resources or a worker).
# TYPE ray_scheduler_tasks gauge
ray_scheduler_tasks{State="Queued"} 5
# HELP ray_go_processes Processes with a runtime on this agent by role (worker: a job's worker process; the head's: driver, the drivers joined to the cluster).
# TYPE ray_go_processes gauge
ray_go_processes{Role="driver"} 1
ray_go_processes{Role="worker"} 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "ray_node_cpu_utilization", "ray_node_mem_used", "ray_object_store_available_memory",
		"ray_object_store_memory", "ray_scheduler_tasks", "ray_go_processes"); err != nil {
		t.Error(err)
	}

	nodesErr = errors.New("the GCS is away")
	want = `
# HELP ray_go_metrics_source_up Whether a source of this scrape answered in time (1) or not (0): nodes, tasks, actors, proc.
# TYPE ray_go_metrics_source_up gauge
ray_go_metrics_source_up{Source="nodes"} 0
ray_go_metrics_source_up{Source="proc"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "ray_go_metrics_source_up", "ray_object_store_used_memory"); err != nil {
		t.Error(err)
	}
}

// TestCollectorAgentBudget: with the agent's budget (Config.StoreBytes), what is available
// is that budget (plus the drivers') less the bytes in memory: all of it on an idle agent,
// with no worker process to report (it was 0), and not once per worker process (each is
// given the agent's budget).
func TestCollectorAgentBudget(t *testing.T) {
	var nodes []NodeStats
	c, err := New(Config{CPUs: 1, ProcDir: fakeProc(t, "cpu 1 1 1 1"), StoreBytes: 1000,
		Nodes: func(context.Context) ([]NodeStats, error) { return nodes, nil }})
	if err != nil {
		t.Fatal(err)
	}
	avail := func(want float64) {
		t.Helper()
		h := "# HELP ray_object_store_available_memory " + availHelp + "\n# TYPE ray_object_store_available_memory gauge\n"
		if err := testutil.CollectAndCompare(c, strings.NewReader(h+"ray_object_store_available_memory "+strconv.FormatFloat(want, 'f', -1, 64)+"\n"),
			"ray_object_store_available_memory"); err != nil {
			t.Error(err)
		}
	}
	avail(1000) // idle
	nodes = []NodeStats{{Role: "worker", Budget: 1000, InMemory: 300}, {Role: "worker", Budget: 1000, InMemory: 100},
		{Role: "driver", Budget: 50, InMemory: 10}}
	avail(1000 + 50 - 410)
	if _, err := New(Config{Nodes: c.cfg.Nodes, StoreBytes: -1}); err == nil {
		t.Error("a negative StoreBytes was accepted")
	}
}

const availHelp = "Object store budget left on this agent (its --object-store-memory minus the bytes in memory of its worker processes' stores; the head's: plus the drivers' budgets, minus their bytes)."

func TestConfigValidate(t *testing.T) {
	nodes := func(context.Context) ([]NodeStats, error) { return nil, nil }
	for _, cfg := range []Config{{}, {Nodes: nodes, Cluster: true}, {Nodes: nodes, CPUs: -1}, {Nodes: nodes, Timeout: -1}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// The head's cluster-wide gauges: actors by class and state from the actor table, tasks
// from the counter, processes that did not answer.
func TestCollectorCluster(t *testing.T) {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	ctx := context.Background()
	for i, a := range []*pb.ActorInfo{{Class: "C", Phase: int32(lifecycle.Alive)}, {Class: "C", Phase: int32(lifecycle.Alive)},
		{Class: "C", Phase: int32(lifecycle.Dead)}, {Class: "D", Phase: int32(lifecycle.Restarting)}} {
		a.ActorId = []byte{byte(i + 1)}
		b, _ := proto.Marshal(a)
		if _, err := store.Put(ctx, gcs.ActorKey(strconv.Itoa(i)), b, 0); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(Config{CPUs: 1, ProcDir: fakeProc(t, "cpu 1 1 1 1"), Cluster: true, Store: store,
		Nodes: func(context.Context) ([]NodeStats, error) { return nil, nil },
		Tasks: func(context.Context) (TaskCounts, error) {
			return TaskCounts{Counts: []core.TaskCount{{Function: "f", State: core.StateFinished, Count: 7}, {Function: "f", State: core.StateRunning, Count: 1}},
				Finished: []core.TaskCount{{Function: "f", State: core.StateFinished, Count: 9}}, Missing: 2}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP ray_actors Actors by class (Name) and state, from the GCS actor table (head only).
# TYPE ray_actors gauge
ray_actors{Name="C",State="ALIVE"} 2
ray_actors{Name="C",State="DEAD"} 1
ray_actors{Name="D",State="RESTARTING"} 1
# HELP ray_go_metrics_tasks_missing_processes Processes that did not answer the task count query of this scrape in time, or could not be asked (a running job's driver or worker process whose lease lapsed): their tasks are not in ray_tasks.
# TYPE ray_go_metrics_tasks_missing_processes gauge
ray_go_metrics_tasks_missing_processes 2
# HELP ray_tasks Tasks and actor calls by function (Name) and state, of every process of the cluster: ended attempts counted since each process started, live ones as they are now (head only).
# TYPE ray_tasks gauge
ray_tasks{Name="f",State="FINISHED"} 7
ray_tasks{Name="f",State="RUNNING"} 1
# HELP ray_go_tasks_finished_total Task and actor call attempts that ended, by function (Name) and State (FINISHED, FAILED, CANCELLED, FAILED_RETRIED), of every process of the cluster since the head started: the counts of a process that exited stay (head only).
# TYPE ray_go_tasks_finished_total counter
ray_go_tasks_finished_total{Name="f",State="FINISHED"} 9
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "ray_actors", "ray_tasks", "ray_go_metrics_tasks_missing_processes", "ray_go_tasks_finished_total"); err != nil {
		t.Error(err)
	}
}

// TestFinishedTotals: the totals of ended attempts only grow as processes come and go: a
// process that exited keeps its counts in them, one that did not answer this time keeps
// its last, live states are not counted.
func TestFinishedTotals(t *testing.T) {
	var f FinishedTotals
	fin := func(fn string, n int) core.TaskCount {
		return core.TaskCount{Function: fn, State: core.StateFinished, Count: n}
	}
	check := func(got []core.TaskCount, want ...core.TaskCount) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("totals %v, want %v", got, want)
		}
	}
	running := core.TaskCount{Function: "f", State: core.StateRunning, Count: 5}
	check(f.Update(map[string][]core.TaskCount{"a": {fin("f", 3), running}, "b": {fin("f", 2)}}, nil), fin("f", 5))
	// b did not answer in time: its 2 stay; a ran 4 more.
	check(f.Update(map[string][]core.TaskCount{"a": {fin("f", 7)}}, func(n string) bool { return n == "b" }), fin("f", 9))
	// b answers again with 3: counted once.
	check(f.Update(map[string][]core.TaskCount{"a": {fin("f", 7)}, "b": {fin("f", 3)}}, nil), fin("f", 10))
	// Both exited (their job ended): the totals stay; a new process adds to them.
	check(f.Update(nil, nil), fin("f", 10))
	check(f.Update(map[string][]core.TaskCount{"c": {fin("f", 1), {Function: "g", State: core.StateFailed, Count: 2}}}, nil),
		fin("f", 11), core.TaskCount{Function: "g", State: core.StateFailed, Count: 2})
}
