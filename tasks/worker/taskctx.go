package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// TaskCtx is a running task's own context: done when the task is cancelled (cancel; also
// when it returns) or when its parent (the lease's context) is. Env.Context embeds one in
// the context it builds; Init gives it its parent. It is context.WithCancel without that one's cost
// per task (two allocations, and an entry in the parent's set of children, added and
// removed) for the many tasks that never wait on their context: its channel and its link
// to the parent's cancellation are made by the first Done, and until then cancel and Err
// take no lock (state alone).
type TaskCtx struct {
	parent context.Context
	// state is nil until Done made the channel (then watching) or the context ended
	// first (then the reason). From watching on, it changes under mu only, together with
	// the channel's close, and Err reads it under mu: Err is not nil once Done is closed
	// and Done is closed once Err is not nil, as for every context.
	state  atomic.Pointer[error]
	mu     sync.Mutex
	done   chan struct{} // made by the first Done
	unlink func() bool   // stops the parent link (context.AfterFunc), once Done made one
}

var (
	// watching is the state of a context whose Done made its channel and which has not ended.
	watching = new(error)
	// The common reasons, boxed once: a cancellation costs no allocation.
	canceledErr, deadlineErr error = context.Canceled, context.DeadlineExceeded
)

// boxErr returns a state holding err.
func boxErr(err error) *error {
	switch err {
	case context.Canceled:
		return &canceledErr
	case context.DeadlineExceeded:
		return &deadlineErr
	}
	p := new(error) // a new(error) here, not &err: that would move err to the heap on every call
	if *p = err; err == nil {
		*p = errors.New("context ended without a reason")
	}
	return p
}

func newTaskCtx(parent context.Context) *TaskCtx { return &TaskCtx{parent: parent} }

// Init sets a new TaskCtx's parent, before anyone uses it.
func (c *TaskCtx) Init(parent context.Context) { c.parent = parent }

func (c *TaskCtx) String() string              { return fmt.Sprintf("%v.WithCancel(task)", c.parent) }
func (c *TaskCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c *TaskCtx) Value(key any) any           { return c.parent.Value(key) }

// Done returns a channel closed when the task is cancelled or its parent is done.
func (c *TaskCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if !c.state.CompareAndSwap(nil, watching) {
			close(c.done) // ended before anyone watched
		} else {
			// Runs at once (on its own goroutine, which waits for c.mu) if the parent is
			// done already.
			c.unlink = context.AfterFunc(c.parent, func() { c.cancel(c.parent.Err()) })
		}
	}
	return c.done
}

// Err is nil until the context is done, then the reason (context.Canceled).
func (c *TaskCtx) Err() error {
	s := c.state.Load()
	if s == watching {
		c.mu.Lock()
		s = c.state.Load()
		c.mu.Unlock()
	}
	if s != nil && s != watching {
		return *s
	}
	if err := c.parent.Err(); err != nil {
		c.cancel(err) // what Done's link would do: Done is closed once Err says so
		return *c.state.Load()
	}
	return nil
}

// cancel ends the context with err (the first call counts) and releases its parent link.
// Before any Done it takes no lock.
func (c *TaskCtx) cancel(err error) {
	if c.state.CompareAndSwap(nil, boxErr(err)) {
		return // no channel to close, no link to stop: a later Done finds it ended
	}
	if c.state.Load() != watching {
		return // ended already
	}
	c.mu.Lock()
	if c.state.Load() != watching { // another cancel won meanwhile
		c.mu.Unlock()
		return
	}
	c.state.Store(boxErr(err))
	close(c.done)
	unlink := c.unlink
	c.unlink = nil
	c.mu.Unlock()
	if unlink != nil {
		unlink()
	}
}
