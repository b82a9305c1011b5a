// Package spin polls a channel for a short while before its caller blocks on it, so that a
// goroutine whose wait is short keeps its P. Blocking lets the P go idle and its thread
// sleep, and what wakes it later (another thread's futex wake; on a virtual machine an
// inter-processor interrupt) costs more than a short wait: a median 16-21 µs and a tail
// of milliseconds on the project's 2-vCPU benchmark machine (benchmarks/RESULTS.md, "where
// the second core goes"). A driver that waits for results of calls of ~10 µs each then
// spends its time being woken.
//
// A poll yields its P between looks (runtime.Gosched), so what is runnable on that P runs
// first; but a yielding goroutine goes to the global run queue, which a P looks at before
// it steals from another P's queue: while goroutines wait for a P, a poll would keep one of
// them waiting. So a poll stops as soon as any run queue holds a goroutine (the
// /sched/goroutines/runnable metric, looked at every 16 polls). Polling burns the CPU it
// runs on, up to For() per wait that does not end in time: callers poll only where a wait
// is often short (a Get or Wait for a result, an actor's executor between pipelined calls),
// one goroutine at a time per owner of the wait, and a Policy stops the polls of a waiter
// whose waits are long.
package spin

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultFor is how long Recv polls before it gives up: a few wake-ups' worth, and the
// length of a rollout of ~1,000 steps (benchmarks/rl), whose results a driver waits for
// one by one.
const DefaultFor = 100 * time.Microsecond

var (
	pollFor atomic.Int64 // Recv's poll, in nanoseconds (Set changes it)
	// procs is GOMAXPROCS when the process started (runtime.GOMAXPROCS takes the
	// scheduler's lock: not once per wait). With one P nothing runs elsewhere while the
	// caller polls: it had better block at once and let the P run what it waits for.
	procs atomic.Int32
)

func init() {
	pollFor.Store(int64(DefaultFor))
	procs.Store(int32(runtime.GOMAXPROCS(0)))
}

// For is how long Recv polls.
func For() time.Duration { return time.Duration(pollFor.Load()) }

// Set sets how long Recv polls and the GOMAXPROCS it assumes, and returns what puts them
// back: for tests, which may run where GOMAXPROCS is 1, and time a poll of their own
// length.
func Set(d time.Duration, gomaxprocs int) (restore func()) {
	oldFor, oldProcs := pollFor.Load(), procs.Load()
	pollFor.Store(int64(d))
	procs.Store(int32(gomaxprocs))
	return func() {
		pollFor.Store(oldFor)
		procs.Store(oldProcs)
	}
}

// Enabled reports whether Recv polls at all (more than one P, a poll longer than 0).
func Enabled() bool { return procs.Load() > 1 && pollFor.Load() > 0 }

// Recv polls ch for up to For(), yielding the P between polls (runtime.Gosched: whatever
// else is runnable here runs first, such as the goroutine that will answer), and returns
// what it received, or false if nothing came (the caller then blocks on ch as before). It
// stops early, false, once a goroutine waits for a P in any run queue. A closed channel is
// received from at once.
func Recv[T any](ch <-chan T) (T, bool) { return RecvAlone(ch, nil) }

// RecvAlone is Recv that stops polling (false) as soon as others is above zero: the
// goroutines of the same owner blocked in a wait of their own: several goroutines that
// wait at once are a sign of other work for the Ps, which would soon be queued.
func RecvAlone[T any](ch <-chan T, others *atomic.Int32) (T, bool) {
	if !Enabled() {
		var zero T
		return zero, false
	}
	limit := For()
	var start time.Time
	for i := 0; ; i++ {
		select {
		case v := <-ch:
			return v, true
		default:
		}
		if others != nil && others.Load() > 0 {
			var zero T
			return zero, false
		}
		// The clock and the run queues every 16 polls (a poll and a yield take ~0.2-1 µs),
		// and after the first yield, which ran what was readied on this P.
		if i&15 == 1 {
			if queued() {
				var zero T
				return zero, false
			}
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > limit {
				var zero T
				return zero, false
			}
		}
		runtime.Gosched()
	}
}

var samples = sync.Pool{New: func() any {
	return &[1]metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
}}

// queued reports whether goroutines wait for a P in any run queue: then a P that polls
// keeps one of them waiting (a yielding poller goes to the global run queue, which a P
// looks at before it steals from another P's queue), so the poll stops.
func queued() bool {
	s := samples.Get().(*[1]metrics.Sample)
	metrics.Read(s[:])
	n := s[0].Value.Uint64()
	samples.Put(s)
	return n > 0
}

// Policy says whether a waiter polls: while its waits are short. A wait that blocked for
// For() or more (after a poll that found nothing, or without one) makes the next ones
// block at once, until one that blocks is short again: a waiter whose results come from
// far (another process, another machine: the network wakes its P anyway) or rarely
// spends the poll's CPU once per change, not per wait. The zero Policy polls. Its methods
// may be called from any goroutine.
type Policy struct {
	long atomic.Bool
}

// Polls reports whether the next wait polls first (Enabled too).
func (p *Policy) Polls() bool { return Enabled() && !p.long.Load() }

// Start is when a wait begins to block, for BlockedSince: the time, or zero (nothing to
// measure) when Recv does not poll at all.
func Start() time.Time {
	if !Enabled() {
		return time.Time{}
	}
	return time.Now()
}

// BlockedSince records a wait that blocked from start (as Start gave it) until now; a zero
// start records nothing.
func (p *Policy) BlockedSince(start time.Time) {
	if !start.IsZero() {
		p.Blocked(time.Since(start))
	}
}

// Blocked records a wait that blocked for d once its poll (if any) found nothing.
func (p *Policy) Blocked(d time.Duration) {
	if long := d >= For(); long != p.long.Load() {
		p.long.Store(long)
	}
}
