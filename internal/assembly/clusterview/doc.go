// Package clusterview is a node's view of the cluster it places tasks in: the nodes that
// run its job's tasks with their resources (the GCS node table), their load (the load
// reports each node rewrites when its load changes in a way placement sees, see the node
// package's load reporter), their liveness (the membership), and the addresses of their
// grains and data servers.
//
// A view follows the load reports (lists, then watches them) only while its runtime places
// tasks whose node the policy chooses (Default, Spread, soft affinity, spillback) or asks
// for Available, and for Config.LoadsIdle after (not for a Default placement that the local
// node, judged by its live load, keeps whatever the others' loads: sched.KeepsLocal): every view following every node's report
// is N x N watch events for N busy nodes, and a runtime whose tasks are all bound to a node
// (hard affinity: the node's total and liveness decide) needs none.
//
// While it follows, a view of a cluster with more than Config.FollowPeers
// (DefaultFollowPeers, 4) peers watches only its own report and those of the FollowPeers
// peers after it in the ring of node IDs, each on its own key: every node's report then
// goes to that many views, whatever the number of nodes (watching the prefix, each write
// went to every view that followed: up to N-1). The other peers are judged by the
// follower's first listing of the reports, or by a later read of theirs: a placement asks
// for one (at most once per Config.OthersRefresh) when neither the local node nor a
// watched peer has room under the policy's threshold, or its choice is a peer not
// watched, and a spill finding no watched node with room asks the same; the follower then
// reads the reports of the next FollowPeers peers not watched, round the ring (one Get
// each: a listing would read N reports, per view, at every such placement). Spread
// placements rotate over every node as before, the unwatched ones by their last figures,
// and ask for such reads too (a node listed busy would otherwise stay out of the
// rotation). A node that holds Options.KeepBytes of a task's arguments is judged by its
// Total less what the placer put there since, not by its report (Placer.trustHolders; not
// the local node, whose live load is exact): an old report, a damped one or one listed
// while the node was busy would send such a task away from its bytes; if the node is in
// fact full, its scheduler queues the task and spillback moves it, as Ray's
// locality-aware leasing asks the node with the arguments first. A cluster of at most
// FollowPeers+1 nodes is followed as before, through one watch of every report.
//
// Available, which user
// code and placement groups call rarely, waits for the listing when the view was not
// following; a placement goes on with what the view has (the listing comes within a GCS
// round trip, and the owner's own placements are counted meanwhile).
//
// A View follows the GCS with two watches and publishes each change as an immutable
// snapshot; the paths a task takes (placing it, resolving its node's scheduler, checking
// that the node is alive) read only the snapshot, with no lock. Placement accounting, what
// an owner placed on a node since the node's last report, belongs to the owner: each shard
// of a runtime has its own Placer, so that two shards placing tasks never meet on a lock,
// counter or map (the placement policy itself is tasks/sched.Place, pure).
//
// The local node is judged by its scheduler's live load (Config.Local: the raylet's
// figures as it publishes them on every grant, release and change of its queue, with a
// machine ledger the machine's free resources too), not by its last report; the other
// nodes by their reports. Ray's hybrid policy decides for the local node from the local
// raylet's exact view in the same way. A report that caught a lease held for a moment
// showed a 2-CPU node half busy (the policy's threshold) and sent its next tasks to peers
// for up to a report period while it had room; one that showed it idle kept tasks there
// while it was full.
//
// The node package starts a View for a runtime in cluster mode and feeds it the
// membership's reports (MarkGone, MarkAlive); the runtime (internal/assembly/core) sees it
// through its Cluster interface.
//
// A node that is not alive now but not known dead either is Suspect (sched.Node.Suspect):
// its scheduler could not be resolved (for SuspectFor), or the membership lost its
// connection while its process may live (Config.Suspect), or its record is in the node
// table and its member not yet in the membership (Config.Member): a node registers its
// member and then its record, and this process's membership can learn of the member after
// this view learns of the record. Nothing is placed there; a task bound to it by a hard
// node affinity, or one that only it could run (sched.ErrSuspectOnly), waits (the runtime
// parks it) until it answers or is known dead, when the task fails (a dead node's record
// goes with its lease, if the membership never saw it). Without that wait, a task that
// needed a resource of a worker process started beside its submitter failed as
// infeasible, a moment before that process was a member. Feasible, the check a submission
// makes, reads the node table once before it says no (View.catchUp): a record registered a
// moment ago may not have come through the view's watch yet. A view of a job (Config.Job)
// also holds, as Suspect nodes, the node agents that have not registered their worker
// process of the job yet (View.refreshComing, read when a request is infeasible without
// them and kept fresh while a placement waits for one): a machine that joins a running
// job's cluster starts such a process, and a task needing its resources waits for it.
package clusterview
