package core

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// eventShard is a shard with only what recording needs, keeping at most budget records.
func eventShard(budget int64) *shard {
	c := &Core{clock: newClock(), cfg: Config{Node: "node-a", Job: "job-1"}}
	c.evBudget = new(atomic.Int64)
	c.evBudget.Store(budget)
	s := &shard{c: c, tasks: map[ids.TaskID]*pending{}}
	s.ev.init(c.evBudget)
	return s
}

// runOne records one finished (or failed, with msg) attempt of a task of fn on worker w.
func runOne(s *shard, fn string, w *actor.PID, msg string) *pending {
	p := newPending(ids.NewRootTaskID())
	p.spec.Function = fn
	p.worker = w
	p.ev.submit = s.c.clock.now()
	s.ev.now = 0
	r := &pb.TaskResult{RunNanos: 1000}
	if msg != "" {
		r.Error = &pb.ErrorInfo{Kind: pb.ErrorInfo_APPLICATION, Message: msg}
	}
	s.evResult(p, r)
	s.evEnded(p, r)
	return p
}

func TestEventRingKeepsTheNewest(t *testing.T) {
	s := eventShard(2 * eventChunk)
	w := actor.NewPID("addr", "worker/1")
	var last []*pending
	n := 5*eventChunk + 7
	for i := range n {
		p := runOne(s, "f", w, "")
		if i >= n-3 {
			last = append(last, p)
		}
	}
	if got := s.ev.recs.capacity(); got != 2*eventChunk {
		t.Fatalf("capacity %d, want the budget %d", got, 2*eventChunk)
	}
	rep := s.answer(&TaskQuery{Limit: 3}, nil)
	if rep.Total != 2*eventChunk || rep.Dropped != int64(n-2*eventChunk) || len(rep.Tasks) != 3 {
		t.Fatalf("total %d dropped %d shown %d", rep.Total, rep.Dropped, len(rep.Tasks))
	}
	for i, ev := range rep.Tasks { // newest first
		if want := last[2-i].tid.String(); ev.TaskID != want || ev.State != StateFinished || ev.Worker != "worker/1" || ev.Node != "node-a" {
			t.Errorf("task %d: %+v, want ID %s", i, ev, want)
		}
	}
}

func TestEventQueries(t *testing.T) {
	s := eventShard(DefaultTaskEvents)
	w1, w2 := actor.NewPID("a", "worker/1"), actor.NewPID("a", "worker/2")
	for range 10 {
		runOne(s, "ok", w1, "")
	}
	bad := runOne(s, "bad", w2, "it broke")
	// A live task waiting for a worker.
	live := newPending(ids.NewRootTaskID())
	live.spec.Function = "ok"
	s.tasks[live.tid] = live

	rep := s.answer(&TaskQuery{State: StateFailed}, nil)
	if len(rep.Tasks) != 1 || rep.Tasks[0].TaskID != bad.tid.String() || rep.Tasks[0].Error != "it broke" || rep.Tasks[0].ErrorKind != "APPLICATION" {
		t.Errorf("failed: %+v", rep.Tasks)
	}
	if rep := s.answer(&TaskQuery{State: StatePendingNode}, nil); len(rep.Tasks) != 1 || rep.Tasks[0].TaskID != live.tid.String() {
		t.Errorf("pending: %+v", rep.Tasks)
	}
	if rep := s.answer(&TaskQuery{Function: "ok", Limit: 4}, nil); rep.Total != 11 || len(rep.Tasks) != 4 || rep.Tasks[0].TaskID != live.tid.String() {
		t.Errorf("by function: total %d, %d shown, first %+v", rep.Total, len(rep.Tasks), rep.Tasks)
	}
	if rep := s.answer(&TaskQuery{TaskID: bad.tid.String()[:8]}, nil); len(rep.Tasks) != 1 {
		t.Errorf("by ID prefix: %+v", rep.Tasks)
	}
	if rep := s.answer(&TaskQuery{Node: "node-b"}, nil); rep.Total != 0 {
		t.Errorf("another node's: %+v", rep.Tasks)
	}
	if rep := s.answer(&TaskQuery{Worker: "worker/2"}, nil); rep.Total != 1 || len(rep.Tasks) != 1 || rep.Tasks[0].TaskID != bad.tid.String() {
		t.Errorf("by worker: %+v", rep.Tasks)
	}
	if rep := s.answer(&TaskQuery{Worker: "worker/3"}, nil); rep.Total != 0 {
		t.Errorf("by a worker that ran nothing: %+v", rep.Tasks)
	}
	rep = s.answer(&TaskQuery{Summary: true, Limit: 1}, nil)
	want := map[string]int{"ok/" + StateFinished: 10, "ok/" + StatePendingNode: 1, "bad/" + StateFailed: 1}
	for _, c := range rep.Summary {
		if want[c.Function+"/"+c.State] != c.Count {
			t.Errorf("summary %+v", c)
		}
		delete(want, c.Function+"/"+c.State)
	}
	if len(want) != 0 {
		t.Errorf("summary lacks %v", want)
	}
}

// The where table holds what the kept records use: a process that calls actor after actor
// (and runs tasks on worker after worker) for its whole life keeps its records' places,
// not every actor's ID it ever called.
func TestEventWheresAreReusedWithTheRing(t *testing.T) {
	s := eventShard(eventChunk)
	r := &pb.TaskResult{RunNanos: 1000}
	const calls = 25 * eventChunk
	hexes := make([]string, calls)
	for i := range calls {
		p := newPending(ids.NewRootTaskID())
		p.spec.Function = "f"
		if i%3 == 0 { // a task on a worker of its own
			p.worker = actor.NewPID("a", "worker/"+strconv.Itoa(i))
			hexes[i] = p.worker.Id
			s.evResult(p, r)
		} else { // a call to an actor of its own
			hexes[i] = fmt.Sprintf("actor-%06d", i)
			p.actor = &actorCaller{hex: hexes[i]}
		}
		s.ev.now = 0
		s.evEnded(p, r)
	}
	if n := len(s.ev.wheres); n > 3*eventChunk {
		t.Errorf("%d wheres for a ring of %d records (%d calls)", n, eventChunk, calls)
	}
	if n := len(s.ev.whereOf); n > 3*eventChunk {
		t.Errorf("%d interned workers for a ring of %d records", n, eventChunk)
	}
	rep := s.answer(&TaskQuery{Limit: eventChunk}, nil)
	if len(rep.Tasks) != eventChunk {
		t.Fatalf("%d records shown, want %d", len(rep.Tasks), eventChunk)
	}
	for i, ev := range rep.Tasks { // newest first
		want := hexes[calls-1-i]
		if ev.Worker != want || ev.Actor != strings.HasPrefix(want, "actor-") || (ev.Node == "") == !ev.Actor {
			t.Fatalf("record %d from the newest: worker %q actor %v node %q, want worker %q", i, ev.Worker, ev.Actor, ev.Node, want)
		}
	}
	if rep := s.answer(&TaskQuery{Worker: hexes[calls-1]}, nil); rep.Total != 1 {
		t.Errorf("by the newest actor: %d records, want 1", rep.Total)
	}
	if rep := s.answer(&TaskQuery{Worker: hexes[0]}, nil); rep.Total != 0 {
		t.Errorf("by an actor whose records are gone: %d records", rep.Total)
	}
}

// A record is 88 bytes: what DefaultTaskEvents's memory figure (options.go, README) says.
func TestEventRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(eventRec{}); n != 88 {
		t.Fatalf("eventRec is %d bytes; update the memory figures of DefaultTaskEvents and WithTaskEvents", n)
	}
}

// Recording allocates nothing once the ring has its chunks.
func TestEventRecordingAllocatesNothing(t *testing.T) {
	s := eventShard(eventChunk)
	w := actor.NewPID("addr", "worker/1")
	p := newPending(ids.NewRootTaskID())
	p.spec.Function = "f"
	p.worker = w
	r := &pb.TaskResult{RunNanos: 1000}
	for range eventChunk + 1 {
		s.evResult(p, r)
		s.evEnded(p, r)
	}
	if a := testing.AllocsPerRun(1000, func() {
		s.ev.now = 0
		s.evResult(p, r)
		s.evEnded(p, r)
	}); a != 0 {
		t.Fatalf("%v allocations per record", a)
	}
	if !strings.HasPrefix(stateName(stateCodeFinished), "FINISHED") {
		t.Fatal(stateName(stateCodeFinished))
	}
}

// BenchmarkEventRecord is what recording costs a task on its shard: the result's clock
// read and worker lookup, and the record.
func BenchmarkEventRecord(b *testing.B) {
	s := eventShard(DefaultTaskEvents)
	w := actor.NewPID("addr", "worker/1")
	p := newPending(ids.NewRootTaskID())
	p.spec.Function = "f"
	p.worker = w
	r := &pb.TaskResult{RunNanos: 1000}
	b.ReportAllocs()
	for b.Loop() {
		s.ev.now = 0
		s.evResult(p, r)
		s.evEnded(p, r)
	}
}

// BenchmarkEventRecordWrapped is BenchmarkEventRecord once the ring is full (no new
// memory: what a process past its retention pays).
func BenchmarkEventRecordWrapped(b *testing.B) {
	s := eventShard(4 * eventChunk)
	w := actor.NewPID("addr", "worker/1")
	p := newPending(ids.NewRootTaskID())
	p.spec.Function = "f"
	p.worker = w
	r := &pb.TaskResult{RunNanos: 1000}
	for range 4*eventChunk + 1 {
		s.evEnded(p, r)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.ev.now = 0
		s.evResult(p, r)
		s.evEnded(p, r)
	}
}

// With more live tasks than the limit, the newest are shown.
func TestEventLiveTasksNewestFirst(t *testing.T) {
	s := eventShard(DefaultTaskEvents)
	var newest *pending
	for i := range 50 {
		p := newPending(ids.NewRootTaskID())
		p.spec.Function = "f"
		p.ev.submit = int64(1000 + i)
		s.tasks[p.tid] = p
		newest = p
	}
	rep := s.answer(&TaskQuery{Limit: 1}, nil)
	if rep.Total != 50 || len(rep.Tasks) != 1 || rep.Tasks[0].TaskID != newest.tid.String() || rep.Tasks[0].State != StatePendingNode {
		t.Fatalf("total %d, shown %+v, want %s", rep.Total, rep.Tasks, newest.tid)
	}
}

// TestEventCountsOutliveRetention: a counts query counts every ended attempt by function and
// state, also those the ring no longer keeps, plus the live tasks, and lists no task.
func TestEventCountsOutliveRetention(t *testing.T) {
	s := eventShard(eventChunk)
	w := actor.NewPID("a", "worker/1")
	n := 3*eventChunk + 5
	for range n {
		runOne(s, "ok", w, "")
	}
	runOne(s, "bad", w, "it broke")
	live := newPending(ids.NewRootTaskID())
	live.spec.Function = "ok"
	s.tasks[live.tid] = live

	rep := s.answer(&TaskQuery{Counts: true, State: StateFailed, Limit: 1}, nil)
	want := []TaskCount{{Function: "bad", State: StateFailed, Count: 1}, {Function: "ok", State: StateFinished, Count: n},
		{Function: "ok", State: StatePendingNode, Count: 1}}
	if len(rep.Tasks) != 0 || rep.Total != n+2 || len(rep.Summary) != len(want) {
		t.Fatalf("tasks %d total %d summary %+v", len(rep.Tasks), rep.Total, rep.Summary)
	}
	for i := range want {
		if rep.Summary[i] != want[i] {
			t.Errorf("summary[%d] = %+v, want %+v", i, rep.Summary[i], want[i])
		}
	}
	// The ring kept only its budget; the plain query sees that many.
	if all := s.answer(&TaskQuery{}, nil); all.Total != eventChunk+1 {
		t.Errorf("records kept %d, want %d", all.Total, eventChunk+1)
	}
}

// BenchmarkEventCounts is what a metrics scrape costs a shard: a counts query with 100,000
// ended attempts of 20 functions and 10,000 live tasks.
func BenchmarkEventCounts(b *testing.B) {
	s := eventShard(DefaultTaskEvents)
	w := actor.NewPID("addr", "worker/1")
	for i := range 100_000 {
		runOne(s, "f"+strconv.Itoa(i%20), w, "")
	}
	for range 10_000 {
		p := newPending(ids.NewRootTaskID())
		p.spec.Function = "live"
		s.tasks[p.tid] = p
	}
	b.ReportAllocs()
	for b.Loop() {
		s.answer(&TaskQuery{Counts: true}, nil)
	}
}

// A record keeps where its attempt's output is in its worker's log (TaskResult.log_start,
// log_end), which `rayctl logs task` reads.
func TestEventLogOffsets(t *testing.T) {
	s := eventShard(eventChunk)
	p := newPending(ids.NewRootTaskID())
	p.spec.Function = "f"
	p.worker = actor.NewPID("addr", "worker/1")
	r := &pb.TaskResult{RunNanos: 1000, LogStart: 4096, LogEnd: 4200}
	s.evResult(p, r)
	s.evEnded(p, r)
	rep := s.answer(&TaskQuery{}, nil)
	if len(rep.Tasks) != 1 || rep.Tasks[0].LogStart != 4096 || rep.Tasks[0].LogEnd != 4200 {
		t.Fatalf("tasks %+v, want log offsets 4096-4200", rep.Tasks)
	}
}

// A caller notes the node of each placed incarnation of its actor (the task events show
// a call on the node of the incarnation that ran it), the newest maxIncNodes.
func TestActorCallerIncarnationNodes(t *testing.T) {
	var ac actorCaller
	ac.noteNode(&pb.ActorInfo{Incarnation: 1}) // not placed yet: nothing to note
	if len(ac.incNodes) != 0 {
		t.Fatalf("noted %v for an unplaced incarnation", ac.incNodes)
	}
	ac.noteNode(&pb.ActorInfo{Incarnation: 1, Node: "a"})
	ac.noteNode(&pb.ActorInfo{Incarnation: 1, Node: "a"})
	ac.noteNode(&pb.ActorInfo{Incarnation: 2, Node: "b"})
	if got := [3]string{ac.nodeOf(1), ac.nodeOf(2), ac.nodeOf(3)}; got != [3]string{"a", "b", ""} || len(ac.incNodes) != 2 {
		t.Fatalf("nodes of incarnations 1, 2, 3: %q (%v)", got, ac.incNodes)
	}
	for i := uint64(3); i < 3+2*maxIncNodes; i++ {
		ac.noteNode(&pb.ActorInfo{Incarnation: i, Node: fmt.Sprint("n", i)})
	}
	last := uint16(2 + 2*maxIncNodes)
	if len(ac.incNodes) != maxIncNodes || ac.nodeOf(1) != "" || ac.nodeOf(last) != fmt.Sprint("n", last) {
		t.Fatalf("after many restarts: %d noted, incarnation 1 on %q, %d on %q", len(ac.incNodes), ac.nodeOf(1), last, ac.nodeOf(last))
	}
	ac.noteNode(&pb.ActorInfo{Incarnation: 1 << 40, Node: "z"}) // saturates
	if ac.nodeOf(maxInc) != "z" {
		t.Fatalf("incarnation past %d: %q", maxInc, ac.nodeOf(maxInc))
	}
}

// TestEventRunningHasStarted: a task pushed to its worker (RUNNING) shows when it was
// pushed as its start (Ray's start_time_ms of a running task); one still waiting for a
// worker shows none.
func TestEventRunningHasStarted(t *testing.T) {
	s := eventShard(DefaultTaskEvents)
	running := newPending(ids.NewRootTaskID())
	running.spec.Function = "f"
	running.worker = actor.NewPID("a", "worker/1")
	running.ev.submit, running.ev.dispatch = 1000, 2000
	s.tasks[running.tid] = running
	waiting := newPending(ids.NewRootTaskID())
	waiting.spec.Function = "f"
	waiting.ev.submit = 1500
	s.tasks[waiting.tid] = waiting

	rep := s.answer(&TaskQuery{State: StateRunning}, nil)
	if len(rep.Tasks) != 1 || rep.Tasks[0].TaskID != running.tid.String() || rep.Tasks[0].Started != 2000 || rep.Tasks[0].Ended != 0 {
		t.Errorf("running: %+v, want started 2000 (when it was pushed), not ended", rep.Tasks)
	}
	rep = s.answer(&TaskQuery{State: StatePendingNode}, nil)
	if len(rep.Tasks) != 1 || rep.Tasks[0].Started != 0 {
		t.Errorf("waiting: %+v, want no start", rep.Tasks)
	}
}
