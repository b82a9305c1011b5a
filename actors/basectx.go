package actors

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// stopContext is a grain's base context, cancelled when the instance stops: what
// context.WithCancel(context.Background()) gives, but for what its derived contexts cost
// an idle actor. A cancelCtx keeps its children in a map that never shrinks, so the
// per-attempt timeouts derived from a grain's base (log writes, record reads, checkpoints)
// left ~250 bytes per idle actor (issue 21). A stopContext implements AfterFunc instead,
// which the context package uses to propagate cancellation to a derived context: the
// registrations live in a slice that is dropped once empty.
type stopContext struct {
	done    chan struct{}
	stopped atomic.Bool
	mu      sync.Mutex
	after   []*afterEntry // registered and neither run nor stopped
}

type afterEntry struct{ f func() }

func newStopContext() *stopContext { return &stopContext{done: make(chan struct{})} }

func (c *stopContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *stopContext) Done() <-chan struct{}       { return c.done }
func (c *stopContext) Value(any) any               { return nil }

func (c *stopContext) Err() error {
	if c.stopped.Load() {
		return context.Canceled
	}
	return nil
}

// cancel stops the context: Done closes, Err is context.Canceled, and the functions
// registered with AfterFunc run, each in its own goroutine. Later calls do nothing.
func (c *stopContext) cancel() {
	c.mu.Lock()
	if c.stopped.Load() {
		c.mu.Unlock()
		return
	}
	c.stopped.Store(true)
	close(c.done)
	after := c.after
	c.after = nil
	c.mu.Unlock()
	for _, e := range after {
		go e.f()
	}
}

// AfterFunc runs f in its own goroutine once the context is stopped (at once if it is);
// stop unregisters f and reports whether it did so before f was started, as
// context.AfterFunc's does.
func (c *stopContext) AfterFunc(f func()) (stop func() bool) {
	e := &afterEntry{f: f}
	c.mu.Lock()
	if c.stopped.Load() {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.after = append(c.after, e)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.after {
			if x == e {
				last := len(c.after) - 1
				c.after[i], c.after[last] = c.after[last], nil
				c.after = c.after[:last]
				if last == 0 {
					c.after = nil // an idle actor holds no slice
				}
				return true
			}
		}
		return false
	}
}
