package e2e

import (
	"encoding/json"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// statusDemands is what the test reads of `rayctl status -o json`.
type statusDemands struct {
	Nodes []struct {
		AgentID string `json:"agent_id"`
	} `json:"nodes"`
	Demands struct {
		PlacementGroups []struct {
			ID             string               `json:"placement_group_id"`
			State          string               `json:"state"`
			Strategy       string               `json:"strategy"`
			Bundles        []map[string]float64 `json:"bundles"`
			PendingSeconds int64                `json:"pending_seconds"`
			Reason         string               `json:"reason"`
		} `json:"placement_groups"`
		Tasks []struct {
			Shape    map[string]float64 `json:"shape"`
			Tasks    int                `json:"tasks"`
			Actors   int                `json:"actors"`
			AgentIDs []string           `json:"agent_ids"`
		} `json:"tasks"`
	} `json:"demands"`
}

// TestStatusDemands: `rayctl status` says what waits for resources under "Demands:", as
// Ray's does (a user whose job does not progress looks there first): a task that waits
// for CPUs other tasks hold (its shape, how many, the machines where it waits) and a
// placement group no node can hold (its bundles, strategy, how long and why it waits),
// in the text and in -o json; both go once the CPUs come free and the group is removed.
// `rayctl list placement-groups` names a placed group's bundles' machines as `rayctl
// status` does (agent_ids), besides the job's worker processes (nodes).
func TestStatusDemands(t *testing.T) {
	t.Parallel() // mostly waits
	port, addr, sess := newSession(t)
	// startTwoNodes's, without a dashboard or metrics port (nothing here reads them).
	quiet := []string{"--num-cpus", "2", "--object-store-memory", "256MiB", "--dashboard-port", "-1", "--metrics-port", "-1"}
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, append([]string{"start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess}, quiet...)...)
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	env := []string{"RAY_ADDRESS=" + addr, "RAY_GO_TOKEN=" + printedToken(t, out)}
	out, errOut, code = run(t, 90*time.Second, env, rayctl, append([]string{"start", "--address", addr, "--session-dir", sess, "--metrics-port", "-1"}, quiet[:4]...)...)
	if code != 0 {
		t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
	}
	dir := t.TempDir()
	p := startPiped(t, "demands", append(append(os.Environ(), env...), "E2E_DEMANDS_DIR="+dir))
	f := strings.Fields(p.line(t, "demands", sess))
	if len(f) != 3 || f[0]+" "+f[1] != "demands ready" {
		t.Fatalf("the demands driver printed %q, want demands ready PG\n%s", f, tail(p.stderr.String()))
	}
	pg := f[2]
	status := func() (statusDemands, string) {
		t.Helper()
		out, errOut, code := run(t, time.Minute, env, rayctl, "status", "-o", "json")
		var st statusDemands
		if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
			t.Fatalf("rayctl status -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		return st, out
	}
	// The load reports follow a change within a second or so: wait for both demands
	// (bounded), then check them.
	var st statusDemands
	var raw string
	waiting := func(st statusDemands) (task, group bool) {
		for _, d := range st.Demands.Tasks {
			task = task || d.Shape["CPU"] == 1.5 && len(d.Shape) == 1 && d.Tasks >= 1
		}
		for _, g := range st.Demands.PlacementGroups {
			group = group || g.ID == pg
		}
		return task, group
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, raw = status()
		task, group := waiting(st)
		if task && group {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s, rayctl status shows no demand of the waiting task (CPU 1.5) or of group %s (pending):\n%s", pg, raw)
		}
		time.Sleep(300 * time.Millisecond)
	}
	var agents []string
	for _, n := range st.Nodes {
		agents = append(agents, n.AgentID)
	}
	for _, d := range st.Demands.Tasks {
		if d.Shape["CPU"] != 1.5 {
			continue
		}
		if d.Tasks != 1 || d.Actors != 0 || len(d.AgentIDs) == 0 {
			t.Errorf("the demand of the waiting task: %+v, want 1 task at a machine", d)
		}
		for _, a := range d.AgentIDs {
			if !slices.Contains(agents, a) {
				t.Errorf("the waiting task waits at %q, which is none of status's nodes %q", a, agents)
			}
		}
	}
	for _, g := range st.Demands.PlacementGroups {
		if g.ID != pg {
			continue
		}
		if g.State != "PENDING" || g.Strategy != "PACK" || len(g.Bundles) != 2 || g.Bundles[0]["CPU"] != 8 || g.Reason == "" {
			t.Errorf("the group's demand %+v: want PENDING, PACK, two bundles of CPU 8, and why it waits", g)
		}
	}
	out, errOut, code = run(t, time.Minute, env, rayctl, "status")
	if code != 0 {
		t.Fatalf("rayctl status: exit %d\n%s\n%s", code, out, errOut)
	}
	_, demands, found := strings.Cut(out, "\nDemands:\n")
	if !found || !strings.Contains(demands, "{CPU: 1.5}: 1 pending task(s) (at ") ||
		!strings.Contains(demands, "{CPU: 8} * 2 (PACK): placement group "+pg+" pending ") {
		t.Fatalf("rayctl status does not show the demands under Demands:\n%s", out)
	}
	t.Logf("rayctl status's demands:\n%s", demands)

	// The CPUs come free and the group is removed: nothing waits any more.
	if _, err := io.WriteString(p.in, "release\n"); err != nil {
		t.Fatal(err)
	}
	f = strings.Fields(p.line(t, "demands released", sess))
	if len(f) != 2 || f[0] != "released" {
		t.Fatalf("the demands driver printed %q, want released PG2\n%s", f, tail(p.stderr.String()))
	}
	pg2 := f[1]
	deadline = time.Now().Add(90 * time.Second)
	for {
		st, raw = status()
		if len(st.Demands.Tasks) == 0 && len(st.Demands.PlacementGroups) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("90 s after the task ran and the group was removed, rayctl status still shows demands:\n%s", raw)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if out, _, _ := run(t, time.Minute, env, rayctl, "status"); !strings.Contains(out, "\nDemands: none") {
		t.Errorf("rayctl status with nothing waiting:\n%s", out)
	}

	// The placed group's bundle: its worker process (nodes) and its machine (agent_ids).
	out, errOut, code = run(t, time.Minute, env, rayctl, "list", "placement-groups", "--filter", "placement_group_id="+pg2, "-o", "json")
	var groups []struct {
		Nodes    []string `json:"nodes"`
		AgentIDs []string `json:"agent_ids"`
	}
	if err := json.Unmarshal([]byte(out), &groups); err != nil || code != 0 || len(groups) != 1 {
		t.Fatalf("rayctl list placement-groups: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if g := groups[0]; len(g.Nodes) != 1 || g.Nodes[0] == "" || len(g.AgentIDs) != 1 || !slices.Contains(agents, g.AgentIDs[0]) {
		t.Errorf("group %s's bundle: nodes %q, agent_ids %q; want its worker process and one of status's nodes %q", pg2, g.Nodes, g.AgentIDs, agents)
	}
	out, _, _ = run(t, time.Minute, env, rayctl, "list", "placement-groups", "--filter", "placement_group_id="+pg2)
	if !strings.Contains(out, "AGENT_IDS") || len(groups[0].AgentIDs) == 1 && !strings.Contains(out, groups[0].AgentIDs[0]) {
		t.Errorf("rayctl list placement-groups's table does not show the bundle's machine:\n%s", out)
	}
	_ = p.in.Close()
	if l := p.line(t, "demands' end", sess); !strings.HasPrefix(l, "{") || strings.Contains(l, "error") {
		t.Fatalf("the demands driver: %q\n%s", l, tail(p.stderr.String()))
	}
}
