// Package worker is the stateless task executor grain of a node (identity
// "n/<node>/worker/<slot>").
//
// A node's scheduler (package raylet) sends it leases: a resource grant with one or more
// tasks that run one after another under it (Ray's worker lease reuse). Each lease runs on
// its own goroutine, so the grain never blocks in Receive (DESIGN §2) and tasks of a lease
// follow each other with no scheduler round trip and on a warm stack. A task resolves its
// arguments (inline bytes, or the node's store shard for large ones), calls the registered
// function with a context that carries the runtime (so it can submit and Get nested tasks),
// and panics are recovered into error replies. Results go straight from the lease's
// goroutine to their owners, batched per owner while more tasks of the lease are waiting
// (for at most 1 ms: a long task does not hold back the results of the tasks before it);
// LeaseDone returns the lease's resources to the scheduler once, when the lease ends.
//
// A task blocked in Get tells this grain (the task's context names it), which lends the
// CPU back through the scheduler and gives the lease's unstarted tasks back to it: nothing
// waits behind a blocked task, so nested tasks cannot deadlock.
//
// Results larger than the inline limit are put in the node's store shard and the owner is
// told where they are. Cancellation cancels the task's context: Go cannot stop a
// goroutine, so a function that ignores its ctx runs to the end, and its result is
// replaced by a cancellation error; an unstarted task is dropped at once.
package worker
