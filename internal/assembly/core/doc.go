// Package core is the per-process runtime of ray-go (Ray's "core worker"): it owns the
// objects this process creates, submits tasks, and answers Get, Put, Wait and Cancel.
//
// # Who owns what
//
// Every piece of state has one owner (DESIGN §8.5), and nothing that every task touches
// is shared by every core (DESIGN §9):
//
//   - Objects this process owns: their futures (objects.MemoryStore) and reference counts
//     with the lineage records holding the task specs (objects.RefTable), one entry per
//     object shared by both (objects.NewOwned). They are leaf structures partitioned by
//     object ID, each partition behind its own mutex, used from any goroutine. A task's
//     return object's entry is part of the task's pending record; Submit hands it to the
//     API's handle, and completion, Get and release reach the object through it.
//   - Tasks submitted and not finished: the shards (shard.go). A shard is a run loop (a
//     protoactor actor) that owns the pending tasks of one partition of task IDs: the
//     children of a task share their ID's Family byte, so one submitter's tasks stay in
//     one shard and many submitters spread over all of them. It resolves dependencies,
//     places and dispatches, takes results, retries, cancels, fails the tasks of dead
//     nodes and reruns tasks whose objects were lost (each rerun request stepped as its
//     lineage.RerunRequest decides). Other goroutines give it work as
//     messages; it never waits on I/O (what must wait runs on a goroutine that answers
//     with a message).
//   - Calls to actors (actor.go): a shard is a caller of its own of each actor its
//     submitters call (Ray's per-worker caller). A caller's bookkeeping (sequence numbers,
//     the low-water mark, unanswered calls, the outbox's order, what to resend, skip or
//     fail on a restart, a bounce or a death) is the pure actors/caller.Caller behind the
//     caller's own mutex; actor.go keeps the I/O: it finds the actor's instance, renders
//     the outbox into messages when the shard flushes it, and completes the calls the
//     Caller gives up. A call without ref arguments that has nothing of its caller ahead
//     of it (an empty outbox, no flush under way, the instance known, at most directMax
//     calls unfinished) leaves from its submitter's goroutine, under the caller's mutex,
//     without the shard's two hops (sendDirect); the shard registers it from its direct
//     list before it handles its next message. The answer of an actor in this process
//     comes back without the shard's mailbox too: the actor's executor hands the results
//     of a flush to their caller in one batch (LocalResults, actors.Env.Local; takeLocal),
//     which finishes each call under the caller's mutex, taken once per 16 calls (the
//     Caller keeps a call unfinished until then, so one of takeLocal and the shard's
//     complete completes it, whichever finishes it first), sets its return object and
//     releases its arguments on the executor's goroutine, and leaves the loop's part
//     (forgetting it, its task record) in the shard's done list, taken before the shard's
//     next message (a message wakes it once 64 wait). A call
//     completed that way before its shard registered it is not registered (finished).
//     Results for a caller in another process, and those complete must handle (several
//     returns, nested refs), still come to the shard as messages. Once its actor dies
//     (Dead is final) a caller fails its calls and is forgotten, with the actor's state
//     when no other shard's caller of it is left (forgetCaller): a driver that creates and
//     ends actors keeps nothing per actor it called but the node of each of the newest
//     4,096 incarnations (for the task records); a later call through a handle of the
//     dead actor fails at once from the actor manager's record, and keeps no caller.
//     A caller whose calls have waited a second for an actor with no serving instance
//     (Pending or Restarting), a shard whose tasks have waited a second for a lease no
//     node grants (sched.Leases.Starved), and a placement group that has waited a second
//     for room (PlacementGroup.place), ask the process for a garbage collection
//     (collect.go, backing off to one per 2 minutes), and the cluster's other processes
//     too (Config.AskOthersToCollect; they run CollectForOthers): a dropped handle of
//     another actor that holds the resources they wait for is released only when a
//     collection in the process that dropped it finds it. So does the node's object
//     store when a put finds its memory over 70% of its budget (CollectForStore, as Ray's
//     raylet triggers a global GC): refs dropped without Release hold their objects
//     there until a collection finds them gone.
//   - Borrowed, lent and pinned refs: objects.Borrows (partitioned like the other tables);
//     the protocol's messages are borrow.go's, the adoption of a dead owner's objects
//     orphan.go's (planned by lineage.Adoption).
//
// # The path of a task
//
// Submit (the caller's goroutine) derives the task ID from its parent and a counter,
// creates the return object pending, counts the references (the caller's, the lineage
// record's, the task's holds on its arguments; the record is the spec, which the shard
// writes to the GCS if the task lives long enough, lineage.go) and hands the task to its
// shard. The shard waits for ref arguments, inlines small ready ones (within
// pb.InlineArgsTotal with the by-value ones; the rest it first moves into the store and
// passes by reference), places the task (the local node, or in a cluster (Config.Cluster,
// cluster.go) the node the sched policy picks; a Default task with no ref arguments whose
// class the shard holds a lease for at its own node, with room for one more, goes there
// unplaced, as Ray's owner gives its leased worker the next task of its class) and queues
// it for a worker lease of its scheduling class on that node (lease.go, Ray's direct task
// submission): it asks the node's scheduler for leases while tasks
// wait, pushes them straight to the leased workers, several at a time when the class is
// known to be short, and gives leases back when it has no more; tasks whose class a node
// leaves waiting (a lease request the node said it queued, unanswered for SpillAfter; one
// it said nothing of, for SpillSilent) move to another node that can run them now
// (spillback). What a mailbox turn
// decides goes out when the shard's flush message comes around, so a burst of
// submissions travels together and a lone one goes at once. Results come back to the
// shard in batches (TaskSpec.reply_to); it retries failed attempts as their options
// allow, makes return objects ready and releases argument references. A failed argument
// fails the dependent task with the same error, without running it.
//
// A task blocked in Get lends its CPU back to the node (TaskBlocked/TaskUnblocked to the
// raylet) so nested tasks cannot deadlock a node whose CPUs are all held by waiting
// parents, as in Ray. Before it blocks, a Get or Wait whose object is not ready polls for
// it for up to 100 µs (internal/base/spin): a result that comes within that is taken
// without the P going idle and being woken, which costs ~20 µs on a VM, longer than the
// wait for a call of some microseconds. Only with more than one P, one goroutine per task
// context at a time, none while another of its goroutines is blocked in a wait (then the
// Ps have other work, which a polling P would not steal), and none after a wait that
// outlasted the poll until a wait is short again (spin.Policy); a poll stops once a
// goroutine waits for a P in any run queue.
//
// Lifetimes follow the RefTable: when the last reference to an object goes, its value is
// freed from the MemoryStore and the store shard (which drops its object-table record),
// and lineage records nobody needs are deleted from the GCS. Refs nested in values are
// counted across runtimes by the borrowing protocol of borrow.go.
//
// Objects on other nodes are read with objects/transfer (pull.go): the node's data stream,
// else chunked pulls through its store grain; the bytes on their way are InFlightBytes.
//
// # Placement groups
//
// pg.go: a group this runtime creates is placed by a goroutine of its own (the pure
// sched.PlaceBundles over the nodes Config.Nodes lists, then a BundleCommit at each
// node's raylet, everything released and retried with back-off when one refuses), and
// removed when the runtime closes. A task in a group parks (like a task with no node)
// until the group is placed, then goes to its bundle's node with its demand renamed
// (sched.InBundle); the cluster view does not count it, the reservation does. An actor
// in a group waits for it before its record is written, with the bundle's node as its
// only node (ActorInfo.affinity_node; placement_group and bundle_index name its bundle). A
// bundle whose node dies is placed again (Core.NodeGone tells the groups;
// sched.ReplaceBundles decides where) while its tasks park, and the actors of the bundle,
// any process's (ActorConfig.InGroup: the actor manager's index by group), are moved to
// its new node. Remove cancels this runtime's tasks in the group and kills every actor in
// it; a runtime with tasks in another process's group cancels them when the group's
// record says it was removed (watchForeignGroup).
//
// # Task events
//
// Each shard keeps the history of its tasks for the state API (events.go): a live task's
// times in its pending, stamped with one clock read per batch the shard handles, and one
// fixed-size, pointer-free record per attempt that ends, in the shard's own chunked ring
// (Config.TaskEvents records per process, 1M by default; oldest overwritten after). Nothing
// is shared between shards but the budget, taken a chunk of 4,096 records at a time; the
// recording allocates nothing per task. Core.Tasks asks every shard; package
// internal/assembly/taskstate serves that to the cluster.
//
// # A lost cluster
//
// Lose (lost.go; package node calls it when a driver's GCS has been silent too long) fails
// the runtime for good: a channel closed once, which the waits of Get, Wait and generators
// select on as they select on Close's, and which a submission looks at (a lock-free
// receive, no shared lock); each shard fails every task it holds without a retry (a
// message, like NodeGone's), and every actor caller fails its calls with it as a system
// error, not as the actor's death (the actor may live on). What was ready stays readable,
// and ready: a Wait then blocks no more, returns what is ready and fails only when that is
// fewer than it asked for; a result the loss failed does not count as ready (lostValue).
//
// # Lost objects: lineage decides, core does
//
// Recovering lost objects is planned by package lineage's pure planner and carried out
// here. The planner decides whether an object can be recreated (not a Put, its task's
// record held), which tasks run again and in what order (lost arguments first, each
// recursively), whether a request runs its task at all (concurrent losses of one object
// run it once), what a Get tries and how often (lineage.MaxReconstructions), and what
// becomes of each object of an owner that died (kept, recreated from the lineage in the
// GCS, or failed with an error saying why). This package reads the facts those decisions
// need (the MemoryStore, the RefTable, the cluster view, a dial to a node that may be
// gone), and carries out the actions: futures made pending, rerun requests and their old
// copies' frees through the task's shard (reconstruct.go), reads and the bounded waits of
// a Get, the reads of a dead owner's lineage and the adoption of its tasks (orphan.go).
// The waiting, the timers, the goroutines and the messages stay here; no decision about
// lineage is taken outside the planner.
package core
