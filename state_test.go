package ray

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// The package's tests share one runtime (and `go test -count=N` runs this test again
	// in it): the counts below are what this run adds, its gate and failure its own.
	run := time.Now().UnixNano()
	sumsBefore, spansBefore := stateCounts(t, ctx)
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
	failMsg := fmt.Sprintf("the state API sees this (run %d)", run)
	_, err := Get(ctx, stFail.Remote(ctx, V(failMsg)))
	if err == nil {
		t.Fatal("stFail did not fail")
	}
	gate := fmt.Sprintf("state-running-%d", run)
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
	if want := sumsBefore[[2]string{"test.state.square", TaskFinished}] + 10; len(fin) != 4 || total != want {
		t.Fatalf("finished squares: %d shown of %d, want 4 of %d", len(fin), total, want)
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

	allFailed, _, err := ListTasks(ctx, TaskFilter{State: TaskFailed, Function: "test.state.fail"})
	var failed []TaskInfo
	for _, ti := range allFailed {
		if strings.Contains(ti.Error, failMsg) {
			failed = append(failed, ti)
		}
	}
	if err != nil || len(failed) != 1 {
		t.Fatalf("failed tasks saying %q: %v of %v, %v", failMsg, failed, allFailed, err)
	}
	if failed[0].ErrorType != "APPLICATION" {
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
			if got := c.Count - sumsBefore[[2]string{c.Function, c.State}]; got != n {
				t.Errorf("summary %s %s: %d more, want %d more", c.Function, c.State, got, n)
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
	for fn, n := range map[string]int{"test.state.square": 10, "test.state.add": 2, "test.state.fail": 1} {
		if got := spans[fn] - spansBefore[fn]; got != n {
			t.Errorf("timeline spans of %s: %d more, want %d more (all: %v, before: %v)", fn, got, n, spans, spansBefore)
		}
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

// stateCounts is what the state API shows of the tests' job now: the summary's counts by
// function and state, and the timeline's spans by function. The package's tests share one
// runtime, so a test compares what it adds.
func stateCounts(t *testing.T, ctx context.Context) (sums map[[2]string]int, spans map[string]int) {
	t.Helper()
	list, err := SummarizeTasks(ctx, TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	sums = map[[2]string]int{}
	for _, c := range list {
		sums[[2]string{c.Function, c.State}] = c.Count
	}
	var buf bytes.Buffer
	if err := WriteTimeline(ctx, &buf, TaskFilter{}); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct{ Name, Ph string } `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &trace); err != nil {
		t.Fatalf("the timeline is not JSON: %v", err)
	}
	spans = map[string]int{}
	for _, e := range trace.TraceEvents {
		if e.Ph == "X" {
			spans[e.Name]++
		}
	}
	return sums, spans
}
