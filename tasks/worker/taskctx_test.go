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
