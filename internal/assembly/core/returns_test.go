package core

import (
	"context"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

func init() {
	if err := tasks.Register(&tasks.Function{Name: "core_test.f2", Returns: 2, Call: func(context.Context, [][]byte) ([]byte, error) { return nil, nil }}); err != nil {
		panic(err)
	}
}

// submit2 submits a task of two returns.
func (h *harness) submit2() (ids.ObjectID, ids.ObjectID) {
	h.t.Helper()
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	list, _, err := h.c.SubmitReturns(h.tc, Call{Function: "core_test.f2", Resources: res, MaxRetries: 2, NumReturns: 2})
	if err != nil {
		h.t.Fatal(err)
	}
	if len(list) != 2 || list[0] != ids.ReturnID(list[0].Task(), 1) || list[1] != ids.ReturnID(list[0].Task(), 2) {
		h.t.Fatalf("SubmitReturns = %v", list)
	}
	return list[0], list[1]
}

func returns(data ...string) []*pb.ReturnValue {
	out := make([]*pb.ReturnValue, len(data))
	for i, d := range data {
		out[i] = &pb.ReturnValue{Data: []byte(d), Size: int64(len(d))}
	}
	return out
}

// TestSeveralReturns: each return of a task of two gets its own value; a worker that
// answers with another count fails both, saying so; a cancelled one fails both.
func TestSeveralReturns(t *testing.T) {
	h := newHarness(t)
	a, b := h.submit2()
	s := h.spec()
	if s.NumReturns != 2 {
		t.Fatalf("spec asks for %d returns, want 2", s.NumReturns)
	}
	h.reply(&pb.TaskResult{TaskId: s.TaskId, Returns: returns("one", "two")})
	if v, err := h.get(b); err != nil || string(v) != "two" {
		t.Fatalf("Get(second) = %q, %v", v, err)
	}
	if v, err := h.get(a); err != nil || string(v) != "one" {
		t.Fatalf("Get(first) = %q, %v", v, err)
	}

	a, b = h.submit2()
	s = h.spec()
	h.reply(&pb.TaskResult{TaskId: s.TaskId, Returns: returns("only one")})
	for _, id := range []ids.ObjectID{a, b} {
		if _, err := h.get(id); err == nil || !strings.Contains(err.Error(), "answered with 1 returns, want 2") {
			t.Fatalf("a result with too few returns: %v", err)
		}
	}

	a, b = h.submit2()
	s = h.spec()
	if err := h.c.Cancel(b); err != nil {
		t.Fatal(err)
	}
	h.reply(&pb.TaskResult{TaskId: s.TaskId, Error: &pb.ErrorInfo{Kind: pb.ErrorInfo_CANCELLED, Message: "cancelled"}})
	for _, id := range []ids.ObjectID{a, b} {
		if _, err := h.get(id); err == nil || !strings.Contains(err.Error(), "cancelled") {
			t.Fatalf("a cancelled task's return: %v", err)
		}
	}
}

// TestSeveralReturnsCalledAsOne: a function of two returns submitted for one fails at
// submission, naming both counts.
func TestSeveralReturnsCalledAsOne(t *testing.T) {
	h := newHarness(t)
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	_, _, err := h.c.Submit(h.tc, Call{Function: "core_test.f2", Resources: res})
	if err == nil || !strings.Contains(err.Error(), "returns 2 values, but was called for 1") {
		t.Fatalf("Submit of a function of two returns for one: %v", err)
	}
}

// TestSeveralReturnsOneRecreated: recreating the second return runs the task again; the
// second takes the new value, the first keeps its own.
func TestSeveralReturnsOneRecreated(t *testing.T) {
	h := newHarness(t)
	a, b := h.submit2()
	s := h.spec()
	h.reply(&pb.TaskResult{TaskId: s.TaskId, Returns: returns("one", "two")})
	if v, err := h.get(b); err != nil || string(v) != "two" {
		t.Fatalf("Get(second) = %q, %v", v, err)
	}
	if !h.c.reconstruct(b) {
		t.Fatal("the second return cannot be reconstructed")
	}
	r := h.spec()
	if id, _ := ids.TaskIDFromBytes(r.TaskId); id != a.Task() || r.Attempt != 1 || r.NumReturns != 2 {
		t.Fatalf("dispatched %x attempt %d (%d returns), want the rerun of %s", r.TaskId, r.Attempt, r.NumReturns, a.Task())
	}
	h.reply(&pb.TaskResult{TaskId: r.TaskId, Attempt: r.Attempt, Returns: returns("one again", "two again")})
	if v, err := h.get(b); err != nil || string(v) != "two again" {
		t.Fatalf("Get(second) after its rerun = %q, %v", v, err)
	}
	if v, err := h.get(a); err != nil || string(v) != "one" {
		t.Fatalf("Get(first) after the rerun = %q, %v; want its own value kept", v, err)
	}
}
