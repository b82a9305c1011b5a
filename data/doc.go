// Package data is Ray Data for Go: distributed, streaming processing of tabular data on a
// ray-go cluster.
//
// A Dataset is an ordered list of blocks, each an Arrow record held as a ray object, and a
// lazy plan that makes them. Sources (Range, FromItems, FromArrow, ReadParquet, ReadCSV,
// ReadJSON, ReadText, ReadBinaryFiles) and transforms (Map, MapBatches, FlatMap, Filter,
// AddColumn, SelectColumns, DropColumns, RenameColumns, Limit, Union, Zip,
// RandomizeBlockOrder) only build the plan; consuming calls (IterBatches with an optional
// LocalShuffleBuffer, IterRows, Take, TakeBatch, TakeAll, Count, Schema, Show, Materialize,
// Split, SplitAtIndices, TrainTestSplit, StreamingSplit, the aggregates Sum, Min, Max, Mean,
// Std and Unique, WriteParquet, WriteCSV, WriteJSON) run it; NumBlocks counts the blocks of
// a materialized dataset (as Ray's num_blocks, it refuses a lazy one). The all-to-all operators
// (RandomShuffle, Repartition, Sort, GroupBy with its aggregations and MapGroups) are
// transforms too.
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
// SelectColumns, DropColumns, RenameColumns) fuse into one operator when they use the same compute
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
// # Other operators
//
// RandomizeBlockOrder is a barrier, as in Ray: it holds every input block, then emits them
// in an order drawn from its seed. Zip runs a task per block of its left input, which
// fetches the rows of the right input that pair with it (slices of one or more right
// blocks, passed as refs inside the task's argument), so both sides stream; a different row
// count is an error, at once when both plans know their counts, else when the inputs end.
// The aggregates (Sum, Min, Max, Mean, Std, Unique) add a map-like stage that fuses with
// the maps before it and turns each block into a partial aggregate; the driver combines
// them (Mean and Std with per-block count, mean and sum of squared deviations, combined by
// Chan et al.'s formula). Nulls are ignored; where Ray returns None (no rows, or only
// nulls) they return an error wrapping ErrEmpty, as does TakeBatch on an empty dataset.
// Min and Max (and a group's min and max) skip NaN, but are NaN when every non-null value
// is NaN, as Arrow's min_max and hash_min_max since GH-46063 (before, Arrow gave +Inf and
// -Inf) and NumPy's nanmin; a group of only nulls gets null.
// LocalShuffleBuffer shuffles rows in the consumer as Ray's local_shuffle_buffer_size, a
// random permutation (Arrow's compute.Take) of a buffer of at least n rows at a time.
//
// # All-to-all operators
//
// RandomShuffle, Repartition, Sort and GroupBy (Aggregate with Count, Sum, Min, Max,
// Mean, Std, and MapGroups) are barriers run as a map-reduce over the object store (see
// exchange.md): map tasks cut each block into N partitions (random, sample-based key
// ranges, or a hash of the keys) and return them as one block whose per-partition row
// counts travel in the task's result metadata; merge tasks combine groups of finished map
// outputs while later maps still run (push-based shuffle); reduce tasks combine partition
// i of every map or merge output into output block i. When the operator before an exchange
// is a read or a map and the exchange's maps stream, the map runs at the end of that
// operator's tasks (fused, as Ray fuses MapOperator -> AllToAllOperator). Shuffle reduces
// (RandomShuffle, Repartition with shuffle) stream too: once every map is launched they
// start, fetch the map outputs in map order (those of maps still running as "partition i of
// this block", found through the block's schema metadata) and shuffle each piece in as it
// arrives, with the result of a reduce started after the maps. Every merge and reduce
// fetches its blocks one at a time; when the store spills (or the data is large for it),
// a reduce copies out the slices of a block it reads only part of and releases the
// block, so it holds its own partition's bytes and one block, not every map output it
// reads from. Every block, partitions included,
// is a task's return value, so a lost one comes back through lineage, also after the
// exchange ended: a reduce reads its map outputs through refs nested in its argument, and
// its lineage record keeps theirs (see exchange.md). Blocks held by the
// exchange are left to the object store (which spills them), the budget bounding the
// tasks in flight. Explain shows each exchange's stages and Stats the tasks, rows and
// bytes of each (bytes shuffled, bytes spilled). Arrow Go v15 has no sort_indices, merge
// or hash aggregation kernels, so this package has its own over Arrow arrays (kernels.go,
// groupagg.go): typed comparators (nulls last, then NaN, in either direction), a stable
// index sort, a k-way merge of sorted runs, a value-only row hash and a grouping hash
// table; rows move with compute.Take.
//
// # Null columns
//
// A column that is null in every row of a block (a Map returning nil for it, a CSV column
// empty in a whole file, a JSON key always null) has the Arrow type null, as in pyarrow, and
// so do the null parts of nested values (an empty list is list<null>, a nil struct field
// null). Where blocks meet, their schemas are unified as pyarrow's unify_schemas does by
// default: the same column names in the same order, and per column the same type or null
// and a type (recursively in lists and structs), the null column then taking that type.
// Nothing else is promoted: int64 in one block and float64 in another is a schema
// mismatch. The executor reads every block's schema from its metadata and checks this as
// blocks reach the consumer or a Union; a block whose null columns no block has typed yet
// waits (up to one block more than the tasks that run at once queue behind it, or until the
// execution ends or nothing else can run) so that a later block can give them their type.
// The consumer then casts the null columns (IterBatches, IterRows, TakeBatch, Schema, the
// aggregates, StreamingSplit's iterators), and writers write every file with the dataset's
// type. A column null in every block stays null: batches hold a null column, Parquet
// stores Arrow's null type (Parquet's null logical type) and CSV and JSON write empty
// fields and nulls, which read back as null columns.
//
// Differences from Ray Data: one task makes exactly one block (a read unit's batches are
// concatenated, except that a Parquet unit that fits a block is decoded as one batch; plan
// finer units with Parallelism or TargetMaxBlockSize), MapBatches cuts
// batches within a block (it does not bundle small blocks into one batch), and a map that
// grows its data makes bigger blocks (they are not split).
package data
