// Package dispatch is a protoactor Dispatcher that runs mailboxes on a pool of long-lived
// goroutines.
//
// protoactor's default dispatcher starts a new goroutine each time an idle mailbox gets a
// message. The new goroutine's stack starts small and grows again through the deep
// receive chain (cluster middleware, then our grains), which was 45% of the CPU of a
// request-reply task loop (benchmarks/microbench single_client_tasks_sync); a goroutine
// kept from one mailbox run to the next keeps its grown stack. When every pool goroutine
// is busy (or the pool is closed), Schedule falls back to a new goroutine, so a mailbox
// that blocks can never starve the others.
//
// Counter makes mailboxes that count the messages they handle.
package dispatch

import (
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/stripe"
)

// DefaultThroughput is how many messages a mailbox handles before yielding its goroutine
// (protoactor's default).
const DefaultThroughput = 300

// Pool is a Dispatcher with a fixed set of goroutines.
//
// The goroutines wait on lanes (one channel per core, GOMAXPROCS at New) rather than on
// one channel: a channel is a lock, and a mailbox is scheduled each time it gets a message
// while idle, from every core at once. Schedule offers its function to a lane picked at
// random (math/rand/v2's runtime source: no shared state), then to a second, and starts a
// goroutine only if no goroutine waits on either.
type Pool struct {
	lanes      []chan func()
	n          int // goroutines
	once       sync.Once
	wg         sync.WaitGroup
	throughput int
}

var _ actor.Dispatcher = (*Pool)(nil)

// New starts a pool of n goroutines (at least 1, and at least 2 per lane), spread over
// one lane per core.
func New(n, throughput int) *Pool {
	if throughput <= 0 {
		throughput = DefaultThroughput
	}
	lanes := max(1, min(runtime.GOMAXPROCS(0), n/2))
	n = max(n, 2*lanes, 1)
	p := &Pool{lanes: make([]chan func(), lanes), n: n, throughput: throughput}
	for i := range p.lanes {
		p.lanes[i] = make(chan func())
	}
	p.wg.Add(n)
	for i := 0; i < n; i++ {
		go p.loop(p.lanes[i%lanes])
	}
	return p
}

// loop runs what its lane brings until it brings nil (Close). A receive on one channel,
// not a select with a quit channel: a mailbox is scheduled for about every message an
// idle actor gets, and the select's locking of two channels was ~4% of the CPU of
// pipelined actor calls (benchmarks/rl -mode throughput).
func (p *Pool) loop(lane chan func()) {
	defer p.wg.Done()
	for fn := range lane {
		if fn == nil {
			return
		}
		fn()
	}
}

// Schedule runs fn on an idle pool goroutine, or on a new goroutine if none is idle on
// the two lanes it tries.
func (p *Pool) Schedule(fn func()) {
	if fn == nil {
		return // nil tells a pool goroutine to stop
	}
	n := uint32(len(p.lanes))
	i := uint32(0)
	if n > 1 {
		i = rand.Uint32N(n)
	}
	select {
	case p.lanes[i] <- fn:
		return
	default:
	}
	if n > 1 {
		select {
		case p.lanes[(i+1)%n] <- fn:
			return
		default:
		}
	}
	go fn()
}

// Throughput is the number of messages a mailbox handles per run.
func (p *Pool) Throughput() int { return p.throughput }

// Close stops the pool's goroutines once they finish what they run; later Schedules start
// new goroutines.
func (p *Pool) Close() {
	p.once.Do(func() {
		// One nil per goroutine, on its lane: each takes one when it is free, and stops.
		for i := range p.n {
			p.lanes[i%len(p.lanes)] <- nil
		}
	})
	p.wg.Wait()
}

// Counter counts the messages the mailboxes it makes handle, for messages-per-task
// figures (ray.Stats): each mailbox adds to its own stripe of a stripe.Counter (a slot
// taken at creation), on its own goroutine, so counting shares no cache line across the
// node's actors and keeps no per-actor state.
//
// Tap, when set before the first mailbox is made, is called with every message a counted
// mailbox handles and the role its mailbox was made for (MailboxFor): what
// benchmarks/scale counts messages by type with. Unset (the default), a mailbox pays one
// nil check per message for it, and touches no lock or map.
type Counter struct {
	n   stripe.Counter
	Tap func(role string, msg any)
}

// Mailbox returns a producer of protoactor's unbounded mailboxes counted by c.
func (c *Counter) Mailbox() actor.MailboxProducer { return c.MailboxFor("") }

// MailboxFor is Mailbox for the actors of role (what Tap is told).
func (c *Counter) MailboxFor(role string) actor.MailboxProducer {
	return func() actor.Mailbox {
		return actor.Unbounded(counted{c: &c.n, slot: stripe.NextSlot(), tap: c.Tap, role: role})()
	}
}

// Handled is how many messages the counted mailboxes handled so far.
func (c *Counter) Handled() int64 { return c.n.Load() }

type counted struct {
	c    *stripe.Counter
	slot uint32
	tap  func(role string, msg any)
	role string
}

func (counted) MailboxStarted()   {}
func (counted) MessagePosted(any) {}
func (c counted) MessageReceived(m any) {
	c.c.Add(c.slot, 1)
	if c.tap != nil {
		c.tap(c.role, m)
	}
}
func (counted) MailboxEmpty() {}
