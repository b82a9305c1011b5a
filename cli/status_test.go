package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/assembly/clusterstate"
)

// TestStatusCellsOneLine: rayctl status keeps each node and job on one row of its table:
// a job's message with newlines and tabs (a failed driver's error) is escaped as list's
// cells are; JSON keeps it as it is.
func TestStatusCellsOneLine(t *testing.T) {
	msg := "driver exited: panic: boom\n\tgoroutine 1\r\nexit status 2"
	st := &Status{Address: "127.0.0.1:1",
		Nodes: []clusterstate.NodeStatus{{AgentID: "a1", Host: "vm", Alive: true, Head: true, Started: "s",
			Total: map[string]float64{"CPU": 2}, InUse: map[string]float64{}}},
		Drivers: []clusterstate.DriverStatus{{NodeID: "d1", Host: "vm\tb", State: clusterstate.DriverDead, Started: "s"}},
		Jobs: []clusterstate.JobStatus{
			{JobID: "j1", State: "FAILED", Start: "s", End: "e", Driver: "vm:1", Message: msg},
			{JobID: "j2", State: "RUNNING", Start: "s", Driver: "vm:2"},
		}}
	var out bytes.Buffer
	printStatus(&out, st)
	text := out.String()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	// 3 lines of figures and a blank one, the nodes' header and 2 rows, a blank line,
	// the jobs' header and 2 rows, a blank line and the Demands line (none).
	if len(lines) != 13 {
		t.Fatalf("%d lines, want 13 (a row per node and job, then the demands):\n%s", len(lines), text)
	}
	if lines[12] != "Demands: none (no task, actor or placement group waits for resources)" {
		t.Fatalf("the last line %q, want that no demand waits:\n%s", lines[12], text)
	}
	if !strings.HasSuffix(lines[9], `driver exited: panic: boom\n\tgoroutine 1\r\nexit status 2`) || !strings.HasPrefix(lines[9], "j1 ") {
		t.Fatalf("the failed job's row %q, want its message escaped on it:\n%s", lines[9], text)
	}
	if !strings.HasPrefix(lines[10], "j2 ") || !strings.Contains(lines[6], `vm\tb`) {
		t.Fatalf("rows after an escaped cell:\n%s", text)
	}
	// The columns line up: the running job's STATE starts where the header's does.
	if h, r := strings.Index(lines[8], "STATE"), strings.Index(lines[10], "RUNNING"); h != r {
		t.Fatalf("jobs' STATE column at %d, the running job's state at %d:\n%s", h, r, text)
	}
}

// TestStatusDemands: rayctl status prints what waits for resources under "Demands:", as
// Ray's does: a line per shape of tasks and actors (how many, where they wait; those in a
// placement group's bundles named so), a line per placement group not placed (its bundles'
// shapes, runs of equal ones counted, its strategy, ID, how long it has waited, its job
// and why), each on one line.
func TestStatusDemands(t *testing.T) {
	st := &Status{Address: "127.0.0.1:1", Jobs: []clusterstate.JobStatus{}, Demands: clusterstate.Demands{
		Tasks: []clusterstate.TaskDemand{
			{Shape: map[string]float64{"accel": 1, "CPU": 1.5}, Tasks: 10, Actors: 2, AgentIDs: []string{"agentA", "agentB"}},
			{Shape: map[string]float64{"CPU": 1}, PlacementGroup: "g3", Tasks: 4, AgentIDs: []string{"agentA"}},
		},
		PlacementGroups: []clusterstate.GroupDemand{
			{ID: "g1", JobID: "01", State: "PENDING", Strategy: "PACK", PendingSeconds: 95,
				Bundles: []map[string]float64{{"CPU": 8}, {"CPU": 8}, {"GPU": 1}}, Reason: "no node has\nroom"},
			{ID: "g2", Name: "trainers", JobID: "02", State: "RESCHEDULING", Strategy: "SPREAD", Bundles: []map[string]float64{{"CPU": 2}}},
		},
		Omitted: 3,
	}}
	var out bytes.Buffer
	printStatus(&out, st)
	text := out.String()
	i := strings.Index(text, "\nDemands:\n")
	if i < 0 {
		t.Fatalf("no Demands section:\n%s", text)
	}
	got := strings.Split(strings.TrimSuffix(text[i+len("\nDemands:\n"):], "\n"), "\n")
	want := []string{
		"  {CPU: 1.5, accel: 1}: 10 pending task(s), 2 pending actor(s) (at agentA, agentB)",
		"  {CPU: 1} in placement group g3: 4 pending task(s) (at agentA)",
		"  3 more pending task(s) or actor(s) of other shapes",
		`  {CPU: 8} * 2, {GPU: 1} * 1 (PACK): placement group g1 pending 1m35s, job 01: no node has\nroom`,
		`  {CPU: 2} * 1 (SPREAD): placement group g2 "trainers" rescheduling (bundles lost with their node), job 02`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Demands section:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
