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
// Capacity: with a Budget, the bytes held in memory are bounded (but for copies pinned by
// pulls, below). With a Grant (grant.go), the Budget is shared with the stores of the
// machine's other processes and the shard's bound is the grant it holds: it takes more, a
// chunk at a time, when a put would cross it, gives chunks back when two are unused, and
// spills as below when nothing more is granted. When a put takes the shard over it, the least recently used objects (by
// put, read or pull) are written to SpillDir until memory is back under 90% of the
// budget: in batches (of at least 4 MiB, or what is left to free), up to SpillWorkers
// (default GOMAXPROCS) batches at once, each on a goroutine of its own (never in the
// mailbox); each batch that ends makes room for the next, so compression, the costly part
// (zstd at ~0.2 GB/s a core on compressible data), runs on every core. A put that leaves
// the store over budget while batches are written is acknowledged once it is back under
// (backpressure). An object stays readable from memory until its file is complete. A
// spill file is a 36-byte header (magic, length, CRC-32C of the bytes, the object's ID)
// and a zstd frame; the shard keeps each spilled object's CRC-32C in memory. Each write
// has a file of its own, <id>-<n>.zst (the shard's n-th write), so that the removal of a
// freed copy's file, on a goroutine of its own, never meets a later spill of the same ID.
// Spill files do not outlive their process (a shard reads only files it wrote), so the format can
// change freely.
// A Get of a spilled object is answered by a goroutine that reads, checks and
// decompresses the file, at most SpillWorkers at once (the others wait their turn, and
// their askers with them) (the object stays on disk: a Get does not bring it back into
// memory; a pull does, see below). A file that is
// missing, truncated or fails its checksum, or one that is valid but not this object's
// (its header names another object, as when another file was copied over it, or its
// checksum is not the one recorded when it was written, as for a file left from an
// earlier spill of the same ID), makes the Get fail with an error naming the object and
// the file and saying which ("missing", "holds another object", ...), never return wrong
// bytes. An object freed while its file is written and put again before the write ends
// is another object: the old write's end does not mark it spilled. The reader trusts the size the shard
// recorded, not the file: a header or zstd frame that claims another size, or a file
// larger than a spill of that size can be, is refused before anything is allocated for
// it, and the decompressor writes at most that size (one flipped bit in the length field
// used to allocate 512 GiB). Spill files are 0600 in a 0700 directory. When a spill cannot be written (disk full, unwritable
// directory) the objects stay in memory, over budget; a batch stops at its first failure
// (no compression of objects that would fail too), the failure is counted once for the
// batches that were written together (they are one attempt), logged once with the
// directory and its free space (and once more when spilling works again), and the next
// attempt, after a back-off (1 s, doubling up to 30 s), is one batch alone. While spilling fails,
// a put that would take the store's memory over twice its budget is refused with an error
// that says what to do. Freeing an object deletes its file.
//
// Spill directories the user gives (spilldir.go): CheckSpillDir validates one (with errors
// that say what to do), and OpenSpillDir makes a process's own directory in it, locked
// while it lives and removed by Close; RemoveStaleSpillDirs removes only the node
// directories there of this machine's processes that are gone, so a directory shared by
// several nodes or agents, or holding other files, loses nothing but their own.
//
// Pressure: objects whose refs a program dropped without Release stay here until a
// garbage collection in the process that dropped them finds the refs gone (Go collects a
// quiet process every 2 minutes). A put that finds memory over PressureFraction (70%) of
// the budget calls Config.Pressure, and the node asks its process and the cluster's other
// processes for a collection (internal/assembly/core, collect.go, which backs off), as
// Ray's raylet triggers a global GC. At most once per second; while memory stays over,
// the shard calls it again each second without a put (a timer, only then). Under 70% a
// put costs one comparison more.
//
// Pulls (pull.go; the puller is package objects/transfer): a PullObject asks for at most
// MaxPullChunk (1 MiB) bytes of an object from an offset; the reply carries them with the
// whole object's size and CRC-32C, computed once per object and kept (in the mailbox up
// to 4 MiB, on a goroutine beyond; for a spilled object, the checked sum in its spill file
// header). With allow_s2, chunks of 4 KiB or more are s2-compressed on a goroutine (at
// most GOMAXPROCS at a time) and sent compressed when that saves an eighth. A pull is a
// use for the LRU. A pull of a spilled object reads the file back on a goroutine, as a
// Get does, but keeps the copy in memory (counted in memory, its file kept) so that the
// object's other chunks do not each read the whole file again: pulls that arrive
// meanwhile wait for that one read. The copy is pinned while its pull goes on (a lease
// of 10 s renewed by every chunk, released when the last chunk is served), then evicted
// like any object, without a write since its file is still there. A spill file that
// fails its checks makes the pull fail with the error a Get reports; nothing is kept, and
// the next pull reads the file again.
//
// Not yet: pinning objects that running tasks are reading (an object can be spilled
// while a task reads it; the task keeps its copy), and counting in-flight transfers.
package shard
