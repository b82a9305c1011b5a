package objects

import (
	"math/bits"
	"runtime"
)

// Shards is how many partitions the owner's per-object tables (MemoryStore, RefTable) are
// split into for a process with gomaxprocs cores: a power of two, four per core (so that
// two goroutines working on different objects rarely meet on one lock), from 8 to 256.
func Shards(gomaxprocs int) int {
	n := 1 << bits.Len(uint(max(1, 4*gomaxprocs)-1))
	return min(max(n, 8), 256)
}

// defaultShards is Shards for this process.
func defaultShards() int { return Shards(runtime.GOMAXPROCS(0)) }

// cacheLinePad keeps two shards' hot fields off one cache line (128 bytes: adjacent-line
// prefetching pairs lines on x86).
type cacheLinePad [128]byte
