package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWorkerProcessExit: a task calls os.Exit(3) in its worker process (MaxRetries 0).
// Its error says the worker process exited with exit status 3, that it was not retried
// and where its output is; it said "node ... died (or became unreachable)" though the
// machine and its agent were fine. The state API then answers at once with the task's
// record: ListTasks and GetTask from the driver (checked there) and `rayctl list tasks`
// here, without a warning of processes that did not answer. Before, they waited 10 s for
// the exited process (its node record outlives it until its lease lapses) and the Go API
// then returned no records at all. `rayctl list workers` shows the process EXITED, with
// its exit status.
func TestWorkerProcessExit(t *testing.T) {
	port, addr, sess := newSession(t)
	env := startTwoNodes(t, port, addr, sess)
	cmd := startReady(t, driver, "workerexit", env, "workerexit ready\n")
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	out, errOut, code := run(t, time.Minute, env, rayctl, "list", "tasks", "--address", addr, "--filter", "name=e2e.ExitWorker", "-o", "json")
	if code != 0 {
		t.Fatalf("rayctl list tasks: exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "did not answer") {
		t.Errorf("rayctl list tasks waited for the exited worker process: %s", errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("rayctl list tasks -o json: %v\n%s", err, out)
	}
	if len(rows) != 1 || rows[0]["state"] != "FAILED" || !strings.Contains(rows[0]["error"].(string), "exited (exit status 3)") {
		t.Errorf("rayctl list tasks --filter name=e2e.ExitWorker: %v, want the task FAILED, its worker process exited with exit status 3", rows)
	}
	// It ran until its process died: it has a start (it showed none, and the timeline
	// drew it as failed before it ran).
	if len(rows) == 1 && (rows[0]["started"] == "" || rows[0]["started"] == nil) {
		t.Errorf("the task whose worker process died as it ran has no start: %v", rows[0])
	}
	tl := filepath.Join(t.TempDir(), "tl.json")
	out, errOut, code = run(t, time.Minute, env, rayctl, "timeline", "--address", addr, "-o", tl)
	if code != 0 {
		t.Fatalf("rayctl timeline: exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, "before it ran") || !strings.Contains(out, "1 still running") {
		t.Errorf("rayctl timeline: %q, want the exited task drawn as one that ran, the long task still running", out)
	}
	// A RUNNING task shows when it started (Ray's start_time_ms), in the list and in get.
	out, errOut, code = run(t, time.Minute, env, rayctl, "list", "tasks", "--address", addr, "--filter", "state=RUNNING", "-o", "json")
	if code != 0 {
		t.Fatalf("rayctl list tasks --filter state=RUNNING: exit %d\n%s\n%s", code, out, errOut)
	}
	rows = nil
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("rayctl list tasks -o json: %v\n%s", err, out)
	}
	if len(rows) != 1 || rows[0]["name"] != "e2e.Busy" || rows[0]["started"] == "" || rows[0]["started"] == nil {
		t.Fatalf("rayctl list tasks --filter state=RUNNING: %v, want e2e.Busy with its start", rows)
	}
	out, errOut, code = run(t, time.Minute, env, rayctl, "get", "task", rows[0]["task_id"].(string), "--address", addr, "-o", "json")
	var rec map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || rec["started"] != rows[0]["started"] {
		t.Errorf("rayctl get task of the running task: exit %d, %s %s, want started %v", code, out, errOut, rows[0]["started"])
	}
	// list workers shows the exited worker process and how it ended.
	out, errOut, code = run(t, time.Minute, env, rayctl, "list", "workers", "--address", addr, "--filter", "state=exited", "-o", "json")
	var ws []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &ws) != nil || len(ws) != 1 || ws[0]["worker_type"] != "WORKER" ||
		ws[0]["exit"] != "exit status 3" || ws[0]["is_alive"] != false || ws[0]["exited"] == "" {
		t.Errorf("rayctl list workers --filter state=exited: exit %d\n%s\n%s\nwant the worker process that exited with exit status 3", code, out, errOut)
	}
}
