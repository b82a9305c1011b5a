// Command actors is the many-actors benchmark of issue 21 (Ray's many_actors release test:
// 10,000 actors at 389/s on Ray 1.12). In local mode it creates N actors (0 CPUs), calls
// each once, and waits for the answers, 1,000 actors at a time; it prints the rate of
// every thousand (creation plus the first call answered), the overall rate, and the
// memory per actor once all are up and idle: the heap after a GC (and, apart, the
// goroutine stacks) above what it was before the first actor, divided by N.
//
//	go run ./benchmarks/actors -n 40000
//	go run ./benchmarks/actors -n 10000 -atmostonce -json
//	go run ./benchmarks/actors -n 10000 -memprofile /tmp/actors.heap  # go tool pprof -sample_index=inuse_space
//
// With -churn kill|drop|pg it measures what ended actors leave behind instead: it creates,
// calls and ends N actors one at a time (ray.Kill; dropping the handle so that the actor
// goes out of scope; or, as a tuning trial does, placing the actor, and a task beside it,
// in a placement group of its own and removing the group) and prints, every 1,000, the
// live heap after a GC above what it was before the first, and at the end the growth per
// actor over the second half (the first half also fills tables of bounded size: the
// GCS's recent records, the actor manager's tombstones, the task records).
//
//	go run ./benchmarks/actors -churn kill -n 20000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/benchmarks/internal/perf"
)

type idle struct{}

func (*idle) Ping(context.Context) (int, error) { return 1, nil }

var (
	idleClass = ray.Actor("benchactors.Idle", func() *idle { return &idle{} })
	idlePing  = ray.Method0(idleClass, "ping", (*idle).Ping)
	// noop is the task -churn pg runs in each group beside its actor.
	noop = ray.Task0("benchactors.noop", func(context.Context) (int, error) { return 1, nil })
)

type result struct {
	N           int       `json:"n"`
	AtMostOnce  bool      `json:"at_most_once"`
	PerThousand []float64 `json:"per_thousand_per_s"`
	// Per thousand: GC cycles, their stop-the-world pauses (ms), and the live heap after.
	GCs       []uint64  `json:"per_thousand_gcs"`
	GCPauseMs []float64 `json:"per_thousand_gc_pause_ms"`
	HeapMiB   []float64 `json:"per_thousand_heap_mib"`
	LoadAvg   [2]string `json:"load_average_start_end"`
	// CPUPerActor is the process's CPU time (user + system) over the run, per actor: less
	// swayed by other processes on the machine than the rates.
	CPUPerActorUs float64 `json:"cpu_us_per_actor"`
	Overall       float64 `json:"overall_per_s"`
	Seconds       float64 `json:"seconds"`
	HeapPerActor  float64 `json:"heap_bytes_per_actor"`
	StackPerActor float64 `json:"stack_bytes_per_actor"`
}

func main() {
	n := flag.Int("n", 10000, "actors to create")
	atMost := flag.Bool("atmostonce", false, "at-most-once actors (Ray's default); ray-go's default is exactly-once")
	asJSON := flag.Bool("json", false, "print one JSON object")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here")
	blockprofile := flag.String("blockprofile", "", "write a profile of blocking (channels, mutexes, selects; every event of 1 µs or more) here")
	memprofile := flag.String("memprofile", "", "write a heap profile (live objects once all actors are idle, sampled every 4 KiB) here")
	dir := flag.String("dir", "", "session directory (default: a temporary one)")
	churn := flag.String("churn", "", "kill | drop | pg: create, call and end the actors one at a time, and print the heap they leave behind")
	flag.Parse()
	if *churn != "" {
		if err := runChurn(*n, *churn, *atMost, *dir, *memprofile); err != nil {
			fmt.Fprintln(os.Stderr, "actors:", err)
			os.Exit(1)
		}
		return
	}
	if *memprofile != "" {
		runtime.MemProfileRate = 4096
	}
	if *blockprofile != "" {
		runtime.SetBlockProfileRate(int(time.Microsecond))
	}
	err := run(*n, *atMost, *asJSON, *cpuprofile, *memprofile, *dir)
	if err == nil && *blockprofile != "" {
		err = perf.WriteProfile("block", *blockprofile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "actors:", err)
		os.Exit(1)
	}
}

func run(n int, atMost, asJSON bool, cpuprofile, memprofile, dir string) error {
	ctx, opts, stop, err := startRuntime(dir, atMost)
	if err != nil {
		return err
	}
	defer stop()
	heap0, stack0 := memory()
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	res := result{N: n, AtMostOnce: atMost}
	var out io.Writer = os.Stdout
	if asJSON {
		out = io.Discard
	}
	handles := make([]ray.ActorHandle[idle], 0, n)
	res.LoadAvg[0] = perf.LoadAvg()
	cpu0 := cpuTime()
	start := time.Now()
	for done := 0; done < n; {
		batch := min(1000, n-done)
		t0 := time.Now()
		gc0 := gcStats()
		refs := make([]ray.ObjectRef[int], batch)
		var creating time.Duration
		for i := range refs {
			c0 := time.Now()
			h := idleClass.Remote(ctx, opts...)
			creating += time.Since(c0)
			handles = append(handles, h)
			refs[i] = idlePing.Remote(ctx, h)
		}
		for _, r := range refs {
			if _, err := ray.Get(ctx, r); err != nil {
				return fmt.Errorf("actor %d: %w", done, err)
			}
			r.Release()
		}
		done += batch
		rate := float64(batch) / time.Since(t0).Seconds()
		gc1 := gcStats()
		gcs, pause := gc1.cycles-gc0.cycles, float64(gc1.pause-gc0.pause)/1e6
		res.PerThousand = append(res.PerThousand, rate)
		res.GCs, res.GCPauseMs, res.HeapMiB = append(res.GCs, gcs), append(res.GCPauseMs, pause), append(res.HeapMiB, gc1.heapMiB)
		fmt.Fprintf(out, "actors %6d: %7.0f /s  (total %.1f s; %.0f%% of the thousand's time in creating calls; %d GCs, %.1f ms paused, heap goal %.0f MiB)\n",
			done, rate, time.Since(start).Seconds(), 100*creating.Seconds()/time.Since(t0).Seconds(), gcs, pause, gc1.heapMiB)
	}
	res.Seconds = time.Since(start).Seconds()
	res.LoadAvg[1] = perf.LoadAvg()
	res.CPUPerActorUs = float64(cpuTime()-cpu0) / float64(time.Microsecond) / float64(n)
	res.Overall = float64(n) / res.Seconds
	if cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	time.Sleep(2 * time.Second) // let the last records and log batches settle
	heap1, stack1 := memory()
	res.HeapPerActor = float64(heap1-heap0) / float64(n)
	res.StackPerActor = float64(stack1-stack0) / float64(n)
	if memprofile != "" {
		if err := perf.WriteProfile("heap", memprofile); err != nil {
			return err
		}
	}
	runtime.KeepAlive(handles)
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Printf("%d actors (at-most-once %v) in %.1f s: %.0f /s overall, %.0f µs of CPU per actor; heap %.0f B/actor, goroutine stacks %.0f B/actor (after GC); load average %s -> %s\n",
		n, atMost, res.Seconds, res.Overall, res.CPUPerActorUs, res.HeapPerActor, res.StackPerActor, res.LoadAvg[0], res.LoadAvg[1])
	return nil
}

// memory returns the bytes of live heap objects and of goroutine stacks after a GC.
func memory() (heap, stack uint64) {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

type gcSnapshot struct {
	cycles  uint64
	pause   time.Duration // stop-the-world pauses, total
	heapMiB float64       // the heap goal (the live heap after the last GC, times GOGC)
}

func gcStats() gcSnapshot {
	var st debug.GCStats
	debug.ReadGCStats(&st)
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return gcSnapshot{cycles: uint64(st.NumGC), pause: st.PauseTotal, heapMiB: float64(s[0].Value.Uint64()) / (1 << 20)}
}

// cpuTime is the CPU time this process used so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startRuntime starts a local runtime in dir (a temporary directory if "") and returns the
// options of the actors to create, and what stops it all.
func startRuntime(dir string, atMost bool) (context.Context, []ray.TaskOption, func(), error) {
	cleanup := func() {}
	if dir == "" {
		d, err := os.MkdirTemp("", "benchactors")
		if err != nil {
			return nil, nil, nil, err
		}
		cleanup = func() { os.RemoveAll(d) }
		dir = d
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, err := ray.Init(context.Background(), ray.WithDir(dir), ray.WithLogger(logger))
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	opts := []ray.TaskOption{ray.NumCPUs(0)}
	if atMost {
		opts = append(opts, ray.AtMostOnce())
	}
	return ctx, opts, func() { ray.Shutdown(ctx); cleanup() }, nil
}

// runChurn creates, calls and ends n actors one at a time (-churn).
func runChurn(n int, how string, atMost bool, dir, memprofile string) error {
	if how != "kill" && how != "drop" && how != "pg" {
		return fmt.Errorf("-churn %q: want kill, drop or pg", how)
	}
	if n < 2000 {
		return fmt.Errorf("-n %d: -churn needs at least 2000 actors (it reports the growth over the second half)", n)
	}
	ctx, opts, stop, err := startRuntime(dir, atMost)
	if err != nil {
		return err
	}
	defer stop()
	heap0, _ := memory()
	t0 := time.Now()
	var half uint64
	for i := 1; i <= n; i++ {
		var pg *ray.PlacementGroupHandle
		o := opts
		if how == "pg" {
			if pg, err = ray.PlacementGroup(ctx, []ray.Bundle{{"CPU": 1}}, ray.StrategyPack); err == nil {
				err = pg.Ready(ctx)
			}
			if err != nil {
				return fmt.Errorf("placement group %d: %w", i, err)
			}
			o = append(o[:len(o):len(o)], ray.PlacementGroupBundle(pg, 0))
		}
		h := idleClass.Remote(ctx, o...)
		if _, err := ray.Get(ctx, idlePing.Remote(ctx, h)); err != nil {
			return fmt.Errorf("actor %d: %w", i, err)
		}
		if pg != nil {
			if _, err := ray.Get(ctx, noop.Options(ray.PlacementGroupBundle(pg, 0)).Remote(ctx)); err != nil {
				return fmt.Errorf("task in placement group %d: %w", i, err)
			}
		}
		switch how {
		case "kill":
			err = ray.Kill(ctx, h, true)
		case "pg":
			err = pg.Remove(ctx) // ends the actor in it
		}
		if err != nil {
			return fmt.Errorf("end actor %d: %w", i, err)
		}
		if i%1000 == 0 || i == n/2 {
			heap, _ := memory()
			if i == n/2 {
				half = heap
			}
			if i%1000 == 0 {
				fmt.Printf("actors %6d ended (%s): heap %+.1f MiB, %.1f s, %d goroutines\n", i, how, float64(int64(heap)-int64(heap0))/(1<<20), time.Since(t0).Seconds(), runtime.NumGoroutine())
			}
		}
	}
	time.Sleep(2 * time.Second) // the last ends settle (a dropped handle's actor ends after its release)
	heap1, _ := memory()
	if memprofile != "" {
		if err := perf.WriteProfile("heap", memprofile); err != nil {
			return err
		}
	}
	fmt.Printf("%d actors created, called and ended (%s, at-most-once %v) in %.1f s: heap %+.1f MiB in all; %.0f B per actor over the second half\n",
		n, how, atMost, time.Since(t0).Seconds(), float64(int64(heap1)-int64(heap0))/(1<<20), float64(int64(heap1)-int64(half))/float64(n-n/2))
	return nil
}
