// Package objects holds the owner side of ray-go's object model: the in-process memory
// store of objects this process owns (small values inline, large ones located in a node's
// store shard) and the reference table that decides when an object's value, its
// object-table record and its lineage can be dropped.
//
// Ownership (Ray's model): the process that submitted a task or called Put owns the
// resulting objects. Their futures live in its MemoryStore; their lifetimes are counted in
// its RefTable. Both are leaf data structures guarded by a mutex (DESIGN §8.5): they are
// called from user goroutines (Get, Put, Remote), from the owner's actor and from GC
// cleanups, and never call out while holding the lock.
//
// Subpackages: codec (encoding Go values), shard (the node's object store grain).
package objects
