package node

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The heap-goal floor (Config.GCHeapFloor). With GOGC 100 the collector starts a cycle when
// the heap reaches twice the live heap, and a runtime process's live heap is small (tens of
// MB) while it allocates fast (a task's spec, messages and futures are garbage at once): a
// driver submitting tasks ran ~10 cycles a second and spent 20% of its CPU in the collector.
// The floor lets the heap grow to at least the floor before a cycle: after each cycle the
// tuner sets GOGC (debug.SetGCPercent) so that the next goal is the floor while the live
// heap is small, and gives GOGC's own value back once live × (1+GOGC/100) exceeds the floor.
// The soft memory limit stays the backstop: the runtime's goal is the smaller of GOGC's and
// the limit's, and the floor is never more than half the limit.

// gcMinHeap is the runtime's heap minimum at GOGC 100 (defaultHeapMinimum in
// runtime/mgcpacer.go, 4 MiB). The runtime scales it with GOGC (heapMinimum = 4 MiB ×
// GOGC/100) and never sets a goal below it, so GOGC is kept at or under floor/4 MiB × 100:
// the minimum then stays at or under the floor.
const gcMinHeap = 4 << 20

// gcPercentFor is the GOGC that makes the next heap goal the floor: live is the heap marked
// live by the last cycle, roots the stacks and globals it scanned (the runtime's goal is
// live + (live + roots) × GOGC/100), gogc the program's own GOGC (what it gives back), floor
// the heap-goal floor (0 or less: off) and limit the soft memory limit (math.MaxInt64 or
// less than 1: none), which caps the floor at half of it. It returns gogc when the floor is
// off, GOGC is off (negative) or gogc's own goal already reaches the floor.
func gcPercentFor(live, roots int64, gogc int, floor, limit int64) int {
	if floor <= 0 || gogc < 0 {
		return gogc
	}
	if limit > 0 && limit < math.MaxInt64 && floor > limit/2 {
		floor = limit / 2
	}
	live, roots = max(live, 0), max(roots, 0)
	base := float64(live + roots)
	if base < gcMinHeap {
		base = gcMinHeap
	}
	if float64(live)+base*float64(gogc)/100 >= float64(floor) {
		return gogc
	}
	p := math.Ceil((float64(floor) - float64(live)) * 100 / base)
	p = min(p, math.Floor(float64(floor)*100/gcMinHeap))
	return max(int(p), gogc)
}

// gcTuner applies the floor in this process while a node that asked for it runs: a
// process-wide setting like the soft limit, shared by its nodes (the largest floor wins).
type gcTuner struct {
	mu      sync.Mutex
	nodes   int
	floors  map[int64]int // the floors of the nodes holding the tuner, counted
	gogc    int           // the program's GOGC, given back when the last node stops
	set     int           // the GOGC the tuner last set
	gen     uint64        // the sentinel chain that is current (older ones end)
	yielded bool          // the program set GOGC itself while the tuner ran: leave it
	owned   bool          // the tuner runs (the program's GOGC was the default)

	// The runtime, replaced in tests.
	setPercent func(int) int        // debug.SetGCPercent
	read       func() gcReading     // the last cycle's figures and the current GOGC
	arm        func(fn func() bool) // run fn after the next cycle, again while it says true
}

// gcReading is what the tuner reads after a cycle.
type gcReading struct {
	live, roots int64 // heap marked live, stacks and globals scanned
	gogc        int   // the current GOGC (-1: off)
	limit       int64 // the soft memory limit
}

var processGC = &gcTuner{setPercent: debug.SetGCPercent, read: readGC, arm: armAfterGC}

// acquire adds a node with the given floor. It reports false and changes nothing when the
// program runs with a GOGC of its own (not 100: the GOGC variable, or debug.SetGCPercent
// before the first node); the root package also passes no floor when GOGC is set at all.
func (t *gcTuner) acquire(floor int64) bool {
	if floor <= 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nodes == 0 {
		r := t.read()
		if r.gogc != 100 {
			return false
		}
		t.gogc, t.set, t.yielded, t.owned = r.gogc, r.gogc, false, true
		t.floors = map[int64]int{}
		t.gen++
		gen := t.gen
		t.arm(func() bool { return t.step(gen) })
	}
	if !t.owned {
		return false
	}
	t.nodes++
	t.floors[floor]++
	t.applyLocked(t.read())
	return true
}

// release removes a node's floor that acquire took; the last one gives the program's GOGC
// back (unless the program set its own meanwhile).
func (t *gcTuner) release(floor int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nodes == 0 || t.floors[floor] == 0 {
		return
	}
	t.nodes--
	if t.floors[floor]--; t.floors[floor] == 0 {
		delete(t.floors, floor)
	}
	if t.nodes > 0 {
		return
	}
	t.gen++ // the pending sentinel ends its chain
	t.owned = false
	if !t.yielded && t.read().gogc == t.set {
		t.setPercent(t.gogc)
	}
}

// step runs after a cycle: it sets the GOGC for the next goal and says whether to run
// again after the next cycle.
func (t *gcTuner) step(gen uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gen != t.gen || !t.owned {
		return false
	}
	t.applyLocked(t.read())
	return !t.yielded
}

func (t *gcTuner) applyLocked(r gcReading) {
	if t.yielded {
		return
	}
	if r.gogc != t.set { // the program called debug.SetGCPercent: its value stays
		t.yielded = true
		return
	}
	var floor int64
	for f := range t.floors {
		floor = max(floor, f)
	}
	if p := gcPercentFor(r.live, r.roots, t.gogc, floor, r.limit); p != t.set {
		t.setPercent(p)
		t.set = p
	}
}

// readGC reads the last cycle's figures from runtime/metrics.
func readGC() gcReading {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	u := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(min(s[i].Value.Uint64(), math.MaxInt64))
	}
	gogc := -1 // GOGC=off reads as the uint64 of -1
	if s[3].Value.Kind() == metrics.KindUint64 && s[3].Value.Uint64() <= math.MaxInt32 {
		gogc = int(s[3].Value.Uint64())
	}
	return gcReading{live: u(0), roots: u(1) + u(2), gogc: gogc, limit: debug.SetMemoryLimit(-1)}
}

// gcSentinel is the object whose finalizer runs after each cycle: 32 bytes, so that it is
// not batched with other tiny allocations (whose finalizers may never run).
type gcSentinel [32]byte

// armAfterGC runs fn in the finalizer goroutine after the next collection, and after every
// following one while fn reports true.
func armAfterGC(fn func() bool) {
	s := new(gcSentinel)
	runtime.SetFinalizer(s, func(*gcSentinel) {
		if fn() {
			armAfterGC(fn)
		}
	})
}
