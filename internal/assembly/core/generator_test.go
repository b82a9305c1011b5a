package core

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

func init() {
	if err := tasks.Register(&tasks.Function{Name: "core_test.gen", Streaming: true, Call: func(context.Context, [][]byte) ([]byte, error) { return nil, nil }}); err != nil {
		panic(err)
	}
}

func (h *harness) submitGen(maxRetries int32) *Generator {
	h.t.Helper()
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	g, err := h.c.SubmitGenerator(h.tc, Call{Function: "core_test.gen", Resources: res, MaxRetries: maxRetries}, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return g
}

// yield sends item index of the task s as its worker would, and waits for the ack.
func (h *harness) yield(s *pb.TaskSpec, index uint32, data string) {
	h.yieldAt(s, s.Attempt, index, data)
}

// yieldAt is yield for attempt (the fake node hands out the owner's spec, which a retry
// changes).
func (h *harness) yieldAt(s *pb.TaskSpec, attempt int32, index uint32, data string) {
	h.t.Helper()
	to := actor.NewPID(s.ReplyTo.Address, s.ReplyTo.Id)
	res, err := h.c.root.RequestFuture(to, &pb.GeneratorItem{TaskId: s.TaskId, Attempt: attempt, Index: index,
		Value: &pb.ReturnValue{Data: []byte(data), Size: int64(len(data))}}, 5*time.Second).Result()
	if a, ok := res.(*pb.GeneratorItemAck); err != nil || !ok || a.Index != index {
		h.t.Fatalf("item %d: answer %v, %v", index, res, err)
	}
}

// next reads the generator's next item's value.
func (h *harness) next(g *Generator) (string, error) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := g.Next(ctx, h.tc)
	if err != nil {
		return "", err
	}
	if id.Task() != g.Task() {
		h.t.Fatalf("item %s is not of the generator's task %s", id, g.Task())
	}
	v, err := h.get(id)
	return string(v), err
}

// TestGeneratorRetryKeepsItsItems: an attempt of a generator fails for a system reason
// (its worker died) after two items; the retry yields them again, with other values here
// to tell them apart, and a third: the stream keeps the two it had and goes on.
func TestGeneratorRetryKeepsItsItems(t *testing.T) {
	h := newHarness(t)
	g := h.submitGen(2)
	s := h.spec()
	if s.NumReturns != pb.StreamingReturns {
		t.Fatalf("spec asks for %d returns, want a stream", s.NumReturns)
	}
	h.yield(s, 1, "a")
	h.yield(s, 2, "b")
	if v, err := h.next(g); err != nil || v != "a" {
		t.Fatalf("item 1 = %q, %v", v, err)
	}
	h.reply(&pb.TaskResult{TaskId: s.TaskId, Error: &pb.ErrorInfo{Kind: pb.ErrorInfo_SYSTEM, Message: "worker died"}})
	r := h.spec()
	if id, _ := ids.TaskIDFromBytes(r.TaskId); id != g.Task() || r.Attempt != 1 {
		t.Fatalf("dispatched %x attempt %d, want the retry of %s", r.TaskId, r.Attempt, g.Task())
	}
	h.yieldAt(s, 0, 3, "stale") // the failed attempt's: acked, dropped
	h.yield(r, 1, "A")
	h.yield(r, 2, "B")
	h.yield(r, 3, "C")
	h.reply(&pb.TaskResult{TaskId: r.TaskId, Attempt: 1})
	for _, want := range []string{"b", "C"} {
		if v, err := h.next(g); err != nil || v != want {
			t.Fatalf("item = %q, %v; want %q", v, err, want)
		}
	}
	if _, err := h.next(g); !errors.Is(err, ErrGeneratorDone) {
		t.Fatalf("after the last item: %v", err)
	}
}

// TestGeneratorFailsAfterItsItems: without retries, a failed attempt ends the stream with
// its error after the items it yielded; a stream with no item releases its first return.
func TestGeneratorFailsAfterItsItems(t *testing.T) {
	h := newHarness(t)
	g := h.submitGen(0)
	s := h.spec()
	h.yield(s, 1, "a")
	h.reply(&pb.TaskResult{TaskId: s.TaskId, Error: &pb.ErrorInfo{Kind: pb.ErrorInfo_SYSTEM, Message: "worker died"}})
	if v, err := h.next(g); err != nil || v != "a" {
		t.Fatalf("item 1 = %q, %v", v, err)
	}
	var oe *ObjectError
	if _, err := h.next(g); !errors.As(err, &oe) || !strings.Contains(oe.Info.Message, "worker died") {
		t.Fatalf("after the failed attempt's items: %v", err)
	}

	g = h.submitGen(0)
	s = h.spec()
	h.reply(&pb.TaskResult{TaskId: s.TaskId})
	if _, err := h.next(g); !errors.Is(err, ErrGeneratorDone) {
		t.Fatalf("an empty stream: %v", err)
	}
	first := ids.ReturnID(g.Task(), 1)
	if _, _, known := h.c.mem.Get(first); known || h.c.refs.HasLineage(g.Task()) {
		t.Fatal("an empty stream's first return (and lineage record) outlived it")
	}
}
