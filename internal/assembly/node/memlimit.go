package node

import (
	"math"
	"runtime/debug"
	"sync"
)

// SoftLimitMargin is what the soft memory limit (Config.SoftMemoryLimit) allows above the
// object store budgets of the process's nodes: the Go heap that is not the store's (tasks'
// data, restored copies, the runtime's own) and the garbage the collector has not yet
// freed. Resident memory runs 150-240 MiB above the limit (memory outside the Go heap, and
// the live heap overshooting it for a while): the 2 GiB sort through a 512 MiB store peaked
// at 1517 MiB resident with a 768 MiB margin and 1342-1385 MiB with this one, under store +
// 1 GiB (benchmarks/RESULTS.md).
const SoftLimitMargin = 640 << 20

// softLimit is the process's share of Config.SoftMemoryLimit: the store budgets of the
// nodes that asked for it, and the limit the process had before the first of them.
type softLimit struct {
	mu     sync.Mutex
	set    func(int64) int64 // debug.SetMemoryLimit (a fake in tests)
	stores int64             // sum of the budgets of the nodes holding the limit
	nodes  int
	prev   int64 // the limit before the first node took it
	owned  bool  // this process's limit is ours (the program had set none)
}

var processLimit = &softLimit{set: debug.SetMemoryLimit}

// acquire adds a node's store budget: the limit becomes the budgets' sum plus
// SoftLimitMargin. It reports false (and sets nothing) when the program already runs with
// a limit of its own (GOMEMLIMIT, or debug.SetMemoryLimit before the first node): that
// one is the user's and stays.
func (s *softLimit) acquire(storeBytes int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nodes == 0 {
		s.prev = s.set(-1)
		s.owned = s.prev == math.MaxInt64
	}
	if !s.owned {
		return false
	}
	s.nodes++
	s.stores += storeBytes
	s.set(s.stores + SoftLimitMargin)
	return true
}

// release removes a node's budget that acquire took; the last one puts back the limit the
// process had before.
func (s *softLimit) release(storeBytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nodes == 0 {
		return
	}
	s.nodes--
	s.stores -= storeBytes
	if s.nodes == 0 {
		s.set(s.prev)
		s.owned = false
		return
	}
	s.set(s.stores + SoftLimitMargin)
}
