package ray

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/metrics"
	"github.com/ray-go/ray/tasks/raylet"
)

var mxSquare = Task1("test.metrics.square", func(_ context.Context, x int) (int, error) { return x * x, nil })

// The collector on a real local runtime, scraped over HTTP: the tasks that ran are counted
// FINISHED by name, a Put of 1 MiB shows in the object store's bytes (once the node's load
// report has it), an actor is ALIVE and its call FINISHED, the machine's figures and the Go runtime's are there, and every source
// answered.
func TestMetricsLocalRuntime(t *testing.T) {
	ctx := timeout(t)
	n := nodeOf(ctx)
	const runs = 25
	var refs []ObjectRef[int]
	for i := range runs {
		refs = append(refs, mxSquare.Remote(ctx, V(i)))
	}
	if _, err := GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	acct := accountClass.Remote(ctx, V("metrics"))
	if v, err := Get(ctx, deposit.Remote(ctx, acct, V(int64(5)))); err != nil || v != 5 {
		t.Fatalf("deposit: %v, %v", v, err)
	}
	big := make([]byte, 1<<20)
	big[7] = 1
	ref, err := Put(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ref }()

	// A local runtime's node, asked directly (an agent reads its nodes' load reports).
	nodes := func(ctx context.Context) ([]metrics.NodeStats, error) {
		st, err := n.Core.StoreStats(ctx, 0)
		if err != nil {
			return nil, err
		}
		res, err := n.System().Root.RequestFuture(n.Raylet(), raylet.Stats{}, 5*time.Second).Result()
		if err != nil {
			return nil, err
		}
		return []metrics.NodeStats{{Role: "local", Budget: n.Core.StoreBudget(), InMemory: st.MemoryBytes, Spilled: st.SpilledBytes,
			Objects: st.Objects, SpillErrors: st.SpillErrors, InFlight: n.Core.InFlightBytes(), Queued: int64(res.(*raylet.StatsReply).Queued)}}, nil
	}
	c, err := metrics.New(metrics.Config{Nodes: nodes, Store: n.GCS(), CPUs: 3, Cluster: true,
		Tasks: func(ctx context.Context) ([]core.TaskCount, int, error) {
			rep, err := n.Core.Tasks(ctx, core.TaskQuery{Counts: true})
			return rep.Summary, 0, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	lat := metrics.NewLatency()
	if _, err := lat.TimedStore(n.GCS()).Put(ctx, "test/metrics/latency", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(metrics.Registry(c, lat), promhttp.HandlerOpts{}))
	defer srv.Close()

	var fams metrics.Families
	deadline := time.Now().Add(10 * time.Second)
	for {
		if fams, err = metrics.Scrape(ctx, srv.URL); err != nil {
			t.Fatal(err)
		}
		if v, _ := fams.Value("ray_object_store_used_memory"); v >= 1<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the object store never showed the 1 MiB Put in ray_object_store_used_memory: %v", fams["ray_object_store_used_memory"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v, ok := fams.Value("ray_tasks", "Name", "test.metrics.square", "State", "FINISHED"); !ok || v < runs {
		t.Errorf("ray_tasks{Name=test.metrics.square,State=FINISHED} = %v (%v), want >= %d", v, ok, runs)
	}
	if v, ok := fams.Value("ray_actors", "Name", "test.Account", "State", "ALIVE"); !ok || v < 1 {
		t.Errorf("ray_actors{Name=test.Account,State=ALIVE} = %v (%v)", v, ok)
	}
	if v, ok := fams.Value("ray_tasks", "Name", "test.Account.Deposit", "State", "FINISHED"); !ok || v < 1 {
		t.Errorf("ray_tasks{Name=test.Account.Deposit,State=FINISHED} = %v (%v): %v", v, ok, fams["ray_tasks"])
	}
	if v, _ := fams.Value("ray_object_store_memory", "Location", "IN_MEMORY"); v < 1<<20 {
		t.Errorf("ray_object_store_memory{Location=IN_MEMORY} = %v", v)
	}
	if v, _ := fams.Value("ray_object_store_num_local_objects"); v < 1 {
		t.Errorf("ray_object_store_num_local_objects = %v", v)
	}
	if v, _ := fams.Value("ray_node_cpu_count"); v != 3 {
		t.Errorf("ray_node_cpu_count = %v, want 3", v)
	}
	if v, _ := fams.Value("ray_go_processes", "Role", "local"); v < 1 {
		t.Errorf("ray_go_processes{Role=local} = %v", v)
	}
	if v, ok := fams.Value("ray_node_mem_total"); !ok || v <= 0 {
		t.Errorf("ray_node_mem_total = %v", v)
	}
	if v, ok := fams.Value("ray_node_cpu_utilization"); !ok || v < 0 || v > 100 {
		t.Errorf("ray_node_cpu_utilization = %v (%v)", v, ok)
	}
	if v, _ := fams.Value("ray_gcs_storage_operation_latency_ms", "Operation", "Put"); v != 1 {
		t.Errorf("ray_gcs_storage_operation_latency_ms{Operation=Put} count = %v, want 1", v)
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("no go_goroutines: the Go collector is missing")
	}
	for _, src := range []string{"proc", "nodes", "actors", "tasks"} {
		if v, ok := fams.Value("ray_go_metrics_source_up", "Source", src); !ok || v != 1 {
			t.Errorf("source %s up = %v (%v)", src, v, ok)
		}
	}
	for name := range fams {
		if !strings.HasPrefix(name, "ray_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") && !strings.HasPrefix(name, "promhttp_") {
			t.Errorf("unexpected family %s", name)
		}
	}
}
