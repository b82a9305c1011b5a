// Package gcs is the global control store (GCS) of ray-go: the contract every component
// codes against, the key schema, and the two pieces that make etcd fast enough for it.
//
// # Contract
//
// Store (store.go) is a small key-value interface with etcd v3 semantics: revisions, Txn
// with ModRev comparisons, watches from a revision with history, leases, compaction. It is
// implemented by gcs/etcdstore (production: embedded or external etcd) and gcs/memstore
// (an in-memory fake for unit tests); gcs/gcstest is the conformance suite both pass, and
// any new implementation must. The sentinels (ErrClosed, ErrTooLarge, ErrLeaseNotFound,
// ErrCompacted, ErrFutureRev, ErrEmptyKey, ErrDuplicateKey, ErrNoSpace) are how callers
// branch on failures; IsPermanent says which ones a retry cannot fix. CheckTxn holds the
// shared validation, so every implementation rejects the same transactions.
//
// # Key schema
//
// keys.go writes the schema once: a prefix per table (nodes/, members/, jobs/,
// functions/, actors/, placement/, lineage/, objects/, objpages/, actorlog/) and typed
// functions building each key from hex IDs. Nothing else spells a GCS key.
//
// # Writer: group commit
//
// etcd commits ~17 k single puts/s from 64 writers but ~110-170 k keys/s as 100-op
// transactions (DESIGN §3), so one synchronous write per task cannot keep up. A Writer
// takes puts and deletes without blocking on I/O and sends them from one goroutine as few,
// large transactions (at most MaxTxnOps ops and MaxRequestBytes each, several in flight),
// at most MaxDelay (2 ms) after the first op of an idle batch. Ops on one key coalesce in
// the pending batch, and a Create followed by a Delete never reaches etcd at all. Flush
// waits for durability; backpressure bounds the queue; transient errors are retried,
// permanent ones stop the Writer (Err), except ErrNoSpace: a batch refused at the quota
// for WriterConfig.NoSpaceWait (2 s) is dropped and logged, its Flush fails, and the
// Writer writes on once the store has space (so a full GCS blocks no caller). The keys put
// by a dropped batch go to the Writer's OnNoSpace listeners: a Packer writes the live
// records of its dropped pages again (every LostRetryDelay, 1 s, plus NoSpaceWait) until
// they land, so the lineage and object records written meanwhile are in the store again
// once it has space; records are lost only if their Packer's process ends before that.
//
// # Packer: many records per key
//
// High-volume tables (lineage specs, object entries) pack many small records into pages,
// one key per page, s2-compressed (ratio ~4.8 on spec-like records), written through a
// Writer. Append and Remove are a buffer append and a map update under a mutex. Pages are
// sealed SealDelay (2 ms; lineage: 50 ms) after their first record, a full page waiting in
// memory until then, and sealing writes only the records still live: records that die
// within SealDelay (most tasks' lineage) cost neither compression nor etcd, and an open
// page whose records mostly died drops them and keeps filling. Written pages are deleted
// when all their records are removed, and rewritten when mostly dead (and at least
// RewriteMinAge old), so etcd holds at most about twice the live records. ReadAll and
// DecodePage are the recovery side.
//
// # What is measured
//
// bench_test.go runs the Writer and the Packer against a real embedded etcd (fsync on, the
// in-process client, so etcd's CPU is counted too). On the 2-core reference machine,
// unloaded: the Writer sends ~105 k distinct 100-byte keys/s from one producer
// (etcd-bound, ~8-10 µs of process CPU per key, etcd included); the Packer takes ~300-700 k
// records/s appended and kept (~1.4-1.7 µs CPU each), and 0.7-1.6 M records/s in the steady
// state where each record is removed shortly after (~0.7 µs CPU each, etcd, s2 and GC
// included: 150 k tasks/s cost ~5% of two cores). Wall-clock rates halve when the machine
// is busy; CPU per op is the stable figure. Run
//
//	go test -run '^$' -bench . -benchtime 2s ./internal/gcs/
package gcs
