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
//   - TaskDone from workers: resources come back; more tasks are dispatched.
//   - TaskBlocked / TaskUnblocked from running tasks waiting in Get: the task's CPU is lent
//     back to the pool while it waits and taken again when it resumes, even if that
//     oversubscribes the node for a while (Ray does the same); this is what keeps nested
//     tasks from deadlocking a node whose CPUs are all held by waiting parents.
//   - CancelTask: a queued task is dropped and its owner told; a running one is cancelled
//     by its worker.
//
// Handlers are idempotent: a spec for a task already queued or running is ignored.
package raylet
