package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestIDPrefixesAndWorkerNodes: `rayctl list`'s ID filters take the first 6 characters of
// an ID as `get` does (job_id=<prefix> matched nothing, silently), refuse a prefix of no
// job saying so, and the node a task names (its job's worker process) can be followed:
// `get node` of it prints its machine (the head) with the worker process under
// worker_process, and `list nodes --filter node_id=` of it keeps the head's row.
func TestIDPrefixesAndWorkerNodes(t *testing.T) {
	port, addr, sess := newSession(t)
	env := startHead(t, port, addr, sess)
	p, _, job := startStoreDriver(t, env, sess)
	defer func() { p.in.Close(); _ = p.cmd.Wait() }()

	listJSON := func(args ...string) []map[string]any {
		t.Helper()
		out, errOut, code := run(t, time.Minute, env, rayctl, append([]string{"list"}, append(args, "-o", "json")...)...)
		var recs []map[string]any
		if err := json.Unmarshal([]byte(out), &recs); err != nil || code != 0 {
			t.Fatalf("rayctl list %v: exit %d, %v\n%s\n%s", args, code, err, out, errOut)
		}
		return recs
	}
	tasks := listJSON("tasks", "--filter", "job_id="+job[:6])
	if len(tasks) == 0 || tasks[0]["job_id"] != job {
		t.Fatalf("rayctl list tasks --filter job_id=%s: %v, want the tasks of job %s", job[:6], tasks, job)
	}
	worker, _ := tasks[0]["node"].(string)
	taskID, _ := tasks[0]["task_id"].(string)
	if len(worker) < 8 || len(taskID) < 8 {
		t.Fatalf("a task without a node or an ID: %v", tasks[0])
	}
	if objs := listJSON("objects", "--filter", "job_id="+job[:6]); len(objs) == 0 {
		t.Errorf("rayctl list objects --filter job_id=%s: none, want the driver's object", job[:6])
	}
	if got := listJSON("tasks", "--filter", "node="+worker[:6], "--filter", "task_id="+taskID[:8]); len(got) != 1 || got[0]["task_id"] != taskID {
		t.Errorf("rayctl list tasks --filter node=%s --filter task_id=%s: %v, want task %s", worker[:6], taskID[:8], got, taskID)
	}
	other := "0"
	if job[0] == '0' {
		other = "1"
	}
	out, errOut, code := run(t, time.Minute, env, rayctl, "list", "tasks", "--filter", "job_id="+other+job[1:6])
	if code == 0 || !strings.Contains(errOut, "no job") {
		t.Errorf("rayctl list tasks --filter job_id=%s (no such job): exit %d, want an error saying so\n%s\n%s", other+job[1:6], code, out, errOut)
	}

	var st struct {
		Nodes []struct {
			AgentID string `json:"agent_id"`
		}
	}
	out, errOut, code = run(t, time.Minute, env, rayctl, "status", "-o", "json")
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 || len(st.Nodes) != 1 {
		t.Fatalf("rayctl status -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	head := st.Nodes[0].AgentID
	out, errOut, code = run(t, time.Minute, env, rayctl, "get", "node", worker[:8], "-o", "json")
	var node struct {
		NodeID string `json:"node_id"`
		Role   string
		Worker []struct {
			NodeID string `json:"node_id"`
			JobID  string `json:"job_id"`
			Pid    int
		} `json:"worker_process"`
	}
	if err := json.Unmarshal([]byte(out), &node); err != nil || code != 0 {
		t.Fatalf("rayctl get node %s (a task's node): exit %d, %v\n%s\n%s", worker[:8], code, err, out, errOut)
	}
	if node.NodeID != head || node.Role != "head" || len(node.Worker) != 1 || node.Worker[0].NodeID != worker ||
		node.Worker[0].JobID != job || node.Worker[0].Pid == 0 {
		t.Errorf("rayctl get node %s: %s\nwant the head %s with worker process %s of job %s", worker[:8], out, head, worker, job)
	}
	if got := listJSON("nodes", "--filter", "node_id="+worker); len(got) != 1 || got[0]["node_id"] != head {
		t.Errorf("rayctl list nodes --filter node_id=%s (a worker process): %v, want the head's row", worker, got)
	}

	// list workers (Ray's `ray list workers`): the job's worker process on the head, and
	// its driver; filters on worker_id (a prefix) and worker_type; get worker.
	workers := listJSON("workers", "--filter", "job_id="+job[:6])
	var sawWorker, sawDriver bool
	for _, w := range workers {
		switch w["worker_type"] {
		case "WORKER":
			sawWorker = w["worker_id"] == worker && w["state"] == "RUNNING" && w["is_alive"] == true && w["agent_id"] == head &&
				w["pid"].(float64) > 0 && w["log_path"] != ""
		case "DRIVER":
			sawDriver = w["state"] == "ALIVE" && w["is_alive"] == true && w["pid"].(float64) > 0
		}
	}
	if !sawWorker || !sawDriver || len(workers) != 2 {
		t.Errorf("rayctl list workers --filter job_id=%s: %v\nwant worker process %s RUNNING on agent %s and an ALIVE driver", job[:6], workers, worker, head)
	}
	if got := listJSON("workers", "--filter", "worker_id="+worker[:6], "--filter", "worker_type=worker"); len(got) != 1 || got[0]["worker_id"] != worker {
		t.Errorf("rayctl list workers --filter worker_id=%s --filter worker_type=worker: %v, want worker process %s", worker[:6], got, worker)
	}
	out, errOut, code = run(t, time.Minute, env, rayctl, "get", "worker", worker[:8], "-o", "json")
	var one map[string]any
	if err := json.Unmarshal([]byte(out), &one); err != nil || code != 0 || one["worker_id"] != worker || one["job_id"] != job {
		t.Errorf("rayctl get worker %s: exit %d, %v\n%s\n%s\nwant worker process %s of job %s", worker[:8], code, err, out, errOut, worker, job)
	}
	out, errOut, code = run(t, time.Minute, env, rayctl, "list", "workers", "--filter", "worker_type=thread")
	if code == 0 || !strings.Contains(errOut, "DRIVER") {
		t.Errorf("rayctl list workers --filter worker_type=thread: exit %d, want an error naming the types\n%s\n%s", code, out, errOut)
	}
}
