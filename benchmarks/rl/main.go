// Command rl runs the RL suite as benchmarks (BENCHMARKS.md §3):
//
//	go run ./benchmarks/rl -algo es -env CartPole-v1 -seeds 5 -workers 2 [-json]
//	go run ./benchmarks/rl -algo ppo -env CartPole-v1 -seeds 5 -workers 4 [-json]
//	go run ./benchmarks/rl -algo ppo -env Pendulum-v1 -seeds 5 -ppo-maxsteps 500000 [-json]
//	go run ./benchmarks/rl -mode throughput [-steps 10,100,1000] [-cost 0] [-depth 2] [-get fifo] [-json]
//	go run ./benchmarks/rl -mode es-tree -workers 200 [-fanout 8] [-json]
//
// Training mode reports, per seed and as median and spread, the steps and wall-clock time
// to the solve threshold, the final score, how the time split into sampling, learning
// and synchronisation (with the medians of each), and the process's CPU time per run
// (which, on a shared machine, separates what a run costs from waiting for a core).
// The -ppo-* flags override rl/ppo's per-environment defaults. Throughput mode reproduces the Ray paper's Table 4 on
// Pendulum-v1: steps/s of tasks of 10 to 1000 steps on 1, 2, 4 and 8 workers,
// asynchronous (a worker gets its next task as soon as it returns one) versus BSP (rounds
// with a barrier), against the same loop run inline on goroutines without the framework
// in the same run, and against the asynchronous run's shape in plain Go (goroutines fed
// through channels, one hand-off each way per call: what the Go runtime and the machine
// allow such a design; async_over_plain is the framework's own share), the latter twice:
// as written, and with each worker yielding its P after each call (runtime.Gosched), as
// an actor's executor does after a call of some microseconds (plain_yield). -trace writes an
// execution trace of the first asynchronous run. The es-tree mode times ES iterations with many workers, results
// gathered flat by the driver versus through an aggregation tree of actors.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/rl/envs"
	"github.com/ray-go/ray/rl/es"
	"github.com/ray-go/ray/rl/ppo"
)

func main() { os.Exit(run()) }

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "rl: "+format+"\n", args...) }

func run() int {
	mode := flag.String("mode", "train", "train | throughput | es-tree")
	algo := flag.String("algo", "es", "es | ppo (train mode)")
	env := flag.String("env", "CartPole-v1", "Gymnasium id (train mode)")
	seeds := flag.Int("seeds", 5, "seeds to train (train mode): 0..seeds-1")
	workers := flag.Int("workers", 0, "rollout actors (default: es 2, ppo 4; es-tree 200)")
	asJSON := flag.Bool("json", false, "print the results as JSON on stdout")
	quiet := flag.Bool("q", false, "no per-iteration progress on stderr")
	stepsList := flag.String("steps", "10,100,1000", "throughput mode: task lengths in steps")
	workersList := flag.String("workerlist", "1,2,4,8", "throughput mode: worker counts")
	cost := flag.Duration("cost", 0, "throughput mode: synthetic CPU cost per step (busy loop)")
	total := flag.Int("total", 3_000_000, "throughput mode: steps per measurement")
	reps := flag.Int("reps", 5, "throughput mode: measurements per cell (the median is reported)")
	flag.IntVar(&asyncDepth, "depth", 2, "throughput mode: calls queued per worker in the async run")
	flag.StringVar(&asyncGet, "get", "fifo", "throughput mode: how the async run gets results: fifo (the oldest call's, Get) | wait (any ready, Wait)")
	flag.BoolVar(&runBSP, "bsp", true, "throughput mode: measure BSP rounds too (false: a CPU profile shows the async run and the inline one only)")
	fanout := flag.Int("fanout", 8, "es-tree mode: aggregation tree fan-out")
	iters := flag.Int("iters", 5, "es-tree mode: iterations timed per variant")
	flag.Float64Var(&esSigma, "es-sigma", 0, "ES noise std (default: rl/es's)")
	flag.IntVar(&esPairs, "es-pairs", 0, "ES antithetic pairs per iteration (default: rl/es's)")
	flag.Float64Var(&esStep, "es-stepsize", 0, "ES Adam step size (default: rl/es's)")
	flag.IntVar(&ppoEpochs, "ppo-epochs", 0, "PPO epochs per update (default: rl/ppo's)")
	flag.IntVar(&ppoMinibatch, "ppo-minibatch", 0, "PPO minibatch size (default: rl/ppo's)")
	flag.StringVar(&ppoHidden, "ppo-hidden", "", "PPO hidden layer sizes, comma-separated (default: rl/ppo's)")
	flag.Int64Var(&ppoMaxSteps, "ppo-maxsteps", 0, "PPO step budget per seed (default: rl/ppo's)")
	flag.Int64Var(&ppoAnneal, "ppo-anneal", 0, "PPO steps over which the learning rate and clip decay (default: rl/ppo's; < 0 none)")
	flag.Float64Var(&ppoMinAnneal, "ppo-minanneal", 0, "PPO fraction of the learning rate and clip the decay stops at (default: rl/ppo's; < 0: 0)")
	flag.BoolVar(&ppoAsync, "ppo-async", false, "PPO asynchronous sampling (the Ray paper's scatter-gather; default: synchronous rounds)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to `file`")
	traceFile := flag.String("trace", "", "throughput mode: write an execution trace of the first async run to `file` (go tool trace)")
	flag.Parse()

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			logf("-cpuprofile: %v", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			logf("-cpuprofile: %v", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			logf("-trace: %v", err)
			return 1
		}
		defer f.Close()
		traceOut = f
	}
	ctx, err := ray.Init(context.Background())
	if err != nil {
		logf("init: %v", err)
		return 1
	}
	defer ray.Shutdown(ctx)
	logf("GOMAXPROCS %d, NumCPU %d, %s", runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version())
	var out any
	switch *mode {
	case "train":
		out, err = train(ctx, *algo, *env, *seeds, *workers, *quiet)
	case "throughput":
		out, err = throughput(ctx, ints(*stepsList), ints(*workersList), *cost, *total, *reps)
	case "es-tree":
		w := *workers
		if w == 0 {
			w = 200
		}
		out, err = esTree(ctx, w, *fanout, *iters)
	default:
		err = fmt.Errorf("unknown -mode %q (train, throughput, es-tree)", *mode)
	}
	if err != nil {
		logf("%v", err)
		return 1
	}
	if *asJSON {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Println(string(b))
	}
	return 0
}

// Throughput mode's options (see the flags).
var (
	asyncDepth = 2
	asyncGet   = "fifo"
	runBSP     = true
)

// ES hyperparameter overrides (train mode).
var (
	esSigma, esStep float64
	esPairs         int
	ppoEpochs       int
	ppoMinibatch    int
	ppoHidden       string
	ppoMaxSteps     int64
	ppoAnneal       int64
	ppoMinAnneal    float64
	ppoAsync        bool
)

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// SeedRun is one training run.
type SeedRun struct {
	Seed      int     `json:"seed"`
	Solved    bool    `json:"solved"`
	Steps     int64   `json:"steps"`
	WallS     float64 `json:"wall_s"`
	Score     float64 `json:"final_score"`
	SamplingS float64 `json:"sampling_s"`
	LearningS float64 `json:"learning_s"`
	SyncS     float64 `json:"sync_s"`
	// CPUS is the process's CPU time (user+system) during the run: on a
	// shared machine it separates what the run costs from waiting for a core.
	CPUS  float64 `json:"cpu_s"`
	Iters int     `json:"iterations"`
}

// TrainReport is train mode's output.
type TrainReport struct {
	Algo        string    `json:"algo"`
	Env         string    `json:"env"`
	Workers     int       `json:"workers"`
	Threshold   float64   `json:"threshold"`
	Runs        []SeedRun `json:"runs"`
	Solved      int       `json:"solved"`
	MedianSteps float64   `json:"median_steps"`
	MinSteps    float64   `json:"min_steps"`
	MaxSteps    float64   `json:"max_steps"`
	MedianWallS float64   `json:"median_wall_s"`
	MinWallS    float64   `json:"min_wall_s"`
	MaxWallS    float64   `json:"max_wall_s"`
	// Medians over the seeds of the time split and of the CPU time.
	MedianSamplingS float64 `json:"median_sampling_s"`
	MedianLearningS float64 `json:"median_learning_s"`
	MedianSyncS     float64 `json:"median_sync_s"`
	MedianCPUS      float64 `json:"median_cpu_s"`
}

func train(ctx context.Context, algo, env string, seeds, workers int, quiet bool) (*TrainReport, error) {
	rep := &TrainReport{Algo: algo, Env: env, Workers: workers}
	for s := 0; s < seeds; s++ {
		var r SeedRun
		r.Seed = s
		cpu0 := cpuTime()
		switch algo {
		case "es":
			cfg := es.Config{Env: env, Workers: workers, Seed: uint64(s), NoiseStd: esSigma, Pairs: esPairs, StepSize: esStep}
			if !quiet {
				cfg.Progress = func(it es.Iter) {
					logf("es seed %d iter %3d steps %8d score %7.1f batch %7.1f  %5.2fs", s, it.N, it.Steps, it.Score, it.BatchMean, it.Elapsed.Seconds())
				}
			}
			res, err := es.Train(ctx, cfg)
			if err != nil {
				return nil, err
			}
			rep.Threshold, rep.Workers = res.Threshold, max(workers, 2)
			r.Solved, r.Steps, r.WallS, r.Score, r.Iters = res.Solved, res.Steps, res.Wall.Seconds(), res.Score, res.Iters
			r.SamplingS, r.LearningS, r.SyncS = res.Sampling.Seconds(), res.Learning.Seconds(), res.Sync.Seconds()
		case "ppo":
			cfg := ppo.Config{Env: env, Workers: workers, Seed: uint64(s), Epochs: ppoEpochs, Minibatch: ppoMinibatch,
				Hidden: ints(ppoHidden), MaxSteps: ppoMaxSteps, Anneal: ppoAnneal,
				MinAnneal: ppoMinAnneal, Async: ppoAsync}
			if !quiet {
				cfg.Progress = func(u ppo.Update) {
					logf("ppo seed %d update %4d steps %8d score %7.1f kl %.4f clip %.3f stale %.2f  %5.2fs", s, u.N, u.Steps, u.Score, u.ApproxKL, u.ClipFrac, u.Stale, u.Elapsed.Seconds())
				}
			}
			res, err := ppo.Train(ctx, cfg)
			if err != nil {
				return nil, err
			}
			rep.Threshold, rep.Workers = res.Threshold, max(workers, 4)
			r.Solved, r.Steps, r.WallS, r.Score, r.Iters = res.Solved, res.Steps, res.Wall.Seconds(), res.Score, res.Updates
			r.SamplingS, r.LearningS, r.SyncS = res.Sampling.Seconds(), res.Learning.Seconds(), res.Sync.Seconds()
		default:
			return nil, fmt.Errorf("unknown -algo %q (es, ppo)", algo)
		}
		r.CPUS = (cpuTime() - cpu0).Seconds()
		rep.Runs = append(rep.Runs, r)
		logf("%s %s seed %d: solved %v in %d steps, %.2f s (sampling %.2f s, learning %.2f s, sync %.2f s; cpu %.2f s), score %.1f",
			algo, env, s, r.Solved, r.Steps, r.WallS, r.SamplingS, r.LearningS, r.SyncS, r.CPUS, r.Score)
	}
	var steps, walls, samp, learn, syn, cpu []float64
	for _, r := range rep.Runs {
		if r.Solved {
			rep.Solved++
		}
		steps = append(steps, float64(r.Steps))
		walls = append(walls, r.WallS)
		samp, learn, syn, cpu = append(samp, r.SamplingS), append(learn, r.LearningS), append(syn, r.SyncS), append(cpu, r.CPUS)
	}
	rep.MedianSamplingS, rep.MedianLearningS, rep.MedianSyncS, rep.MedianCPUS = median(samp), median(learn), median(syn), median(cpu)
	rep.MedianSteps, rep.MinSteps, rep.MaxSteps = median(steps), minOf(steps), maxOf(steps)
	rep.MedianWallS, rep.MinWallS, rep.MaxWallS = median(walls), minOf(walls), maxOf(walls)
	fmt.Fprintf(os.Stderr, "%s %s: solved %d of %d; steps median %.0f [%.0f, %.0f]; wall median %.2f s [%.2f, %.2f]; medians: sampling %.2f s, learning %.2f s, sync %.2f s, cpu %.2f s\n",
		algo, env, rep.Solved, len(rep.Runs), rep.MedianSteps, rep.MinSteps, rep.MaxSteps, rep.MedianWallS, rep.MinWallS, rep.MaxWallS,
		rep.MedianSamplingS, rep.MedianLearningS, rep.MedianSyncS, rep.MedianCPUS)
	return rep, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

// ---- throughput (the Ray paper's Table 4) ----

// simulate runs steps steps of Pendulum-v1 with a fixed linear policy, burning cost of CPU
// per step; the episode continues across calls (obs holds where it is).
func simulate(env envs.Env, obs *[]float32, steps int, cost time.Duration) int {
	if *obs == nil {
		*obs = env.Reset(0)
	}
	act := []float64{0}
	o := *obs
	for i := 0; i < steps; i++ {
		// A fixed linear controller: torque against the angle's sine and the velocity.
		act[0] = -0.5*float64(o[1]) - 0.1*float64(o[2])
		var term, trunc bool
		o, _, term, trunc = env.Step(act)
		if term || trunc {
			o = env.Reset(-1)
		}
		if cost > 0 {
			busy(cost)
		}
	}
	*obs = append((*obs)[:0], o...)
	return steps
}

func busy(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}

type simulator struct {
	env envs.Env
	obs []float32
}

var (
	simClass = ray.Actor("benchmarks.rl.Simulator", func() *simulator {
		e, _ := envs.Make("Pendulum-v1")
		return &simulator{env: e}
	})
	simRun = ray.Method2(simClass, "Run", func(s *simulator, _ context.Context, steps int, cost time.Duration) (int, error) {
		return simulate(s.env, &s.obs, steps, cost), nil
	})
)

// ThroughputRow is one measurement.
type ThroughputRow struct {
	TaskSteps   int     `json:"task_steps"`
	Workers     int     `json:"workers"`
	Inline      float64 `json:"inline_steps_per_s"`
	Async       float64 `json:"async_steps_per_s"`
	BSP         float64 `json:"bsp_steps_per_s"`
	AsyncVsInl  float64 `json:"async_over_inline"`
	BSPVsInline float64 `json:"bsp_over_inline"`
	CPUInline   float64 `json:"inline_cpu_ns_per_step"` // process CPU time (user+system) per step
	CPUAsync    float64 `json:"async_cpu_ns_per_step"`
	// Plain is the async run's shape without the framework: W goroutines, each with its own
	// environment, fed calls through a channel, depth calls queued per worker, the results
	// got oldest first through a channel per call. What the Go runtime and the machine allow
	// a design with one hand-off each way per call; AsyncVsPlain is the framework's share.
	Plain        float64 `json:"plain_steps_per_s"`
	PlainVsInl   float64 `json:"plain_over_inline"`
	AsyncVsPlain float64 `json:"async_over_plain"`
	// PlainYield is Plain with each worker yielding its P after each call, as the actor
	// executor does after a call of yieldAfterRun or more (package actors): the goroutine
	// its result woke (the driver) runs then, not after the worker's queued calls.
	PlainYield        float64 `json:"plain_yield_steps_per_s"`
	PlainYieldVsInl   float64 `json:"plain_yield_over_inline"`
	AsyncVsPlainYield float64 `json:"async_over_plain_yield"`
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// traceOut, set by -trace, receives an execution trace of the first async run.
var traceOut *os.File

func throughput(ctx context.Context, stepsList, workersList []int, cost time.Duration, total, reps int) ([]ThroughputRow, error) {
	var rows []ThroughputRow
	if asyncDepth < 1 {
		return nil, fmt.Errorf("-depth %d: must be at least 1", asyncDepth)
	}
	if asyncGet != "fifo" && asyncGet != "wait" {
		return nil, fmt.Errorf("-get %q: must be fifo or wait", asyncGet)
	}
	fmt.Fprintf(os.Stderr, "async run: %d calls queued per worker, results got by %s\n", asyncDepth, asyncGet)
	fmt.Fprintf(os.Stderr, "per-step cost %v, %d steps per measurement, median of %d\n", cost, total, reps)
	fmt.Fprintf(os.Stderr, "%10s %8s %14s %14s %14s %9s %9s\n", "task_steps", "workers", "inline/s", "async/s", "bsp/s", "async/inl", "bsp/inl")
	for _, L := range stepsList {
		for _, W := range workersList {
			tasks := max(total/L, W)
			steps := float64(tasks * L)
			actors := make([]ray.ActorHandle[simulator], W)
			for i := range actors {
				actors[i] = simClass.Remote(ctx, ray.AtMostOnce())
			}
			var inl, asy, bsp, pln, ply, cpuInl, cpuAsy []float64
			for range reps {
				pln = append(pln, steps/plainRun(W, L, tasks, cost, false).Seconds())
				ply = append(ply, steps/plainRun(W, L, tasks, cost, true).Seconds())
				c0 := cpuTime()
				inl = append(inl, steps/inlineRun(W, L, tasks, cost).Seconds())
				c1 := cpuTime()
				if traceOut != nil {
					if err := trace.Start(traceOut); err != nil {
						return nil, err
					}
				}
				d, err := asyncRun(ctx, actors, L, tasks, cost)
				if traceOut != nil {
					trace.Stop()
					traceOut = nil
				}
				if err != nil {
					return nil, err
				}
				c2 := cpuTime()
				cpuInl, cpuAsy = append(cpuInl, (c1-c0).Seconds()/steps*1e9), append(cpuAsy, (c2-c1).Seconds()/steps*1e9)
				asy = append(asy, steps/d.Seconds())
				if !runBSP {
					continue
				}
				if d, err = bspRun(ctx, actors, L, tasks, cost); err != nil {
					return nil, err
				}
				bsp = append(bsp, steps/d.Seconds())
			}
			for _, a := range actors {
				_ = ray.Kill(ctx, a, true)
			}
			r := ThroughputRow{TaskSteps: L, Workers: W, Inline: median(inl), Async: median(asy), BSP: median(bsp),
				CPUInline: median(cpuInl), CPUAsync: median(cpuAsy), Plain: median(pln), PlainYield: median(ply)}
			r.AsyncVsInl, r.BSPVsInline = r.Async/r.Inline, r.BSP/r.Inline
			r.PlainVsInl, r.AsyncVsPlain = r.Plain/r.Inline, r.Async/r.Plain
			r.PlainYieldVsInl, r.AsyncVsPlainYield = r.PlainYield/r.Inline, r.Async/r.PlainYield
			fmt.Fprintf(os.Stderr, "%10d %8d %14.0f %14.0f %14.0f %9.3f %9.3f   plain/inl %.3f async/plain %.3f   cpu ns/step inline %.0f async %.0f   plain+yield/inl %.3f\n", L, W, r.Inline, r.Async, r.BSP, r.AsyncVsInl, r.BSPVsInline, r.PlainVsInl, r.AsyncVsPlain, r.CPUInline, r.CPUAsync, r.PlainYieldVsInl)
			if !runBSP {
				// Not measured: 0 in the JSON (its NaN made json.Marshal fail, and -json
				// print nothing); the table above shows NaN.
				r.BSP, r.BSPVsInline = 0, 0
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// inlineRun runs the same tasks on W goroutines, each with its own environment.
func inlineRun(W, L, tasks int, cost time.Duration) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	left := tasks
	for range W {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, _ := envs.Make("Pendulum-v1")
			var obs []float32
			for {
				mu.Lock()
				if left == 0 {
					mu.Unlock()
					return
				}
				left--
				mu.Unlock()
				simulate(e, &obs, L, cost)
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// plainRun is asyncRun's shape in plain Go: W goroutines, each with its own environment,
// fed through a channel with depth calls queued, each call's result on a channel of its
// own, got oldest first. No framework: what the runtime and the machine allow one
// hand-off each way per call. With yield, a worker yields its P after each call, as an
// actor's executor does (ThroughputRow.PlainYield).
func plainRun(W, L, tasks int, cost time.Duration, yield bool) time.Duration {
	type call struct {
		done chan int
		w    int
	}
	in := make([]chan chan int, W)
	var wg sync.WaitGroup
	for w := range in {
		in[w] = make(chan chan int, asyncDepth)
		wg.Add(1)
		go func(calls chan chan int) {
			defer wg.Done()
			e, _ := envs.Make("Pendulum-v1")
			var obs []float32
			for done := range calls {
				done <- simulate(e, &obs, L, cost)
				if yield {
					runtime.Gosched()
				}
			}
		}(in[w])
	}
	start := time.Now()
	send := func(w int) call {
		c := call{make(chan int, 1), w}
		in[w] <- c.done
		return c
	}
	ring := make([]call, asyncDepth*W)
	head, n, submitted := 0, 0, 0
	for d := 0; d < asyncDepth; d++ {
		for w := range W {
			if submitted < tasks {
				ring[n] = send(w)
				n++
				submitted++
			}
		}
	}
	for n > 0 {
		c := ring[head]
		<-c.done
		if submitted < tasks {
			ring[head] = send(c.w)
			submitted++
		} else {
			ring[head] = call{}
			n--
		}
		head = (head + 1) % len(ring)
	}
	d := time.Since(start)
	for _, ch := range in {
		close(ch)
	}
	wg.Wait()
	return d
}

// asyncRun keeps every worker busy: each has depth calls queued (so it never waits for the
// driver between calls), and gets a new one as soon as it returns one. asyncGet says how
// the driver learns which returned: fifo gets the oldest call's result (an actor runs one
// caller's calls in order, and the calls go round-robin, so the oldest is the next to
// finish and the ones behind it are usually ready when it is: one Get per call, and no
// Wait); wait waits for any ready result (ray.Wait) and takes all that are.
func asyncRun(ctx context.Context, actors []ray.ActorHandle[simulator], L, tasks int, cost time.Duration) (time.Duration, error) {
	if asyncGet == "wait" {
		return asyncRunWait(ctx, actors, L, tasks, cost)
	}
	start := time.Now()
	type call struct {
		ref   ray.ObjectRef[int]
		actor int
	}
	// A ring of the calls in flight, oldest first.
	ring := make([]call, asyncDepth*len(actors))
	head, n, submitted := 0, 0, 0
	for d := 0; d < asyncDepth; d++ {
		for i, a := range actors {
			if submitted < tasks {
				ring[n] = call{simRun.Remote(ctx, a, ray.V(L), ray.V(cost)), i}
				n++
				submitted++
			}
		}
	}
	for n > 0 {
		c := ring[head]
		if _, err := ray.Get(ctx, c.ref); err != nil {
			return 0, err
		}
		c.ref.Release()
		if submitted < tasks {
			// The slot just freed is the ring's newest.
			ring[head] = call{simRun.Remote(ctx, actors[c.actor], ray.V(L), ray.V(cost)), c.actor}
			submitted++
		} else {
			ring[head] = call{}
			n--
		}
		head = (head + 1) % len(ring)
	}
	return time.Since(start), nil
}

// asyncRunWait is asyncRun with ray.Wait: block for one result, then take every other one
// already there in the same call.
func asyncRunWait(ctx context.Context, actors []ray.ActorHandle[simulator], L, tasks int, cost time.Duration) (time.Duration, error) {
	start := time.Now()
	var pending []ray.ObjectRef[int]
	var owner []int
	submitted := 0
	for d := 0; d < asyncDepth; d++ {
		for i, a := range actors {
			if submitted < tasks {
				pending = append(pending, simRun.Remote(ctx, a, ray.V(L), ray.V(cost)))
				owner = append(owner, i)
				submitted++
			}
		}
	}
	for done := 0; done < tasks; {
		ready, _, err := ray.Wait(ctx, pending, ray.NumReady(1))
		if err == nil {
			ready, _, err = ray.Wait(ctx, pending, ray.NumReady(len(pending)), ray.Timeout(0))
		}
		if err != nil {
			return 0, err
		}
		for _, r := range ready {
			if _, err := ray.Get(ctx, r); err != nil {
				return 0, err
			}
			done++
			for k := range pending {
				if pending[k] != r { // the same handle: no ID strings compared
					continue
				}
				if submitted < tasks {
					pending[k] = simRun.Remote(ctx, actors[owner[k]], ray.V(L), ray.V(cost))
					submitted++
				} else {
					pending = append(pending[:k], pending[k+1:]...)
					owner = append(owner[:k], owner[k+1:]...)
				}
				break
			}
			r.Release()
		}
	}
	return time.Since(start), nil
}

// bspRun runs rounds: one task per worker, then a barrier.
func bspRun(ctx context.Context, actors []ray.ActorHandle[simulator], L, tasks int, cost time.Duration) (time.Duration, error) {
	start := time.Now()
	for done := 0; done < tasks; {
		n := min(len(actors), tasks-done)
		refs := make([]ray.ObjectRef[int], n)
		for i := range refs {
			refs[i] = simRun.Remote(ctx, actors[i], ray.V(L), ray.V(cost))
		}
		if _, err := ray.GetAll(ctx, refs); err != nil {
			return 0, err
		}
		for _, r := range refs {
			r.Release()
		}
		done += n
	}
	return time.Since(start), nil
}

// ---- ES aggregation: flat versus tree ----

// TreeRow is one ES aggregation variant.
type TreeRow struct {
	Variant    string  `json:"variant"`
	Workers    int     `json:"workers"`
	Fanout     int     `json:"fanout"`
	IterMeanMs float64 `json:"iteration_mean_ms"`
	Iters      int     `json:"iterations"`
	SameResult bool    `json:"same_result_as_flat"`
}

func esTree(ctx context.Context, workers, fanout, iters int) ([]TreeRow, error) {
	var rows []TreeRow
	var flatParams []float64
	for _, tree := range []int{0, fanout} {
		cfg := es.Config{Env: "CartPole-v1", Workers: workers, Pairs: 2 * workers, Tree: tree, Seed: 1,
			MaxIters: iters, Target: math.Inf(1), NoiseSize: 1 << 20}
		res, err := es.Train(ctx, cfg)
		if err != nil {
			return nil, err
		}
		name := "flat"
		if tree > 0 {
			name = "tree"
		}
		r := TreeRow{Variant: name, Workers: workers, Fanout: tree, Iters: res.Iters,
			IterMeanMs: float64((res.Sampling + res.Learning + res.Sync).Milliseconds()) / float64(res.Iters)}
		if tree == 0 {
			flatParams = res.Params
			r.SameResult = true
		} else {
			r.SameResult = equal(flatParams, res.Params)
		}
		rows = append(rows, r)
		fmt.Fprintf(os.Stderr, "es %s: %d workers, fan-out %d: %.1f ms per iteration (%d iterations), same weights as flat: %v\n",
			name, workers, tree, r.IterMeanMs, r.Iters, r.SameResult)
	}
	return rows, nil
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
