package core

import (
	"time"

	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestRerunHoldsArgumentsBeforeReadingThem: a task run again by lineage reconstruction
// (here a reduce, which reads a map output through a ref inside its by-value argument, as
// Ray Data's exchange does) holds its arguments before it reads their facts. The map
// output is ready when the rerun looks at it, and its last other reference is dropped
// right after (afterArgFacts: in a process, a decoded handle's cleanup runs at any time).
// Had the rerun read first and held after, that release would free the value, the rerun
// would not recreate it (it was ready), and the task would run against an object its
// owner no longer knows: "object is unknown to this process"
// (data.TestLostExchangeOutputsRecreated's flake).
func TestRerunHoldsArgumentsBeforeReadingThem(t *testing.T) {
	h := newHarness(t)
	m := h.submit() // the map
	sm := h.spec()
	h.reply(&pb.TaskResult{TaskId: sm.TaskId, Data: []byte("map output")})
	if v, err := h.get(m); err != nil || string(v) != "map output" {
		t.Fatalf("Get(map) = %q, %v", v, err)
	}
	// The reduce takes the map output as a ref inside a by-value argument: its lineage
	// record holds it (lineageArgs).
	r := h.submit(Arg{Data: []byte("pieces"), Nested: []Nested{{ID: m, Owner: h.c.OwnerPID()}}})
	sr := h.spec()
	h.reply(&pb.TaskResult{TaskId: sr.TaskId, Data: []byte("reduce output")})
	if v, err := h.get(r); err != nil || string(v) != "reduce output" {
		t.Fatalf("Get(reduce) = %q, %v", v, err)
	}

	// The reduce output is lost; its rerun reads the map output's facts (ready), and
	// then the driver's handle, the map output's last reference but the rerun's, goes.
	released := false
	afterArgFacts = func() {
		if !released {
			released = true
			h.c.ReleaseOwned(m, nil, true)
		}
	}
	t.Cleanup(func() { afterArgFacts = nil })
	if !h.c.reconstruct(r) {
		t.Fatal("the reduce output cannot be reconstructed")
	}
	s := h.spec() // the reduce's rerun, dispatched
	if id, _ := ids.TaskIDFromBytes(s.TaskId); id != r.Task() || s.Attempt != 1 {
		t.Fatalf("dispatched %x attempt %d, want the reduce's rerun %s attempt 1", s.TaskId, s.Attempt, r.Task())
	}
	if !released {
		t.Fatal("the rerun did not read its arguments' facts")
	}
	// What the rerun reads when it runs: the map output, still there.
	if v, err := h.get(m); err != nil || string(v) != "map output" {
		t.Fatalf("the rerun reads its map output: %q, %v", v, err)
	}
	h.reply(&pb.TaskResult{TaskId: s.TaskId, Attempt: s.Attempt, Data: []byte("reduce output")})
	if v, err := h.get(r); err != nil || string(v) != "reduce output" {
		t.Fatalf("Get(reduce) after the rerun = %q, %v", v, err)
	}
	// The rerun gave its hold back: the map output's value is freed, its lineage record
	// kept (the reduce's record holds it), as before the rerun.
	if !within(5*time.Second, func() bool { _, _, known := h.c.mem.Get(m); return !known }) {
		t.Fatal("the map output's value outlived the rerun that held it")
	}
	if h.c.refs.Spec(m.Task()) == nil {
		t.Fatal("the map output's lineage record went while the reduce's record holds it")
	}
}
