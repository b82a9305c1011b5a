// Package core is the per-process runtime of ray-go (Ray's "core worker"): it owns the
// objects this process creates, submits tasks, and answers Get, Put, Wait and Cancel.
//
// Submission: a task gets an ID derived from its parent task and a counter, its return
// object is created pending in the MemoryStore, its spec is recorded as lineage (through
// the group-commit writer, before it can run), and it is held until every argument ref is
// ready. Small ready arguments are inlined into the spec; large ones are passed by ID and
// location. Then the spec goes to a scheduler grain (raylet) with a plain Send: the local
// node's, or, in a cluster (Config.Cluster, cluster.go), the node the sched policy picks
// over the job's nodes; tasks wait while the job has no node, and the attempts of tasks on
// a node that died come back as system errors and are retried elsewhere (NodeGone).
// A failed argument fails the dependent task with the same error, without running it.
//
// Results come back as messages to the owner actor (a plain actor of this process whose
// PID is in every spec), which retries failed tasks as their options allow, makes return
// objects ready and releases the arguments' submitted-task references.
//
// A task blocked in Get lends its CPU back to the node (TaskBlocked/TaskUnblocked to the
// raylet) so nested tasks cannot deadlock a node whose CPUs are all held by waiting
// parents, as in Ray.
//
// Lifetimes follow the RefTable (package objects): when the last reference to an object
// goes, its value is freed from the MemoryStore and the store shard (which drops its
// object-table record), and lineage records nobody needs are deleted from the GCS. Refs
// nested in values are counted across runtimes by the borrowing protocol of borrow.go.
//
// Objects on other nodes are read with objects/transfer (pull.go): the node's data stream,
// else chunked pulls through its store grain; the bytes on their way are InFlightBytes.
package core
