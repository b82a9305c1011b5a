package core

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// The idle collector: a process that borrows refs and is quiet collects its garbage soon.
//
// A ref a program drops is given back when Go collects it (its handle's finalizer), and a
// borrowed ref (a task's argument, a ref nested in a value) keeps its owner's object alive
// until then. A busy process collects often; a quiet one (an idle worker process, a
// driver waiting) may not collect for two minutes (Go's forced collection), so the owner
// kept objects a task had long finished with, and `rayctl memory` listed them BORROWED.
// Ray gives a task's argument back when the task returns. So every idleGCEvery the
// collector looks: when this process borrows refs and Go has not collected since the last
// look, it collects. A collection that gave nothing back (the refs are still in use: an
// actor keeps them) doubles the time to the next (up to idleGCMax, below Go's forced
// two minutes), so a process that holds borrows for good costs a collection every
// minute or so; one that gives refs back, or a new borrow, starts again at idleGCEvery.
// A busy process, which collects by itself, is never made to.

// idleGCEvery is the collector's first and shortest period, idleGCMax its longest.
var (
	idleGCEvery = 2 * time.Second
	idleGCMax   = 64 * time.Second
)

// idleCollector runs the idle collector until the runtime closes.
func (c *Core) idleCollector() {
	defer c.wg.Done()
	sample := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	cycles := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	var s idleGC
	wait := idleGCEvery
	t := time.NewTimer(wait)
	defer t.Stop()
	last := cycles()
	for {
		select {
		case <-c.closed:
			return
		case <-t.C:
		}
		now := cycles()
		var collect bool
		wait, collect = s.next(now != last, int64(c.borrows.Borrowed()))
		if collect {
			runtime.GC()
			now = cycles()
		}
		last = now
		t.Reset(wait)
	}
}

// idleGC is the idle collector's rule, apart from the clock and the runtime (tests).
type idleGC struct {
	period time.Duration
	forced bool  // the last look collected
	held   int64 // the borrows then
}

// next is one look: collected says whether Go collected since the last look, borrowed how
// many refs this process borrows now. It returns the time to the next look and whether to
// collect now.
func (s *idleGC) next(collected bool, borrowed int64) (time.Duration, bool) {
	if s.period == 0 {
		s.period = idleGCEvery
	}
	switch {
	case borrowed == 0 || collected && !s.forced:
		// Nothing to give back, or Go collects by itself: look again soon.
		s.period, s.forced = idleGCEvery, false
		return s.period, false
	case s.forced && borrowed < s.held:
		s.period = idleGCEvery // the last collection gave refs back
	case s.forced && borrowed == s.held:
		s.period = min(2*s.period, idleGCMax) // all still in use
	case s.forced:
		s.period = idleGCEvery // new borrows since
	}
	s.forced, s.held = true, borrowed
	return s.period, true
}
