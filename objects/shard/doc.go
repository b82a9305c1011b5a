// Package shard is a node's object store shard: a protoactor grain (identity
// "n/<node>/store/<i>") that holds the bytes of objects too large to travel inline with a
// task reply (DESIGN §4), serves them to local workers and drivers, and frees them when
// their owner says no reference is left.
//
// Objects are immutable: a Put of an ID already held is ignored (a retried task or a
// reconstruction produces the same bytes). Every object held here has a record in the GCS
// object table (node, size, owner), written through the group-commit writer when it
// arrives and deleted when it is freed; an object freed shortly after creation never
// touches etcd because the writer coalesces the put and the delete.
//
// In-process, messages carry the byte slices themselves: a Put or Get moves no bytes.
// Capacity, LRU spilling to disk and restore are the object-store-memory issue's work.
package shard
