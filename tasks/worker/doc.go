// Package worker is the stateless task executor grain of a node (identity
// "n/<node>/worker/<slot>").
//
// Owners push it tasks under worker leases (Ray's direct task submission): the node's
// scheduler (package raylet) granted the lease, which holds resources for the owner on
// this worker, and the owner sends tasks of the lease's class straight here (LeasePush),
// several at a time. The tasks of a lease run one after another on a goroutine of their
// own, started by the push that finds none running, so the grain never blocks in Receive
// (DESIGN §2), tasks follow each other with no round trip and on a warm stack, and the
// node's leases run side by side. A task resolves its arguments (inline bytes, or the
// node's store shard for large ones), calls the registered function with a context that
// carries the runtime (so it can submit and Get nested tasks), and panics are recovered
// into error replies. Results go from the lease's goroutine to its owner in batches while
// more of its tasks wait (for at most 1 ms: a long task does not hold back the results of
// the tasks before it), each with the lease's ID and the task's run time (the owner counts
// its tasks in flight per lease and estimates its classes' run times from them). The owner
// gives the lease back to the scheduler; the worker keeps no lease state once a lease's
// queue runs dry.
//
// A task blocked in Get tells this grain (the task's context names it), which lends the
// lease's CPU out through the scheduler (TaskBlocked) and hands the lease's unstarted
// tasks back to its owner (LeaseReturned), as it does with any task pushed to the lease
// while it waits: nothing waits behind a blocked task, so nested tasks cannot deadlock.
// Likewise a task that runs longer than Env.SlowAfter (2 ms by default) while others wait
// behind it on its lease hands those back: the owner pipelines tasks by its class's
// measured run time, and when that estimate is wrong (tasks that got slower) the queued
// ones go to other leases instead of waiting for one worker. The check costs a timer
// reset per SlowAfter per lease, not per task.
//
// Results larger than the inline limit are put in the node's store shard and the owner is
// told where they are. Cancellation cancels the task's context: Go cannot stop a
// goroutine, so a function that ignores its ctx runs to the end, and its result is
// replaced by a cancellation error; an unstarted task is dropped at once. A recursive
// cancellation of a running task (CancelTask without non_recursive) also calls
// Env.Cancelled, with which the process's runtime cancels the tasks the task submitted.
package worker
