package agent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/metrics"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// The agents' /metrics over HTTP: the head's has the cluster-wide gauges, its embedded
// etcd's disk latency and its own GCS write latency; a joined agent's has its worker
// processes' object stores (from their load reports) and the machine; both are
// read-only and say where they are in the agent's record.
func TestMetricsEndpoint(t *testing.T) {
	head := startAgent(t, Config{Head: true})
	tok, err := head.Token()
	if err != nil {
		t.Fatal(err)
	}
	other := startAgent(t, Config{GCSEndpoints: strings.Split(head.Address(), ","), Token: &tok, JoinAddress: head.JoinAddress(),
		Resources: map[string]float64{"CPU": 5}, ObjectStoreBytes: 10 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := head.Store()
	for _, a := range []*Agent{head, other} {
		info, ok := get(t, s, gcs.AgentKey(a.ID()), &pb.AgentInfo{})
		if !ok || a.MetricsAddress() == "" || info.GetMetricsAddress() != a.MetricsAddress() ||
			!strings.HasPrefix(a.MetricsAddress(), "127.0.0.1:") {
			t.Fatalf("agent %s: metrics at %q, record says %q", a.ID(), a.MetricsAddress(), info.GetMetricsAddress())
		}
	}

	// A worker process of the joined agent, as its records say: 3 MiB in memory, 1 MiB
	// spilled, 4 objects, 7 tasks queued.
	node := &pb.NodeInfo{NodeId: "n-worker-1", Role: "worker", AgentId: other.ID(), JobId: "j1"}
	load := &pb.NodeLoad{NodeId: "n-worker-1", Queued: 7, StoreBudget: 10 << 20, StoreInMemory: 3 << 20, StoreSpilled: 1 << 20, StoreObjects: 4}
	for k, m := range map[string]proto.Message{gcs.NodeKey("n-worker-1"): node, gcs.LoadKey("n-worker-1"): load} {
		b, _ := proto.Marshal(m)
		if _, err := s.Put(ctx, k, b, 0); err != nil {
			t.Fatal(err)
		}
	}

	h, err := metrics.Scrape(ctx, "http://"+head.MetricsAddress()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := h.Value("ray_node_cpu_count"); v != 2 {
		t.Errorf("head: ray_node_cpu_count %v, want 2", v)
	}
	for _, src := range []string{"proc", "nodes", "actors", "tasks"} {
		if v, ok := h.Value("ray_go_metrics_source_up", "Source", src); v != 1 {
			t.Errorf("head: source %s up %v (%v)", src, v, ok)
		}
	}
	// n-worker-1 has no process behind it to answer the task count query.
	if v, ok := h.Value("ray_go_metrics_tasks_missing_processes"); !ok || v != 1 {
		t.Errorf("head: missing processes %v (%v), want 1", v, ok)
	}
	if v, _ := h.Value("etcd_disk_wal_fsync_duration_seconds"); v < 1 {
		t.Errorf("head: etcd_disk_wal_fsync_duration_seconds count %v", v)
	}
	if v, _ := h.Value("ray_gcs_storage_operation_latency_ms", "Operation", "Put"); v < 2 {
		t.Errorf("head: ray_gcs_storage_operation_latency_ms{Put} count %v, want >= 2 (its records)", v)
	}
	// Scrapes within a second share one gather of the task counts (one Put of a query each;
	// h's own may be counted after it, and the cache may expire once: at most 2, not 3 or 4).
	before, _ := h.Value("ray_gcs_storage_operation_latency_ms", "Operation", "Put")
	var again metrics.Families
	for range 3 {
		if again, err = metrics.Scrape(ctx, "http://"+head.MetricsAddress()+"/metrics"); err != nil {
			t.Fatal(err)
		}
	}
	if after, _ := again.Value("ray_gcs_storage_operation_latency_ms", "Operation", "Put"); after-before > 2 {
		t.Errorf("3 scrapes at once put %v task count queries, want at most 2", after-before)
	}
	if v, _ := h.Value("ray_object_store_used_memory"); v != 0 {
		t.Errorf("head: ray_object_store_used_memory %v: the worker is the other agent's", v)
	}
	// The head runs no worker process: its whole budget is available (it said 0).
	if v, _ := h.Value("ray_object_store_available_memory"); v != 1<<30 {
		t.Errorf("head: ray_object_store_available_memory %v, want its budget %v", v, 1<<30)
	}

	o, err := metrics.Scrape(ctx, "http://"+other.MetricsAddress()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"ray_node_cpu_count": 5, "ray_object_store_used_memory": 3 << 20,
		"ray_object_store_available_memory": 7 << 20, "ray_object_store_num_local_objects": 4}
	for name, w := range want {
		if v, ok := o.Value(name); v != w {
			t.Errorf("joined: %s = %v (%v), want %v", name, v, ok, w)
		}
	}
	if v, _ := o.Value("ray_object_store_memory", "Location", "SPILLED"); v != 1<<20 {
		t.Errorf("joined: spilled %v", v)
	}
	if v, _ := o.Value("ray_scheduler_tasks", "State", "Queued"); v != 7 {
		t.Errorf("joined: queued %v", v)
	}
	if v, _ := o.Value("ray_go_processes", "Role", "worker"); v != 1 {
		t.Errorf("joined: worker processes %v", v)
	}
	for name := range o {
		if name == "ray_tasks" || name == "ray_actors" || strings.HasPrefix(name, "etcd_") {
			t.Errorf("joined agent serves %s: the head's", name)
		}
	}

	// Read-only.
	resp, err := http.Post("http://"+head.MetricsAddress()+"/metrics", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %s", resp.Status)
	}
	// Stopped: nothing listens.
	addr := other.MetricsAddress()
	if err := other.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still listens after Stop", addr)
	}
}

// A taken metrics port fails Start with ErrPortInUse, unless the fallback is on; -1 serves
// no metrics.
func TestMetricsPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = Start(ctx, Config{Head: true, SessionDir: t.TempDir(), ObjectStoreBytes: 1 << 30, Logger: quiet(), Insecure: true, MetricsPort: port})
	if !errors.Is(err, ErrPortInUse) || !errors.Is(err, ErrMetricsPortInUse) || !strings.Contains(err.Error(), "metrics port "+strconv.Itoa(port)) {
		t.Fatalf("taken metrics port: %v", err)
	}
	a := startAgent(t, Config{Head: true, Insecure: true, MetricsPort: port, MetricsPortFallback: true})
	if a.MetricsAddress() == "" || strings.HasSuffix(a.MetricsAddress(), ":"+strconv.Itoa(port)) {
		t.Errorf("fallback: metrics at %q", a.MetricsAddress())
	}
	b := startAgent(t, Config{Head: true, Insecure: true, MetricsPort: MetricsOff})
	if b.MetricsAddress() != "" {
		t.Errorf("MetricsOff: metrics at %q", b.MetricsAddress())
	}
}
