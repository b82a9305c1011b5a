// Command allocloop measures how this machine scales with cores on two loops with no
// shared state at all: pure arithmetic, and small allocations with a tiny live heap (the
// regime of the runtime's per-task garbage). Run it pinned to 1 and to 2 cores and compare:
//
//	taskset -c 0 env GOMAXPROCS=1 go run ./benchmarks/scale/allocloop
//	taskset -c 0,1 env GOMAXPROCS=2 go run ./benchmarks/scale/allocloop
//
// (GOGC=800 or GOGC=off change the second figure; see benchmarks/RESULTS.md.)
package main

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// sink keeps the allocations from being optimized away.
//
//lint:ignore U1000 written only, on purpose: what it holds must not be optimized away
var sink [][]byte

func spin(n int) uint64 {
	x := uint64(1)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

func main() {
	p := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	run := func(name string, body func(share int)) {
		start := time.Now()
		for i := 0; i < p; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); body(i) }()
		}
		wg.Wait()
		fmt.Printf("%s: %d cores, %v\n", name, p, time.Since(start).Round(time.Millisecond))
	}
	results := make([]uint64, p)
	run("arithmetic (4e8 steps)", func(i int) { results[i] = spin(400_000_000 / p) })
	local := make([][][]byte, p)
	run("64-byte allocations (2e7)", func(i int) {
		s := make([][]byte, 1)
		for j := 0; j < 20_000_000/p; j++ {
			s[0] = make([]byte, 64)
		}
		local[i] = s
	})
	sink = local[0]
	_ = results
}
