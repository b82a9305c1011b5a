package spin

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRecvTakesWhatComesWhileItPolls: a value sent while Recv polls is what it returns,
// and it returns then, not at the end of its poll. A poll also stops early when a
// goroutine waits for a P anywhere (the test binary's own goroutines can be runnable for a
// moment): then the value must still come on the channel, and a later attempt must take it
// in the poll.
func TestRecvTakesWhatComesWhileItPolls(t *testing.T) {
	defer Set(10*time.Second, 2)()
	polled, gaveUp := 0, 0
	for attempt := 0; attempt < 20 && polled == 0; attempt++ {
		ch := make(chan int)
		var running atomic.Bool
		go func() {
			// Running on a P of its own until the send, busy, not asleep and not
			// yielding: a timer's wake-up or a yield would put it in a run queue, which
			// stops the poll.
			running.Store(true)
			for start := time.Now(); time.Since(start) < 2*time.Millisecond; {
			}
			ch <- 42
		}()
		for !running.Load() {
			runtime.Gosched()
		}
		start := time.Now()
		v, ok := Recv(ch)
		if !ok {
			gaveUp++
			if v := <-ch; v != 42 {
				t.Fatalf("after Recv gave up the channel gave %d, want 42", v)
			}
			continue
		}
		if v != 42 {
			t.Fatalf("Recv = %d, true; want 42, true", v)
		}
		if d := time.Since(start); d >= 10*time.Second {
			t.Fatalf("Recv returned after %v, at the end of its poll", d)
		}
		polled++
	}
	// With one P the sender runs only when the poller yields, in a run queue: every
	// poll stops at once, and the value must still come on the channel.
	if polled == 0 && runtime.GOMAXPROCS(0) > 1 {
		t.Fatalf("Recv gave up in all %d attempts; it never took the value in its poll", gaveUp)
	}
	closed := make(chan struct{})
	close(closed)
	if _, ok := Recv(closed); !ok {
		t.Fatal("Recv of a closed channel = false")
	}
}

// TestRecvGivesUpAfterFor: with nothing sent Recv polls for For, then reports false and
// leaves the channel to the caller (what comes later is the caller's).
func TestRecvGivesUpAfterFor(t *testing.T) {
	defer Set(20*time.Millisecond, 2)()
	ch := make(chan int, 1)
	start := time.Now()
	if v, ok := Recv(ch); ok {
		t.Fatalf("Recv of an empty channel = %d, true", v)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("Recv gave up after %v, before For (20ms)", d)
	}
	ch <- 7
	if v := <-ch; v != 7 {
		t.Fatalf("the caller received %d, want 7", v)
	}
}

// TestRecvBlocksAtOnceWithOneP: with one P (or For 0) Recv does not poll: nothing could
// run elsewhere while it did.
func TestRecvBlocksAtOnceWithOneP(t *testing.T) {
	for _, tc := range []struct {
		d     time.Duration
		procs int
	}{{time.Hour, 1}, {0, 4}} {
		restore := Set(tc.d, tc.procs)
		if Enabled() {
			t.Errorf("For %v, GOMAXPROCS %d: Enabled", tc.d, tc.procs)
		}
		mustGiveUp(t, fmt.Sprintf("For %v, GOMAXPROCS %d", tc.d, tc.procs), func() bool {
			_, ok := Recv(make(chan int))
			return ok
		})
		restore()
	}
}

// TestPolicy: a waiter polls until a wait blocks for For() or more, then blocks at once
// until a wait is short again.
func TestPolicy(t *testing.T) {
	defer Set(time.Millisecond, 2)()
	var p Policy
	steps := []struct {
		blocked time.Duration
		polls   bool
	}{
		{0, true},
		{500 * time.Microsecond, true},
		{time.Millisecond, false},
		{time.Second, false},
		{999 * time.Microsecond, true},
	}
	if !p.Polls() {
		t.Fatal("the zero Policy does not poll")
	}
	for _, s := range steps {
		p.Blocked(s.blocked)
		if got := p.Polls(); got != s.polls {
			t.Fatalf("after a wait blocked for %v: Polls = %v, want %v", s.blocked, got, s.polls)
		}
	}
	p.BlockedSince(time.Time{}) // nothing measured: nothing changes
	if !p.Polls() {
		t.Fatal("a wait with a zero start stopped the polls")
	}
	p.BlockedSince(Start().Add(-time.Second))
	if p.Polls() {
		t.Fatal("polls after a wait that Start and BlockedSince measured at a second")
	}
	Set(time.Millisecond, 1)
	if p.Polls() {
		t.Fatal("Polls with one P")
	}
	if !Start().IsZero() {
		t.Fatal("Start measures with one P, where nothing polls")
	}
}

// TestRecvAloneStopsWhenOthersWait: RecvAlone gives up as soon as another goroutine of
// the same owner is blocked in a wait of its own.
func TestRecvAloneStopsWhenOthersWait(t *testing.T) {
	defer Set(time.Hour, 2)()
	var others atomic.Int32
	go func() {
		time.Sleep(5 * time.Millisecond)
		others.Add(1)
	}()
	mustGiveUp(t, "RecvAlone, another goroutine waiting", func() bool {
		_, ok := RecvAlone(make(chan int), &others)
		return ok
	})
	ch := make(chan int, 1)
	ch <- 1
	if _, ok := RecvAlone(ch, &others); !ok {
		t.Fatal("RecvAlone did not take a value already there")
	}
}

// TestRecvStopsWhileGoroutinesWaitForAP: with more runnable goroutines than Ps, Recv gives
// up at once instead of polling (its P would keep one of them waiting).
func TestRecvStopsWhileGoroutinesWaitForAP(t *testing.T) {
	defer Set(time.Hour, 2)()
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for !stop.Load() {
				for i := 0; i < 1000; i++ {
					_ = i * i
				}
			}
		})
	}
	mustGiveUp(t, "Recv, goroutines waiting for a P", func() bool {
		_, ok := Recv(make(chan int))
		return ok
	})
}

// mustGiveUp fails t unless recv, a poll of an empty channel, reports false within 20 s
// (the polls the tests set last an hour, or are off).
func mustGiveUp(t *testing.T, what string, recv func() bool) {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- recv() }()
	select {
	case ok := <-done:
		if ok {
			t.Fatalf("%s: received from an empty channel", what)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: still polls after 20 s", what)
	}
}
