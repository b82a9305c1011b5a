package es

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/rl/envs"
	"github.com/ray-go/ray/rl/nn"
)

// Config configures a training run. Zero values take the defaults shown.
type Config struct {
	Env    string // Gymnasium id (default "CartPole-v1")
	Hidden []int  // hidden layer sizes of the policy (default [16])
	// Workers is the number of rollout actors (default 2).
	Workers int
	// Pairs is the number of antithetic pairs (2 episodes each) per iteration (default 50).
	Pairs     int
	NoiseStd  float64 // perturbation scale (Ray: 0.02)
	StepSize  float64 // Adam learning rate (Ray: 0.01)
	L2        float64 // weight decay coefficient (Ray: 0.005)
	NoiseSize int     // floats in the shared noise table (default 4,000,000: 16 MB)
	Seed      uint64
	// Tree is the fan-out of the aggregation tree of actors that gathers the workers'
	// results; 0 means flat (the driver gathers every worker's result itself).
	Tree int
	// Target is the score (mean return of the last 100 episodes) that counts as solved
	// (default: the environment's solve threshold). Training stops there.
	Target   float64
	MaxIters int   // default 200
	MaxSteps int64 // default 5,000,000
	// Progress, if set, is called after every iteration.
	Progress func(Iter)
}

// Iter is what one iteration did.
type Iter struct {
	N         int
	Steps     int64   // environment steps so far
	Episodes  int64   // episodes so far
	Score     float64 // mean return of the last 100 episodes
	BatchMean float64 // mean return of this iteration's episodes
	Elapsed   time.Duration
	Sampling  time.Duration // waiting for rollouts (this iteration)
	Learning  time.Duration // ranks, gradient, Adam
	Sync      time.Duration // putting the weights
}

// Result is the outcome of Train.
type Result struct {
	Solved    bool
	Iters     int
	Steps     int64
	Episodes  int64
	Score     float64
	Wall      time.Duration
	Sampling  time.Duration
	Learning  time.Duration
	Sync      time.Duration
	Params    []float64 // the final policy parameters
	Sizes     []int     // the policy's layer sizes
	Discrete  bool
	Threshold float64
}

func (c *Config) defaults() error {
	if c.Env == "" {
		c.Env = "CartPole-v1"
	}
	if c.Hidden == nil {
		c.Hidden = []int{16}
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.Pairs <= 0 {
		c.Pairs = 50
	}
	if c.NoiseStd == 0 {
		c.NoiseStd = 0.02
	}
	if c.StepSize == 0 {
		c.StepSize = 0.01
	}
	if c.L2 == 0 {
		c.L2 = 0.005
	}
	if c.NoiseSize <= 0 {
		c.NoiseSize = 4_000_000
	}
	if c.MaxIters <= 0 {
		c.MaxIters = 200
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = 5_000_000
	}
	if c.Target == 0 {
		t, ok := envs.SolveThreshold(c.Env)
		if !ok {
			return fmt.Errorf("es: environment %q has no solve threshold; set Config.Target", c.Env)
		}
		c.Target = t
	}
	if c.Tree == 1 || c.Tree < 0 {
		return fmt.Errorf("es: Tree fan-out %d: want 0 (flat) or at least 2", c.Tree)
	}
	return nil
}

// policySizes returns the layer sizes of the policy network for env.
func policySizes(env envs.Env, hidden []int) (sizes []int, discrete bool) {
	sp := env.ActionSpace()
	out := sp.Dim()
	if sp.Discrete > 0 {
		out, discrete = sp.Discrete, true
	}
	sizes = append([]int{env.ObservationSize()}, hidden...)
	return append(sizes, out), discrete
}

// Train runs OpenAI-ES on the cluster ctx belongs to (see the package doc).
func Train(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.defaults(); err != nil {
		return Result{}, err
	}
	probe, err := envs.Make(cfg.Env)
	if err != nil {
		return Result{}, fmt.Errorf("es: %w", err)
	}
	sizes, discrete := policySizes(probe, cfg.Hidden)
	policy := nn.NewMLP(sizes, 0.01, rand.New(rand.NewPCG(cfg.Seed, 0x5eed))) // a small output layer: perturbations decide early actions
	theta := append([]float64(nil), policy.Params()...)
	dim := len(theta)
	if cfg.NoiseSize < dim+1 {
		return Result{}, fmt.Errorf("es: noise table of %d floats is smaller than the policy (%d parameters)", cfg.NoiseSize, dim)
	}
	start := time.Now()

	// The noise table: made once, put in the object store once, read by every worker
	// from its constructor argument (one copy per worker, never one per task).
	noise := NoiseTable(cfg.NoiseSize, cfg.Seed)
	noiseRef, err := ray.Put(ctx, noise)
	if err != nil {
		return Result{}, fmt.Errorf("es: put the noise table: %w", err)
	}
	defer noiseRef.Release()
	wcfg := WorkerConfig{Env: cfg.Env, Sizes: sizes, Discrete: discrete, NoiseStd: cfg.NoiseStd}
	workers := make([]ray.ActorHandle[Worker], cfg.Workers)
	for i := range workers {
		workers[i] = WorkerClass.Remote(ctx, ray.V(wcfg), noiseRef, ray.AtMostOnce())
		if err := workers[i].Err(); err != nil {
			return Result{}, fmt.Errorf("es: start worker %d: %w", i, err)
		}
	}
	defer func() {
		for _, w := range workers {
			_ = ray.Kill(context.WithoutCancel(ctx), w, true)
		}
	}()
	var aggs []ray.ActorHandle[Aggregator]
	if cfg.Tree >= 2 {
		if aggs, err = buildTree(ctx, workers, cfg.Tree); err != nil {
			return Result{}, err
		}
		defer func() {
			for _, a := range aggs {
				_ = ray.Kill(context.WithoutCancel(ctx), a, true)
			}
		}()
	}

	adam := nn.NewAdam(dim, cfg.StepSize)
	var res Result
	res.Sizes, res.Discrete, res.Threshold = sizes, discrete, cfg.Target
	var recent []float64 // returns of the last 100 episodes
	grad := make([]float64, dim)
	for it := 0; it < cfg.MaxIters && res.Steps < cfg.MaxSteps; it++ {
		t0 := time.Now()
		thetaRef, err := ray.Put(ctx, theta)
		if err != nil {
			return res, fmt.Errorf("es: put the weights: %w", err)
		}
		t1 := time.Now()
		tasks := pairTasks(cfg.Seed, it, cfg.Pairs, len(noise), dim)
		results, err := rollouts(ctx, workers, aggs, thetaRef, tasks)
		thetaRef.Release()
		if err != nil {
			return res, err
		}
		t2 := time.Now()
		// Results come back in pair order whatever the number of workers, so everything
		// below (and the whole run) is the same for any number of workers.
		var batch float64
		returns := make([]float64, 0, 2*len(results))
		for _, r := range results {
			returns = append(returns, r.Pos, r.Neg)
			res.Steps += int64(r.PosLen + r.NegLen)
			batch += r.Pos + r.Neg
		}
		res.Episodes += int64(len(returns))
		recent = append(recent, returns...)
		if len(recent) > 100 {
			recent = recent[len(recent)-100:]
		}
		ranks := CenteredRanks(returns)
		clear(grad)
		for j, r := range results {
			w := ranks[2*j] - ranks[2*j+1]
			eps := noise[r.Index : r.Index+dim]
			for k := range grad {
				grad[k] += w * float64(eps[k])
			}
		}
		// Ray: g = sum / number of results; the update ascends g - l2*theta, and Adam
		// minimises, so it is given the negation.
		n := float64(len(results))
		for k := range grad {
			grad[k] = -(grad[k]/n - cfg.L2*theta[k])
		}
		adam.Step(theta, grad)
		t3 := time.Now()
		res.Iters = it + 1
		res.Score = mean(recent)
		res.Sampling += t2.Sub(t1)
		res.Learning += t3.Sub(t2)
		res.Sync += t1.Sub(t0)
		if cfg.Progress != nil {
			cfg.Progress(Iter{N: it + 1, Steps: res.Steps, Episodes: res.Episodes, Score: res.Score, BatchMean: batch / float64(len(returns)),
				Elapsed: time.Since(start), Sampling: t2.Sub(t1), Learning: t3.Sub(t2), Sync: t1.Sub(t0)})
		}
		if len(recent) >= 100 && res.Score >= cfg.Target {
			res.Solved = true
			break
		}
	}
	res.Wall = time.Since(start)
	res.Params = theta
	return res, nil
}

// rollouts runs the pair tasks on the workers (split in contiguous ranges) and returns the
// results in task order: gathered by the driver (flat) or through the aggregation tree.
func rollouts(ctx context.Context, workers []ray.ActorHandle[Worker], aggs []ray.ActorHandle[Aggregator], theta ray.ObjectRef[[]float64], tasks []PairTask) ([]PairResult, error) {
	parts := split(tasks, len(workers))
	if len(aggs) > 0 {
		root := aggs[len(aggs)-1]
		out, err := ray.Get(ctx, aggregate.Remote(ctx, root, theta, ray.V(parts)))
		if err != nil {
			return nil, fmt.Errorf("es: rollouts through the aggregation tree: %w", err)
		}
		return out, nil
	}
	refs := make([]ray.ObjectRef[[]PairResult], len(workers))
	for i, w := range workers {
		refs[i] = rollout.Remote(ctx, w, theta, ray.V(parts[i]))
	}
	lists, err := ray.GetAll(ctx, refs)
	for _, r := range refs {
		r.Release()
	}
	if err != nil {
		return nil, fmt.Errorf("es: rollouts: %w", err)
	}
	var out []PairResult
	for _, l := range lists {
		out = append(out, l...)
	}
	return out, nil
}

// split cuts tasks into n contiguous parts of near-equal size (some may be empty).
func split(tasks []PairTask, n int) [][]PairTask {
	parts := make([][]PairTask, n)
	for i := range parts {
		lo, hi := i*len(tasks)/n, (i+1)*len(tasks)/n
		parts[i] = tasks[lo:hi]
	}
	return parts
}

// pairTasks draws the noise offsets and episode seeds of iteration it from (seed, it)
// alone, so they do not depend on which worker runs them.
func pairTasks(seed uint64, it, pairs, noiseLen, dim int) []PairTask {
	rng := rand.New(rand.NewPCG(seed, uint64(it)+1))
	tasks := make([]PairTask, pairs)
	for j := range tasks {
		tasks[j] = PairTask{Index: rng.IntN(noiseLen - dim + 1), EnvSeed: int64(rng.Uint32())}
	}
	return tasks
}

// NoiseTable returns n standard normal float32s from seed (Ray's SharedNoiseTable).
func NoiseTable(n int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 0xace))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(rng.NormFloat64())
	}
	return out
}

// CenteredRanks maps values to ranks scaled into [-0.5, 0.5] (Ray's
// compute_centered_ranks); ties get distinct ranks in input order.
func CenteredRanks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	out := make([]float64, len(xs))
	if len(xs) < 2 {
		return out
	}
	for r, i := range idx {
		out[i] = float64(r)/float64(len(xs)-1) - 0.5
	}
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Evaluate runs episodes episodes of the deterministic policy params on env (inline, for
// reporting) and returns their mean return.
func Evaluate(env string, sizes []int, discrete bool, params []float64, episodes int, seed int64) (float64, error) {
	e, err := envs.Make(env)
	if err != nil {
		return 0, err
	}
	p := newPolicy(sizes, discrete)
	p.net.SetParams(params)
	var total float64
	for i := range episodes {
		r, _ := p.episode(e, seed+int64(i))
		total += r
	}
	return total / float64(episodes), nil
}
