// Command statebench measures the state API for tasks (issue 19's goals): how long
// listing the newest 100 of a job's million recorded tasks takes, and how long writing a
// timeline of 100,000 tasks takes (and that it is valid JSON).
//
//	go run ./benchmarks/statebench                 # local mode: 1M tasks, then ray.ListTasks, SummarizeTasks, WriteTimeline
//	go run ./benchmarks/statebench -tasks 100000
//	RAY_ADDRESS=... RAY_GO_TOKEN=... statebench -hold   # cluster mode: run the tasks, print "ready", wait
//	                                                     # for SIGINT/SIGTERM; time `rayctl list tasks` meanwhile
//
// In local mode the queries read this process's records directly; in a cluster, rayctl
// asks every process of the job through the GCS (internal/assembly/taskstate), which is
// what the -hold mode lets a shell time.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/ray-go/ray"
)

var inc = ray.Task1("statebench.inc", func(_ context.Context, x int) (int, error) { return x + 1, nil })

func main() {
	n := flag.Int("tasks", 1_000_000, "tasks to run (each a record)")
	tl := flag.Int("timeline", 100_000, "task attempts to write in the timeline")
	chain := flag.Int("chain", 1000, "of the tasks, how many of the last form chains of 10 (each takes the one before's result: the timeline's arrows)")
	rounds := flag.Int("rounds", 5, "times each query is timed (the median is printed)")
	hold := flag.Bool("hold", false, "after the tasks, print ready and wait for SIGINT or SIGTERM (to time rayctl meanwhile)")
	flag.Parse()
	ctx, err := ray.Init(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "statebench:", err)
		os.Exit(1)
	}
	code := run(ctx, *n, *tl, *chain, *rounds, *hold)
	if err := ray.Shutdown(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "statebench: shutdown:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, n, tl, chain, rounds int, hold bool) int {
	start := time.Now()
	const batch = 10_000
	done := 0
	for done < n {
		k := min(batch, n-done)
		refs := make([]ray.ObjectRef[int], 0, k)
		for i := 0; i < k; i++ {
			if done+i >= n-chain && (done+i)%10 != 0 && len(refs) > 0 {
				refs = append(refs, inc.Remote(ctx, refs[len(refs)-1]))
				continue
			}
			refs = append(refs, inc.Remote(ctx, ray.V(i)))
		}
		if _, err := ray.GetAll(ctx, refs); err != nil {
			fmt.Fprintln(os.Stderr, "statebench:", err)
			return 1
		}
		for _, r := range refs {
			r.Release()
		}
		done += k
	}
	fmt.Printf("ran %d tasks in %.1f s\n", n, time.Since(start).Seconds())
	if hold {
		fmt.Println("ready")
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		return 0
	}
	median := func(name string, f func() error) {
		var ds []time.Duration
		for range rounds {
			t := time.Now()
			if err := f(); err != nil {
				fmt.Fprintln(os.Stderr, "statebench:", name, err)
				os.Exit(1)
			}
			ds = append(ds, time.Since(t))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		fmt.Printf("%-44s median %8.1f ms  (min %.1f, max %.1f; %d rounds)\n", name,
			ms(ds[len(ds)/2]), ms(ds[0]), ms(ds[len(ds)-1]), rounds)
	}
	var total int
	median("ListTasks(Limit 100)", func() error {
		l, t, err := ray.ListTasks(ctx, ray.TaskFilter{Limit: 100})
		if err == nil && (len(l) != 100 || t < n) {
			err = fmt.Errorf("%d tasks of %d", len(l), t)
		}
		total = t
		return err
	})
	median("ListTasks(State FAILED, Limit 100)", func() error {
		_, _, err := ray.ListTasks(ctx, ray.TaskFilter{State: ray.TaskFailed, Limit: 100})
		return err
	})
	median("SummarizeTasks", func() error {
		_, err := ray.SummarizeTasks(ctx, ray.TaskFilter{})
		return err
	})
	var size int
	median(fmt.Sprintf("WriteTimeline(Limit %d) to a file", tl), func() error {
		f, err := os.CreateTemp("", "statebench-*.json")
		if err != nil {
			return err
		}
		defer os.Remove(f.Name())
		if err := ray.WriteTimeline(ctx, f, ray.TaskFilter{Limit: tl}); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		b, err := os.ReadFile(f.Name())
		size = len(b)
		return err
	})
	// Validity, outside the timing: decode it and count spans and arrows.
	f, _ := os.CreateTemp("", "statebench-*.json")
	defer os.Remove(f.Name())
	if err := ray.WriteTimeline(ctx, f, ray.TaskFilter{Limit: tl}); err != nil {
		fmt.Fprintln(os.Stderr, "statebench:", err)
		return 1
	}
	f.Seek(0, io.SeekStart)
	var trace struct {
		TraceEvents []struct{ Ph string } `json:"traceEvents"`
	}
	if err := json.NewDecoder(f).Decode(&trace); err != nil {
		fmt.Fprintln(os.Stderr, "statebench: the timeline is not valid JSON:", err)
		return 1
	}
	f.Close()
	count := map[string]int{}
	for _, e := range trace.TraceEvents {
		count[e.Ph]++
	}
	fmt.Printf("records %d; timeline %.1f MiB, valid JSON: %d spans, %d arrows, %d tracks\n",
		total, float64(size)/(1<<20), count["X"], count["s"], count["M"])
	return 0
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
