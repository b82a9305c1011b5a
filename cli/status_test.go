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
	// the jobs' header and 2 rows.
	if len(lines) != 11 {
		t.Fatalf("%d lines, want 11 (a row per node and job):\n%s", len(lines), text)
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
