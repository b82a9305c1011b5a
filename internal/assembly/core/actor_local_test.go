package core

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/dispatch"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// localActors is a Core whose actors are one fake grain in the same actor system (the
// calls it gets go to calls), every actor Alive on node n1 at the incarnation set with
// setInc, and a count of the results its shards got as messages.
type localActors struct {
	c       *Core
	calls   chan *pb.ActorCall
	results atomic.Int32 // *pb.TaskResult and *pb.ResultBatch messages handled by the shards
	mu      sync.Mutex
	inc     uint64
	dead    map[string]bool // actors (hex) whose records say Dead (setDead)
}

func newLocalActors(t *testing.T) *localActors {
	t.Helper()
	sys, quiet := quietSystem(t)
	la := &localActors{calls: make(chan *pb.ActorCall, 256), inc: 1}
	grain := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *pb.ActorCall:
			la.calls <- m
		case *pb.ActorCallBatch:
			for _, x := range m.Calls {
				la.calls <- x
			}
		}
	}))
	counter := &dispatch.Counter{Tap: func(_ string, m any) {
		switch actor.UnwrapEnvelopeMessage(m).(type) {
		case *pb.TaskResult, *pb.ResultBatch:
			la.results.Add(1)
		}
	}}
	local := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	c, err := New(Config{Job: "j", Node: "n1", System: sys, Messages: counter,
		Raylet: func() *actor.PID { return local }, Store: func() *actor.PID { return local },
		Feasible: func(sched.Resources) error { return nil }, Logger: quiet,
		Actors: &ActorConfig{
			Info: func(hex string) (*pb.ActorInfo, bool) { return la.info(hex), true },
			PID:  func(string) *actor.PID { return grain },
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	la.c = c
	return la
}

func (la *localActors) info(hex string) *pb.ActorInfo {
	id, _ := ids.ParseActorID(hex)
	la.mu.Lock()
	defer la.mu.Unlock()
	if la.dead[hex] {
		return &pb.ActorInfo{ActorId: id[:], Incarnation: la.inc, Phase: int32(lifecycle.Dead)} // a dead record names no node
	}
	return &pb.ActorInfo{ActorId: id[:], Incarnation: la.inc, Node: "n1", Phase: int32(lifecycle.Alive)}
}

// setDead makes actor id's record say Dead from now on, and returns it.
func (la *localActors) setDead(id ids.ActorID) *pb.ActorInfo {
	la.mu.Lock()
	if la.dead == nil {
		la.dead = map[string]bool{}
	}
	la.dead[id.String()] = true
	la.mu.Unlock()
	return la.info(id.String())
}

func (la *localActors) setInc(inc uint64) {
	la.mu.Lock()
	la.inc = inc
	la.mu.Unlock()
}

// call submits a call to actor id and returns its result's ID and the call as the actor
// got it.
func (la *localActors) call(t *testing.T, tc *TaskContext, id ids.ActorID) (ids.ObjectID, *pb.ActorCall) {
	t.Helper()
	oid, _, err := la.c.SubmitActorCall(tc, id, "m", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return oid, la.next(t)
}

func (la *localActors) next(t *testing.T) *pb.ActorCall {
	t.Helper()
	select {
	case m := <-la.calls:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("the actor got no call")
		return nil
	}
}

// ended returns the ended records of actor id's calls by task, and how many are live.
func (la *localActors) ended(t *testing.T, ctx context.Context, id ids.ActorID) (map[string][]string, int) {
	t.Helper()
	rep, err := la.c.Tasks(ctx, TaskQuery{Worker: id.String()})
	if err != nil {
		t.Fatal(err)
	}
	out, live := map[string][]string{}, 0
	for _, e := range rep.Tasks {
		switch e.State {
		case StateFinished, StateFailed, StateCancelled:
			out[e.TaskID] = append(out[e.TaskID], e.State)
		default:
			live++
		}
	}
	return out, live
}

func (la *localActors) unfinished(id ids.ActorID) int {
	n := 0
	for _, ac := range la.c.callersOf(id) {
		ac.mu.Lock()
		n += ac.calls.Unfinished()
		ac.mu.Unlock()
	}
	return n
}

// TestLocalResultsSkipTheShard: the results of calls to an actor in this process are taken
// by the caller from the actor's executor (LocalResults, actors.Env.Local): the submitter's
// Get returns them with no result message to the shard, whether the call left through the
// outbox (the first, the instance unknown) or straight from its submitter (the rest:
// sendDirect, so each is completed before its shard registers it), one result at a time
// or as an executor's flush hands them over (a batch, here with calls sent through the
// outbox too). Each call is finished for its caller, gets one task record, and none stays
// live. The same result again (a duplicate answer, alone or in a batch) goes to the
// shard, which drops it; the value stays, and the batch's other results are taken. A
// caller in another process, or of an actor it never called, gets no local function: its
// results come as messages.
func TestLocalResultsSkipTheShard(t *testing.T) {
	la := newLocalActors(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tc := la.c.NewDriver()
	id := ids.NewActorID()
	const n, batch = 20, 40 // the batch: three of takeLocal's chunks
	var local func([]uint64, []*pb.TaskResult)
	var first *pb.ActorCall
	oids := make([]ids.ObjectID, 0, n+batch)
	for i := range n {
		oid, m := la.call(t, tc, id)
		oids = append(oids, oid)
		if local == nil {
			first = m
			if local = la.c.LocalResults(m.Spec.ReplyTo, id); local == nil {
				t.Fatal("no local function for a shard of this runtime")
			}
			if f := la.c.LocalResults(&pb.PID{Address: "elsewhere:1", Id: m.Spec.ReplyTo.Id}, id); f != nil {
				t.Fatal("a local function for an owner in another process")
			}
			if f := la.c.LocalResults(m.Spec.ReplyTo, ids.NewActorID()); f != nil {
				t.Fatal("a local function for an actor this runtime never called")
			}
		}
		local([]uint64{m.Seq}, []*pb.TaskResult{{TaskId: m.Spec.TaskId, Data: []byte{byte(i)}, RunNanos: 1000}})
		v, err := tc.Get(ctx, oid)
		if err != nil || !bytes.Equal(v, []byte{byte(i)}) {
			t.Fatalf("call %d: Get = %v, %v; want [%d]", i+1, v, err, i)
		}
	}
	if got := la.results.Load(); got != 0 {
		t.Fatalf("%d result messages reached the shards, want 0", got)
	}
	if u := la.unfinished(id); u != 0 {
		t.Fatalf("the caller has %d unfinished calls, want 0", u)
	}
	ended, live := la.ended(t, ctx, id)
	if live != 0 || len(ended) != n {
		t.Fatalf("%d live calls and %d ended, want 0 and %d", live, len(ended), n)
	}
	for tid, states := range ended {
		if len(states) != 1 || states[0] != StateFinished {
			t.Fatalf("call %s: records %v, want one FINISHED", tid, states)
		}
	}
	// The first call's result again: not unfinished, so it goes to the shard, which drops it.
	local([]uint64{first.Seq}, []*pb.TaskResult{{TaskId: first.Spec.TaskId, Data: []byte("again")}})
	if ended, _ = la.ended(t, ctx, id); len(ended) != n || la.results.Load() != 1 {
		t.Fatalf("after a duplicate: %d ended calls, %d result messages; want %d and 1", len(ended), la.results.Load(), n)
	}
	// A burst (more than directMax unfinished, so the later calls leave through the
	// outbox), answered in one batch with the first call's duplicate in its middle.
	var seqs []uint64
	var rs []*pb.TaskResult
	for i := range batch {
		oid, m := la.call(t, tc, id)
		oids = append(oids, oid)
		seqs = append(seqs, m.Seq)
		rs = append(rs, &pb.TaskResult{TaskId: m.Spec.TaskId, Data: []byte{byte(n + i)}, RunNanos: 1000})
		if i == batch/2 {
			seqs = append(seqs, first.Seq)
			rs = append(rs, &pb.TaskResult{TaskId: first.Spec.TaskId, Data: []byte("again")})
		}
	}
	local(seqs, rs)
	for i := n; i < n+batch; i++ {
		if v, err := tc.Get(ctx, oids[i]); err != nil || !bytes.Equal(v, []byte{byte(i)}) {
			t.Fatalf("call %d (a batch's): Get = %v, %v; want [%d]", i+1, v, err, i)
		}
	}
	if u := la.unfinished(id); u != 0 {
		t.Fatalf("after the batch the caller has %d unfinished calls, want 0", u)
	}
	if ended, live = la.ended(t, ctx, id); live != 0 || len(ended) != n+batch || la.results.Load() != 2 {
		t.Fatalf("after the batch: %d live calls, %d ended, %d result messages; want 0, %d and 2", live, len(ended), la.results.Load(), n+batch)
	}
	if v, err := tc.Get(ctx, oids[0]); err != nil || !bytes.Equal(v, []byte{0}) {
		t.Fatalf("after two duplicates, call 1's value = %v, %v; want [0]", v, err)
	}
}

// TestLocalResultRacesDeath: a call's result taken from the executor and its actor's
// death (which fails every unfinished call through the shard) race: exactly one of them
// completes the call, its value stays what that one set, and it has one task record.
func TestLocalResultRacesDeath(t *testing.T) {
	la := newLocalActors(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tc := la.c.NewDriver()
	const rounds = 16
	type round struct {
		id  ids.ActorID
		oid ids.ObjectID
	}
	var rs []round
	for range rounds {
		id := ids.NewActorID()
		oid, m := la.call(t, tc, id)
		local := la.c.LocalResults(m.Spec.ReplyTo, id)
		ac := la.c.callersOf(id)[0]
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			local([]uint64{m.Seq}, []*pb.TaskResult{{TaskId: m.Spec.TaskId, Data: []byte("ok")}})
		}()
		go func() { defer wg.Done(); la.c.actorDied(ac, errors.New("the test killed it")) }()
		wg.Wait()
		rs = append(rs, round{id, oid})
	}
	for i, r := range rs {
		v, err := tc.Get(ctx, r.oid)
		if (err == nil) == (v == nil) || (err == nil && string(v) != "ok") {
			t.Fatalf("round %d: Get = %q, %v; want ok or the death", i, v, err)
		}
		ended, live := la.ended(t, ctx, r.id)
		if live != 0 || len(ended) != 1 {
			t.Fatalf("round %d: %d live calls, ended %v; want one ended call", i, live, ended)
		}
		for _, states := range ended {
			if len(states) != 1 {
				t.Fatalf("round %d: records %v, want one", i, states)
			}
		}
		v2, err2 := tc.Get(ctx, r.oid)
		if !bytes.Equal(v, v2) || (err == nil) != (err2 == nil) {
			t.Fatalf("round %d: the value changed: %q, %v then %q, %v", i, v, err, v2, err2)
		}
		if u := la.unfinished(r.id); u != 0 {
			t.Fatalf("round %d: %d unfinished calls", i, u)
		}
	}
}

// TestLocalResultsAcrossARestart: a call in flight when its actor restarts is resent to
// the new instance; the old instance's result, taken from its executor, completes it, and
// the new instance's answer to the resend (a duplicate by then) goes to the shard, which
// drops it: the call completes once, with the first result.
func TestLocalResultsAcrossARestart(t *testing.T) {
	la := newLocalActors(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tc := la.c.NewDriver()
	id := ids.NewActorID()
	oid, m := la.call(t, tc, id)
	if m.Incarnation != 1 {
		t.Fatalf("sent to incarnation %d, want 1", m.Incarnation)
	}
	la.setInc(2)
	info := la.info(id.String())
	info.Restarts = 1
	la.c.ActorChanged(info)
	resent := la.next(t)
	if resent.Seq != m.Seq || resent.Incarnation != 2 {
		t.Fatalf("after the restart the actor got seq %d for incarnation %d, want seq %d for 2", resent.Seq, resent.Incarnation, m.Seq)
	}
	oldLocal := la.c.LocalResults(m.Spec.ReplyTo, id)
	oldLocal([]uint64{m.Seq}, []*pb.TaskResult{{TaskId: m.Spec.TaskId, Data: []byte("old")}})
	if v, err := tc.Get(ctx, oid); err != nil || string(v) != "old" {
		t.Fatalf("Get = %q, %v; want old", v, err)
	}
	la.c.LocalResults(resent.Spec.ReplyTo, id)([]uint64{resent.Seq}, []*pb.TaskResult{{TaskId: resent.Spec.TaskId, Data: []byte("new")}})
	ended, live := la.ended(t, ctx, id)
	if live != 0 || len(ended) != 1 || la.results.Load() != 1 {
		t.Fatalf("%d live, ended %v, %d result messages; want one ended call and the duplicate as a message", live, ended, la.results.Load())
	}
	if v, err := tc.Get(ctx, oid); err != nil || string(v) != "old" {
		t.Fatalf("after the duplicate, Get = %q, %v; want old", v, err)
	}
}
