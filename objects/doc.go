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
// shard at a time and never call out while holding it. An owner's store and table
// (NewOwned) keep an object in one Entry, a pointer in one map: the steps of a task find
// one entry, not one in each of two maps. A task's return object has its entry embedded in
// the owner's bookkeeping of the task (MemoryStore.CreateIn), and the API's handle keeps a
// pointer to it, so that completing, getting and releasing the object look nothing up
// (the ...In methods); the map serves lookups by ID (borrowers, reconstruction, refs
// decoded from values) and is touched twice per object, to insert and to delete. Where an
// owner takes a store step and a table step on the same object back to back, one step of
// the RefTable takes both under one lock of its shard (CreateSubmittedIn, CreateLocalIn,
// RemoveLocalFreeIn).
//
// Borrows are the tables of the borrowing protocol (refs nested in values): what this
// runtime borrows, who borrows what it owns, and the refs pinned with an outer object; the
// protocol's messages are the runtime's (internal/assembly/core).
//
// Subpackages: codec (encoding Go values), shard (the node's object store grain).
package objects
