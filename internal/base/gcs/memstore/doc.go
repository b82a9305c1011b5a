// Package memstore is an in-memory gcs.Store: the fake for unit tests of code that uses
// the GCS. It passes the same conformance suite (gcs/gcstest) as the etcd implementation,
// so code tested against it behaves the same on etcd; integration tests and local mode
// still run real embedded etcd (gcs/etcdstore).
//
// It keeps the semantics that matter: one global revision per mutation (none for a
// mutation that changes nothing), Txn with ModRev comparisons applied atomically, the
// contract's size and duplicate-key checks (gcs.CheckTxn), watches from any retained
// revision delivered in order and without gaps, compaction (watches from before it fail
// with gcs.ErrCompacted), leases whose expiry or revocation deletes their keys in one
// revision, and ErrClosed after Close.
//
// Leases expire by a Clock: real time by default (a goroutine owned by the Store checks
// every 20 ms), or a ManualClock whose Advance expires due leases before it returns, for
// deterministic tests. Differences from etcd, none of which the contract promises either
// way: KeepAlive is perfect (a kept lease never expires until the keep-alive's ctx ends),
// lease IDs are sequential, watch history is kept until Compact (there is no
// auto-compaction), values are copied on Put, and a watch from exactly the compaction
// revision sees every event of that revision.
//
// One mutex guards the whole store; a goroutine per watch pulls events from the history
// and blocks only on its consumer. Nothing is measured here: it is a fake.
package memstore
