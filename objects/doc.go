// Package objects holds the owner side of ray-go's object model: the in-process memory
// store of objects this process owns (small values inline, large ones located in a node's
// store shard) and the reference table that decides when an object's value, its
// object-table record and its lineage can be dropped.
//
// Ownership (Ray's model): the process that submitted a task or called Put owns the
// resulting objects. Their futures live in its MemoryStore; their lifetimes are counted in
// its RefTable. Both are leaf data structures (DESIGN §8.5), partitioned by object ID into
// shards (Shards: four per core), each behind its own mutex, so that goroutines working on
// different objects do not meet on a lock (DESIGN §9): they are called from user
// goroutines (Get, Put, Remote), from the owner's shards and from GC cleanups, lock one
// shard at a time and never call out while holding it.
//
// Borrows are the tables of the borrowing protocol (refs nested in values): what this
// runtime borrows, who borrows what it owns, and the refs pinned with an outer object; the
// protocol's messages are the runtime's (internal/assembly/core).
//
// Subpackages: codec (encoding Go values), shard (the node's object store grain).
package objects
