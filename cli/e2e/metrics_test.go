package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/assembly/metrics"
)

// TestMetrics: a head (default --metrics-port) and an agent (--metrics-port 0) on
// 127.0.0.1, a job that stays up; `rayctl metrics` lists both endpoints and prints them as
// file_sd targets; the head's /metrics, scraped over HTTP and parsed, counts the job's
// tasks by name and state, each agent reports its configured CPUs, and the 16 MiB object
// the driver holds shows in an agent's object store bytes.
func TestMetrics(t *testing.T) {
	port, addr, sess := newSession(t)
	startArgs := []string{"start", "--session-dir", sess, "--object-store-memory", "512MiB"}
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, append(startArgs, "--head", "--port", strconv.Itoa(port), "--num-cpus", "2")...)
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "/metrics") {
		t.Errorf("rayctl start does not say where the metrics are:\n%s", out)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	if out, errOut, code = run(t, 90*time.Second, tok, rayctl, append(startArgs, "--address", addr, "--num-cpus", "3", "--metrics-port", "0")...); code != 0 {
		t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
	}

	out, errOut, code = run(t, time.Minute, tok, rayctl, "metrics", "--address", addr, "-o", "json")
	var eps []struct {
		AgentID string `json:"agent_id"`
		Head    bool   `json:"head"`
		Alive   bool   `json:"alive"`
		URL     string `json:"url"`
	}
	if err := json.Unmarshal([]byte(out), &eps); err != nil || code != 0 || len(eps) != 2 || !eps[0].Head || eps[1].Head {
		t.Fatalf("rayctl metrics -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	for _, e := range eps {
		if !e.Alive || !strings.HasPrefix(e.URL, "http://127.0.0.1:") || !strings.HasSuffix(e.URL, "/metrics") {
			t.Fatalf("endpoint %+v", e)
		}
	}
	out, errOut, code = run(t, time.Minute, tok, rayctl, "metrics", "--address", addr, "--sd")
	var sd []struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	if err := json.Unmarshal([]byte(out), &sd); err != nil || code != 0 || len(sd) != 2 || sd[0].Labels["ray_go_role"] != "head" ||
		"http://"+sd[0].Targets[0]+"/metrics" != eps[0].URL {
		t.Fatalf("rayctl metrics --sd: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}

	// A job that stays up: 10 e2e.Add finished, one e2e.Fail failed, e2e.Busy running, a
	// 16 MiB object held.
	cmd := startReady(t, driver, "hang", append([]string{"RAY_ADDRESS=" + addr}, tok...), "hanging\n")
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var head, other metrics.Families
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		if head, err = metrics.Scrape(ctx, eps[0].URL); err != nil {
			t.Fatal(err)
		}
		if other, err = metrics.Scrape(ctx, eps[1].URL); err != nil {
			t.Fatal(err)
		}
		adds, _ := head.Value("ray_tasks", "Name", "e2e.Add", "State", "FINISHED")
		fails, _ := head.Value("ray_tasks", "Name", "e2e.Fail", "State", "FAILED")
		busy, _ := head.Value("ray_tasks", "Name", "e2e.Busy", "State", "RUNNING")
		h, _ := head.Value("ray_object_store_used_memory")
		o, _ := other.Value("ray_object_store_used_memory")
		if adds >= 10 && fails == 1 && busy == 1 && h+o >= 16<<20 {
			t.Logf("head: ray_tasks e2e.Add FINISHED %v, e2e.Fail FAILED %v, e2e.Busy RUNNING %v; object store bytes: head %v, agent %v", adds, fails, busy, h, o)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: e2e.Add FINISHED %v, e2e.Fail FAILED %v, e2e.Busy RUNNING %v, store bytes %v + %v\nhead:\n%v", adds, fails, busy, h, o, head["ray_tasks"])
		}
		time.Sleep(200 * time.Millisecond)
	}
	if v, _ := head.Value("ray_node_cpu_count"); v != 2 {
		t.Errorf("head: ray_node_cpu_count %v, want 2", v)
	}
	if v, _ := other.Value("ray_node_cpu_count"); v != 3 {
		t.Errorf("agent: ray_node_cpu_count %v, want 3", v)
	}
	for _, f := range []metrics.Families{head, other} {
		if v, _ := f.Value("ray_go_processes", "Role", "worker"); v != 1 {
			t.Errorf("worker processes on an agent: %v, want 1 (the job's)", v)
		}
		if _, ok := f.Value("go_goroutines"); !ok {
			t.Error("no go_goroutines")
		}
	}
	if v, _ := head.Value("ray_go_metrics_tasks_missing_processes"); v != 0 {
		t.Errorf("head: %v processes did not answer the task counts", v)
	}
	if v, _ := head.Value("etcd_disk_wal_fsync_duration_seconds"); v < 1 {
		t.Errorf("head: etcd_disk_wal_fsync_duration_seconds count %v", v)
	}
	if _, ok := other.Value("ray_tasks"); ok {
		t.Error("the joined agent serves ray_tasks: the head's alone")
	}
	checkObjects(t, tok, addr)

	// The job's driver goes (its task records with it): ray_tasks no longer counts its
	// tasks, but the counter of ended attempts keeps them (rate() over it is what a user
	// graphs), and says it is a counter.
	cmd.Process.Kill()
	cmd.Wait()
	deadline = time.Now().Add(time.Minute)
	for {
		if head, err = metrics.Scrape(ctx, eps[0].URL); err != nil {
			t.Fatal(err)
		}
		if _, ok := head.Value("ray_tasks", "Name", "e2e.Add", "State", "FINISHED"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after its driver was killed, ray_tasks still counts its tasks:\n%v", head["ray_tasks"])
		}
		time.Sleep(500 * time.Millisecond)
	}
	adds, _ := head.Value("ray_go_tasks_finished_total", "Name", "e2e.Add", "State", "FINISHED")
	fails, _ := head.Value("ray_go_tasks_finished_total", "Name", "e2e.Fail", "State", "FAILED")
	if f := head["ray_go_tasks_finished_total"]; adds < 10 || fails != 1 || f.GetType().String() != "COUNTER" {
		t.Errorf("after the driver went: ray_go_tasks_finished_total e2e.Add FINISHED %v (want >= 10), e2e.Fail FAILED %v (want 1):\n%v", adds, fails, f)
	}
}

// checkObjects checks `rayctl list objects`, `get object` and `summary objects` against the
// hanging driver's job: the 16 MiB object it holds is READY in a node's store, with a
// local reference, owned by the driver.
func checkObjects(t *testing.T, tok []string, addr string) {
	t.Helper()
	out, errOut, code := run(t, time.Minute, tok, rayctl, "list", "objects", "--address", addr, "--filter", "state=READY", "--limit", "0", "-o", "json")
	var objs []struct {
		ObjectID string `json:"object_id"`
		Size     int64  `json:"size"`
		State    string `json:"state"`
		RefType  string `json:"reference_type"`
		Location string `json:"location"`
		Owner    string `json:"owner_node"`
	}
	if err := json.Unmarshal([]byte(out), &objs); err != nil || code != 0 {
		t.Fatalf("rayctl list objects: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	var blob string
	for _, o := range objs {
		if o.Size >= 16<<20 && o.Size < 17<<20 && o.State == "READY" && o.RefType == "LOCAL_REFERENCE" && o.Location != "" &&
			o.Location != "INLINE" && o.Owner != "" {
			blob = o.ObjectID
		}
	}
	if blob == "" {
		t.Fatalf("rayctl list objects does not show the driver's 16 MiB object in a store:\n%s", out)
	}
	out, errOut, code = run(t, time.Minute, tok, rayctl, "get", "object", blob[:12], "--address", addr)
	if code != 0 || !strings.Contains(out, blob) || !strings.Contains(out, "LOCAL_REFERENCE") {
		t.Errorf("rayctl get object: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = run(t, time.Minute, tok, rayctl, "summary", "objects", "--address", addr)
	if code != 0 || !strings.Contains(out, "LOCAL_REFERENCE") || !strings.Contains(out, "READY") {
		t.Errorf("rayctl summary objects: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("rayctl summary objects:\n%s", out)
}
