package perf

import (
	"fmt"
	"math"
	"runtime/metrics"
	"time"
)

// timing is the method: a warm-up, then trials of at least trialDur each.
type timing struct {
	warmup   time.Duration
	trialDur time.Duration
	trials   int
}

// stat is one metric's outcome: the mean and population standard deviation of the
// per-trial rates (numpy's np.std, as ray_perf.py reports), and what produced them.
type stat struct {
	Mean, SD float64
	Trials   []float64 // ops/s of each trial
	Bodies   int64     // bodies run in the trials (not the warm-up)
	Step     int       // bodies between two clock reads
	// MutexWaitPerOp is the time goroutines spent blocked on mutexes (runtime/metrics
	// /sync/mutex/wait/total) during the warm-up and the trials, in nanoseconds per
	// operation of the trials.
	MutexWaitPerOp float64
	// AllocsPerOp, BytesPerOp and MessagesPerOp are the heap allocations and their bytes
	// (runtime/metrics /gc/heap/allocs:objects and :bytes) and the messages the runtime's
	// actors handled (ray.Stats), per operation, over the warm-up and the trials.
	AllocsPerOp, BytesPerOp, MessagesPerOp float64
	WarmupBodies                           int64 // bodies run in the warm-up
}

// timeit is ray_perf.py's timeit (python/ray/_private/ray_microbenchmark_helpers.py):
//
//	count bodies run in the warm-up; step = count//10 + 1
//	4 times: start; count = 0
//	         while now - start < 2 s: run step bodies; count += step
//	         rate = multiplier * count / (now - start)
//	report mean(rates), std(rates)
//
// The clock is only read between steps, so a trial runs at least trialDur and at most
// trialDur plus one step. A body's error stops the metric.
func timeit(t timing, multiplier float64, body func() error) (stat, error) {
	start := time.Now()
	count := 0
	for time.Since(start) < t.warmup {
		if err := body(); err != nil {
			return stat{}, fmt.Errorf("warm-up: %w", err)
		}
		count++
	}
	step := count/10 + 1
	st := stat{Step: step, WarmupBodies: int64(count)}
	for trial := 0; trial < t.trials; trial++ {
		start := time.Now()
		n := 0
		for time.Since(start) < t.trialDur {
			for i := 0; i < step; i++ {
				if err := body(); err != nil {
					return stat{}, fmt.Errorf("trial %d: %w", trial+1, err)
				}
			}
			n += step
		}
		elapsed := time.Since(start).Seconds()
		st.Trials = append(st.Trials, multiplier*float64(n)/elapsed)
		st.Bodies += int64(n)
	}
	st.Mean, st.SD = meanSD(st.Trials)
	return st, nil
}

// meanSD returns the mean and the population standard deviation (ddof 0) of xs.
func meanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)))
}

// mutexWait is the process's cumulative mutex wait so far (/sync/mutex/wait/total): time
// goroutines spent blocked on sync.Mutex, sync.RWMutex and runtime-internal locks, which the
// runtime samples whether or not a mutex profile is on.
func mutexWait() time.Duration {
	s := []metrics.Sample{{Name: "/sync/mutex/wait/total:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * 1e9)
}

// heapAllocs is how many heap objects, and bytes, the process allocated so far.
func heapAllocs() (objects, bytes uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0, 0
	}
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}
