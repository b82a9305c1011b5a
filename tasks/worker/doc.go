// Package worker is the stateless task executor grain of a node (identity
// "n/<node>/worker/<slot>").
//
// A node's scheduler (package raylet) sends it batches of task specs it has already
// admitted against the node's resources. The grain never blocks in Receive (DESIGN §2):
// each task runs on its own goroutine, resolves its arguments (inline bytes, or the node's
// store shard for large ones), calls the registered function with a context that carries
// the runtime (so the task can submit and Get nested tasks), and recovers panics into an
// error reply. Completions come back to the grain as messages; it batches them: one
// TaskDone to the scheduler and one ResultBatch per owner per mailbox turn, using the
// "flush message to self" trick, so a busy worker sends few messages and an idle one adds
// no latency.
//
// Results larger than the inline limit are put in the node's store shard and the owner is
// told where they are. Cancellation cancels the task's context: Go cannot stop a
// goroutine, so a function that ignores its ctx runs to the end, and its result is
// replaced by a cancellation error.
package worker
