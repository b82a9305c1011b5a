package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startOneHead starts a head of 2 CPUs (no dashboard, no metrics) in the session and returns
// rayctl's environment for it (the token).
func startOneHead(t *testing.T, port int, sess string) []string {
	t.Helper()
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB", "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	return []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
}

// listJSON runs `rayctl list|get ARGS -o json --address addr` and decodes its rows (one
// object for get); it returns stderr too.
func listJSON(t *testing.T, tok []string, addr string, out any, args ...string) string {
	t.Helper()
	stdout, errOut, code := run(t, time.Minute, tok, rayctl, append(args, "-o", "json", "--address", addr)...)
	if code != 0 {
		t.Fatalf("rayctl %s: exit %d\n%s\n%s", strings.Join(args, " "), code, stdout, errOut)
	}
	if err := json.Unmarshal([]byte(stdout), out); err != nil {
		t.Fatalf("rayctl %s: %v\n%s", strings.Join(args, " "), err, stdout)
	}
	return errOut
}

// jobOf returns the job the submission's driver registered.
func jobOf(t *testing.T, tok []string, addr, sub string) string {
	t.Helper()
	var jobs []map[string]any
	listJSON(t, tok, addr, &jobs, "list", "jobs")
	for _, j := range jobs {
		if j["submission_id"] == sub {
			return j["job_id"].(string)
		}
	}
	t.Fatalf("no job of submission %s in rayctl list jobs: %v", sub, jobs)
	return ""
}

// driverRow returns the DRIVER row of job in `rayctl list workers` (nil: none).
func driverRow(t *testing.T, tok []string, addr, job string) map[string]any {
	t.Helper()
	var ws []map[string]any
	listJSON(t, tok, addr, &ws, "list", "workers")
	for _, w := range ws {
		if w["worker_type"] == "DRIVER" && w["job_id"] == job {
			return w
		}
	}
	return nil
}

// TestJobStopKeepsTasks: `rayctl job stop` of a Go driver that does not handle SIGTERM
// (three tasks done, a long one running). Once the stop has returned:
//   - `rayctl list tasks` of the job lists its tasks, the three FINISHED and the long one
//     FAILED: the head agent asks the driver to archive its records before it signals it.
//     Before, the driver died of SIGTERM with its records ("left no task records").
//   - the driver is DEAD in `rayctl list workers`, and list tasks does not wait for it nor
//     report it missing: the head agent, which reaped it, records its end at once. Before,
//     it was ALIVE until its lease lapsed, and a query asked it, waited 10 s and warned
//     that it "did not answer".
//   - once its worker process has exited and left the node table, `rayctl get node` of the
//     node the tasks ran on answers with its machine and the process EXITED, as `rayctl
//     list workers` lists it. Before: "no node".
func TestJobStopKeepsTasks(t *testing.T) {
	t.Parallel()
	port, addr, sess := newSession(t)
	tok := startOneHead(t, port, sess)
	out, errOut, code := run(t, time.Minute, tok, rayctl, "job", "submit", "--no-wait", "--address", addr, "--", driver, "-check", "jobstop")
	sub := strings.TrimSpace(out)
	if code != 0 || sub == "" {
		t.Fatalf("rayctl job submit --no-wait: exit %d\n%s\n%s", code, out, errOut)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		out, _, _ := run(t, time.Minute, tok, rayctl, "job", "logs", sub, "--address", addr)
		if strings.Contains(out, "jobstop ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the submitted driver did not print \"jobstop ready\" within 2 minutes; its output:\n%s", out)
		}
	}
	job := jobOf(t, tok, addr, sub)
	if out, errOut, code := run(t, time.Minute, tok, rayctl, "job", "stop", sub, "--address", addr); code != 0 || !strings.Contains(out, "STOPPED") {
		t.Fatalf("rayctl job stop: exit %d\n%s\n%s", code, out, errOut)
	}

	if d := driverRow(t, tok, addr, job); d == nil || d["state"] != "DEAD" || !strings.Contains(d["exit"].(string), "stopped by request") {
		t.Errorf("the stopped job's driver in rayctl list workers: %v, want DEAD, stopped by request", d)
	}
	var tasks []map[string]any
	errOut = listJSON(t, tok, addr, &tasks, "list", "tasks", "--filter", "job_id="+job)
	if strings.Contains(errOut, "did not answer") {
		t.Errorf("rayctl list tasks waited for the exited driver and reported it missing:\n%s", errOut)
	}
	got := map[string]int{}
	node := ""
	for _, r := range tasks {
		got[r["name"].(string)+" "+r["state"].(string)]++
		if r["name"] == "e2e.Add" {
			node, _ = r["node"].(string)
		}
	}
	if got["e2e.Add FINISHED"] != 3 || got["e2e.Busy FAILED"] != 1 || len(tasks) != 4 {
		t.Fatalf("rayctl list tasks of the stopped job: %v, want 3 e2e.Add FINISHED and 1 e2e.Busy FAILED; stderr:\n%s", got, errOut)
	}

	// The job's worker process stops with the job; then its node record is gone.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		var st struct {
			Nodes []struct {
				Workers int `json:"workers"`
			} `json:"nodes"`
		}
		out, errOut, code := run(t, time.Minute, tok, rayctl, "status", "-o", "json", "--address", addr)
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Nodes) != 1 {
			t.Fatalf("rayctl status: exit %d\n%s\n%s", code, out, errOut)
		}
		if st.Nodes[0].Workers == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stopped job's worker process is still registered after a minute:\n%s", out)
		}
	}
	var rec map[string]any
	stdout, errOut, code := run(t, time.Minute, tok, rayctl, "get", "node", node[:8], "-o", "json", "--address", addr)
	if code != 0 || json.Unmarshal([]byte(stdout), &rec) != nil {
		t.Fatalf("rayctl get node %s (the node the stopped job's tasks ran on): exit %d\n%s\n%s", node[:8], code, stdout, errOut)
	}
	wp, _ := rec["worker_process"].([]any)
	if rec["head"] != true || len(wp) != 1 {
		t.Fatalf("rayctl get node %s: %v, want the head with the worker process", node[:8], rec)
	}
	if w := wp[0].(map[string]any); w["node_id"] != node || w["state"] != "EXITED" || w["job_id"] != job {
		t.Errorf("rayctl get node %s: the worker process %v, want node %s EXITED of job %s", node[:8], w, node, job)
	}
}

// TestExitedDriverListedDead: a submitted driver exits with status 3 without ray.Shutdown.
// As soon as `rayctl job submit` has returned (FAILED), the driver is DEAD in `rayctl list
// workers` and `rayctl list nodes`, with how it ended, and `rayctl list tasks` does not ask
// it. Before, it was ALIVE until its lease lapsed (6 s), and list tasks waited 10 s for it
// and then reported it missing.
func TestExitedDriverListedDead(t *testing.T) {
	t.Parallel()
	port, addr, sess := newSession(t)
	tok := startOneHead(t, port, sess)
	out, errOut, code := run(t, 3*time.Minute, tok, rayctl, "job", "submit", "--address", addr, "--", driver, "-check", "exit3")
	if code == 0 || !strings.Contains(out+errOut, "exit3 exiting") {
		t.Fatalf("rayctl job submit of a driver that exits with status 3: exit %d, want non-zero\n%s\n%s", code, out, errOut)
	}
	var jobs []map[string]any
	listJSON(t, tok, addr, &jobs, "list", "jobs")
	if len(jobs) != 1 {
		t.Fatalf("rayctl list jobs: %v, want the one job", jobs)
	}
	job := jobs[0]["job_id"].(string)
	if d := driverRow(t, tok, addr, job); d == nil || d["state"] != "DEAD" || !strings.Contains(d["exit"].(string), "exit status 3") || d["is_alive"] != false {
		t.Errorf("the exited driver in rayctl list workers: %v, want DEAD, exit status 3", d)
	}
	var nodes []map[string]any
	listJSON(t, tok, addr, &nodes, "list", "nodes", "--filter", "role=driver")
	if len(nodes) != 1 || nodes[0]["state"] != "DEAD" || nodes[0]["job_id"] != job {
		t.Errorf("the exited driver in rayctl list nodes: %v, want it DEAD", nodes)
	}
	var tasks []map[string]any
	errOut = listJSON(t, tok, addr, &tasks, "list", "tasks", "--limit", "1")
	if strings.Contains(errOut, "did not answer") {
		t.Errorf("rayctl list tasks waited for the exited driver and reported it missing:\n%s", errOut)
	}
}
