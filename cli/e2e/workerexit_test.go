package e2e

import (
	"encoding/json"
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
// then returned no records at all.
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
}
