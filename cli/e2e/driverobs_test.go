package e2e

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/assembly/metrics"
)

// startHead starts a head agent (2 CPUs, a 256 MiB store) in the session and returns a
// driver's whole environment for it (this process's, the address and the token).
func startHead(t *testing.T, port int, addr, sess string) []string {
	t.Helper()
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	return append(os.Environ(), "RAY_ADDRESS="+addr, "RAY_GO_TOKEN="+printedToken(t, out))
}

// startStoreDriver starts the driverstore check and returns it with its node and job IDs.
func startStoreDriver(t *testing.T, env []string, sess string) (p *piped, node, job string) {
	t.Helper()
	p = startPiped(t, "driverstore", env)
	f := strings.Fields(p.line(t, "driverstore", sess))
	if len(f) != 4 || f[0] != "store" || f[1] != "ready" {
		t.Fatalf("driverstore printed %q, want store ready NODE JOB", f)
	}
	return p, f[2], f[3]
}

// TestDriverObjectStore: a driver joined to the cluster holds an 8 MiB object it put in
// its own object store. `rayctl memory` lists that store (role driver, the driver's job)
// and counts it in the totals, and so does rayctl status's cluster line; the head's
// /metrics counts it in its object store bytes and the driver in
// ray_go_processes{Role="driver"}.
func TestDriverObjectStore(t *testing.T) {
	port, addr, sess := newSession(t)
	env := startHead(t, port, addr, sess)
	p, node, job := startStoreDriver(t, env, sess)

	type row struct {
		Node, Role, Job string
		MemoryBytes     int64 `json:"memory_bytes"`
		Objects         int64
	}
	var rep struct {
		Nodes       []row
		MemoryBytes int64 `json:"memory_bytes"`
		Objects     int64
	}
	var mine row
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, errOut, code := run(t, time.Minute, env, rayctl, "memory", "-o", "json")
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
			t.Fatalf("rayctl memory -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		for _, r := range rep.Nodes {
			if r.Node == node {
				mine = r
			}
		}
		if mine.MemoryBytes >= 8<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rayctl memory does not show the driver's 8 MiB object after 30 s (driver node %s):\n%s", node, out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if mine.Role != "driver" || mine.Job != job || mine.Objects < 1 {
		t.Errorf("rayctl memory: the driver's store is %+v, want role driver, job %s, an object", mine, job)
	}
	if rep.MemoryBytes < mine.MemoryBytes || rep.Objects < mine.Objects {
		t.Errorf("rayctl memory: totals %d bytes, %d objects leave out the driver's %d bytes, %d objects", rep.MemoryBytes, rep.Objects, mine.MemoryBytes, mine.Objects)
	}
	// rayctl status's cluster line counts the same stores, the driver's included.
	var st struct {
		Cluster struct {
			Used   int64 `json:"object_store_used"`
			Budget int64 `json:"object_store_budget"`
		}
	}
	out, errOut, code := run(t, time.Minute, env, rayctl, "status", "-o", "json")
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
		t.Fatalf("rayctl status -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if st.Cluster.Used < mine.MemoryBytes || st.Cluster.Budget < 256<<20+1 {
		t.Errorf("rayctl status: cluster object store %d / %d bytes leaves out the driver's store (%d bytes in memory; rayctl memory's total %d)",
			st.Cluster.Used, st.Cluster.Budget, mine.MemoryBytes, rep.MemoryBytes)
	}
	out, errOut, code = run(t, time.Minute, env, rayctl, "memory")
	if code != 0 || !strings.Contains(out, "ROLE") || !strings.Contains(out, node+"  driver") || !strings.Contains(out, "1 of them drivers") {
		t.Errorf("rayctl memory: exit %d, want the driver's row\n%s\n%s", code, out, errOut)
	}
	t.Logf("rayctl memory:\n%s", out)

	out, errOut, code = run(t, time.Minute, env, rayctl, "metrics", "-o", "json")
	var eps []struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(out), &eps); err != nil || code != 0 || len(eps) != 1 {
		t.Fatalf("rayctl metrics -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for deadline := time.Now().Add(30 * time.Second); ; {
		head, err := metrics.Scrape(ctx, eps[0].URL)
		if err != nil {
			t.Fatal(err)
		}
		used, _ := head.Value("ray_object_store_used_memory")
		drivers, _ := head.Value("ray_go_processes", "Role", "driver")
		objects, _ := head.Value("ray_object_store_num_local_objects")
		if used >= 8<<20 && drivers == 1 && objects >= 1 {
			t.Logf("head: ray_object_store_used_memory %v, ray_go_processes{Role=driver} %v", used, drivers)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("head /metrics after 30 s: ray_object_store_used_memory %v, ray_go_processes{Role=driver} %v, objects %v: the driver's store is left out", used, drivers, objects)
		}
		time.Sleep(300 * time.Millisecond)
	}

	p.in.Close()
	if after := p.line(t, "driverstore after", sess); after != "after: <nil>" {
		t.Errorf("a task after the checks: %q, want no error", after)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("the driver: %v\n%s", err, tail(p.stderr.String()))
	}
}

// TestDriverUnreachable: a driver stopped with SIGSTOP does not silently drop out of the
// state API once its lease lapses. `rayctl list nodes` shows it UNREACHABLE (role driver,
// its job, its last heartbeat), its job in `rayctl list jobs` says so (driver_state, the
// seconds since), and `rayctl status` too. Continued (SIGCONT) before the head gives up,
// it is ALIVE again and its job runs on. Stopped for longer, the head fails its job
// ("job driver lost") and nodes show it DEAD with that reason; continued then, it finds
// its job ended.
func TestDriverUnreachable(t *testing.T) {
	t.Parallel() // mostly idle: it waits out a driver's lease and the head's grace
	port, addr, sess := newSession(t)
	env := startHead(t, port, addr, sess)
	p, node, job := startStoreDriver(t, env, sess)

	type nodeRow struct {
		NodeID        string `json:"node_id"`
		State, Role   string
		JobID         string `json:"job_id"`
		LastHeartbeat string `json:"last_heartbeat"`
		Reason        string `json:"death_reason"`
	}
	type jobRow struct {
		JobID         string `json:"job_id"`
		State         string
		DriverState   string `json:"driver_state"`
		LastHeartbeat string `json:"driver_last_heartbeat"`
		Silent        int64  `json:"driver_silent_seconds"`
		Message       string
	}
	driverNode := func() nodeRow {
		t.Helper()
		out, errOut, code := run(t, time.Minute, env, rayctl, "list", "nodes", "-o", "json")
		var rows []nodeRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 {
			t.Fatalf("rayctl list nodes: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		for _, r := range rows {
			if r.NodeID == node {
				return r
			}
		}
		return nodeRow{}
	}
	theJob := func() jobRow {
		t.Helper()
		out, errOut, code := run(t, time.Minute, env, rayctl, "list", "jobs", "-o", "json")
		var rows []jobRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 {
			t.Fatalf("rayctl list jobs: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		for _, r := range rows {
			if r.JobID == job {
				return r
			}
		}
		return jobRow{}
	}
	wait := func(what string, within time.Duration, ok func(nodeRow, jobRow) bool) (nodeRow, jobRow) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			n, j := driverNode(), theJob()
			if ok(n, j) {
				return n, j
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after %v; the driver's node row %+v, its job %+v\n%s", what, within, n, j, sessionLogs(sess, 20))
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	if n, j := driverNode(), theJob(); n.State != "ALIVE" || n.Role != "driver" || n.JobID != job || j.State != "RUNNING" || j.DriverState != "ALIVE" {
		t.Fatalf("a running driver: node row %+v, job %+v; want ALIVE, role driver, RUNNING", n, j)
	}

	// Stopped: once its lease (6 s) lapses, it is UNREACHABLE, with its last heartbeat.
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	n, j := wait("the stopped driver UNREACHABLE", 20*time.Second, func(n nodeRow, j jobRow) bool {
		return n.State == "UNREACHABLE" && j.DriverState == "UNREACHABLE"
	})
	if n.Role != "driver" || n.JobID != job || n.LastHeartbeat == "" || j.State != "RUNNING" || j.LastHeartbeat == "" || j.Silent < 1 ||
		!strings.Contains(j.Message, "driver unreachable") {
		t.Errorf("a stopped driver: node row %+v, job %+v; want its job RUNNING, its last heartbeat, the seconds since, a message", n, j)
	}
	out, _, _ := run(t, time.Minute, env, rayctl, "status")
	if !strings.Contains(out, "1 driver(s) unreachable") || !strings.Contains(out, "unreachable, silent") {
		t.Errorf("rayctl status does not show the stopped driver unreachable:\n%s", out)
	}
	t.Logf("stopped %.1f s ago: rayctl status:\n%s", time.Since(stopped).Seconds(), out)
	// The records of its tasks are in it, and it cannot be asked: the state API and the
	// head's metrics say they are missing, instead of counting without them in silence.
	_, errOut, code := run(t, time.Minute, env, rayctl, "summary", "tasks")
	if code != 0 || !strings.Contains(errOut, "unreachable") || !strings.Contains(errOut, node) {
		t.Errorf("rayctl summary tasks with the driver unreachable: exit %d, want a warning naming its node %s as missing; stderr:\n%s", code, node, errOut)
	}
	var eps []struct {
		URL string `json:"url"`
	}
	if out, errOut, code := run(t, time.Minute, env, rayctl, "metrics", "-o", "json"); json.Unmarshal([]byte(out), &eps) != nil || code != 0 || len(eps) != 1 {
		t.Fatalf("rayctl metrics -o json: exit %d\n%s\n%s", code, out, errOut)
	}
	mctx, mcancel := context.WithTimeout(context.Background(), time.Minute)
	head, err := metrics.Scrape(mctx, eps[0].URL)
	mcancel()
	if err != nil {
		t.Fatal(err)
	}
	if missing, _ := head.Value("ray_go_metrics_tasks_missing_processes"); missing < 1 {
		t.Errorf("head /metrics with the driver unreachable: ray_go_metrics_tasks_missing_processes %v, want it counted", missing)
	}

	// Continued before the head gives up (6 s + 18 s after the lease lapsed): ALIVE again.
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	wait("the continued driver ALIVE", 20*time.Second, func(n nodeRow, j jobRow) bool {
		return n.State == "ALIVE" && j.DriverState == "ALIVE" && j.State == "RUNNING"
	})

	// Stopped for good: the head fails its job, "job driver lost", and it is DEAD.
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	n, j = wait("the driver stopped for good DEAD", 90*time.Second, func(n nodeRow, j jobRow) bool {
		return n.State == "DEAD" && j.State == "FAILED"
	})
	if !strings.Contains(j.Message, "job driver lost") || !strings.Contains(n.Reason, "job driver lost") || j.DriverState != "DEAD" {
		t.Errorf("a driver stopped for good: node row %+v, job %+v; want DEAD, FAILED, job driver lost", n, j)
	}

	// Continued after its job ended: it registers again (listed ALIVE while its process
	// lives) and learns that its job was ended: its calls fail at once, saying so (not
	// after the 30 s the task allows: no worker process would run it). Its job stays
	// FAILED, also after it shuts down.
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	wait("the driver back after its job ended", 20*time.Second, func(n nodeRow, j jobRow) bool { return n.State == "ALIVE" })
	p.in.Close()
	start := time.Now()
	after := p.line(t, "driverstore after", sess)
	if !strings.Contains(after, "was ended while the driver was unreachable") || time.Since(start) > 20*time.Second {
		t.Errorf("a task of a driver back after its job was failed: %q after %v, want an error saying its job was ended", after, time.Since(start))
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("the driver back after its job ended: %q; it exited: %v", after, err)
	case <-time.After(time.Minute):
		t.Errorf("the driver back after its job ended did not exit within a minute of its stdin closing\n%s", tail(p.stderr.String()))
	}
	if j := theJob(); j.State != "FAILED" || !strings.Contains(j.Message, "job driver lost") {
		t.Errorf("the job of a driver back after it was failed, once the driver ended: %+v, want FAILED, job driver lost (final)", j)
	}
}
