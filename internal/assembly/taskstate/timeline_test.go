package taskstate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
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

// TestTimelineSpansNest: the spans of one thread nest, as the Chrome trace format wants. A
// span's start is its owner's estimate and results arrive in batches, so two tasks a
// worker ran back to back can overlap without nesting (`rayctl timeline` of 11,000 tasks
// had 1,661 such spans, a serial actor's calls among them): the later one goes on a second
// track of the worker ("w1 (2)"), with its times unchanged; spans that nest (a nested
// task run by the worker its parent waits on) and spans after them stay on the worker's
// track.
func TestTimelineSpansNest(t *testing.T) {
	rep := &core.TaskReport{Tasks: []core.TaskEvent{
		{TaskID: "a", Function: "parent", State: core.StateFinished, Node: "n1", Worker: "w1", Started: 1000, Ended: 5000},
		{TaskID: "b", Function: "overlaps", State: core.StateFinished, Node: "n1", Worker: "w1", Started: 4000, Ended: 8000},
		{TaskID: "c", Function: "child", State: core.StateFinished, Node: "n1", Worker: "w1", Started: 2000, Ended: 3000},
		{TaskID: "d", Function: "inner", State: core.StateFinished, Node: "n1", Worker: "w1", Started: 6000, Ended: 7000},
		{TaskID: "e", Function: "after", State: core.StateFinished, Node: "n1", Worker: "w1", Started: 9000, Ended: 10000},
		{TaskID: "f", Function: "same-start", State: core.StateFinished, Node: "n1", Worker: "w1", Started: 9000, Ended: 9500},
		{TaskID: "g", Function: "other", State: core.StateFinished, Node: "n1", Worker: "w2", Started: 4500, Ended: 4600},
	}}
	var buf bytes.Buffer
	if err := WriteTimeline(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct {
			Name, Ph string
			Ts, Dur  float64
			Pid, Tid int
			Args     map[string]any
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &trace); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	threads := map[[2]int]string{}
	type span struct{ start, end float64 }
	byTrack := map[[2]int][]span{}
	track := map[string]string{}
	for _, e := range trace.TraceEvents {
		if e.Ph == "M" && e.Name == "thread_name" {
			threads[[2]int{e.Pid, e.Tid}] = e.Args["name"].(string)
		}
	}
	for _, e := range trace.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		k := [2]int{e.Pid, e.Tid}
		byTrack[k] = append(byTrack[k], span{e.Ts, e.Ts + e.Dur})
		track[e.Name] = threads[k]
		want := map[string]float64{"parent": 0, "overlaps": 3, "child": 1, "inner": 5, "after": 8, "same-start": 8, "other": 3.5}[e.Name]
		if e.Ts != want {
			t.Errorf("%s starts at %v µs, want %v (times are not moved)", e.Name, e.Ts, want)
		}
	}
	if len(track) != len(rep.Tasks) {
		t.Fatalf("%d spans drawn, want %d:\n%s", len(track), len(rep.Tasks), buf.String())
	}
	for k, spans := range byTrack {
		slices.SortFunc(spans, func(a, b span) int {
			if a.start != b.start {
				return cmp.Compare(a.start, b.start)
			}
			return cmp.Compare(b.end, a.end)
		})
		var open []span
		for _, s := range spans {
			for len(open) > 0 && open[len(open)-1].end <= s.start {
				open = open[:len(open)-1]
			}
			if len(open) > 0 && s.end > open[len(open)-1].end {
				t.Errorf("track %q: the span %v overlaps %v without nesting in it", threads[k], s, open[len(open)-1])
			}
			open = append(open, s)
		}
	}
	want := map[string]string{"parent": "w1", "child": "w1", "after": "w1", "same-start": "w1", "overlaps": "w1 (2)", "inner": "w1 (2)", "other": "w2"}
	for name, w := range want {
		if track[name] != w {
			t.Errorf("%s is on track %q, want %q", name, track[name], w)
		}
	}
}
