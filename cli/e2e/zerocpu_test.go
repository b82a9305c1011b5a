package e2e

import (
	"encoding/json"
	"sort"
	"strconv"
	"testing"
	"time"
)

// TestZeroCPUHead: a head started with --num-cpus 0 offers no CPUs, and the job's worker
// process there says so: ray.Nodes and `rayctl list nodes` agree (CPU 0 there, 1 on the
// other node), one-CPU tasks all run on the other node, and a task that needs nothing
// runs on either when pinned there. Before, the head's worker process reported the
// machine's CPUs (it took them as its total whenever its agent offered zero of
// everything), so ray.Nodes said map[CPU:2] while rayctl list nodes said 0.
func TestZeroCPUHead(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "0", "--object-store-memory", "256MiB")
	if code != 0 {
		t.Fatalf("rayctl start --head --num-cpus 0: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	if out, errOut, code = run(t, 90*time.Second, tok, rayctl, "start", "--address", addr, "--session-dir", sess,
		"--num-cpus", "1", "--object-store-memory", "256MiB"); code != 0 {
		t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
	}
	env := append([]string{"RAY_ADDRESS=" + addr}, tok...)
	out, errOut, code = run(t, 3*time.Minute, env, driver, "-check", "zerocpu")
	var res struct {
		Nodes []struct {
			ID        string
			Resources map[string]float64
		}
		ClusterCPUs      float64           `json:"cluster_cpus"`
		CPUTaskNodes     []string          `json:"cpu_task_nodes"`
		ZeroCPUTaskNodes map[string]string `json:"zero_cpu_task_nodes"`
		Error            string
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &res); err != nil || code != 0 || res.Error != "" {
		t.Fatalf("driver: exit %d, %v\n%s\n%s", code, err, out, tail(errOut))
	}
	if len(res.Nodes) != 2 {
		t.Fatalf("the job has %d nodes, want its worker processes on the head and on the other node: %+v", len(res.Nodes), res.Nodes)
	}
	var cpus []float64
	oneCPU := ""
	for _, n := range res.Nodes {
		cpus = append(cpus, n.Resources["CPU"])
		if n.Resources["CPU"] == 1 {
			oneCPU = n.ID
		}
	}
	sort.Float64s(cpus)
	if cpus[0] != 0 || cpus[1] != 1 || res.ClusterCPUs != 1 {
		t.Errorf("ray.Nodes: CPUs %v (cluster %v), want 0 on the head's worker process and 1 on the other (cluster 1): %+v", cpus, res.ClusterCPUs, res.Nodes)
	}
	for _, n := range res.CPUTaskNodes {
		if n != oneCPU {
			t.Errorf("one-CPU tasks ran on %v, want all on the node of 1 CPU (%s)", res.CPUTaskNodes, oneCPU)
			break
		}
	}
	for _, n := range res.Nodes {
		if got := res.ZeroCPUTaskNodes[n.ID]; got != n.ID {
			t.Errorf("a task needing nothing, pinned to %s: ran on %q", n.ID, got)
		}
	}

	// rayctl list nodes says the same of the agents.
	lout, lerr, code := run(t, time.Minute, tok, rayctl, "list", "nodes", "--address", addr, "-o", "json")
	var agents []struct {
		Resources map[string]float64 `json:"resources_total"`
	}
	if err := json.Unmarshal([]byte(lout), &agents); err != nil || code != 0 || len(agents) != 2 {
		t.Fatalf("rayctl list nodes: exit %d, %v\n%s\n%s", code, err, lout, lerr)
	}
	var agentCPUs []float64
	for _, a := range agents {
		agentCPUs = append(agentCPUs, a.Resources["CPU"])
	}
	sort.Float64s(agentCPUs)
	if agentCPUs[0] != cpus[0] || agentCPUs[1] != cpus[1] {
		t.Errorf("rayctl list nodes: CPUs %v, ray.Nodes %v: they must agree", agentCPUs, cpus)
	}
}
