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
//     does not fit does not hold up smaller shapes. A request not granted at once is
//     answered at once with word that it waits (LeaseGrant.queued), on which the owner may
//     move its tasks to another node (spillback). A request that waits has other owners
//     (and its own owner's leases of other shapes) asked for enough leases back
//     (LeaseRevoke) for it to fit once they are done, and a lease granted while such a
//     request still waits is revoked as it is granted: its owner runs one push of tasks on
//     it and gives it back, rather than keeping it for more (sched.IdleHold) while others
//     wait.
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
//     as their leases are released; the lease requests queued for the group's room are
//     denied at once (PLACEMENT_GROUP_REMOVED: their tasks fail with
//     ErrPlacementGroupRemoved), as is a later request for a group the node holds no
//     bundle of. The node's total includes the renamed resources, so a request for a
//     bundle of a group the node holds but not that bundle is denied as infeasible.
//   - OwnerGone: the process at an address died (its death confirmed by the node): every
//     group whose bundles it committed here (the commit's sender's address) is released
//     as above. A group lives as long as its creator, and a creator that crashed cannot
//     release it.
//
// Handlers are idempotent: a release of a lease already released does nothing.
//
// Besides Stats (asked by the node's load reporter), the raylet publishes its free
// resources and queue to Config.Live whenever a message changed them: a few times per
// lease, never per task. Its own process's placers read it with two atomic loads, so that
// the local node is judged by what its raylet has now, not by its last load report.
//
// # One ledger per machine
//
// A worker process that a node agent started (cluster mode) shares its machine with the
// other jobs' worker processes there: Config.Machine is the agent's ledger (package
// tasks/machine), and the raylet holds only what the ledger granted it (Total is still
// the machine's, for the infeasibility check). Everything above works against what it
// holds; balance keeps that in step with demand, once per dispatch:
//
//   - An unmet demand the machine can help (a bundle commit; else the reservations that
//     do not fit, then the classes of lease requests whose head does not fit, oldest
//     first: of these the oldest whose lack the machine has free, as last heard, else the
//     oldest; sched.AskFirst) is asked for: what it lacks of the machine's resources
//     (MachineGrant answers; one ask waits at a time). While it waits, a change of the
//     machine's free resources (MachineFree) or of the demand that makes another one the
//     choice asks again for that one (the ledger keeps the ask's place in line), so a
//     2-CPU request that the machine cannot serve yet does not hold back its job's 1-CPU
//     requests while a CPU is free. A bundle's ask is now or never (MachineDeny
//     refuses the commit with the ledger's reason, as a node without room does). Nothing
//     is asked of a resource the raylet already holds the machine's whole total of: only
//     its own leases' return can serve such demand, and a job alone on its machine would
//     otherwise ask, and withdraw the ask, for every lease request that queues.
//   - It never holds resources idle while it waits: before asking, and whenever a lease
//     comes back while an ask waits, what is free and not lent is given back and asked
//     for again with the rest (the ledger replaces the waiting ask in its place in line).
//     Two jobs that each kept part of what they need and waited for the rest would wait
//     for ever.
//   - With no demand left, what is free and not lent goes back TrimAfter later (2 s by
//     default: a job's next burst costs no round trip to the machine), and a waiting ask is
//     withdrawn (an ask for nothing).
//   - While the machine reclaims (MachineReclaim: another job waits, and this one holds
//     more than an even share), what is free goes back at once, leases are revoked for the
//     rest and what they held goes back as they end, before the raylet's own queue takes
//     it, and the raylet asks for nothing more until the reclaim ends.
//
// Stats then reports Available as what the raylet holds free plus the machine's free
// resources (what its job could get; the load reports and placement read it; so does
// Live, Config.Live, what the raylet publishes for its own process's placers), and InUse,
// what it holds less what of that is free (rayctl status sums it per machine). Leases,
// tasks and actor calls never wait on the ledger once the raylet holds what they need.
package raylet
