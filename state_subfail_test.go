package ray

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"context"

	"github.com/ray-go/ray/internal/assembly/metrics"
	"github.com/ray-go/ray/tasks/sched"
)

var sfBig = Task1("test.subfail.big", func(_ context.Context, x int) (int, error) { return x, nil })

// Tasks that fail as they are submitted (a name no function was registered under, more
// CPUs than any node has, a bundle no node can hold) are tasks the state API, the metrics
// and the timeline show: FAILED, with their error's kind and message, as Ray shows a task
// it could not schedule.
func TestStateSubmitFailures(t *testing.T) {
	ctx := timeout(t)
	run := time.Now().UnixNano()
	sumsBefore, _ := stateCounts(t, ctx)
	unknown := fmt.Sprintf("test.subfail.nosuch.%d", run)
	if _, err := Get(ctx, Call[int](ctx, unknown, nil)); !errors.Is(err, ErrUnknownFunction) {
		t.Fatalf("calling %s: %v, want ErrUnknownFunction", unknown, err)
	}
	if _, err := Get(ctx, sfBig.Options(NumCPUs(1000)).Remote(ctx, V(1))); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("a task of 1000 CPUs: %v, want ErrInfeasible", err)
	}
	pg, err := PlacementGroup(ctx, []Bundle{{"CPU": 1000}}, StrategyPack)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.Remove(context.Background()) }()
	if _, err := Get(ctx, sfBig.Options(PlacementGroupBundle(pg, 0)).Remote(ctx, V(2))); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("a task in a bundle of 1000 CPUs: %v, want ErrInfeasible", err)
	}

	// ListTasks: each is FAILED, with its kind and a message naming the cause.
	want := []struct {
		fn, kind, says string
		n              int
	}{
		{unknown, "UNKNOWN_FUNCTION", unknown, 1},
		{"test.subfail.big", "INFEASIBLE", "CPU", 2},
	}
	for _, w := range want {
		list, _, err := ListTasks(ctx, TaskFilter{Function: w.fn, State: TaskFailed})
		if err != nil {
			t.Fatal(err)
		}
		var mine []TaskInfo
		for _, ti := range list {
			if ti.Ended.UnixNano() >= run {
				mine = append(mine, ti)
			}
		}
		if len(mine) != w.n {
			t.Errorf("FAILED tasks of %s since the test began: %d, want %d (%+v)", w.fn, len(mine), w.n, list)
			continue
		}
		for _, ti := range mine {
			if ti.ErrorType != w.kind || !strings.Contains(ti.Error, w.says) || ti.Job == "" || ti.Submitted.IsZero() || ti.Ended.Before(ti.Submitted) {
				t.Errorf("failed task of %s: %+v, want error type %s and an error saying %q, its job and times", w.fn, ti, w.kind, w.says)
			}
			got, err := GetTask(ctx, ti.TaskID)
			if err != nil || len(got) != 1 || got[0].State != TaskFailed {
				t.Errorf("GetTask(%s): %+v, %v", ti.TaskID, got, err)
			}
		}
	}

	// SummarizeTasks counts them.
	sums, _ := stateCounts(t, ctx)
	for _, w := range want {
		k := [2]string{w.fn, TaskFailed}
		if got := sums[k] - sumsBefore[k]; got != w.n {
			t.Errorf("summary of %s FAILED: %d more, want %d more", w.fn, got, w.n)
		}
	}

	// The timeline marks them (they never ran: an instant, not a span).
	var buf bytes.Buffer
	if err := WriteTimeline(ctx, &buf, TaskFilter{Function: unknown}); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct {
			Name, Ph string
			Args     map[string]any
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &trace); err != nil {
		t.Fatalf("the timeline is not JSON: %v\n%.500s", err, buf.String())
	}
	marked := 0
	for _, e := range trace.TraceEvents {
		if e.Name == unknown && e.Ph == "i" && e.Args["state"] == TaskFailed && strings.Contains(fmt.Sprint(e.Args["error"]), unknown) {
			marked++
		}
	}
	if marked != 1 {
		t.Errorf("timeline marks of %s: %d, want 1:\n%s", unknown, marked, buf.String())
	}

	// The metrics count them.
	res, err := sched.FromMap(map[string]float64{sched.CPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serveMetrics(nodeOf(ctx), 0, res, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	fams, err := metrics.Scrape(ctx, "http://"+srv.addr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		k := [2]string{w.fn, TaskFailed}
		if v, ok := fams.Value("ray_tasks", "Name", w.fn, "State", TaskFailed); !ok || int(v) != sumsBefore[k]+w.n {
			t.Errorf("ray_tasks{Name=%s,State=FAILED} = %v (%v), want %d", w.fn, v, ok, sumsBefore[k]+w.n)
		}
	}
}

// Calls to an actor that is dead fail, most of them as they are submitted (the caller
// knows of the death): each is a FAILED actor call with ACTOR_DIED in the state API, as
// in Ray.
func TestStateDeadActorCalls(t *testing.T) {
	ctx := timeout(t)
	h := tallyClass.Remote(ctx)
	if v, err := Get(ctx, tallyAdd.Remote(ctx, h, V(1))); err != nil || v != 1 {
		t.Fatalf("add: %v, %v", v, err)
	}
	if err := Kill(ctx, h, true); err != nil {
		t.Fatal(err)
	}
	died := 0
	for i := 0; died < 3; i++ {
		if i == 2000 {
			t.Fatalf("calls to the killed actor did not fail with ErrActorDied (%d of %d did)", died, i)
		}
		if _, err := Get(ctx, tallyAdd.Remote(ctx, h, V(1))); errors.Is(err, ErrActorDied) {
			died++
		} else {
			time.Sleep(5 * time.Millisecond)
		}
	}
	list, _, err := ListTasks(ctx, TaskFilter{Function: "test.Tally.Add", State: TaskFailed})
	if err != nil {
		t.Fatal(err)
	}
	var mine []TaskInfo
	for _, ti := range list {
		if ti.Worker == h.ID() {
			mine = append(mine, ti)
		}
	}
	if len(mine) != died {
		t.Fatalf("FAILED calls of the killed actor: %d, want %d: %+v", len(mine), died, mine)
	}
	for _, ti := range mine {
		if !ti.ActorCall || ti.ErrorType != "ACTOR_DIED" || ti.Error == "" || ti.Submitted.IsZero() || ti.Ended.IsZero() {
			t.Errorf("a failed call of the killed actor: %+v", ti)
		}
	}
}
