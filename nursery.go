package ray

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ray-go/ray/objects"
)

// The nursery: a handle's finalizer is set late, by one goroutine, and only on handles
// still in use by then.
//
// Setting a finalizer, and clearing it in Release, each allocate or free a record under
// one lock of Go's runtime for the whole process (mheap_.speciallock) and walk the
// handle's memory span's list of such records: 11% of the CPU of multi_client_tasks_async
// at 2 cores, and a lock that every core meets on every task. Most handles are released
// within milliseconds of their making (a batch of tasks submitted, got and released), and
// they need no finalizer at all. So a new handle goes to the nursery, a set of lists
// partitioned like the object tables (one mutex each, no lock shared by all cores); every
// nurseryTick the nursery's goroutine sets the finalizer of each handle that has been
// there a whole tick and is not released yet, and forgets the rest. A handle the program
// drops early is held by the nursery for one to two ticks more, and its finalizer, set
// then, gives its reference back after the next garbage collection, as before: GC-driven
// release was never prompt. A released handle (Release) costs its nursery list an append,
// and holds nothing of its task while the list keeps it (handle.e is cleared).
const nurseryTick = 50 * time.Millisecond

type nurseryShard struct {
	mu         sync.Mutex
	young, old []*handle // since the last tick, and since the one before
	spare      []*handle // the array of the old list the last tick went through
	_          [128]byte // keeps shards' mutexes off one cache line
}

var nursery struct {
	shards []nurseryShard
	mask   uint32
	armed  atomic.Bool // a tick is due
	once   sync.Once
}

// toNursery gives h, a handle with a reference, its finalizer within two ticks unless it
// is released first.
func toNursery(h *handle) {
	nursery.once.Do(func() {
		n := objects.Shards(runtime.GOMAXPROCS(0))
		nursery.shards, nursery.mask = make([]nurseryShard, n), uint32(n-1)
	})
	sh := &nursery.shards[h.id.Hash()&nursery.mask]
	sh.mu.Lock()
	sh.young = append(sh.young, h)
	sh.mu.Unlock()
	if !nursery.armed.Load() && nursery.armed.CompareAndSwap(false, true) {
		time.AfterFunc(nurseryTick, nurseryTickNow)
	}
}

// nurseryTickNow sets the finalizers of the handles that were in the nursery a whole tick
// and are not released, and arms the next tick while any handle waits.
func nurseryTickNow() {
	for i := range nursery.shards {
		sh := &nursery.shards[i]
		sh.mu.Lock()
		old := sh.old
		sh.old, sh.young, sh.spare = sh.young, sh.spare[:0], nil
		sh.mu.Unlock()
		for j, h := range old {
			if !h.gone.Load() {
				runtime.SetFinalizer(h, collected)
				h.fin.Store(true)
			}
			old[j] = nil
		}
		sh.mu.Lock()
		sh.spare = old[:0]
		sh.mu.Unlock()
	}
	// A handle added after its shard was gone through either finds armed false and arms
	// the tick itself, or is seen here.
	nursery.armed.Store(false)
	waiting := false
	for i := range nursery.shards {
		sh := &nursery.shards[i]
		sh.mu.Lock()
		waiting = waiting || len(sh.young)+len(sh.old) > 0
		sh.mu.Unlock()
	}
	if waiting && nursery.armed.CompareAndSwap(false, true) {
		time.AfterFunc(nurseryTick, nurseryTickNow)
	}
}
