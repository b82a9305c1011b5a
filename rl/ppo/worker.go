package ppo

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/rl/envs"
	"github.com/ray-go/ray/rl/nn"
)

// Weights is what the learner broadcasts (through Put) to the rollout workers.
type Weights struct {
	Pi, Vf, LogStd []float64
	Version        int
}

// WorkerConfig is what a rollout worker is built with.
type WorkerConfig struct {
	Env       string
	Envs      int // environment copies stepped together
	PiSizes   []int
	VfSizes   []int
	Discrete  bool
	Gamma     float64
	Lambda    float64
	Seed      int64 // copy i of worker w is seeded Seed + i on its first reset
	SampleRNG uint64
}

// Fragment is what one Sample call returns: steps×envs transitions, time-major (row
// t*envs+i is copy i at step t), with advantages and returns already computed (GAE,
// bootstrapped from the value of the observation after the last step, and of the final
// observation where an episode was truncated).
type Fragment struct {
	Steps     int
	Obs       []float32 // rows of ObservationSize
	Actions   []float64 // rows of the action dimension
	LogP      []float64
	Adv, Ret  []float64
	EpReturns []float64 // episodes that ended in this fragment
	EpLens    []int
	Version   int
}

// Worker is a rollout actor: environment copies that persist across calls (episodes run
// across fragments), and copies of the policy and value networks.
type Worker struct {
	cfg      WorkerConfig
	vec      *envs.Vec
	obs      [][]float32
	pi, vf   *nn.MLP
	logStd   []float64
	rng      *rand.Rand
	epRet    []float64
	epLen    []int
	obsDim   int
	actDim   int
	discrete bool
	in, out  []float64
	vout     []float64
}

var (
	// WorkerClass is the rollout worker actor class.
	WorkerClass = ray.Actor1("rl.ppo.Worker", func(_ context.Context, cfg WorkerConfig) (*Worker, error) {
		vec, err := envs.NewVec(cfg.Env, cfg.Envs)
		if err != nil {
			return nil, err
		}
		r := rand.New(rand.NewPCG(cfg.SampleRNG, 7))
		w := &Worker{cfg: cfg, vec: vec, pi: nn.NewMLP(cfg.PiSizes, 0.01, r), vf: nn.NewMLP(cfg.VfSizes, 1, r), rng: r,
			epRet: make([]float64, cfg.Envs), epLen: make([]int, cfg.Envs), discrete: cfg.Discrete}
		w.obsDim = cfg.PiSizes[0]
		w.actDim = vec.Envs()[0].ActionSpace().Dim()
		w.in, w.out, w.vout = make([]float64, w.obsDim), make([]float64, cfg.PiSizes[len(cfg.PiSizes)-1]), make([]float64, 1)
		w.obs = vec.Reset(cfg.Seed)
		return w, nil
	})
	sample = ray.Method2(WorkerClass, "Sample", (*Worker).Sample)
)

func (w *Worker) value(obs []float32) float64 {
	for i, o := range obs {
		w.in[i] = float64(o)
	}
	w.vf.Act(w.in, w.vout)
	return w.vout[0]
}

// Sample runs steps steps on every environment copy with the given weights.
func (w *Worker) Sample(ctx context.Context, wt Weights, steps int) (Fragment, error) {
	if len(wt.Pi) != w.pi.NumParams() || len(wt.Vf) != w.vf.NumParams() {
		return Fragment{}, fmt.Errorf("ppo: weights of %d+%d parameters for networks of %d+%d", len(wt.Pi), len(wt.Vf), w.pi.NumParams(), w.vf.NumParams())
	}
	if steps <= 0 {
		return Fragment{}, fmt.Errorf("ppo: Sample of %d steps", steps)
	}
	w.pi.SetParams(wt.Pi)
	w.vf.SetParams(wt.Vf)
	w.logStd = wt.LogStd
	n := w.cfg.Envs
	rows := steps * n
	f := Fragment{Steps: rows, Version: wt.Version,
		Obs: make([]float32, 0, rows*w.obsDim), Actions: make([]float64, rows*w.actDim),
		LogP: make([]float64, rows), Adv: make([]float64, rows), Ret: make([]float64, rows)}
	values := make([]float64, rows)
	rewards := make([]float64, rows)
	term := make([]bool, rows)
	trunc := make([]bool, rows)
	finalV := make([]float64, rows)
	actions := make([][]float64, n)
	for i := range actions {
		actions[i] = make([]float64, w.actDim)
	}
	logits := make([]float64, len(w.out))
	for t := 0; t < steps; t++ {
		if err := ctx.Err(); err != nil {
			return Fragment{}, err
		}
		for i := 0; i < n; i++ {
			row := t*n + i
			o := w.obs[i]
			f.Obs = append(f.Obs, o...)
			for k, x := range o {
				w.in[k] = float64(x)
			}
			w.pi.Act(w.in, w.out)
			values[row] = w.value(o)
			if w.discrete {
				copy(logits, w.out)
				a := nn.SampleCategorical(logits, w.rng)
				actions[i][0] = float64(a)
				f.LogP[row] = logSoftmaxAt(logits, a)
			} else {
				nn.SampleGaussian(w.out, w.logStd, w.rng, actions[i])
				f.LogP[row] = gaussianLogP(w.out, w.logStd, actions[i])
			}
			copy(f.Actions[row*w.actDim:], actions[i])
		}
		obs, rew, te, tr := w.vec.Step(actions)
		final := w.vec.FinalObs()
		for i := 0; i < n; i++ {
			row := t*n + i
			rewards[row], term[row], trunc[row] = rew[i], te[i], tr[i]
			w.epRet[i] += rew[i]
			w.epLen[i]++
			if tr[i] && !te[i] {
				finalV[row] = w.value(final[i])
			}
			if te[i] || tr[i] {
				f.EpReturns = append(f.EpReturns, w.epRet[i])
				f.EpLens = append(f.EpLens, w.epLen[i])
				w.epRet[i], w.epLen[i] = 0, 0
			}
		}
		w.obs = obs
	}
	last := make([]float64, n)
	for i := 0; i < n; i++ {
		last[i] = w.value(w.obs[i])
	}
	GAE(steps, n, rewards, values, term, trunc, finalV, last, w.cfg.Gamma, w.cfg.Lambda, f.Adv, f.Ret)
	return f, nil
}

// GAE computes generalised advantage estimates and returns for steps×n time-major
// transitions (row t*n+i is copy i at step t), walking each copy backwards and cutting at
// episode ends: a terminated step bootstraps from 0, a truncated one from finalV (the
// value of its final observation), and the last step from last[i] (the value of the
// observation after it).
func GAE(steps, n int, rewards, values []float64, term, trunc []bool, finalV, last []float64, gamma, lambda float64, adv, ret []float64) {
	for i := 0; i < n; i++ {
		next := last[i]
		gae := 0.0
		for t := steps - 1; t >= 0; t-- {
			row := t*n + i
			nextV := next
			switch {
			case term[row]:
				nextV, gae = 0, 0
			case trunc[row]:
				nextV, gae = finalV[row], 0
			}
			delta := rewards[row] + gamma*nextV - values[row]
			gae = delta + gamma*lambda*gae
			adv[row] = gae
			ret[row] = gae + values[row]
			next = values[row]
		}
	}
}
