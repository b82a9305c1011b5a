package actors

import (
	"sync"
	"testing"

	"github.com/ray-go/ray/internal/base/pb"
)

// TestExecutorCancel: cancel takes back a call waiting in the executor's queue, one in
// the loop's batch ahead of the call the loop came to, and one not accepted yet (the
// loop skips each when it comes to it: takenBack); not one the loop came to, nor one
// that ran (accepted, and not waiting), and then leaves no cancel behind. dropCancels
// forgets the cancels of calls that will not come.
func TestExecutorCancel(t *testing.T) {
	x := &executor{signal: make(chan struct{}, 1)}
	e := func(i uint64) *pb.ActorLogEntry { return &pb.ActorLogEntry{Index: i, CallerId: "c", Seq: i} }
	e1, e2, e3, e4 := e(1), e(2), e(3), e(4)
	for _, en := range []*pb.ActorLogEntry{e1, e2, e3} {
		x.push(execItem{entry: en})
	}
	batch, _ := x.take(nil) // the loop's batch: 1, 2, 3
	x.push(execItem{entry: e4})
	if x.takenBack(e1) { // the loop comes to call 1
		t.Fatal("call 1 taken back with nothing cancelled")
	}
	if x.cancel("c", 1, true) {
		t.Fatal("call 1, which the loop came to, was taken back")
	}
	for _, c := range []struct {
		seq      uint64
		accepted bool
		what     string
	}{{2, true, "in the batch, ahead of the loop"}, {4, true, "in the queue"}, {9, false, "not accepted yet"}} {
		if !x.cancel("c", c.seq, c.accepted) {
			t.Fatalf("call %d (%s) not taken back", c.seq, c.what)
		}
	}
	if x.cancel("c", 7, true) {
		t.Fatal("call 7, accepted and not waiting (it ran), was taken back")
	}
	if !x.takenBack(batch[1].entry) {
		t.Fatal("the loop runs call 2, which was taken back")
	}
	// Call 3: cancelled once the loop came to it, before its look: the cancel leaves
	// nothing behind, and the loop runs it.
	x.started.Store(3)
	if x.cancel("c", 3, true) {
		t.Fatal("call 3, which the loop came to, was taken back")
	}
	if x.takenBack(e3) {
		t.Fatal("the loop skips call 3, which cancel said runs")
	}
	x.take(batch)
	if !x.takenBack(e4) {
		t.Fatal("the loop runs call 4, which was taken back")
	}
	x.dropCancels("c", 5, 10)
	if n := x.cancelN.Load(); n != 0 || len(x.cancels) != 0 {
		t.Fatalf("%d cancels left (%v), want none", n, x.cancels)
	}
}

// TestExecutorCancelRace: cancels racing the loop through a batch: every call is either
// taken back (cancel says so, and the loop skips it) or runs (cancel says it was not
// taken back), never both, never neither.
func TestExecutorCancelRace(t *testing.T) {
	const n = 2000
	x := &executor{signal: make(chan struct{}, 1)}
	for i := uint64(1); i <= n; i++ {
		x.push(execItem{entry: &pb.ActorLogEntry{Index: i, CallerId: "c", Seq: i}})
	}
	batch, _ := x.take(nil)
	skipped := make([]bool, n+1)
	taken := make([]bool, n+1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the loop
		defer wg.Done()
		for _, it := range batch {
			skipped[it.entry.Seq] = x.takenBack(it.entry)
		}
	}()
	go func() {
		defer wg.Done()
		for i := uint64(1); i <= n; i += 2 {
			taken[i] = x.cancel("c", i, true)
		}
	}()
	wg.Wait()
	for i := uint64(1); i <= n; i++ {
		if skipped[i] != taken[i] {
			t.Fatalf("call %d: cancel said taken back %v, the loop skipped it %v", i, taken[i], skipped[i])
		}
	}
	if len(x.cancels) != 0 {
		t.Fatalf("cancels left behind: %v", x.cancels)
	}
}
