// Package benchmarks holds ray-go's benchmark programs (BENCHMARKS.md); it has no code.
//
//   - microbench: Ray's microbenchmark (`ray microbenchmark`) re-implemented, with the
//     substrate figures (protoactor-go, embedded etcd) measured in the same run.
//
// Benchmarks are programs, never timed assertions in the test suite:
//
//	go run ./benchmarks/microbench -quick
package benchmarks
