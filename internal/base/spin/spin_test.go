package spin

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRecvTakesWhatComesWhileItPolls: a value sent while Recv polls is what it returns,
// and it returns then, not at the end of its poll.
func TestRecvTakesWhatComesWhileItPolls(t *testing.T) {
	defer Set(10*time.Second, 2)()
	ch := make(chan int)
	go func() {
		time.Sleep(5 * time.Millisecond)
		ch <- 42
	}()
	start := time.Now()
	v, ok := Recv(ch)
	if !ok || v != 42 {
		t.Fatalf("Recv = %d, %v; want 42, true", v, ok)
	}
	if d := time.Since(start); d >= 10*time.Second {
		t.Fatalf("Recv returned after %v, at the end of its poll", d)
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
		done := make(chan bool)
		go func() {
			_, ok := Recv(make(chan int))
			done <- ok
		}()
		select {
		case ok := <-done:
			if ok {
				t.Errorf("For %v, GOMAXPROCS %d: Recv of an empty channel = true", tc.d, tc.procs)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("For %v, GOMAXPROCS %d: Recv still polls after 10 s", tc.d, tc.procs)
		}
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
	Set(time.Millisecond, 1)
	if p.Polls() {
		t.Fatal("Polls with one P")
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
	done := make(chan bool)
	go func() {
		_, ok := RecvAlone(make(chan int), &others)
		done <- ok
	}()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("RecvAlone of an empty channel = true")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RecvAlone still polls 10 s after another goroutine started waiting")
	}
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
	done := make(chan bool)
	go func() {
		_, ok := Recv(make(chan int))
		done <- ok
	}()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("Recv of an empty channel = true")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Recv still polls after 20 s with goroutines waiting for a P")
	}
}
