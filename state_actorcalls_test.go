package ray

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/ids"
)

type stNapper struct{}

func (stNapper) Nap(_ context.Context, d time.Duration) (int, error) {
	time.Sleep(d)
	return 1, nil
}

var (
	stNapperClass = Actor("test.state.Napper", func() *stNapper { return &stNapper{} })
	stNap         = Method1(stNapperClass, "Nap", (*stNapper).Nap)
)

// Actor calls in the state API: each finished call has its submission, its start (dated
// from how long the method ran), its end and the node the actor is on (which the node
// filter matches), so the timeline draws it as a span on the actor's track.
func TestStateAPIActorCalls(t *testing.T) {
	ctx := timeout(t)
	h := stNapperClass.Remote(ctx)
	const nap = 20 * time.Millisecond
	for range 3 {
		if v := mustGet(t, ctx, stNap.Remote(ctx, h, V(nap))); v != 1 {
			t.Fatalf("nap: %d", v)
		}
	}
	self, err := NodeID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// This actor's calls (the package's tests share one runtime: `go test -count=N` made
	// other Nappers before).
	mine := func(l []TaskInfo) (out []TaskInfo) {
		for _, c := range l {
			if c.Worker == h.ID() {
				out = append(out, c)
			}
		}
		return out
	}
	all, _, err := ListTasks(ctx, TaskFilter{Function: "test.state.Napper.Nap"})
	calls := mine(all)
	if err != nil || len(calls) != 3 {
		t.Fatalf("calls: %d of this actor's among %d, %v", len(calls), len(all), err)
	}
	ids := map[string]bool{}
	for _, c := range calls {
		ids[c.TaskID] = true
	}
	for _, c := range calls {
		if !c.ActorCall || c.State != TaskFinished || c.Worker != h.ID() || c.Node != self || c.Started.IsZero() ||
			c.Ended.Sub(c.Started) < nap || c.Submitted.IsZero() || c.Dispatched.Before(c.Submitted) || c.Started.Before(c.Submitted) {
			t.Errorf("call %+v (the actor %s is on node %s)", c, h.ID(), self)
		}
	}
	// The node filter matches actor calls by their actor's node.
	if onNode, _, err := ListTasks(ctx, TaskFilter{Function: "test.state.Napper.Nap", Node: self[:8]}); err != nil || len(mine(onNode)) != 3 {
		t.Errorf("calls on node %s: %d of this actor's among %d, %v", self[:8], len(mine(onNode)), len(onNode), err)
	}
	if elsewhere, total, err := ListTasks(ctx, TaskFilter{Function: "test.state.Napper.Nap", Node: "ffffffffffffffff"}); err != nil || total != 0 || len(elsewhere) != 0 {
		t.Errorf("calls on another node: %d of %d, %v", len(elsewhere), total, err)
	}
	var buf bytes.Buffer
	if err := WriteTimeline(ctx, &buf, TaskFilter{}); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct {
			Name, Ph string
			Dur      float64
			Args     map[string]any
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &trace); err != nil {
		t.Fatal(err)
	}
	spans := 0
	for _, e := range trace.TraceEvents {
		if id, _ := e.Args["task_id"].(string); e.Ph == "X" && e.Name == "test.state.Napper.Nap" && ids[id] && e.Dur >= float64(nap/time.Microsecond) {
			spans++
		}
	}
	if spans != 3 {
		t.Errorf("%d timeline spans of the actor's calls, want 3", spans)
	}
}

// Actor calls across a restart: each call is one record, of the incarnation that ran it.
// A call in flight when its actor restarted (replayed by the new instance from its log)
// and one queued behind it are shown on the new incarnation, dispatched and started after
// the restart (not as a span across it, from their first send to the old instance); the
// call before is the first incarnation's.
func TestStateAPIActorCallsAcrossRestart(t *testing.T) {
	ctx := timeout(t)
	h := napperClass.Remote(ctx, MaxRestarts(1), UnboundedMethodLog())
	before := nap.Remote(ctx, h, V(10*time.Millisecond))
	mustGet(t, ctx, before)
	drain(napping)
	const inFlightNap = 300 * time.Millisecond
	inFlight := nap.Remote(ctx, h, V(inFlightNap))
	queued := nap.Remote(ctx, h, V(50*time.Millisecond))
	waitFor(t, napping) // running on the first incarnation
	kill := time.Now()
	if err := Kill(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	mustGet(t, ctx, inFlight)
	mustGet(t, ctx, queued)
	after := nap.Remote(ctx, h, V(10*time.Millisecond))
	mustGet(t, ctx, after)
	self, err := NodeID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// (Other tests call test.Napper.Nap too: only these four calls count.)
	mine := map[string]bool{}
	for _, r := range []ObjectRef[int]{before, inFlight, queued, after} {
		mine[callOf(t, r)] = true
	}
	calls, _, err := ListTasks(ctx, TaskFilter{Function: "test.Napper.Nap", Node: self[:8]})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]TaskInfo{}
	for _, c := range calls {
		if !mine[c.TaskID] {
			continue
		}
		if _, dup := byID[c.TaskID]; dup {
			t.Errorf("call %s listed twice", c.TaskID)
		}
		byID[c.TaskID] = c
		if c.State != TaskFinished || c.Node != self || c.Worker != h.ID() {
			t.Errorf("call %+v", c)
		}
	}
	if c := byID[callOf(t, before)]; c.ActorIncarnation != 1 || c.Ended.After(kill) {
		t.Errorf("call before the restart: incarnation %d, ended %v (killed at %v)", c.ActorIncarnation, c.Ended, kill)
	}
	for what, ref := range map[string]ObjectRef[int]{"in flight": inFlight, "queued": queued, "after": after} {
		c, ok := byID[callOf(t, ref)]
		if !ok {
			t.Errorf("%s call %s not listed", what, callOf(t, ref))
			continue
		}
		if c.ActorIncarnation != 2 || c.Dispatched.Before(kill) || c.Started.Before(kill) || c.Ended.Before(c.Started) {
			t.Errorf("%s call: incarnation %d, dispatched %v, started %v, ended %v; killed at %v: want the second incarnation's run",
				what, c.ActorIncarnation, c.Dispatched, c.Started, c.Ended, kill)
		}
	}
	if c := byID[callOf(t, inFlight)]; c.Ended.Sub(c.Started) < inFlightNap {
		t.Errorf("in-flight call ran %v on the new incarnation, want >= %v", c.Ended.Sub(c.Started), inFlightNap)
	}
}

// callOf is the hex ID of the actor call that returns ref.
func callOf(t *testing.T, ref Ref) string {
	t.Helper()
	id, err := ids.ParseObjectID(ref.ID())
	if err != nil {
		t.Fatal(err)
	}
	return id.Task().String()
}
