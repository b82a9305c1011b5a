package taskstate

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ray-go/ray/internal/assembly/core"
)

// TestTimelineMarksNotRun: an attempt that failed before it ran (submitted and ended, never
// started: an unknown function, an infeasible task) is an instant event with its state and
// error on its owner node's "not run" track, the spans stay spans, and a finished attempt
// with no start, or one still waiting, is left out.
func TestTimelineMarksNotRun(t *testing.T) {
	rep := &core.TaskReport{Tasks: []core.TaskEvent{
		{TaskID: "aa", Function: "ran", State: core.StateFinished, Node: "n1", Worker: "w1", Started: 2000, Ended: 5000},
		{TaskID: "bb", Function: "nosuch", State: core.StateFailed, Owner: "n0", Submitted: 1000, Ended: 1000,
			ErrorKind: "UNKNOWN_FUNCTION", Error: "no remote function nosuch"},
		{TaskID: "cc", Function: "odd", State: core.StateFinished, Owner: "n0", Ended: 3000},
		{TaskID: "dd", Function: "waits", State: core.StatePendingNode, Owner: "n0", Submitted: 3000},
	}}
	var buf bytes.Buffer
	if err := WriteTimeline(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct {
			Name, Ph, S string
			Ts          float64
			Pid, Tid    int
			Args        map[string]any
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &trace); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	threads := map[[2]int]string{}
	procs := map[int]string{}
	got := map[string]string{}
	var markAt [2]int
	for _, e := range trace.TraceEvents {
		switch e.Ph {
		case "M":
			if e.Name == "thread_name" {
				threads[[2]int{e.Pid, e.Tid}] = e.Args["name"].(string)
			} else {
				procs[e.Pid] = e.Args["name"].(string)
			}
		default:
			got[e.Name] = e.Ph
			if e.Name == "nosuch" {
				markAt = [2]int{e.Pid, e.Tid}
				if e.S != "t" || e.Ts != 0 || e.Args["state"] != core.StateFailed || e.Args["error"] != "no remote function nosuch" {
					t.Errorf("the mark: %+v", e)
				}
			}
		}
	}
	if got["ran"] != "X" || got["nosuch"] != "i" || len(got) != 2 {
		t.Errorf("events by name and phase: %v, want ran X, nosuch i, nothing else\n%s", got, buf.String())
	}
	if procs[markAt[0]] != "node n0" || threads[markAt] != "not run" {
		t.Errorf("the mark is on %q, %q, want node n0, not run", procs[markAt[0]], threads[markAt])
	}
}
