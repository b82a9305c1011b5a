// Package internal holds no code; its subtrees are the two layers of the runtime that the
// user must not import, one below the domain packages and one above them (DESIGN §7):
//
//   - internal/base: what every layer may use, importing no domain package: ids (task,
//     object, actor and node IDs), pb (every wire message), gcs (the GCS Store interface,
//     its etcd implementation, the in-memory fake and their conformance suite, the
//     group-commit writer and record pages), dispatch (the mailbox goroutine pool and the
//     message counter), netx, workerenv (the agent/worker-process contract), identity
//     (the cluster CA, certificates, join token and node-to-node TLS), slab (values
//     allocated in chunks and never reused, for the hot path), stripe (counters written
//     per task or call from every core without sharing a cache line), ask (protoactor
//     requests without its futures' race on late replies), handoff (a run loop's queue of
//     work handed to it), mapx (maps that give memory back after a burst), seqring (values
//     by sequence number in a ring); and two packages of test support,
//     fuzzing (allocation bounds, seed corpora) and scenario (the pure packages' scripts).
//   - the domain packages, outside internal/: objects, lineage, tasks, actors.
//   - internal/assembly: what puts the domain together into a running system: membership
//     (our protoactor ClusterProvider and IdentityLookup over the GCS), core (the
//     per-process runtime: the owner's shards, submission, Get/Put/Wait, borrowing,
//     reconstruction), clusterview (the nodes a runtime places tasks on, read through
//     immutable snapshots, with a placer per owner shard), node (the composition root: one
//     node's grains, GCS client, load report), agent (what `rayctl start` runs), testcluster (several nodes in one process).
//
// internal/archtest enforces the order with a ranked table of every package: a package
// imports only lower ranks.
package internal
