package core

import (
	"runtime"
	"sync"
	"time"

	"github.com/ray-go/ray/actors/lifecycle"
)

// A handle dropped without Kill (an ActorHandle, or a value holding one) is released by
// its finalizer, which runs only after a garbage collection finds the handle unreachable.
// Go collects when the heap grows, or every 2 minutes: a quiet driver that dropped an
// actor's handle and then created another actor needing the same resources waited 1m59s
// for the first to go out of scope and give them back (and a test waited 68-120 s).
// CPython's reference counts release Ray's handles at once. Here, a caller whose calls
// wait for an actor that has no serving instance (Pending or Restarting: it may wait for
// resources) for collectWaitAfter asks this process for a collection (collector.request),
// as do tasks that have waited that long for a lease no node grants (collectIfStarved)
// and a placement group this process places that has found no room for that long
// (PlacementGroup.place), so the handles this process dropped are released then.
//
// An object ref (ObjectRef: a Put's, a task's result, one a task created and dropped) is
// the same: its object, and its bytes in a node's store, are freed when the finalizer of
// its last handle runs (the root package's nursery.go and object.go), while Ray frees
// them at once. Until then they fill the store, which spills them to disk and makes
// producers wait, or refuses puts. So a store whose memory a put finds over 70% of its
// budget asks its process for a collection (objects/shard's Config.Pressure: one
// comparison a put under it; over it, at most once a second, and again each second while
// it stays over, since a collection at once may miss refs the nursery has not given a
// finalizer yet; CollectForStore, wired by package node), as Ray's raylet triggers a
// global GC when the object store is that full. The bytes may be another process's
// objects (a task's result stored where the task ran, owned by its caller), so this
// collection too asks the other processes. A store full of live objects asks on: the
// back-off below keeps that to one collection per 2 minutes, Go's own period.
//
// The collections back off while such waits go on (an actor that waits for resources
// nobody will free: 1, 2, 4 ... s apart, at most collectMaxGap, Go's own period), and
// start again from collectMinGap after collectMaxGap without a request.
//
// The handle may have been dropped in another process: a driver that handed an actor to a
// task, or a worker process whose task received one, while the wait is in a third (a
// task that calls the next actor). So each collection this process runs for a wait of
// its own also asks the cluster's other processes for one (Config.AskOthersToCollect:
// through the GCS, taskstate), as Ray's raylet broadcasts a global GC; they run it as a
// request of their own (CollectForOthers), backing off the same way, and ask no one else.
const (
	collectWaitAfter = time.Second
	collectMinGap    = time.Second
	collectMaxGap    = 2 * time.Minute
)

// collector runs the collections callers ask for, one at a time, at most one per gap.
type collector struct {
	mu      sync.Mutex
	running bool
	last    time.Time     // when the last collection started
	gap     time.Duration // the least time from last to the next
	gc      func()        // runtime.GC (tests count instead)
	// others asks the other processes for a collection (nil: no one to ask); it runs
	// on the collection's goroutine, before it.
	others func()
}

// request asks for a collection at now, for a wait of this process's own: the other
// processes are asked too (others). It reports whether one starts (on a goroutine of its
// own: runtime.GC blocks its caller until the cycle ends).
func (k *collector) request(now time.Time) bool { return k.start(now, k.others) }

// requestForOthers asks for a collection at now that another process asked for: the same
// gaps, and no one else is asked.
func (k *collector) requestForOthers(now time.Time) bool { return k.start(now, nil) }

func (k *collector) start(now time.Time, others func()) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.running {
		return false
	}
	switch since := now.Sub(k.last); {
	case k.last.IsZero() || since >= k.gap+collectMaxGap:
		k.gap = collectMinGap // a new stretch of waiting
	case since < k.gap:
		return false
	default:
		k.gap = min(2*k.gap, collectMaxGap)
	}
	k.last, k.running = now, true
	gc := k.gc
	if gc == nil {
		gc = runtime.GC
	}
	go func() {
		if others != nil {
			others()
		}
		gc()
		k.mu.Lock()
		k.running = false
		k.mu.Unlock()
	}()
	return true
}

// CollectForOthers runs a garbage collection another process asked for (its
// AskOthersToCollect): a handle this process dropped may hold what that process waits
// for. Collections back off as those this process asks for itself (collect.go).
func (c *Core) CollectForOthers() { c.collect.requestForOthers(time.Now()) }

// CollectForStore asks for a garbage collection of this process, and of the cluster's
// other processes (Config.AskOthersToCollect), for this node's object store: its memory
// is over 70% of its budget (objects/shard's Config.Pressure), and refs dropped without
// Release, here or elsewhere, may hold objects in it. Collections back off as those for
// the waits do (collect.go), so a store full of live objects does not make every process
// collect continuously. It does not block.
func (c *Core) CollectForStore() { c.collect.request(time.Now()) }

// collectIfStarved asks for a collection when tasks of s have waited collectWaitAfter for
// a lease that a node does not grant (sched.Leases.Starved): an actor this process
// dropped may hold the resources they need.
func (s *shard) collectIfStarved(now time.Time) {
	for _, nl := range s.nodes {
		if nl.leases.Starved(now, collectWaitAfter) {
			s.c.collect.request(now)
			return
		}
	}
}

// awaitsInstance reports whether ac's actor has no instance serving calls (Pending or
// Restarting: perhaps waiting for resources), as this process's view of its record says.
func (c *Core) awaitsInstance(ac *actorCaller) bool {
	if c.cfg.Actors == nil {
		return false
	}
	info, ok := c.cfg.Actors.Info(ac.hex)
	if !ok {
		return false
	}
	p := lifecycle.Phase(info.Phase)
	return p == lifecycle.Pending || p == lifecycle.Restarting
}
