package es

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/rl/envs"
	"github.com/ray-go/ray/rl/nn"
)

// WorkerConfig is what a rollout worker is built with.
type WorkerConfig struct {
	Env      string
	Sizes    []int
	Discrete bool
	NoiseStd float64
}

// PairTask is one antithetic pair: the policy perturbed by +σε and -σε, where ε is the
// noise table's slice at Index, each run for one episode seeded EnvSeed.
type PairTask struct {
	Index   int
	EnvSeed int64
}

// PairResult is a pair's outcome.
type PairResult struct {
	Index          int
	Pos, Neg       float64 // episode returns
	PosLen, NegLen int     // episode lengths
}

// Worker is a rollout actor: it holds the noise table (read once, from its constructor
// argument), an environment and a policy network, and evaluates perturbations.
type Worker struct {
	cfg   WorkerConfig
	noise []float32
	env   envs.Env
	pol   *policy
	buf   []float64
}

// policy is a deterministic policy over an MLP: argmax for discrete actions, the output
// itself for continuous ones (the environment clips it).
type policy struct {
	net      *nn.MLP
	discrete bool
	out      []float64
	obs      []float64
	act      []float64
}

func newPolicy(sizes []int, discrete bool) *policy {
	net := nn.NewMLP(sizes, 1, rand.New(rand.NewPCG(1, 2))) // parameters are set before use
	p := &policy{net: net, discrete: discrete, out: make([]float64, sizes[len(sizes)-1]), obs: make([]float64, sizes[0])}
	if discrete {
		p.act = make([]float64, 1)
	} else {
		p.act = p.out
	}
	return p
}

// episode runs one episode from reset(seed) and returns its return and length.
func (p *policy) episode(env envs.Env, seed int64) (float64, int) {
	obs := env.Reset(seed)
	var total float64
	for n := 1; ; n++ {
		for i, o := range obs {
			p.obs[i] = float64(o)
		}
		p.net.Act(p.obs, p.out)
		if p.discrete {
			p.act[0] = float64(nn.Argmax(p.out))
		}
		var r float64
		var term, trunc bool
		obs, r, term, trunc = env.Step(p.act)
		total += r
		if term || trunc {
			return total, n
		}
	}
}

var (
	// WorkerClass is the rollout worker actor class.
	WorkerClass = ray.Actor2("rl.es.Worker", func(_ context.Context, cfg WorkerConfig, noise []float32) (*Worker, error) {
		env, err := envs.Make(cfg.Env)
		if err != nil {
			return nil, err
		}
		w := &Worker{cfg: cfg, noise: noise, env: env, pol: newPolicy(cfg.Sizes, cfg.Discrete)}
		w.buf = make([]float64, w.pol.net.NumParams())
		return w, nil
	})
	rollout = ray.Method2(WorkerClass, "Rollout", (*Worker).Rollout)
)

// Rollout evaluates each pair of tasks around theta.
func (w *Worker) Rollout(ctx context.Context, theta []float64, tasks []PairTask) ([]PairResult, error) {
	if len(theta) != len(w.buf) {
		return nil, fmt.Errorf("es: weights of %d parameters for a policy of %d", len(theta), len(w.buf))
	}
	out := make([]PairResult, len(tasks))
	for i, t := range tasks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if t.Index < 0 || t.Index+len(theta) > len(w.noise) {
			return nil, fmt.Errorf("es: noise index %d out of the table (%d floats)", t.Index, len(w.noise))
		}
		eps := w.noise[t.Index : t.Index+len(theta)]
		r := PairResult{Index: t.Index}
		for sign, dst := range []*float64{&r.Pos, &r.Neg} {
			s := w.cfg.NoiseStd
			if sign == 1 {
				s = -s
			}
			for k := range w.buf {
				w.buf[k] = theta[k] + s*float64(eps[k])
			}
			w.pol.net.SetParams(w.buf)
			ret, n := w.pol.episode(w.env, t.EnvSeed)
			*dst = ret
			if sign == 0 {
				r.PosLen = n
			} else {
				r.NegLen = n
			}
		}
		out[i] = r
	}
	return out, nil
}

// Aggregator is a node of the aggregation tree: it hands its share of the tasks to its
// children (workers at the leaves, aggregators above), gathers their results, and
// returns them concatenated in task order, so the driver receives one message per
// iteration instead of one per worker (the paper's fix for the driver bottleneck).
type Aggregator struct {
	cfg AggConfig
}

// AggConfig is an aggregator's children: workers, or aggregators covering Counts[i]
// workers each.
type AggConfig struct {
	Workers  []ray.ActorHandle[Worker]
	Children []ray.ActorHandle[Aggregator]
	Counts   []int
}

// AggregatorClass is the aggregation tree's actor class.
var AggregatorClass = ray.Actor1("rl.es.Aggregator", func(_ context.Context, cfg AggConfig) (*Aggregator, error) {
	return &Aggregator{cfg: cfg}, nil
})

// aggregate is set in init: Aggregate calls it on its children (a reference cycle that a
// package-level initialiser cannot express).
var aggregate *ray.ActorMethod2[Aggregator, []float64, [][]PairTask, []PairResult]

func init() {
	aggregate = ray.Method2(AggregatorClass, "Aggregate", (*Aggregator).Aggregate)
}

// Aggregate runs parts (one per worker under this node, in order) and gathers the results.
func (a *Aggregator) Aggregate(ctx context.Context, theta []float64, parts [][]PairTask) ([]PairResult, error) {
	var refs []ray.ObjectRef[[]PairResult]
	if len(a.cfg.Workers) > 0 {
		if len(parts) != len(a.cfg.Workers) {
			return nil, fmt.Errorf("es: aggregator of %d workers given %d parts", len(a.cfg.Workers), len(parts))
		}
		for i, w := range a.cfg.Workers {
			refs = append(refs, rollout.Remote(ctx, w, ray.V(theta), ray.V(parts[i])))
		}
	} else {
		at := 0
		for i, c := range a.cfg.Children {
			n := a.cfg.Counts[i]
			if at+n > len(parts) {
				return nil, fmt.Errorf("es: aggregator covering %d workers given %d parts", at+n, len(parts))
			}
			refs = append(refs, aggregate.Remote(ctx, c, ray.V(theta), ray.V(parts[at:at+n])))
			at += n
		}
	}
	lists, err := ray.GetAll(ctx, refs)
	for _, r := range refs {
		r.Release()
	}
	if err != nil {
		return nil, err
	}
	var out []PairResult
	for _, l := range lists {
		out = append(out, l...)
	}
	return out, nil
}

// buildTree builds an aggregation tree of fan-out fan over workers; the last actor
// returned is the root.
func buildTree(ctx context.Context, workers []ray.ActorHandle[Worker], fan int) ([]ray.ActorHandle[Aggregator], error) {
	var all []ray.ActorHandle[Aggregator]
	var level []ray.ActorHandle[Aggregator]
	var counts []int
	for lo := 0; lo < len(workers); lo += fan {
		hi := min(lo+fan, len(workers))
		a := AggregatorClass.Remote(ctx, ray.V(AggConfig{Workers: workers[lo:hi]}), ray.AtMostOnce())
		if err := a.Err(); err != nil {
			return all, fmt.Errorf("es: start an aggregator: %w", err)
		}
		level, counts = append(level, a), append(counts, hi-lo)
		all = append(all, a)
	}
	for len(level) > 1 {
		var next []ray.ActorHandle[Aggregator]
		var nextCounts []int
		for lo := 0; lo < len(level); lo += fan {
			hi := min(lo+fan, len(level))
			total := 0
			for _, c := range counts[lo:hi] {
				total += c
			}
			a := AggregatorClass.Remote(ctx, ray.V(AggConfig{Children: level[lo:hi], Counts: counts[lo:hi]}), ray.AtMostOnce())
			if err := a.Err(); err != nil {
				return all, fmt.Errorf("es: start an aggregator: %w", err)
			}
			next, nextCounts = append(next, a), append(nextCounts, total)
			all = append(all, a)
		}
		level, counts = next, nextCounts
	}
	return all, nil
}
