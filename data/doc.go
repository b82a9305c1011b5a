// Package data is Ray Data for Go: distributed, streaming processing of tabular data on a
// ray-go cluster.
//
// A Dataset is an ordered list of blocks, each an Arrow record held as a ray object, and a
// lazy plan that makes them. Sources (Range, FromItems, FromArrow, ReadParquet, ReadCSV,
// ReadJSON, ReadBinaryFiles) and transforms (Map, MapBatches, FlatMap, Filter, AddColumn,
// SelectColumns, DropColumns, Limit, Union) only build the plan; consuming calls
// (IterBatches, IterRows, Take, TakeAll, Count, Schema, Show, Materialize, Split,
// StreamingSplit, WriteParquet, WriteCSV, WriteJSON) run it.
//
//	var double = data.BatchFunc("demo.double", func(ctx context.Context, b arrow.Record) (arrow.Record, error) { ... })
//	var even = data.Predicate("demo.even", func(ctx context.Context, r data.Row) (bool, error) { ... })
//
//	ds := data.ReadParquet([]string{"/data/events"}).MapBatches(double).Filter(even)
//	for batch, err := range ds.IterBatches(ctx, data.BatchSize(1024)) { ... }
//	fmt.Println(ds.Stats())
//
// # Functions are registered by name
//
// Worker processes run the same binary and find code by name, so user functions are
// registered at package level (BatchFunc, BatchClass, RowFunc, FlatRowFunc, Predicate,
// ColumnFunc) under unique names, like ray.Task1. A plan is plain data (function names and
// options), so a Dataset can be passed to tasks and actors.
//
// # Planning and fusion
//
// A consuming call turns the logical plan into a physical one (Explain shows both).
// Consecutive map-like operators (Map, MapBatches, FlatMap, Filter, AddColumn,
// SelectColumns, DropColumns) fuse into one operator when they use the same compute
// strategy (tasks, or actor pools of the same size) and the same resources; a read fuses
// with the maps after it. Limit, Union, actor-pool boundaries and differing resources break
// fusion. A fused operator runs as one task per input ("ray.data.exec"): it reads a unit (a
// file, some Parquet row groups, a range of ids, an in-memory block) or takes one block and
// runs every fused stage on it, returning one block. An actor-pool operator runs the same
// on actors of class "ray.data.pool", whose constructor runs each BatchClass setup once.
//
// Every block is the return value of a task (never a Put inside a task), so a lost block is
// recreated by lineage reconstruction. Each task attaches the block's metadata (rows, bytes,
// schema fingerprint, wall time, CPU time of its thread) with ray.SetResultMetadata; the
// driver reads it with ray.RefInfo once ray.Wait says the block is ready, without fetching
// the block (Count uses only metadata).
//
// # Streaming execution and backpressure
//
// The executor runs in the consuming process. All operators run at once; a block flows to
// the next operator as soon as it exists, and the consumer sees blocks in dataset order.
// Tasks in flight are bounded per operator and in total (MaxTasksInFlight, default the
// cluster's CPUs), and the bytes of blocks produced but not yet consumed, plus the expected
// output of running tasks, are bounded by a budget (ObjectStoreBudget, default 25% of the
// cluster's object store memory): an operator starts a task only if its expected output
// fits (sources leave room for one output of each downstream operator; until an operator's
// first output size is known, its expected output comes from the read units (Parquet
// footers) or input blocks, and further tasks start only while four times that, at least
// 1 MiB each, fits: near the budget the first task runs alone to learn the size), so data
// far larger than memory streams through without spilling. The operator that feeds the
// consumer also keeps at most one block more than its tasks in flight ahead of the consumer
// (running, finished, queued or held by it: Ray's streaming output backpressure), so a
// consumer slower than the tasks does not let blocks pile up to the budget. Consumed blocks
// are released at once. Blocks are read without copying (the records' buffers are the stored bytes, kept
// alive while referenced): batches must not be modified in place, as any Arrow value. Limit
// stops launching upstream work once it has its rows. Actor pools start their
// min actors when the execution starts (their setups run in parallel) and grow to max while
// blocks wait and every actor is busy; their actors are killed when the operator finishes.
// Actors hold their CPUs while alive, so a pool reserves CPUs for an actor only while one
// task's CPUs stay free for every unfinished task operator (reads and task maps upstream or
// downstream); the other actors reserve no CPU and run on borrowed ones, the task limit
// bounding what the execution runs at once (without this, ActorPool(2, 2) on 2 CPUs could
// starve its own read tasks and hang). Progress bars (one line per operator) are drawn on
// stderr when it is a terminal.
//
// Differences from Ray Data: one task makes exactly one block (a read unit's batches are
// concatenated, except that a Parquet unit that fits a block is decoded as one batch; plan
// finer units with Parallelism or TargetMaxBlockSize), MapBatches cuts
// batches within a block (it does not bundle small blocks into one batch), and a map that
// grows its data makes bigger blocks (they are not split).
package data
