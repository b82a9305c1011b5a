package ray

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"
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
	calls, total, err := ListTasks(ctx, TaskFilter{Function: "test.state.Napper.Nap"})
	if err != nil || total != 3 || len(calls) != 3 {
		t.Fatalf("calls: %d of %d, %v", len(calls), total, err)
	}
	for _, c := range calls {
		if !c.ActorCall || c.State != TaskFinished || c.Worker != h.ID() || c.Node != self || c.Started.IsZero() ||
			c.Ended.Sub(c.Started) < nap || c.Submitted.IsZero() || c.Dispatched.Before(c.Submitted) || c.Started.Before(c.Submitted) {
			t.Errorf("call %+v (the actor %s is on node %s)", c, h.ID(), self)
		}
	}
	// The node filter matches actor calls by their actor's node.
	if onNode, total, err := ListTasks(ctx, TaskFilter{Function: "test.state.Napper.Nap", Node: self[:8]}); err != nil || total != 3 || len(onNode) != 3 {
		t.Errorf("calls on node %s: %d of %d, %v", self[:8], len(onNode), total, err)
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
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &trace); err != nil {
		t.Fatal(err)
	}
	spans := 0
	for _, e := range trace.TraceEvents {
		if e.Ph == "X" && e.Name == "test.state.Napper.Nap" && e.Dur >= float64(nap/time.Microsecond) {
			spans++
		}
	}
	if spans != 3 {
		t.Errorf("%d timeline spans of the actor's calls, want 3", spans)
	}
}
