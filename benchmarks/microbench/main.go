// Command microbench is ray-go's re-implementation of Ray's microbenchmark
// (`ray microbenchmark`, python/ray/_private/ray_perf.py): the same workloads under the same
// metric names, timed the same way, next to Ray 2.48's published figures and to figures of
// the substrate (protoactor-go, embedded etcd) measured in the same run.
//
//	go run ./benchmarks/microbench               # full method: 1 s warm-up, 4 trials of >= 2 s
//	go run ./benchmarks/microbench -quick        # CI-sized: 0.2 s warm-up, 3 trials of 0.3 s
//	go run ./benchmarks/microbench -json         # one JSON object on stdout
//	go run ./benchmarks/microbench -only 'tasks_(a)?sync' -cpuprofile cpu.out
//
// The workloads live in benchmarks/internal/perf, which benchmarks/scale runs too. See
// README.md for what each metric's body does and how it differs from Ray.
package main

import (
	"os"

	"github.com/ray-go/ray/benchmarks/internal/perf"
)

func main() { os.Exit(perf.Microbench(os.Args[1:])) }
