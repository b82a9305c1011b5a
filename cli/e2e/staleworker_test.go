package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRestartedAgentEndsItsStaleWorkers: an agent is killed (SIGKILL; its worker process
// for a running job goes with it), the job ends while it is down, and the agent is
// started again on its session dir. Its record of that worker process becomes EXITED,
// saying the agent restarted and the process was gone, with its host (its agent's, once
// the process's own record is gone). Before, `rayctl
// list workers` showed it RUNNING for ever (and `summary workers` counted it), since
// nothing was left to record the end of a process of the agent's earlier run, and the host
// of every exited worker process was "-".
func TestRestartedAgentEndsItsStaleWorkers(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "1", "--object-store-memory", "256MiB", "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	sess2 := t.TempDir()
	t.Cleanup(func() { run(t, time.Minute, nil, rayctl, "stop", "--force", "--session-dir", sess2) })
	startAgent := func() {
		t.Helper()
		out, errOut, code := run(t, 90*time.Second, tok, rayctl, "start", "--address", addr, "--session-dir", sess2, "--num-cpus", "1",
			"--object-store-memory", "256MiB", "--metrics-port", "-1")
		if code != 0 {
			t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
		}
	}
	startAgent()
	dirs, _ := filepath.Glob(filepath.Join(sess2, "agent-*"))
	if len(dirs) != 1 {
		t.Fatalf("agent directories under %s: %v, want one", sess2, dirs)
	}
	agentID := strings.TrimPrefix(filepath.Base(dirs[0]), "agent-")
	b, _ := os.ReadFile(filepath.Join(dirs[0], "agent.pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatalf("the agent's pid in %s: %q", dirs[0], b)
	}

	out, errOut, code = run(t, time.Minute, tok, rayctl, "job", "submit", "--no-wait", "--address", addr, "--", driver, "-check", "hang")
	sub := strings.TrimSpace(out)
	if code != 0 || sub == "" {
		t.Fatalf("rayctl job submit --no-wait: exit %d\n%s\n%s", code, out, errOut)
	}
	// workerOf is the agent's record of its worker process for a job (the job's only one there).
	workerOf := func() map[string]any {
		t.Helper()
		out, errOut, code := run(t, time.Minute, tok, rayctl, "list", "workers", "--address", addr, "-o", "json")
		var ws []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &ws) != nil {
			t.Fatalf("rayctl list workers: exit %d\n%s\n%s", code, out, errOut)
		}
		for _, w := range ws {
			if w["agent_id"] == agentID && w["worker_type"] == "WORKER" {
				return w
			}
		}
		return nil
	}
	var w map[string]any
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		if w = workerOf(); w != nil && w["state"] == "RUNNING" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent's worker process for the submitted job is not RUNNING after 2 minutes: %v", w)
		}
	}
	job := w["job_id"]

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); syscall.Kill(pid, 0) == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("agent %d still runs a minute after SIGKILL", pid)
		}
	}
	// While the agent is down, its record says so.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		w = workerOf()
		if msg, _ := w["message"].(string); w["state"] == "RUNNING" && w["is_alive"] == false && strings.Contains(msg, "its agent is not alive") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the agent's kill its worker record is %v, want RUNNING, not alive, with a message saying its agent is not alive", w)
		}
	}
	if out, errOut, code := run(t, time.Minute, tok, rayctl, "job", "stop", sub, "--address", addr); code != 0 {
		t.Fatalf("rayctl job stop: exit %d\n%s\n%s", code, out, errOut)
	}
	startAgent()
	host, _ := os.Hostname()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		w = workerOf()
		msg, _ := w["message"].(string)
		if w != nil && w["job_id"] == job && w["state"] == "EXITED" && strings.Contains(msg, "the agent restarted") &&
			w["is_alive"] == false && w["exited"] != "" && w["host"] == host {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the agent's restart its worker record of job %v is %v, want it EXITED (the agent restarted), on host %s", job, w, host)
		}
	}
	// Once the process's own record (the node table's) is gone too, its host is still
	// shown: its agent's (it was "-" for every exited worker process).
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		w = workerOf()
		if w != nil && w["address"] == "" && w["started"] == "" {
			if w["host"] != host {
				t.Errorf("the exited worker process's record without its node's: %v, want host %s", w, host)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node record of the agent's exited worker process is still read 2 minutes after the restart: %v", w)
		}
	}
	out, errOut, code = run(t, time.Minute, tok, rayctl, "summary", "workers", "--address", addr, "-o", "json")
	if code != 0 || strings.Contains(out, "RUNNING") {
		t.Errorf("rayctl summary workers: exit %d, want no RUNNING worker\n%s\n%s", code, out, errOut)
	}
}
