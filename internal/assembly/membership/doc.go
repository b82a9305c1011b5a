// Package membership is ray-go's protoactor cluster membership and grain placement over
// the GCS: a cluster.ClusterProvider (Provider) and a cluster.IdentityLookup (Lookup)
// that talk to the GCS only through gcs.Store. Written by hand because protoactor's stock
// etcd provider has neither a configurable lease TTL nor re-registration
// (asynkron/protoactor-go#1133, #1258) and its stock lookups place grains by hash.
//
// # Identities
//
// The Identity half of a cluster.ClusterIdentity says where a grain lives; the Kind half
// only says what it is. Build identities with NodeIdentity and ActorIdentity, parse them
// with ParseIdentity:
//
//	n/<nodeID>[/<rest>]  node-pinned: lives on the member that registered nodeID
//	                     (scheduler "n/<node>", worker "n/<node>/<slot>", shard "n/<node>/<shard>")
//	a/<actorID>          actor-placed: lives on the node named by the GCS key
//	                     placement/<actorID> (value: the node ID as a plain string,
//	                     or whatever LookupConfig.ParsePlacement decodes)
//
// Anything else resolves to nil with a warning. Node IDs must not contain '/'.
//
// # Registration and leases
//
// StartMember registers members/<memberID> (a JSON MemberInfo: member ID, node ID,
// address, host, port, kinds) under a lease of Config.LeaseTTL (default 3 s), kept alive
// by the store (a renewal every TTL/3). When the keep-alive reports the lease lost (it
// expired while the GCS was unreachable, or it was revoked), the provider registers again
// under a new lease and a new incarnation, retrying with back-off until the GCS answers.
// The log says so once per outage, not at every attempt (outage.go): a warning when the
// first call fails (which, with what error, the GCS's address, Config.GCSAddress), a
// reminder with the outage's length every 30 s, and "GCS reachable again after 41s" when a
// call succeeds again.
// Member IDs are "<ActorSystem.ID>#<incarnation>": protoactor's MemberList blocks a member
// ID for good once it has left the topology (and its remote refuses connections from a
// blocked actor-system ID), so an incarnation that peers saw leave is never reused, and
// member IDs never equal actor-system IDs.
//
// One membership actor per process (MembershipActorName) owns the member table: it
// applies the members/ watch (re-listing when the watch fails), publishes the topology
// with MemberList.UpdateClusterTopology as the stock providers do, and keeps the node
// index (node ID -> member) that Lookup reads with one atomic load. The topology has one
// entry per process, under the ID of the first incarnation seen, kept while any of its
// incarnations is registered and for LeaseTTL after the last one went if the process is
// still reachable; a lost lease followed by re-registration therefore changes nothing in
// the MemberList (which would otherwise block the ID and tear down the live connection).
// Where two live incarnations claim one node ID, the newer one wins.
//
// # Death detection
//
// A lease takes up to LeaseTTL (plus etcd's expiry check) to expire. Faster: the
// membership actor remote-Watches every peer's membership actor; protoactor delivers
// Terminated within ~10 ms when the peer's process dies or its connection breaks. The
// peer is then marked unreachable at once: Lookup stops resolving to it and drops the
// PIDs it cached there. It is probed (actor.Touch, back-off from Config.ProbeInterval to
// LeaseTTL): an answer means only the connection broke, and it is routed to again. The
// node layer learns all this from *MemberEvent values published on the actor system's
// EventStream (SubscribeMemberEvents), in order: MemberJoined, MemberUnreachable,
// MemberReachable, MemberLeft (key gone: final for that incarnation; Self marks our own,
// e.g. the old incarnation after a lost lease), MemberGone (the process: its last
// incarnation left and it did not register again within LeaseTTL while reachable, or it
// is unreachable with no incarnation left), MemberDown (an unreachable member's address
// refuses connections: its process exited). An unreachable member is first a suspect
// (Suspects): a broken connection to a live process and a dead process look alike, and
// on each Terminated and failed probe its address is dialled; a refusal (within
// milliseconds of a SIGKILL) makes it down, an answer to a probe reachable again, and its
// lease's expiry gone. A GCS outage longer than the lease makes every
// member lose its lease at once; each registers again as soon as the GCS answers (retried
// at most a second apart), and a peer keeps the node of a reachable departed process
// (Nodes, MemberForNode) for that grace, so the outage kills no node. How long an outage
// may last is not the provider's to decide: with Config.GCSLost it reports, once, a GCS
// that has still not answered Config.GCSLostAfter after the lease was lost (package node
// then fails a driver's runtime), and keeps trying all the same. The node layer takes
// a node for gone on MemberUnreachable or MemberGone, never on MemberLeft; what is final
// for a dead process only (an actor's host died) it decides on nodes neither in Nodes nor
// in Suspects.
//
// # Lookup
//
// Get is a map read under an RWMutex on the hot path (~20 ns; cluster.Get ~80 ns). On a
// miss it resolves the target node (the identity itself, or the placement/ cache, kept
// fresh by a watch; a key the watch has not delivered yet is read once from the store,
// bounded by StoreTimeout) and the member for that node (the node index), and sends
// cluster.ActivationRequest (protobuf, so it crosses processes) to that member's
// activator (ActivatorName), local or remote, bounded by ActivationTimeout. Concurrent
// Gets of one identity share one request, and the activator is an actor, so a grain is
// activated exactly once per member. It spawns the grain as its child from the kind's
// props with cluster.WithClusterIdentity, so the cluster middleware of cluster.NewKind
// sends it *cluster.ClusterInit after Started, as with the stock lookups. Every cached PID
// is watched; when the grain stops (passivation, crash, member death) the entry goes
// from this cache and from cluster.PidCache. Unknown or unreachable nodes, a missing
// placement or a failed activation give nil at once (logged at debug).
//
// Placement changes: when placement/<actorID> names another node (or is deleted), every
// member drops its cached PIDs for a/<actorID> and the old host stops its activation. The
// request carries the node and the placement revision the requester resolved
// (ActivationRequest.RequestId and TopologyHash); the activator refuses when it knows a
// newer placement elsewhere (deletions are remembered for a minute), so a stale requester
// cannot activate a zombie. A brief double activation during a move is still possible;
// actor state is fenced in the GCS (DESIGN §5).
//
// # Why not disthash
//
// protoactor's disthash lookup places by rendezvous hashing over the members, so it cannot
// pin a grain to a node nor follow the scheduler's placement, it blocks every lookup on a
// hard-coded 5 s request to the owner (stalling recovery when the owner died), and it
// moves grains whenever the topology changes.
//
// # Wiring and shutdown
//
//	store := ... // gcs.Store
//	prov, _ := membership.NewProvider(membership.Config{Store: store, NodeID: nodeID})
//	look, _ := membership.NewLookup(membership.LookupConfig{Store: store, Resolver: prov})
//	rem := remote.Configure(host, port,
//		remote.WithServerOptions(grpc.StreamInterceptor(membership.BlockListInterceptor)))
//	cfg := cluster.Configure("ray", prov, look, rem,
//		cluster.WithKinds(kinds...), membership.WithoutGossip())
//	c := cluster.New(system, cfg)
//	c.StartMember() // or StartClient() for a driver that hosts no grains
//
// BlockListInterceptor orders the remote's unsynchronised read of its BlockList (on each
// new inbound connection) with the monitor's topology updates, which write it when a
// member leaves: without it the race detector reports a race whenever a member leaves
// while another connects.
//
// WithoutGossip idles protoactor's gossip, which keys members by actor-system ID, blocks
// IDs on missed heartbeats, and races when several members share a process; ray-go uses
// none of it.
//
// cluster.StartMember sleeps 1 s after the provider's StartMember returned (a node goes on
// without it: node.returnedProvider) and cluster.Shutdown(true) 2 s (then calls
// Provider.Shutdown(true) and Lookup.Shutdown). To leave quickly: look.Shutdown() (stops
// the grains), prov.Shutdown(true) (revokes the lease: peers see the member go at once),
// then c.Shutdown(false) (stops the remote). cluster.Shutdown(false) alone calls neither;
// both notice the stopped actor system within 100 ms and stop their loops, so the lease
// then expires after LeaseTTL as after a crash. (cluster.Shutdown panics on a client in
// this protoactor version; stop its actor system and remote directly.) Read the topology
// from Provider.Nodes or *cluster.ClusterTopology events: MemberList.Members is not safe
// against concurrent updates.
//
// # Tests
//
// The tests run three members and a client in one process against embedded etcd, started
// once and shared by the subtests, since each cluster start costs a second. Under the race
// detector protoactor needs care: remote.Start writes a gRPC global that every gRPC
// goroutine reads, so the remotes start one after the other with the gRPC servers already
// running synchronised through socket I/O, no member registers before the last remote
// has started, and a package starts such a cluster only once per process (-count=1).
package membership
