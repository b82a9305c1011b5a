package ray

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/assembly/metrics"
	"github.com/ray-go/ray/tasks/sched"
)

var mxSquare = Task1("test.metrics.square", func(_ context.Context, x int) (int, error) { return x * x, nil })

// The local runtime's endpoint (WithMetricsPort's), scraped over HTTP: the tasks that ran are counted
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

	// The endpoint WithMetricsPort serves, on the shared runtime's node.
	res, err := sched.FromMap(map[string]float64{sched.CPU: 3})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serveMetrics(n, 0, res, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	url := "http://" + srv.addr + "/metrics"

	var fams metrics.Families
	deadline := time.Now().Add(10 * time.Second)
	for {
		if fams, err = metrics.Scrape(ctx, url); err != nil {
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
	if v, ok := fams.Value("ray_go_tasks_finished_total", "Name", "test.metrics.square", "State", "FINISHED"); !ok || v < runs {
		t.Errorf("ray_go_tasks_finished_total{Name=test.metrics.square,State=FINISHED} = %v (%v), want >= %d", v, ok, runs)
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

// WithMetricsPort on a runtime of its own: MetricsAddress is on loopback, a scrape counts
// its tasks, other methods than GET are refused, and Shutdown closes the port.
func TestWithMetricsPort(t *testing.T) {
	ctx, err := Init(context.Background(), WithNumCPUs(2), WithMetricsPort(0))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = Shutdown(ctx)
		}
	}()
	addr := MetricsAddress(ctx)
	if host, _, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" {
		t.Fatalf("MetricsAddress = %q", addr)
	}
	if MetricsAddress(shared) != "" {
		t.Errorf("the shared runtime, started without the option, serves metrics at %q", MetricsAddress(shared))
	}
	var refs []ObjectRef[int]
	for i := range 5 {
		refs = append(refs, mxSquare.Remote(ctx, V(i)))
	}
	if _, err := GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	fams, err := metrics.Scrape(sctx, "http://"+addr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := fams.Value("ray_tasks", "Name", "test.metrics.square", "State", "FINISHED"); !ok || v != 5 {
		t.Errorf("ray_tasks{Name=test.metrics.square,State=FINISHED} = %v (%v), want 5", v, ok)
	}
	if v, _ := fams.Value("ray_node_cpu_count"); v != 2 {
		t.Errorf("ray_node_cpu_count = %v, want 2", v)
	}
	resp, err := http.Post("http://"+addr+"/metrics", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %s", resp.Status)
	}
	stopped = true
	if err := Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Shutdown", addr)
	}
}

func TestMetricsPortOf(t *testing.T) {
	for _, c := range []struct {
		opt     []InitOption
		env     string
		want    int
		wantErr string
	}{
		{nil, "", metricsOff, ""},
		{nil, "0", 0, ""},
		{nil, "9123", 9123, ""},
		{nil, "x", 0, MetricsPortEnv},
		{nil, "70000", 0, MetricsPortEnv},
		{[]InitOption{WithMetricsPort(8081)}, "9123", 8081, ""}, // the option wins
		{[]InitOption{WithMetricsPort(-2)}, "", 0, "WithMetricsPort(-2)"},
	} {
		t.Setenv(MetricsPortEnv, c.env)
		var cfg initConfig
		for _, o := range c.opt {
			o(&cfg)
		}
		got, err := metricsPortOf(&cfg)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("env %q, options %d: %v, want an error naming %s", c.env, len(c.opt), err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("env %q, options %d: %d, %v; want %d", c.env, len(c.opt), got, err, c.want)
		}
	}
}
