// Command soak runs the mixed workload of issue 21 ("long-running clusters") for a while
// in local mode and prints, every interval: throughput, RSS, the heap after GC, and the
// GCS's size (etcd's database file and its whole directory). A round is 1,000 small tasks,
// 100 calls to each of 10 long-lived actors (exactly-once, the default, unless
// -at-most-once) and 50 Puts of 1 MiB, each got and released.
//
//	go run ./benchmarks/soak -duration 30m
//	go run ./benchmarks/soak -duration 3m -interval 30s -json
//
// The goal (issue 21): after the first 5 minutes nothing grows by more than 10% and
// throughput stays within 10% of its first minute. The last line (or -json's "summary")
// compares the last interval with the first one after -settle.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ray-go/ray"
)

// counter's state is an exported field, so the runtime checkpoints it by itself and its
// method log stays bounded.
type counter struct{ N int64 }

var (
	small       = ray.Task0("soak.small", func(context.Context) (int, error) { return 1, nil })
	counterCls  = ray.Actor("soak.Counter", func() *counter { return &counter{} })
	counterAdd  = ray.Method1(counterCls, "Add", func(c *counter, _ context.Context, d int64) (int64, error) { c.N += d; return c.N, nil })
	blob        = make([]byte, 1<<20)
	tasksRound  = 1000
	callsRound  = 100 // per actor
	actorsCount = 10
	putsRound   = 50
)

// sample is one interval's figures.
type sample struct {
	At         float64 `json:"at_seconds"`
	OpsPerSec  float64 `json:"ops_per_second"` // tasks + calls + puts
	Rounds     int     `json:"rounds"`
	RSSMiB     float64 `json:"rss_mib"`
	HeapMiB    float64 `json:"heap_after_gc_mib"`
	GCSFileMiB float64 `json:"gcs_db_file_mib"`
	GCSDirMiB  float64 `json:"gcs_dir_mib"`
	// What the directory holds besides the data file: the write-ahead log's files (with the
	// one etcd preallocates next) and the snapshots.
	GCSWALMiB  float64 `json:"gcs_wal_mib"`
	GCSWALs    int     `json:"gcs_wal_files"`
	GCSSnapMiB float64 `json:"gcs_snap_mib"`
}

func main() {
	duration := flag.Duration("duration", 30*time.Minute, "how long to run")
	interval := flag.Duration("interval", time.Minute, "how often to print a sample")
	settle := flag.Duration("settle", 5*time.Minute, "the first sample compared is the first after this (capped at half the run)")
	atMostOnce := flag.Bool("at-most-once", false, "create the actors with ray.AtMostOnce() (no method log)")
	asJSON := flag.Bool("json", false, "print one JSON object at the end instead of lines")
	flag.Parse()

	dir, err := os.MkdirTemp("", "ray-soak-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	ctx, err := ray.Init(context.Background(), ray.WithDir(dir))
	if err != nil {
		fail(err)
	}
	defer ray.Shutdown(ctx)

	var opts []ray.TaskOption
	if *atMostOnce {
		opts = append(opts, ray.AtMostOnce())
	}
	actors := make([]ray.ActorHandle[counter], actorsCount)
	for i := range actors {
		actors[i] = counterCls.Remote(ctx, opts...)
	}

	var samples []sample
	start := time.Now()
	next := start.Add(*interval)
	rounds, ops := 0, 0
	since := start
	for time.Since(start) < *duration {
		if err := round(ctx, actors); err != nil {
			fail(err)
		}
		rounds++
		ops += tasksRound + callsRound*actorsCount + putsRound
		if now := time.Now(); !now.Before(next) {
			s := measure(dir)
			s.At, s.Rounds, s.OpsPerSec = now.Sub(start).Seconds(), rounds, float64(ops)/now.Sub(since).Seconds()
			samples = append(samples, s)
			if !*asJSON {
				fmt.Printf("soak: %6.0f s  %8.0f ops/s  rss %7.1f MiB  heap %7.1f MiB  gcs db %7.1f MiB  gcs dir %7.1f MiB (wal %.0f MiB in %d files, snap %.1f MiB)\n",
					s.At, s.OpsPerSec, s.RSSMiB, s.HeapMiB, s.GCSFileMiB, s.GCSDirMiB, s.GCSWALMiB, s.GCSWALs, s.GCSSnapMiB)
			}
			rounds, ops, since = 0, 0, time.Now()
			next = next.Add(*interval)
		}
	}
	sum := summarize(samples, min(*settle, *duration/2))
	if *asJSON {
		_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"samples": samples, "summary": sum,
			"at_most_once": *atMostOnce, "cores": runtime.NumCPU(), "gomaxprocs": runtime.GOMAXPROCS(0)})
		return
	}
	b, _ := json.Marshal(sum)
	fmt.Printf("soak: summary %s\n", b)
}

// round runs one round of the workload and waits for all of it.
func round(ctx context.Context, actors []ray.ActorHandle[counter]) error {
	refs := make([]ray.ObjectRef[int], tasksRound)
	for i := range refs {
		refs[i] = small.Remote(ctx)
	}
	calls := make([]ray.ObjectRef[int64], 0, callsRound*len(actors))
	for range callsRound {
		for _, a := range actors {
			calls = append(calls, counterAdd.Remote(ctx, a, ray.V[int64](1)))
		}
	}
	for range putsRound {
		r, err := ray.Put(ctx, blob)
		if err != nil {
			return err
		}
		if _, err := ray.Get(ctx, r); err != nil {
			return err
		}
		r.Release()
	}
	for _, r := range refs {
		if _, err := ray.Get(ctx, r); err != nil {
			return err
		}
		r.Release()
	}
	for _, r := range calls {
		if _, err := ray.Get(ctx, r); err != nil {
			return err
		}
		r.Release()
	}
	return nil
}

// measure reads RSS, the heap after a GC and the GCS's sizes under dir.
func measure(dir string) sample {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s := sample{RSSMiB: rssMiB(), HeapMiB: float64(m.HeapAlloc) / (1 << 20)}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(path, string(filepath.Separator)+"member"+string(filepath.Separator)) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		mib := float64(info.Size()) / (1 << 20)
		s.GCSDirMiB += mib
		switch filepath.Base(filepath.Dir(path)) {
		case "wal":
			s.GCSWALMiB += mib
			s.GCSWALs++
		case "snap":
			if d.Name() == "db" {
				s.GCSFileMiB += mib
			} else {
				s.GCSSnapMiB += mib
			}
		}
		return nil
	})
	return s
}

// rssMiB is this process's resident set (Linux; 0 elsewhere).
func rssMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// summary compares the last sample with the first one after settle: growth ratios (the
// goal: at most 1.10 each) and throughput's ratio (the goal: at least 0.90).
type summary struct {
	From           float64  `json:"from_seconds,omitempty"`
	To             float64  `json:"to_seconds,omitempty"`
	RSS            float64  `json:"rss,omitempty"`
	Heap           float64  `json:"heap,omitempty"`
	GCSFile        float64  `json:"gcs_db_file,omitempty"`
	GCSDir         float64  `json:"gcs_dir,omitempty"`
	Throughput     float64  `json:"throughput,omitempty"`
	GoalsMet       bool     `json:"goals_met"`
	TooFewSamples  bool     `json:"too_few_samples,omitempty"`
	GrowthOverGoal []string `json:"over_goal,omitempty"`
}

func summarize(samples []sample, settle time.Duration) summary {
	var first *sample
	for i := range samples {
		if samples[i].At >= settle.Seconds() {
			first = &samples[i]
			break
		}
	}
	if first == nil || first == &samples[len(samples)-1] {
		return summary{TooFewSamples: true}
	}
	last := samples[len(samples)-1]
	ratio := func(a, b float64) float64 {
		if a <= 0 {
			return 0
		}
		return b / a
	}
	s := summary{From: first.At, To: last.At, RSS: ratio(first.RSSMiB, last.RSSMiB), Heap: ratio(first.HeapMiB, last.HeapMiB),
		GCSFile: ratio(first.GCSFileMiB, last.GCSFileMiB), GCSDir: ratio(first.GCSDirMiB, last.GCSDirMiB),
		Throughput: ratio(first.OpsPerSec, last.OpsPerSec)}
	for name, r := range map[string]float64{"rss": s.RSS, "heap": s.Heap, "gcs_db_file": s.GCSFile, "gcs_dir": s.GCSDir} {
		if r > 1.10 {
			s.GrowthOverGoal = append(s.GrowthOverGoal, name)
		}
	}
	if s.Throughput < 0.90 {
		s.GrowthOverGoal = append(s.GrowthOverGoal, "throughput fell")
	}
	s.GoalsMet = len(s.GrowthOverGoal) == 0
	return s
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "soak:", err)
	os.Exit(1)
}
