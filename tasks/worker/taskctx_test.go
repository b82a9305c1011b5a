package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestTaskCtxCancel: the task's own cancellation, before or after Done, closes Done and
// sets Err; a context derived from it is cancelled with it; the first reason counts.
func TestTaskCtxCancel(t *testing.T) {
	for _, doneFirst := range []bool{true, false} {
		c := newTaskCtx(context.Background())
		if c.Err() != nil {
			t.Fatalf("fresh context: Err %v", c.Err())
		}
		var d <-chan struct{}
		if doneFirst {
			d = c.Done()
			if closed(d) {
				t.Fatal("Done closed before the cancellation")
			}
		}
		child, stop := context.WithTimeout(c, time.Hour)
		c.cancel(context.Canceled)
		c.cancel(context.DeadlineExceeded)
		if !doneFirst {
			d = c.Done()
		}
		if !closed(d) || !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("after cancel (Done first %v): closed %v, Err %v", doneFirst, closed(d), c.Err())
		}
		select {
		case <-child.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a context derived from the task's was not cancelled with it")
		}
		stop()
	}
}

type testKey struct{}

// TestTaskCtxParent: the parent's end reaches the task's context, whether Done was asked
// for before (the link) or not (Err looks), and Err and Done agree.
func TestTaskCtxParent(t *testing.T) {
	parent, stop := context.WithCancel(context.WithValue(context.Background(), testKey{}, "v"))
	linked, unasked := newTaskCtx(parent), newTaskCtx(parent)
	if linked.Value(testKey{}) != "v" {
		t.Fatal("values of the parent are not seen")
	}
	d := linked.Done()
	stop()
	select {
	case <-d:
	case <-time.After(5 * time.Second):
		t.Fatal("the parent's cancellation did not close Done")
	}
	if !errors.Is(linked.Err(), context.Canceled) {
		t.Fatalf("Err %v after the parent's cancellation", linked.Err())
	}
	if !errors.Is(unasked.Err(), context.Canceled) || !closed(unasked.Done()) {
		t.Fatalf("never asked for Done: Err %v, Done closed %v", unasked.Err(), closed(unasked.Done()))
	}
	late := newTaskCtx(parent) // made after the parent ended
	select {
	case <-late.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a context made under a done parent never closed Done")
	}
}

// TestTaskCtxConcurrent: Done, Err and cancel from many goroutines (run with -race).
func TestTaskCtxConcurrent(t *testing.T) {
	parent, stop := context.WithCancel(context.Background())
	defer stop()
	for range 100 {
		c := newTaskCtx(parent)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch g {
				case 0:
					<-c.Done()
				case 1:
					// Polling Err while others cancel is what this goroutine tests
					// (concurrent reads), not a wait the test could hand to eventually.
					for c.Err() == nil {
						time.Sleep(time.Microsecond)
					}
				default:
					c.cancel(context.Canceled)
				}
			}()
		}
		wg.Wait()
	}
}

// TestTaskCtxCost: a task that never waits on its context costs one allocation for it.
func TestTaskCtxCost(t *testing.T) {
	parent, stop := context.WithCancel(context.Background())
	defer stop()
	if n := testing.AllocsPerRun(100, func() {
		c := newTaskCtx(parent)
		if c.Err() != nil {
			t.Fatal("done")
		}
		c.cancel(context.Canceled)
	}); n > 1 {
		t.Fatalf("%.1f allocations per task context, want 1", n)
	}
}

// TestTaskCtxRace: Done, Err, the task's cancel and its parent's cancellation race from
// the first call on (run with -race): whichever way they interleave, a closed Done comes
// with an Err, an Err with a closed Done, and every caller sees the same Err.
func TestTaskCtxRace(t *testing.T) {
	for i := range 400 {
		parent, stop := context.WithCancel(context.Background())
		c := newTaskCtx(parent)
		errs := make([]error, 4)
		var wg sync.WaitGroup
		start := make(chan struct{})
		run := func(f func()) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				f()
			}()
		}
		run(func() { // Done first, then Err once it is closed
			<-c.Done()
			errs[0] = c.Err()
		})
		run(func() { // Err first: once it is not nil, Done is closed
			for errs[1] = c.Err(); errs[1] == nil; errs[1] = c.Err() {
				time.Sleep(time.Microsecond) // polls: what it tests are concurrent reads
			}
			if !closed(c.Done()) {
				t.Errorf("round %d: Err %v but Done is open", i, errs[1])
			}
		})
		run(func() {
			c.cancel(context.Canceled)
			errs[2] = c.Err()
		})
		run(func() {
			if i%2 == 0 {
				stop() // the parent ends too, half of the time
			}
			errs[3] = c.Err() // nil if it runs before the cancel: only a non-nil one counts
		})
		close(start)
		wg.Wait()
		stop()
		for g, err := range errs {
			if err == nil && g != 3 {
				t.Fatalf("round %d: goroutine %d saw no error", i, g)
			}
			if err != nil && err != errs[2] {
				t.Fatalf("round %d: goroutine %d saw %v, the cancel %v: the first reason must count for all", i, g, err, errs[2])
			}
		}
	}
}

// TestTaskCtxEndedBeforeDone: a context ended before anyone asked for Done (the common
// case: no lock, no channel) still gives a closed Done and its reason afterwards, and a
// later cancel or parent end changes neither.
func TestTaskCtxEndedBeforeDone(t *testing.T) {
	parent, stop := context.WithCancel(context.Background())
	c := newTaskCtx(parent)
	c.cancel(context.DeadlineExceeded)
	stop()
	c.cancel(context.Canceled)
	if !closed(c.Done()) || c.Err() != context.DeadlineExceeded {
		t.Fatalf("Done closed %v, Err %v; want closed, the first reason", closed(c.Done()), c.Err())
	}
	other := errors.New("other")
	c = newTaskCtx(context.Background())
	c.cancel(other)
	if c.Err() != other || !closed(c.Done()) {
		t.Fatalf("Err %v; want the reason given", c.Err())
	}
}
