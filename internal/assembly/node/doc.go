// Package node is the composition root of a ray-go node (DESIGN §1, §7): it starts the GCS
// (an embedded etcd, or a client of an external one), the group-commit writer and the
// lineage packer, a protoactor actor system with remoting on 127.0.0.1, and a cluster member
// using our membership provider and identity lookup, with three grain kinds:
//
//	raylet   "n/<node>/raylet"        the node's scheduler (package tasks/raylet)
//	worker   "n/<node>/worker/<slot>" task executors (package tasks/worker)
//	store    "n/<node>/store/0"       the object store shard (package objects/shard)
//
// and the process's runtime (package internal/assembly/core) that owns objects and submits tasks.
// Local mode and cluster mode differ only in what this package wires.
//
// Grain factories hold no per-node state beyond the closures built here; node services
// are reached through those closures, never through package globals. Every mailbox of the
// node runs on one goroutine pool (package internal/base/dispatch). Gossip is off: membership is
// the GCS's (package internal/assembly/membership).
//
// Security: a local-mode node's embedded etcd listens on 127.0.0.1 with mutual TLS under a
// CA made at start-up that exists only in memory (identity.go: the member's certificate and
// key are written 0600 under Dir/tls, because etcd reads files); the node itself uses the
// in-process client. Join takes the process's credentials (JoinConfig.Credentials: its
// certificate of the cluster's CA) for the GCS client and reports a GCS that refuses the
// connection for want of credentials as ErrCredentials.
//
// Node to node, with credentials (Config.Credentials; local mode uses its in-memory CA's),
// protoactor's gRPC remote and the object data stream speak mutual TLS 1.3 and accept only
// peers of the same CA (identity.PeerServerTLS, PeerClientTLS: any certificate of the CA
// but a rayctl client's; host names are not checked, members are known by their CA), and
// in a cluster not one whose serial is in the GCS's revoked/ records (watchRevoked: read
// before the remote starts, then watched; `rayctl cert revoke` writes them; a revocation
// also closes the connections that certificate has open, both ways: trackedCreds). The
// gRPC server also bounds what reaches it before and after the handshake (peer.go): 5 s to
// finish a handshake, at most 256 connections in their handshake at once (a new one closes
// the oldest), 32 streams per connection, 64 KiB of headers, and every unary call refused
// (protoactor's panic "implement me", which ended the process). Messages stay bounded by
// maxMessageBytes (64 MiB): object bytes travel in 1 MiB chunks or over the data stream,
// by-value arguments over 100 KiB (or over 512 KiB together) through the object store, and
// lists of specs, calls, results and IDs in messages of about 1 MiB (internal/base/pb
// bounds.go). Without credentials (--insecure, testcluster) both speak plain text.
//
// Nodes on one machine (equal NodeInfo.machine_id, Linux's boot ID) read each other's
// objects over the data server's Unix socket in the node's directory
// (NodeInfo.data_socket, 0600): no TLS, no TCP, and on Linux a large object's bytes
// through a pipe (one copy: objects/transfer); a socket that cannot be reached (a
// container of the same host without the file) falls back to the TCP address.
//
// In a cluster each node publishes its load report (load.go: load/<node>, leased, read by
// the views of package clusterview, `rayctl status`, `rayctl memory` and the metrics): it
// looks every LoadReportInterval (asking its raylet only after the raylet handled a
// message) and writes the report when a figure placement uses crossed a threshold
// (significantChange: queue empty or not, doubled or halved; free resources at none, one
// unit, half or all of the total, or moved by an eighth of it): at once when the node has
// less room than the report said (lostRoom: a queue started or doubled, a resource below
// one unit), else at once after a quiet loadReportDamp (500 ms) and otherwise that long
// after the last write, so that a small node whose leases come and go, crossing half its
// total back and forth, writes at most two reports a second; within loadReportSettle
// (1 s) for any other change, at once on a new GCS lease, and every loadReportRefresh
// (30 s) when nothing changed: every view that follows the reports gets every rewrite.
// The node's own placements do not wait for its report: its view reads the raylet's live
// load (raylet.Live, clusterview.Config.Local), whose version the machine ledger's
// answers also move when the node has one.
//
// A driver takes its cluster for lost when the GCS has not answered for Config.GCSTimeout
// (DefaultGCSTimeout, 60 s as Ray's gcs_rpc_server_reconnect_timeout_s; GCSTimeoutEnv)
// after its membership lease lapsed (LeaseTTL of silence): the membership provider reports
// the silence (membership.Config.GCSLost), and gcsLost (lease.go) is the one place that
// decides: it fails the runtime for good (core.Core.Lose, with an error naming the GCS's
// address that wraps core.ErrClusterLost), and Stop then hands nothing over to the GCS (as
// Crash) instead of waiting out each write's timeout. A shorter outage changes nothing.
// Worker processes end on their own bound (ServeWorker); node agents wait.
//
// A driver also fails its runtime (driverback.go) when it registers again after its lease
// lapsed and finds that the head ended its job meanwhile (it was stopped or hung past the
// head's grace: "job driver lost"), and its Stop leaves that job record as it is.
//
// A driver publishes its object store's figures too, under driverload/<node> (load.go),
// once a second while they change: `rayctl memory` and the head's metrics count them, and
// the views that place tasks, which follow load/ only, never see them.
//
// protoactor's own logs go through peerLog (peerlog.go): the endpoint writer's ERROR lines
// about a peer that went away (lost connection, five failed reconnects) become one WARN per
// peer and minute that says what happened, the rest DEBUG; about a process of another job
// (peerConcern: the job its node record named, which the view keeps after the record
// goes) that owns nothing this process borrows, all DEBUG.
//
// Process-wide memory settings, shared by the process's nodes and undone by the last to
// stop: the soft memory limit (memlimit.go, Config.SoftMemoryLimit) and the heap-goal floor
// (gcfloor.go, Config.GCHeapFloor: GOGC retuned after every cycle by a finalizer-armed
// sentinel, so that the collector does not run before the heap reaches the floor; a GOGC the
// program chose is left alone).
//
// protoactor's remote.Start writes gRPC's global logger while the embedded etcd's gRPC
// server reads it; grpcsync.go orders those accesses for the race detector (see there).
package node
