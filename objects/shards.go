package objects

import (
	"math/bits"
	"runtime"
)

// Shards is how many partitions the owner's per-object tables (MemoryStore, RefTable,
// Borrows) are split into for a process with gomaxprocs cores: a power of two, sixteen per
// core, from 32 to 1024. A submitter creating futures and the shards completing earlier
// ones touch different objects; with k partitions they meet on a lock about 1/k of the
// time (at four per core, 8 partitions on 2 cores, the memory store and reference table
// were most of the runtime's mutex wait in multi_client_tasks_async).
func Shards(gomaxprocs int) int {
	n := 1 << bits.Len(uint(max(1, 16*gomaxprocs)-1))
	return min(max(n, 32), 1024)
}

// defaultShards is Shards for this process.
func defaultShards() int { return Shards(runtime.GOMAXPROCS(0)) }

// cacheLinePad keeps two shards' hot fields off one cache line (128 bytes: adjacent-line
// prefetching pairs lines on x86).
type cacheLinePad [128]byte
