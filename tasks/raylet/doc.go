// Package raylet is a node's scheduler grain (identity "n/<node>/raylet"): it accounts the
// node's resources and grants worker leases (DESIGN §2, §5).
//
// Tasks do not pass through it. An owner asks it for a lease per scheduling class
// (LeaseRequest: a resource shape), it grants one when the resources are free (LeaseGrant:
// the resources held for that owner on one of its worker grains, chosen round robin), and
// the owner pushes that class's tasks straight to the worker for as long as it has them
// (package worker; the owner's policy is sched.Leases), then gives the lease back
// (LeaseRelease). The scheduler handles two messages per lease, not one per task, so it
// is not a point every task of the node must pass (Ray's direct task submission).
//
// The queue and fit decisions are the pure policy of package sched (per-scheduling-class
// FIFO queues of requests, fixed-point resources). This grain only owns state and moves
// messages:
//
//   - LeaseRequest: denied at once (INFEASIBLE) if the node can never hold the shape, else
//     queued and granted, oldest first per class, as resources allow; a class whose head
//     does not fit does not hold up smaller shapes.
//   - LeaseRelease from owners: the lease's resources return and waiting requests are
//     granted. The grain watches every owner it granted a lease to: when one stops or its
//     process dies (Terminated), its leases return and its waiting requests are dropped.
//   - TaskBlocked / TaskUnblocked (through the worker) from tasks waiting in Get: the
//     lease's CPU is lent to waiting requests while it waits and taken again when it
//     resumes, even if that oversubscribes the node for a while (Ray does the same). This
//     keeps nested tasks from deadlocking a node whose CPUs are held by waiting parents.
//   - ReserveResources: an actor instance's resources, held from grant to release and
//     granted ahead of waiting lease requests.
//   - BundleCommit: a placement group's bundle. If its resources are free the node gives
//     them up for their renamed forms (sched.BundleResources), which only tasks and actors
//     placed in the bundle ask for; else it is refused with a reason (the owner then
//     releases the group's other bundles and tries again). A release gives back every
//     bundle of the group on this node: what is free at once, what running tasks hold
//     as their leases are released. The node's total then includes the renamed resources,
//     so a request for a bundle the node does not hold is denied as infeasible.
//
// Handlers are idempotent: a release of a lease already released does nothing.
package raylet
