// Package ask sends a protoactor request and waits for its reply without protoactor's
// futures. A protoactor Future writes a reply's fields without its lock (futureProcess
// .SendUserMessage in the pinned version), so a reply that arrives after the future timed
// out races with the caller reading the future: the race detector reports it whenever a
// request times out under load and its answer comes later (CI saw it in the node's load
// reporter). Here the reply goes to a small process of our own that hands it over a
// channel, and a late reply is dropped.
//
// Request is a drop-in for RootContext.RequestFuture(pid, msg, timeout).Result(): the same
// errors (actor.ErrTimeout, actor.ErrDeadLetter when the target is gone), the same cost
// (one registry entry and one timer per request).
package ask

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Call is a request in flight.
type Call struct {
	reg *actor.ProcessRegistryValue
	pid *actor.PID
	ch  chan any
}

// reply is the process the answer is sent to: it keeps the first message.
type reply struct{ ch chan any }

func (r reply) SendUserMessage(_ *actor.PID, m any) {
	_, msg, _ := actor.UnwrapEnvelope(m)
	select {
	case r.ch <- msg:
	default: // a second answer: the first counts
	}
}
func (reply) SendSystemMessage(*actor.PID, any) {}
func (reply) Stop(*actor.PID)                   {}

// Start sends msg to to from root, with the answer going to the returned Call.
func Start(root *actor.RootContext, to *actor.PID, msg any) *Call {
	sys := root.ActorSystem()
	c := &Call{reg: sys.ProcessRegistry, ch: make(chan any, 1)}
	c.pid, _ = c.reg.Add(reply{c.ch}, "ask"+c.reg.NextId())
	root.RequestWithCustomSender(to, msg, c.pid)
	return c
}

// StartReplyTo is Start for a message that names where its answer goes (a ReplyTo field
// its handler sends the answer to, rather than to the sender): mk makes the message with
// the PID of the returned Call.
func StartReplyTo(root *actor.RootContext, to *actor.PID, mk func(reply *actor.PID) any) *Call {
	sys := root.ActorSystem()
	c := &Call{reg: sys.ProcessRegistry, ch: make(chan any, 1)}
	c.pid, _ = c.reg.Add(reply{c.ch}, "ask"+c.reg.NextId())
	root.RequestWithCustomSender(to, mk(c.pid), c.pid)
	return c
}

// Wait waits for the answer at most timeout and until ctx is done: actor.ErrTimeout after
// timeout, ctx.Err() when ctx ended first, actor.ErrDeadLetter when the target did not
// exist. A Call is waited for once.
func (c *Call) Wait(ctx context.Context, timeout time.Duration) (any, error) {
	defer c.reg.Remove(c.pid)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-c.ch:
		if _, dead := m.(*actor.DeadLetterResponse); dead {
			return nil, actor.ErrDeadLetter
		}
		return m, nil
	case <-t.C:
		return nil, actor.ErrTimeout
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Request sends msg to to and waits for the answer at most timeout (see Wait).
func Request(root *actor.RootContext, to *actor.PID, msg any, timeout time.Duration) (any, error) {
	return Start(root, to, msg).Wait(context.Background(), timeout)
}
