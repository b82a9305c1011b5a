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
// in-process client. Join takes the GCS client's tls.Config (JoinConfig.TLS) and reports a
// GCS that refuses the connection for want of credentials as ErrCredentials. The
// protoactor remote and the object transfer server do not speak TLS yet (issue 17, item 3).
//
// protoactor's remote.Start writes gRPC's global logger while the embedded etcd's gRPC
// server reads it; grpcsync.go orders those accesses for the race detector (see there).
package node
