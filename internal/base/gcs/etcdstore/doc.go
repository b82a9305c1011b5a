// Package etcdstore implements gcs.Store on etcd v3, and runs an embedded etcd server. It
// is the only package of ray-go that imports go.etcd.io/etcd (all modules pinned to
// v3.5.35).
//
// # Clients
//
// New connects over gRPC to an etcd cluster (`rayctl start --address`, a user's 3- or
// 5-member cluster). clientv3.New does not fail fast, so New reads once with DialTimeout
// (default 5 s) and fails naming the endpoints. Its gRPC connection reconnects to a member
// that went away (a head restarted) with a backoff capped at 2 s, not gRPC's default 120 s
// (reconnectBackoff): a client is back within ~2 s of the member answering again, and
// calls made meanwhile wait for the connection. Embedded.Client talks to an in-process
// server through etcd's v3client (direct calls, no gRPC, no sockets). Both take a
// Namespace, a key prefix (clientv3/namespace for KV and leases; watches are prefixed by
// hand, because the namespace watcher rewrites event keys in place and the in-process
// client shares event objects between watchers: a data race).
//
// Errors satisfy errors.Is with the gcs sentinels (rpctypes errors translated), with
// context errors when ctx ended, and with gcs.ErrClosed after Close. Every call checks ctx
// before it is sent: etcd may apply a write proposed with an already canceled context.
// List reads large prefixes in pages at one revision (a consistent snapshot; restarted if
// compacted in between). Watch translates events and compaction (gcs.ErrCompacted) into
// gcs.WatchResponse. KeepAlive checks the lease with one renewal (the client's keep-alive
// does not report a missing lease), then closes lost when the client's keep-alive channel
// closes: lease expired or revoked, no renewal for a TTL, ctx done, or Close.
//
// Leases: TTLs are whole seconds; etcd raises any TTL to its minimum, 1.5 election
// timeouts rounded up to a second, which is 1 s for the embedded server (ElectionMs 100)
// and for etcd's defaults. Expired leases are revoked by the leader's lessor, which
// checks every 500 ms: a 1 s lease is gone ~1-1.5 s after its last renewal.
//
// # TLS
//
// Config.TLS (a client tls.Config with the cluster CA and a client certificate,
// identity.Credentials.ClientTLS) makes New speak TLS; EmbedConfig.TLS (the files of the
// member's credentials) makes the embedded server's client and peer URLs https, both
// requiring a client certificate of the CA (etcd's ClientCertAuth). gRPC reports a refused
// handshake only as a deadline, so when New's first read fails it runs one handshake of its
// own and says why: ErrNeedsTLS (the server speaks TLS, the client has no credentials) or
// ErrTLSRefused (certificates of different CAs, no client certificate, or a plain-text
// server). A Store that worked and whose calls now fail tells the same way whether the GCS
// refuses its certificate (Store.Refused: revoked since, its requests denied or its new
// handshakes refused) or only does not answer: a long-running client (an agent) stops
// instead of retrying for ever. The in-process client needs no credentials.
//
// # Authorization (auth.go)
//
// With EmbedConfig.Auth (and TLS), Embedded.Auth manages etcd's auth, on the server itself
// as its root user: Auth.Enable defines roles with key-range permissions (identity's GCS
// role table), creates the root user without a password and turns auth on (idempotent, and
// kept across restarts on the same Dir); PutUser and DeleteUser manage a user per
// certificate (etcd takes a TLS client's user from its certificate's common name, and
// checks the user's roles on every request, read in etcd v3.5's server/auth
// AuthInfoFromTLS and isOpPermitted: so deleting a user refuses the next request of a
// connection opened before; a watch's permission is checked only when it is created, which
// is why a server with a CRL serves its client port through a relay, frontdoor.go, that
// Embedded.CutClientConnections uses to make every client handshake again). The
// in-process clients act as root: etcd reads a client's user from the gRPC peer's TLS
// state, which the in-process client has not, so its requests carry a peer with a
// verified chain naming root (auth.go, inProcessIdentity), and a request refused because
// the auth store changed meanwhile (ErrAuthOldRevision, not applied) is sent again, as
// etcd's gRPC client does by itself. Without Auth the in-process client is etcd's own
// v3client (local mode). A refused request fails with gcs.ErrPermissionDenied; New fails
// with ErrNoAccess (wrapping it) when the server takes the certificate but grants it
// nothing (no user, or a deleted one). New's probe reads a key of the namespace (with auth
// on, a client may read nothing else).
//
// # Embedded server
//
// StartEmbedded runs a single member on 127.0.0.1 (ports picked when 0, a clear error
// when taken) with TickMs 10 and ElectionMs 100 (ready in ~25 ms instead of ~0.5 s),
// revision auto-compaction (keeps 10 000 revisions; etcd's compactor runs every 5 min), a
// 2 GiB quota, SnapshotCount 1 000 (the in-memory raft log is bounded by it, and GCS
// transactions are up to 1.5 MiB), no gRPC gateway, and etcd's logging routed to a
// slog.Logger at error level (nothing on stderr). Close closes its clients, stops the
// server and waits. Data survives a restart on the same Dir.
//
// # The directory's bound
//
// Dir holds the database file (member/snap/db: what the quota counts; compaction and
// defrag.go keep it small), the write-ahead log (member/wal) and raft snapshots
// (member/snap/*.snap: a few KiB each, no v2 data). etcd keeps two WAL segments and two
// snapshots (MaxWalFiles, MaxSnapFiles), removing older ones every 30 s, and preallocates
// the next segment; a segment is WALSegmentBytes (16 MiB, etcd's default is 64 MB: set for
// the whole process in this package's init) and is cut once an entry takes it past that.
// So after a purge the directory is at most the database file plus 3 x (16 MiB + one
// entry) ~ 52 MiB of WAL plus ~20 KiB of snapshots, and between purges also the segments
// written in those 30 s (the 3-minute soak, ~1 MiB/s of WAL: 48-64 MiB of WAL, against
// 183 MiB with etcd's 64 MB segments and SnapshotCount 5 000), as long as the entries since
// the newest snapshot (at most SnapshotCount of them) fit in two segments: etcd cannot
// remove a segment holding entries after the newest snapshot, so a burst of large
// transactions (1,000 of 1.5 MiB would be 1.5 GiB) holds more until the next snapshot and
// purge. TestDirStaysBounded checks the bound after ~100 MiB of writes.
//
// # What is measured
//
// The conformance suite runs against both clients (a fresh server per subtest, ~30 ms
// each). Throughput of the group-commit Writer and the Packer on this server is measured
// in package gcs (bench_test.go).
package etcdstore
