package worker

import (
	"context"
	"sync"
	"time"
)

// taskCtx is a running task's context: done when the task is cancelled (cancel) or when
// its parent (the lease's context) is. It is context.WithCancel without that one's cost
// per task (two allocations, and an entry in the parent's set of children, added and
// removed) for the many tasks that never wait on their context: its channel and its link
// to the parent's cancellation are made by the first Done.
type taskCtx struct {
	parent context.Context
	mu     sync.Mutex
	done   chan struct{} // made by the first Done
	err    error         // set once: the task's cancellation, or the parent's error
	unlink func() bool   // stops the parent link (context.AfterFunc), once Done made one
}

func newTaskCtx(parent context.Context) *taskCtx { return &taskCtx{parent: parent} }

func (c *taskCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c *taskCtx) Value(key any) any           { return c.parent.Value(key) }

// Done returns a channel closed when the task is cancelled or its parent is done.
func (c *taskCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		} else {
			// Runs at once (on its own goroutine, which waits for c.mu) if the parent is
			// done already.
			c.unlink = context.AfterFunc(c.parent, func() { c.cancel(c.parent.Err()) })
		}
	}
	return c.done
}

// Err is nil until the context is done, then the reason (context.Canceled).
func (c *taskCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if err = c.parent.Err(); err != nil {
		c.cancel(err) // what Done's link would do: Done is closed once Err says so
	}
	return err
}

// cancel ends the context with err (the first call counts) and releases its parent link.
func (c *taskCtx) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	unlink := c.unlink
	c.unlink = nil
	c.mu.Unlock()
	if unlink != nil {
		unlink()
	}
}
