// Package sched is the pure scheduling policy of ray-go: resource arithmetic, the choice of a
// node for a task (Place) and the order in which one node starts the tasks waiting for its
// resources (Queue).
//
// It is a pure core (DESIGN.md §5, §8): it imports only the standard library, starts no
// goroutines, does no I/O and keeps no hidden state. The node's scheduler grain and the global
// scheduler own the cluster view and the queues and call in here; everything is deterministic
// given the arguments, so the policy is specified by table tests.
//
// # Resources
//
// Resources maps names ("CPU", "GPU", "memory", "object_store_memory", custom names) to
// quantities in fixed point with a resolution of 1/10000, as in Ray, so fractional requests such
// as 0.5 CPU are exact and sums never drift. CPU and GPU live in fields and the rest in a small
// sorted slice, so the common CPU-only value is copied without allocating and Fits costs a few
// nanoseconds. Values are immutable.
//
// A node's available resources may go negative. When a task blocks in ray.Get its worker gives
// its CPU back so other tasks can run; when it unblocks it takes the CPU again at once, even if
// that oversubscribes the node (as Ray does: making it wait could deadlock). The owner just calls
// Available = Available.Sub(cpu); while anything is negative nothing new fits, and the node
// recovers as tasks finish.
//
// # Feasibility
//
// A request is feasible on a node when the node's Total fits it, and can run now when its
// Available does. Dead nodes are never considered. If no alive node is feasible but a Suspect
// one is (not alive now, not known dead: a node that has just joined and that the caller's
// membership has not seen yet, or one whose connection broke), Place returns ErrSuspectOnly,
// for the caller to try again when its view changes: a task needing a resource that only a
// node starting beside it has would otherwise fail for a view a moment old. If no alive or
// Suspect node is feasible, Place returns an *InfeasibleError (errors.Is(err, ErrInfeasible)) that names the first resource no node has
// enough of and the largest amount any node has, e.g.
//
//	sched: infeasible: task requires GPU=2 but the largest node has GPU=0
//
// Custom resources only match nodes that declare them. A request for nothing (an actor with
// zero CPU) is feasible on every alive node.
//
// # Default strategy (Ray's hybrid policy)
//
// Place first picks the preferred node: the feasible node holding the most argument bytes
// (Request.ArgBytes), or the local node when no node holds more of them than it does (this is
// Ray's locality-aware lease policy, which sends the lease request to the node with the most
// argument bytes, followed by that node's hybrid policy). If the preferred node can run the
// request now and its utilization u is below the threshold t (Options.Threshold, default 0.5),
// it is chosen: lightly loaded nodes keep their work, which saves a hop and packs tasks.
// A preferred node that holds at least Options.KeepBytes of the arguments (default 1 MiB)
// and can run the request now keeps it at any utilization: moving megabytes costs more than
// sharing a node that has the resources free (a departure from Ray, whose raylet passes
// the task on above the threshold whatever the bytes; it made the locality of large
// arguments depend on the last load report).
//
// Otherwise every feasible node n is scored, lower being better:
//
//	u(n)  = max over r of 1 − Available_r/Total_r, for r in {CPU, memory, object_store_memory}
//	        and every resource the request asks for, counting only resources n has (Total_r > 0);
//	        above 1 when oversubscribed
//	ũ(n)  = 0 if u(n) < t, else u(n)            (below the threshold all nodes look idle)
//	wait  = Queued(n) / max(1, Total_CPU(n))    (queued tasks per CPU: rounds of waiting)
//	f(n)  = ArgBytes[n] / Σ ArgBytes            (share of the arguments already on n)
//	s(n)  = ũ(n) + wait(n) − w·f(n)             (w = Options.LocalityWeight, default 0.25)
//
// and the node chosen is the first under this order:
//
//  1. nodes that can run the request now before nodes where it must queue;
//  2. for a request that needs no GPU, nodes without GPUs before GPU nodes (Ray's
//     scheduler_avoid_gpu_nodes; Options.KeepGPUNodes turns it off);
//  3. lower s;
//  4. more argument bytes (locality breaks the ties that truncation creates among idle nodes);
//  5. lower raw u (so a burst spills across idle nodes instead of piling onto one);
//  6. the local node;
//  7. smaller node ID.
//
// GPU avoidance also applies to the preferred node: a CPU-only task leaves a GPU node under
// the threshold when a node without GPUs can run it now, even if its arguments are there (as
// in Ray, where the GPU node's own hybrid policy would spill it).
//
// # Spillback
//
// Spill answers where a request that waits in a busy node's queue should go instead: the
// node Place picks among the others, provided it can run the request now (moving to
// another queue gains nothing); a request bound by hard NodeAffinity stays, and so does one
// whose node holds KeepBytes or more of its arguments while that node has room for it by the
// view (the wait is the node's latency, not a backlog; moving would move the bytes). Leases tells
// the owner which classes a node stalls (Stalled: a lease request unanswered for a while
// with tasks waiting) and hands their waiting tasks over (Take).
//
// Where Ray breaks ties at random among the top k nodes, Place is deterministic; rules 5 and 7
// spread a burst over idle nodes provided the caller subtracts each placed request from the
// node's Available in its view before placing the next. Decision.RunNow false means the request
// queues at the chosen node (every feasible node is busy); the estimate of waiting time is what
// steers it to the shortest queue.
//
// # Spread strategy
//
// Spread rotates over the alive nodes that can run the request now, in the order of the nodes
// slice, taking the (Options.SpreadCounter mod k)-th of the k such nodes; if none can run it now
// it rotates the same way over the feasible nodes and the request queues there. The caller
// increments the counter per spread request. Only nodes the request could use take part, so
// dead and infeasible nodes do not skew the rotation.
//
// # Node affinity
//
// NodeAffinity places on Request.AffinityNode if that node is alive and feasible, running now
// or queueing there. A hard request for a Suspect node (unreachable for now, not known dead)
// returns ErrAffinitySuspect, for the caller to try again when its view changes. Otherwise a
// hard request fails — ErrAffinityUnavailable for a dead or unknown node, an *InfeasibleError naming the node when it is too small — and a soft one
// (Request.Soft) falls back to the Default strategy.
//
// # Placement groups
//
// PlaceBundles decides the nodes of a placement group's bundles under one of Ray's four
// strategies (BundlePack, BundleSpread, BundleStrictPack, BundleStrictSpread), against the
// nodes' Available resources; ErrBundlesWait when only their Total would hold the group
// (try again later), an *InfeasibleError-based error saying why when nothing could. The
// choice does not hang on the order of the bundles or of the nodes: the scarcest bundles
// (GPUs, custom resources) choose first, STRICT_SPREAD is an exact matching of bundles to
// distinct nodes, and SPREAD and PACK (as few nodes as can hold the group) are a bounded
// backtracking search whose first path is the greedy choice (bundlesearch.go).
// ReplaceBundles places again only the bundles of a placed group whose nodes died, next to
// the survivors as the strategy wants (the lost ones of a STRICT_PACK group join the
// survivors' node, those of a STRICT_SPREAD group avoid every node holding one).
// BundleResources and InBundle are Ray's renaming: a node holding bundle i of group g
// trades the bundle's resources r for "r_group_i_g" and "r_group_g" (and a marker), and a
// task in the bundle asks for those, so the ordinary fit and queue rules keep other work
// out of a reservation and the group's tasks inside it.
//
// # Sharing a machine
//
// The worker processes of the jobs on one machine obtain its resources from its ledger
// (package tasks/machine), one waiting ask per process. ServeAsks is the ledger's order:
// oldest first, every ask that fits, a large one waiting without blocking smaller ones
// (as Queue below, and Ray's local task manager); Overtaken is when the oldest ask
// reserves (younger asks that went ahead of it are all that keeps it waiting), bounding
// its starvation. AskFirst is which of a process's demands it asks for: the oldest that
// the machine's free resources cover, else the oldest.
//
// # Local queue
//
// Queue holds the requests waiting at one node, grouped into scheduling classes by resource
// shape. Dispatch starts requests oldest first; within a class strictly FIFO, but a class whose
// head does not fit is skipped, so a waiting 4-CPU task does not hold back later 1-CPU tasks
// that fit. Large shapes can therefore starve behind a stream of small ones, as in Ray; the
// owner can bound that by limiting how many requests one Dispatch starts. Queue and an
// owner's Leases both keep at most idleClasses classes with nothing in them: a shape that
// comes and goes reuses its class, and one used once (a placement group's bundle
// resources name their group) is not kept for good.
package sched
