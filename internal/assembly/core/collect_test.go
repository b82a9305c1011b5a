package core

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestCollectorBacksOff: one collection at a time; while requests go on, collections
// come 1, 2, 4 ... s apart, at most collectMaxGap; after collectMaxGap without a request
// the next comes at once and the gaps start again from collectMinGap.
func TestCollectorBacksOff(t *testing.T) {
	ran := make(chan struct{})
	release := make(chan struct{})
	var runs atomic.Int32
	k := &collector{gc: func() { runs.Add(1); ran <- struct{}{}; <-release }}
	finish := func() {
		t.Helper()
		release <- struct{}{}
		awaitCollected(t, k)
	}
	t0 := time.Unix(1_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	if !k.request(at(0)) {
		t.Fatal("the first request started no collection")
	}
	<-ran
	if k.request(at(5 * time.Second)) {
		t.Fatal("a second collection started while one ran")
	}
	finish()
	// Requests every 100 ms from here: the collections that start, and when.
	var started []time.Duration
	for d := 100 * time.Millisecond; d <= 11*time.Minute; d += 100 * time.Millisecond {
		if k.request(at(d)) {
			started = append(started, d)
			<-ran
			finish()
		}
	}
	want := []time.Duration{1, 3, 7, 15, 31, 63, 127, 247, 367, 487, 607}
	if len(started) != len(want) {
		t.Fatalf("collections at %v, want at %v s", started, want)
	}
	for i, d := range started {
		if d != want[i]*time.Second {
			t.Fatalf("collection %d at %v, want %v s (all: %v)", i+1, d, want[i], started)
		}
	}
	// Quiet for longer than the gap and collectMaxGap: the next request starts one, and
	// the gaps start again from collectMinGap.
	quiet := at(607*time.Second + 2*collectMaxGap + time.Second)
	if !k.request(quiet) {
		t.Fatal("no collection after a quiet stretch")
	}
	<-ran
	finish()
	if k.request(quiet.Add(900*time.Millisecond)) || !k.request(quiet.Add(time.Second)) {
		t.Fatal("after a quiet stretch the gap is not collectMinGap again")
	}
	<-ran
	finish()
	if n := int(runs.Load()); n != len(want)+3 {
		t.Fatalf("%d collections counted, want %d", n, len(want)+3)
	}
}

// TestCollectorAsksOthersForItsOwnWaits: a collection for a wait of this process's own
// (request) asks the other processes for one first; a collection they asked for
// (requestForOthers) asks no one (no echo between processes), and keeps the same gaps.
func TestCollectorAsksOthersForItsOwnWaits(t *testing.T) {
	done := make(chan string, 4)
	var asked atomic.Int32
	k := &collector{gc: func() { done <- "gc" }, others: func() { asked.Add(1); done <- "others" }}
	t0 := time.Unix(1_000_000, 0)
	wait := func(want ...string) {
		t.Helper()
		for _, w := range want {
			select {
			case got := <-done:
				if got != w {
					t.Fatalf("got %q, want %q (in order %v)", got, w, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no %q within 5 s", w)
			}
		}
		awaitCollected(t, k)
	}
	if !k.request(t0) {
		t.Fatal("the first request started no collection")
	}
	wait("others", "gc")
	if k.requestForOthers(t0.Add(collectMinGap / 2)) {
		t.Fatal("another process's request started a collection within the gap")
	}
	if !k.requestForOthers(t0.Add(collectMinGap)) {
		t.Fatal("another process's request after the gap started no collection")
	}
	wait("gc")
	if n := asked.Load(); n != 1 {
		t.Fatalf("the other processes were asked %d times, want 1 (only for this process's own wait)", n)
	}
}

// awaitCollected waits (5 s at most) until k runs no collection.
func awaitCollected(t *testing.T, k *collector) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		k.mu.Lock()
		running := k.running
		k.mu.Unlock()
		if !running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the collection never finished")
		}
	}
}
