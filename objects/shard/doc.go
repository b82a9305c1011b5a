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
//
// Capacity: with a Budget, the bytes held in memory are bounded. When a put takes the
// shard over it, the least recently used objects (by put or read) are written to
// SpillDir, one round at a time on a goroutine (never in the mailbox), until memory is
// back under 90% of the budget; an object stays readable from memory until its file is
// complete. A spill file is a 16-byte header (magic, length, CRC-32C of the bytes) and a
// zstd frame. A Get of a spilled object is answered by a goroutine that reads, checks
// and decompresses the file (the object stays on disk: reads do not pull it back into
// memory). A file that is missing, truncated or fails its checksum makes the Get fail
// with an error naming the object, never return wrong bytes. When a spill cannot be
// written (disk full, unwritable directory) the objects stay in memory, over budget, the
// failure is logged and counted, and the next put tries again. Freeing an object
// deletes its file.
//
// Not yet: pinning objects that running tasks are reading (an object can be spilled
// while a task reads it; the task keeps its copy), and counting in-flight transfers.
package shard
