// Command heapburst measures what the heap keeps after a burst (issue 21 item 4): it
// submits N small tasks at once (all in flight together), gets and releases them, then
// reports the live heap after GC before, at the peak and after, and what stayed.
//
//	go run ./benchmarks/heapburst -n 1000000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/ray-go/ray"
)

var small = ray.Task0("heapburst.small", func(context.Context) (int, error) { return 1, nil })

func heapMiB() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

func main() {
	n := flag.Int("n", 1_000_000, "tasks in the burst")
	asJSON := flag.Bool("json", false, "print one JSON object")
	memprofile := flag.String("memprofile", "", "write a heap profile (after the burst) to this file")
	flag.Parse()
	ctx, err := ray.Init(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer ray.Shutdown(ctx)
	// Warm up the runtime (grains, pools) before the baseline.
	warm := make([]ray.ObjectRef[int], 1000)
	for i := range warm {
		warm[i] = small.Remote(ctx)
	}
	for _, r := range warm {
		if _, err := ray.Get(ctx, r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		r.Release()
	}
	time.Sleep(200 * time.Millisecond)
	before := heapMiB()
	start := time.Now()
	refs := make([]ray.ObjectRef[int], *n)
	for i := range refs {
		refs[i] = small.Remote(ctx)
	}
	peak := heapMiB()
	for _, r := range refs {
		if _, err := ray.Get(ctx, r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		r.Release()
	}
	took := time.Since(start)
	refs = nil
	time.Sleep(500 * time.Millisecond) // lineage ticks, the nursery
	after := heapMiB()
	debug.FreeOSMemory()
	if *memprofile != "" {
		f, err := os.Create(*memprofile)
		if err == nil {
			err = pprof.WriteHeapProfile(f)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	res := map[string]any{"tasks": *n, "seconds": took.Seconds(), "heap_before_mib": before, "heap_at_peak_mib": peak,
		"heap_after_mib": after, "kept_mib": after - before}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(res)
		return
	}
	fmt.Printf("%d tasks in %.1f s; heap after GC: before %.1f MiB, all submitted %.1f MiB, after %.1f MiB: %.1f MiB kept (goal <= 50)\n",
		*n, took.Seconds(), before, peak, after, after-before)
}
