// Package gcstest is the conformance suite of the gcs.Store contract. Every
// implementation runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		gcstest.Run(t, func(t *testing.T) gcs.Store { return memstore.New(memstore.Options{}) })
//	}
//
// Run starts one parallel subtest per clause: get/put/delete and revisions (strictly
// increasing, none for a change that changes nothing), the empty key, List and Count by
// prefix (order, prefix boundaries, 0xff bytes, thousands of keys), Txn atomicity, ModRev
// comparisons, DeletePrefix, the size limits (MaxTxnOps, MaxRequestBytes: ErrTooLarge) and
// duplicate keys, watches (from now, from history then live, one revision per Txn,
// cancellation, many concurrent writers without gaps), compaction (ErrCompacted,
// ErrFutureRev, watches from a compacted revision), leases (revoke deletes and notifies,
// unknown leases, expiry deletes and notifies, keep-alive keeps and its end lets expire),
// calls with a canceled or expired ctx (no effect), and Close (ErrClosed everywhere,
// watches and keep-alives end).
//
// newStore must give each subtest a store of its own revision space (a fresh memstore, a
// fresh embedded etcd: it takes ~30 ms) and register the release of what backs it with
// t.Cleanup; Run closes the stores. The expiry test uses a 1 s TTL (etcd's minimum with
// the embedded server's timing); the keep-alive test holds a 5 s lease for 6 s, then lets
// it expire (a 1-2 s lease kept alive over gRPC can rightly be lost on a loaded machine:
// etcd's client renews every TTL/3 from a 500 ms loop). Waits for events are bounded by a
// generous limit and fail the test; none asserts a latency.
package gcstest
