// Package benchmarks holds ray-go's benchmark programs (BENCHMARKS.md); it has no code.
//
//   - microbench: Ray's microbenchmark (`ray microbenchmark`) re-implemented, with the
//     substrate figures (protoactor-go, embedded etcd) measured in the same run; its
//     workloads live in benchmarks/internal/perf.
//   - scale: the microbenchmark's workloads at 1, 2, 4, ... cores, each core count in a
//     child process pinned to that many cores: throughput, speedup and mutex wait per op;
//     with -nodes, clusters of 1-8 node processes against one node of the same CPUs, and
//     1-64 in-process nodes counting messages and GCS bytes per task.
//   - actors: Ray's many_actors release test: N actors (0 CPUs, one call each), the rate
//     per thousand and the memory per idle actor.
//   - heapburst: N small tasks submitted at once, then released: the heap kept afterwards.
//   - soak: a mixed workload (tasks, exactly-once actor calls, 1 MiB Puts) for minutes or
//     hours: throughput, RSS, heap and the GCS's size per interval, and whether they level off.
//   - statebench: the state API for tasks: listing the newest 100 of a million recorded
//     tasks, the summary, a 100,000-task timeline; -hold keeps a job up for timing rayctl.
//   - data, rl, chaos: Ray Data against pqarrow, the RL suite, a node killed per round.
//
// Benchmarks are programs, never timed assertions in the test suite:
//
//	go run ./benchmarks/microbench -quick
//	go run ./benchmarks/scale -quick
package benchmarks
