package actors

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/pb"
)

// TestOutboxHandsLocalResultsOver: the results of a caller in this process (Env.Local
// gives a function for its owner) are handed to that function on the executor's goroutine,
// each with its call's seq, in the order the calls ran, after the grain was told what ran;
// the results of any other owner (a caller in another process) still go to it as
// messages. Env.Local is asked once per owner, not per result.
func TestOutboxHandsLocalResultsOver(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	got := make(chan *pb.TaskResult, 16)
	remote := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *pb.TaskResult:
			got <- m
		case *pb.ResultBatch:
			for _, r := range m.Results {
				got <- r
			}
		}
	}))
	here := &pb.PID{Address: "here", Id: "shard-1"}
	there := &pb.PID{Address: remote.Address, Id: remote.Id}
	type taken struct {
		seq uint64
		r   *pb.TaskResult
	}
	var local []taken
	reported, asked, handed := 0, 0, 0
	ob := &outbox{root: sys.Root,
		report: func(d []done) { reported += len(d) },
		local: func(owner *pb.PID) func([]uint64, []*pb.TaskResult) {
			asked++
			if owner.Address != here.Address {
				return nil
			}
			return func(seqs []uint64, rs []*pb.TaskResult) {
				handed++
				if len(seqs) != len(rs) {
					t.Errorf("handed over %d seqs with %d results", len(seqs), len(rs))
				}
				for i, r := range rs {
					if reported < 4 {
						t.Errorf("result of call %d handed over before the grain was told what ran (%d reports)", seqs[i], reported)
					}
					local = append(local, taken{seqs[i], r})
				}
			}
		}}
	call := func(seq uint64, to *pb.PID) (*pb.ActorLogEntry, *pb.TaskResult) {
		tid := []byte{byte(seq)}
		return &pb.ActorLogEntry{Seq: seq, Spec: &pb.TaskSpec{TaskId: tid, ReplyTo: to}}, &pb.TaskResult{TaskId: tid}
	}
	var rs []*pb.TaskResult
	for i, to := range []*pb.PID{here, there, here, there} {
		e, r := call(uint64(i+1), to)
		rs = append(rs, r)
		ob.add(e, r, 0)
	}
	ob.flush()
	if handed != 1 || len(local) != 2 || local[0].seq != 1 || local[0].r != rs[0] || local[1].seq != 3 || local[1].r != rs[2] {
		t.Fatalf("handed over %v in %d batches, want calls 1 and 3 with their results in one", local, handed)
	}
	for _, want := range []*pb.TaskResult{rs[1], rs[3]} {
		select {
		case r := <-got:
			if r.TaskId[0] != want.TaskId[0] {
				t.Fatalf("the other process's caller got the result of task %v, want %v", r.TaskId, want.TaskId)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the other process's caller got no message")
		}
	}
	// The next flush: the owners are known, Local is not asked again.
	e, r := call(5, here)
	ob.add(e, r, 0)
	ob.flush()
	if asked != 2 || len(local) != 3 || local[2].seq != 5 {
		t.Fatalf("after a second flush: Local asked %d times (want 2), handed over %v", asked, local)
	}
	select {
	case r := <-got:
		t.Fatalf("a local caller's result went as a message too: %v", r)
	default:
	}
}
