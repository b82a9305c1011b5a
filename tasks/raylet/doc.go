// Package raylet is a node's scheduler grain (identity "n/<node>/raylet"): it accounts the
// node's resources, queues tasks that do not fit yet, and dispatches the ones that do to the
// node's worker grains in batches (DESIGN §2, §5).
//
// The queue and fit decisions are the pure policy of package sched (per-scheduling-class
// FIFO queues, fixed-point resources). This grain only owns state and moves messages:
//
//   - TaskSpec / TaskBatch from owners: rejected at once with an INFEASIBLE error if the
//     node can never fit them, else queued; a dispatch is scheduled by sending a tick to
//     itself, so all specs already in the mailbox go out together (batching without
//     added latency).
//   - Dispatch grants leases: every queued task that fits gets a lease holding its
//     resources, sent to a worker in one LeaseBatch per worker. When a scheduling class
//     (resource shape) is known to run short tasks (per-class mean run time under
//     FastTask), more queued tasks that fit the same grant are attached to the lease, up to
//     MaxLeaseDepth, and the worker runs them back to back: Ray's worker lease reuse,
//     which takes the scheduler round trip out of the path between short tasks. Long or
//     unknown classes get one task per lease, so work spreads as resources free up.
//   - LeaseDone from workers: the lease's resources come back, the class's run-time
//     estimate is updated, more tasks are dispatched.
//   - TaskBlocked / TaskUnblocked (through the worker) from tasks waiting in Get: the
//     lease's CPU is lent back to the pool while it waits and taken again when it resumes,
//     even if that oversubscribes the node for a while (Ray does the same); the worker
//     gives the lease's unstarted tasks back (LeaseReturn) and they are queued again. This
//     keeps nested tasks from deadlocking a node whose CPUs are held by waiting parents.
//   - CancelTask: a queued task is dropped and its owner told; a leased one is cancelled
//     by its worker.
//
// Handlers are idempotent: a spec for a task already queued or running is ignored.
package raylet
