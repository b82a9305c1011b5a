package ray

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	stSquare = Task1("test.state.square", func(_ context.Context, x int) (int, error) { return x * x, nil })
	stAdd    = Task2("test.state.add", func(_ context.Context, a, b int) (int, error) { return a + b, nil })
	stFail   = Task1("test.state.fail", func(_ context.Context, msg string) (int, error) { return 0, errors.New(msg) })
	stWait   = Task1("test.state.wait", func(ctx context.Context, gate string) (int, error) {
		select {
		case <-gateOf(gate):
			return 1, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
)

// The state API on a local runtime: finished, failed, running and waiting tasks with their
// states and errors, a task by ID, the summary by function and state, and a timeline that
// decodes as a Chrome trace with a span per task and an arrow from each producer to its
// consumer.
func TestStateAPITasks(t *testing.T) {
	ctx := timeout(t)
	var sq []ObjectRef[int]
	for i := range 10 {
		sq = append(sq, stSquare.Remote(ctx, V(i)))
	}
	sum := stAdd.Remote(ctx, sq[2], sq[3]) // uses two results: two arrows
	if v := mustGet(t, ctx, sum); v != 13 {
		t.Fatalf("add: %d", v)
	}
	if _, err := GetAll(ctx, sq); err != nil {
		t.Fatal(err)
	}
	_, err := Get(ctx, stFail.Remote(ctx, V("the state API sees this")))
	if err == nil {
		t.Fatal("stFail did not fail")
	}
	gate := "state-running"
	running := stWait.Remote(ctx, V(gate))
	waiting := stAdd.Remote(ctx, running, V(1)) // waits for its argument

	// The running task is RUNNING once pushed to a worker; the one after it waits.
	var list []TaskInfo
	for list == nil {
		l, _, err := ListTasks(ctx, TaskFilter{Function: "test.state.wait", State: TaskRunning})
		if err != nil {
			t.Fatal(err)
		}
		if len(l) == 1 {
			list = l
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the waiting task never showed as RUNNING: %v", l)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if list[0].Node == "" || list[0].Worker == "" || list[0].Submitted.IsZero() || list[0].Dispatched.IsZero() {
		t.Errorf("running task: %+v", list[0])
	}
	pend, _, err := ListTasks(ctx, TaskFilter{Function: "test.state.add", State: TaskPendingArgs})
	if err != nil || len(pend) != 1 {
		t.Fatalf("tasks waiting for arguments: %v, %v", pend, err)
	}
	close(gateOf(gate))
	if v := mustGet(t, ctx, waiting); v != 2 {
		t.Fatalf("waiting: %d", v)
	}

	fin, total, err := ListTasks(ctx, TaskFilter{Function: "test.state.square", State: TaskFinished, Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(fin) != 4 || total != 10 {
		t.Fatalf("finished squares: %d shown of %d, want 4 of 10", len(fin), total)
	}
	for i, ti := range fin {
		if ti.State != TaskFinished || ti.Function != "test.state.square" || ti.Started.IsZero() || ti.Ended.Before(ti.Started) ||
			ti.Worker == "" || ti.Node == "" || ti.Job == "" {
			t.Errorf("finished task %d: %+v", i, ti)
		}
		if i > 0 && fin[i-1].Ended.Before(ti.Ended) {
			t.Errorf("not newest first: %v before %v", fin[i-1].Ended, ti.Ended)
		}
	}

	failed, _, err := ListTasks(ctx, TaskFilter{State: TaskFailed, Function: "test.state.fail"})
	if err != nil || len(failed) != 1 {
		t.Fatalf("failed tasks: %v, %v", failed, err)
	}
	if !strings.Contains(failed[0].Error, "the state API sees this") || failed[0].ErrorType != "APPLICATION" {
		t.Errorf("failed task: %+v", failed[0])
	}
	got, err := GetTask(ctx, failed[0].TaskID[:10])
	if err != nil || len(got) != 1 || got[0].TaskID != failed[0].TaskID {
		t.Errorf("GetTask: %v, %v", got, err)
	}
	if _, err := GetTask(ctx, "ffffffffffffffff"); !errors.Is(err, ErrNoSuchTask) {
		t.Errorf("GetTask of an unknown ID: %v", err)
	}

	sums, err := SummarizeTasks(ctx, TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]int{{"test.state.square", TaskFinished}: 10, {"test.state.add", TaskFinished}: 2,
		{"test.state.fail", TaskFailed}: 1, {"test.state.wait", TaskFinished}: 1}
	for _, c := range sums {
		if n, ok := want[[2]string{c.Function, c.State}]; ok {
			if n != c.Count {
				t.Errorf("summary %s %s: %d, want %d", c.Function, c.State, c.Count, n)
			}
			delete(want, [2]string{c.Function, c.State})
		}
	}
	if len(want) > 0 {
		t.Errorf("summary lacks %v (got %v)", want, sums)
	}

	var buf bytes.Buffer
	if err := WriteTimeline(ctx, &buf, TaskFilter{}); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct {
			Name, Ph string
			Ts, Dur  float64
			Pid, Tid int
			ID       int
			Args     map[string]any
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &trace); err != nil {
		t.Fatalf("the timeline is not JSON: %v\n%.500s", err, buf.String())
	}
	spans := map[string]int{}
	flows := map[int]string{}
	for _, e := range trace.TraceEvents {
		switch e.Ph {
		case "X":
			spans[e.Name]++
			if e.Dur < 0 || e.Args["task_id"] == nil {
				t.Errorf("span %+v", e)
			}
		case "s", "f":
			flows[e.ID] += e.Ph
		}
	}
	if spans["test.state.square"] != 10 || spans["test.state.add"] != 2 || spans["test.state.fail"] != 1 {
		t.Errorf("spans by function: %v", spans)
	}
	pairs := 0
	for _, f := range flows {
		if f == "sf" {
			pairs++
		}
	}
	if pairs < 3 { // square→add twice, wait→add once
		t.Errorf("timeline flows: %v", flows)
	}
}
