package ppo

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/rl/envs"
	"github.com/ray-go/ray/rl/nn"
)

// Config configures a training run. Zero values take the environment's
// tuned defaults: for CartPole-v1 (and environments without tuned values)
// the ones shown (MinAnneal 0.1); for Pendulum-v1 4 workers of 1 copy × 1024 steps,
// minibatches of 64, 10 epochs, γ 0.9, λ 0.95, learning rate 1e-3 and clip
// 0.2 without decay (see the package doc).
type Config struct {
	Env     string // default "CartPole-v1"
	Hidden  []int  // hidden layers of the policy and of the value network (default [64, 64])
	Workers int    // rollout actors (default 4)
	// EnvsPerWorker is how many environment copies each worker steps (default 2).
	EnvsPerWorker int
	// Fragment is how many steps each copy runs per Sample call (default 32).
	Fragment int
	// Batch is how many transitions one update uses (default Workers*EnvsPerWorker*Fragment).
	Batch     int
	Minibatch int     // default 128 (capped at Batch)
	Epochs    int     // default 10
	LR        float64 // Adam learning rate, annealed linearly over Anneal steps down to MinAnneal×LR (default 1e-3)
	Clip      float64 // clip range, annealed the same way (default 0.2)
	Anneal    int64   // steps over which LR and Clip decay (default 100,000; < 0: no decay)
	// MinAnneal is the fraction of LR and Clip the decay stops at (default: the
	// environment's; < 0: 0, so that a run not solved by Anneal steps learns no more).
	MinAnneal float64
	Gamma     float64 // default 0.98
	Lambda    float64 // GAE λ (default 0.8)
	EntCoef   float64 // default 0
	VfCoef    float64 // default 0.5
	MaxGrad   float64 // global gradient norm clip (default 0.5)
	Seed      uint64
	Target    float64 // mean return of the last 100 episodes that counts as solved (default: the env's threshold)
	MaxSteps  int64   // default 1,000,000
	// Async samples as the Ray paper's asynchronous scatter-gather (§5.3.2): each
	// worker is sent out again as soon as its fragment arrives, and the learner updates
	// as soon as enough transitions have arrived, so a run depends on the order in
	// which fragments arrive, not on Seed alone. By default (false) sampling runs in
	// synchronous rounds, the learner taking the fragments in worker order, and a run
	// depends only on its configuration and Seed.
	Async bool
	// Progress, if set, is called after every update.
	Progress func(Update)
}

// tuned holds the defaults per environment. CartPole-v1: the RL Baselines3
// Zoo's tuned PPO (8 copies × 32 steps, γ 0.98, λ 0.8, learning rate 1e-3
// and clip 0.2 decaying linearly over its 100,000 steps), except that its 20 epochs over one
// minibatch of 256 are 10 epochs over two of 128 (the same number of
// gradient steps at half the arithmetic, and as few environment steps to the
// threshold; benchmarks/RESULTS.md, issue 23) and that the decay stops at a
// tenth instead of 0 (a run not solved by 100,000 steps still learns).
// Pendulum-v1: the Zoo's tuned PPO without gSDE (4 copies × 1024 steps, minibatches of 64, 10 epochs,
// γ 0.9, λ 0.95, learning rate 1e-3 and clip 0.2, not decayed).
var tuned = map[string]Config{
	"CartPole-v1": {Hidden: []int{64, 64}, Workers: 4, EnvsPerWorker: 2, Fragment: 32, Minibatch: 128, Epochs: 10,
		LR: 1e-3, Clip: 0.2, Anneal: 100_000, MinAnneal: 0.1, Gamma: 0.98, Lambda: 0.8, VfCoef: 0.5, MaxGrad: 0.5, MaxSteps: 1_000_000},
	"Pendulum-v1": {Hidden: []int{64, 64}, Workers: 4, EnvsPerWorker: 1, Fragment: 1024, Minibatch: 64, Epochs: 10,
		LR: 1e-3, Clip: 0.2, Anneal: -1, Gamma: 0.9, Lambda: 0.95, VfCoef: 0.5, MaxGrad: 0.5, MaxSteps: 1_000_000},
}

// Update is what one learner update saw.
type Update struct {
	N         int
	Steps     int64
	Episodes  int64
	Score     float64 // mean return of the last 100 episodes
	Elapsed   time.Duration
	Stale     float64 // mean weight versions the batch's fragments lagged behind
	Sampling  time.Duration
	Learning  time.Duration
	Sync      time.Duration
	LossPi    float64
	LossVf    float64
	Entropy   float64
	ClipFrac  float64
	ApproxKL  float64
	BatchSize int
	LR, Clip  float64 // the learning rate and clip range this update used
}

// Result is the outcome of Train.
type Result struct {
	Solved    bool
	Updates   int
	Steps     int64
	Episodes  int64
	Score     float64
	Wall      time.Duration
	Sampling  time.Duration // waiting for fragments
	Learning  time.Duration // the updates
	Sync      time.Duration // putting weights, dispatching
	Threshold float64
}

func (c *Config) defaults() error {
	if c.Env == "" {
		c.Env = "CartPole-v1"
	}
	d, ok := tuned[c.Env]
	if !ok {
		d = tuned["CartPole-v1"]
	}
	if c.Hidden == nil {
		c.Hidden = d.Hidden
	}
	if c.Workers <= 0 {
		c.Workers = d.Workers
	}
	if c.EnvsPerWorker <= 0 {
		c.EnvsPerWorker = d.EnvsPerWorker
	}
	if c.Fragment <= 0 {
		c.Fragment = d.Fragment
	}
	if c.Batch <= 0 {
		c.Batch = c.Workers * c.EnvsPerWorker * c.Fragment
	}
	if c.Minibatch <= 0 {
		c.Minibatch = d.Minibatch
	}
	c.Minibatch = min(c.Minibatch, c.Batch)
	if c.Epochs <= 0 {
		c.Epochs = d.Epochs
	}
	if c.LR == 0 {
		c.LR = d.LR
	}
	if c.Clip == 0 {
		c.Clip = d.Clip
	}
	if c.Anneal == 0 {
		c.Anneal = d.Anneal
	}
	if c.MinAnneal == 0 {
		c.MinAnneal = d.MinAnneal
	}
	c.MinAnneal = max(c.MinAnneal, 0)
	if c.Gamma == 0 {
		c.Gamma = d.Gamma
	}
	if c.Lambda == 0 {
		c.Lambda = d.Lambda
	}
	if c.VfCoef == 0 {
		c.VfCoef = d.VfCoef
	}
	if c.MaxGrad == 0 {
		c.MaxGrad = d.MaxGrad
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = d.MaxSteps
	}
	if c.Target == 0 {
		t, ok := envs.SolveThreshold(c.Env)
		if !ok {
			return fmt.Errorf("ppo: environment %q has no solve threshold; set Config.Target", c.Env)
		}
		c.Target = t
	}
	return nil
}

// learner holds the networks being trained and the update's buffers.
type learner struct {
	cfg      Config
	pi, vf   *nn.MLP
	logStd   []float64
	discrete bool
	obsDim   int
	actDim   int
	params   []float64 // pi | vf | logStd, what Adam steps
	grad     []float64
	adam     *nn.Adam
	rng      *rand.Rand
}

// Train runs PPO on the cluster ctx belongs to (see the package doc).
func Train(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.defaults(); err != nil {
		return Result{}, err
	}
	probe, err := envs.Make(cfg.Env)
	if err != nil {
		return Result{}, fmt.Errorf("ppo: %w", err)
	}
	sp := probe.ActionSpace()
	L := &learner{cfg: cfg, discrete: sp.Discrete > 0, obsDim: probe.ObservationSize(), actDim: sp.Dim(),
		rng: rand.New(rand.NewPCG(cfg.Seed, 0xbeef))}
	out := sp.Dim()
	if L.discrete {
		out = sp.Discrete
	}
	piSizes := append(append([]int{L.obsDim}, cfg.Hidden...), out)
	vfSizes := append(append([]int{L.obsDim}, cfg.Hidden...), 1)
	L.pi = nn.NewMLP(piSizes, 0.01, L.rng)
	L.vf = nn.NewMLP(vfSizes, 1, L.rng)
	if !L.discrete {
		L.logStd = make([]float64, L.actDim)
	}
	L.params = make([]float64, L.pi.NumParams()+L.vf.NumParams()+len(L.logStd))
	L.grad = make([]float64, len(L.params))
	L.pack()
	L.adam = nn.NewAdam(len(L.params), cfg.LR)
	L.adam.Eps = 1e-5

	start := time.Now()
	var res Result
	res.Threshold = cfg.Target
	workers := make([]ray.ActorHandle[Worker], cfg.Workers)
	for i := range workers {
		wc := WorkerConfig{Env: cfg.Env, Envs: cfg.EnvsPerWorker, PiSizes: piSizes, VfSizes: vfSizes, Discrete: L.discrete,
			Gamma: cfg.Gamma, Lambda: cfg.Lambda, Seed: int64(cfg.Seed)*1000 + int64(i*cfg.EnvsPerWorker), SampleRNG: cfg.Seed*7919 + uint64(i)}
		workers[i] = WorkerClass.Remote(ctx, ray.V(wc), ray.AtMostOnce())
		if err := workers[i].Err(); err != nil {
			return res, fmt.Errorf("ppo: start worker %d: %w", i, err)
		}
	}
	defer func() {
		for _, w := range workers {
			_ = ray.Kill(context.WithoutCancel(ctx), w, true)
		}
	}()

	r := &run{cfg: cfg, L: L, workers: workers, res: &res, start: start}
	if cfg.Async {
		err = r.async(ctx)
	} else {
		err = r.sync(ctx)
	}
	res.Wall = time.Since(start)
	return res, err
}

// run is one training run's loop state, shared by the synchronous and the asynchronous
// sampling loops.
type run struct {
	cfg      Config
	L        *learner
	workers  []ray.ActorHandle[Worker]
	res      *Result
	start    time.Time
	version  int
	recent   []float64 // returns of the last 100 episodes
	staleSum float64
	staleN   float64
}

// add counts a fragment's steps and episodes.
func (r *run) add(f Fragment) {
	r.res.Steps += int64(f.Steps)
	r.res.Episodes += int64(len(f.EpReturns))
	r.recent = append(r.recent, f.EpReturns...)
	if len(r.recent) > 100 {
		r.recent = r.recent[len(r.recent)-100:]
	}
	r.staleSum += float64(r.version - f.Version)
	r.staleN++
}

// schedule is the learning rate and clip range after steps steps: decayed linearly
// over Anneal steps down to the fraction MinAnneal of their start.
func (c *Config) schedule(steps int64) (lr, clip float64) {
	frac := 1.0
	if c.Anneal > 0 {
		frac = max(c.MinAnneal, 1-float64(steps)/float64(c.Anneal))
	}
	return c.LR * frac, c.Clip * max(frac, 1e-3)
}

// learn runs one update on batch, puts the new weights (replacing *wref) and reports
// whether the run is solved.
func (r *run) learn(ctx context.Context, batch []Fragment, wref *ray.ObjectRef[Weights]) (bool, error) {
	res := r.res
	t3 := time.Now()
	lr, clip := r.cfg.schedule(res.Steps)
	u := r.L.update(batch, lr, clip)
	u.LR, u.Clip = lr, clip
	r.version++
	res.Updates++
	res.Learning += time.Since(t3)
	t4 := time.Now()
	wref.Release()
	var err error
	if *wref, err = ray.Put(ctx, r.L.weights(r.version)); err != nil {
		return false, err
	}
	res.Sync += time.Since(t4)
	if len(r.recent) > 0 {
		res.Score = mean(r.recent)
	}
	if r.cfg.Progress != nil {
		u.N, u.Steps, u.Episodes, u.Score, u.Elapsed = res.Updates, res.Steps, res.Episodes, res.Score, time.Since(r.start)
		u.Stale = r.staleSum / max(r.staleN, 1)
		u.Sampling, u.Learning, u.Sync = res.Sampling, res.Learning, res.Sync
		r.cfg.Progress(u)
	}
	r.staleSum, r.staleN = 0, 0
	if len(r.recent) >= 100 && res.Score >= r.cfg.Target {
		res.Solved = true
	}
	return res.Solved, nil
}

// sync samples in rounds: every worker samples a fragment with the current weights, the
// learner takes the fragments in worker order once all have arrived, and updates when
// the batch is full (Ray RLlib's synchronous sampling). What the learner sees depends
// only on the seed, never on the order in which fragments arrive.
func (r *run) sync(ctx context.Context) error {
	res := r.res
	t0 := time.Now()
	wref, err := ray.Put(ctx, r.L.weights(r.version))
	if err != nil {
		return err
	}
	defer func() { wref.Release() }()
	res.Sync += time.Since(t0)
	pending := make([]ray.ObjectRef[Fragment], len(r.workers))
	var batch []Fragment
	batchN := 0
	for res.Steps < r.cfg.MaxSteps {
		t2 := time.Now()
		for i, w := range r.workers {
			pending[i] = sample.Remote(ctx, w, wref, ray.V(r.cfg.Fragment))
		}
		res.Sync += time.Since(t2)
		t1 := time.Now()
		var ferr error
		for i, ref := range pending {
			f, err := ray.Get(ctx, ref)
			ref.Release()
			if err != nil && ferr == nil {
				ferr = fmt.Errorf("ppo: worker %d: %w", i, err)
			}
			if ferr == nil {
				batch = append(batch, f)
				batchN += f.Steps
				r.add(f)
			}
		}
		res.Sampling += time.Since(t1)
		if ferr != nil {
			return ferr
		}
		if batchN < r.cfg.Batch {
			continue
		}
		solved, err := r.learn(ctx, batch, &wref)
		if err != nil || solved {
			return err
		}
		batch, batchN = batch[:0], 0
	}
	return nil
}

// async is the Ray paper's asynchronous scatter-gather (§5.3.2): every worker samples at
// once; the learner collects fragments as they come, sends each worker out again at once
// with the newest weights, and updates when the batch is full. No barrier across
// workers, but the batch depends on the order in which fragments arrive.
func (r *run) async(ctx context.Context) error {
	res := r.res
	t0 := time.Now()
	wref, err := ray.Put(ctx, r.L.weights(r.version))
	if err != nil {
		return err
	}
	res.Sync += time.Since(t0)
	pending := make([]ray.ObjectRef[Fragment], len(r.workers))
	for i, w := range r.workers {
		pending[i] = sample.Remote(ctx, w, wref, ray.V(r.cfg.Fragment))
	}
	defer func() {
		for _, p := range pending {
			p.Release()
		}
		wref.Release()
	}()
	var batch []Fragment
	batchN := 0
	for res.Steps < r.cfg.MaxSteps {
		t1 := time.Now()
		ready, _, err := ray.Wait(ctx, pending, ray.NumReady(1))
		if err != nil {
			return fmt.Errorf("ppo: wait for fragments: %w", err)
		}
		res.Sampling += time.Since(t1)
		for _, ref := range ready {
			i := indexOf(pending, ref)
			f, err := ray.Get(ctx, ref)
			ref.Release()
			if err != nil {
				return fmt.Errorf("ppo: worker %d: %w", i, err)
			}
			t2 := time.Now()
			pending[i] = sample.Remote(ctx, r.workers[i], wref, ray.V(r.cfg.Fragment))
			res.Sync += time.Since(t2)
			batch = append(batch, f)
			batchN += f.Steps
			r.add(f)
		}
		if batchN < r.cfg.Batch {
			continue
		}
		solved, err := r.learn(ctx, batch, &wref)
		if err != nil || solved {
			return err
		}
		batch, batchN = batch[:0], 0
	}
	return nil
}

func indexOf(refs []ray.ObjectRef[Fragment], r ray.ObjectRef[Fragment]) int {
	for i, x := range refs {
		if x.ID() == r.ID() {
			return i
		}
	}
	return -1
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// pack copies the networks' parameters into the flat vector Adam steps; unpack does the
// reverse.
func (L *learner) pack() {
	n := copy(L.params, L.pi.Params())
	n += copy(L.params[n:], L.vf.Params())
	copy(L.params[n:], L.logStd)
}

func (L *learner) unpack() {
	np, nv := L.pi.NumParams(), L.vf.NumParams()
	L.pi.SetParams(L.params[:np])
	L.vf.SetParams(L.params[np : np+nv])
	copy(L.logStd, L.params[np+nv:])
}

func (L *learner) weights(version int) Weights {
	return Weights{Pi: append([]float64(nil), L.pi.Params()...), Vf: append([]float64(nil), L.vf.Params()...),
		LogStd: append([]float64(nil), L.logStd...), Version: version}
}

// update runs the PPO epochs over the batch.
//
// Each minibatch is matrix work: one forward and one backward pass of each
// network over the minibatch's rows (package nn: gonum products for wide
// layers, hand-written loops for thin ones). The value network's passes run
// on a second goroutine while the policy's run on this one (they share
// nothing until the gradient clipping), when GOMAXPROCS allows.
func (L *learner) update(batch []Fragment, lr, clip float64) Update {
	cfg := L.cfg
	var n int
	for _, f := range batch {
		n += f.Steps
	}
	obs := mat.NewDense(n, L.obsDim, nil)
	od := obs.RawMatrix().Data
	acts := make([]float64, 0, n*L.actDim)
	logp := make([]float64, 0, n)
	adv := make([]float64, 0, n)
	ret := make([]float64, 0, n)
	row := 0
	for _, f := range batch {
		for i, x := range f.Obs[:f.Steps*L.obsDim] {
			od[row*L.obsDim+i] = float64(x)
		}
		row += f.Steps
		acts = append(acts, f.Actions...)
		logp = append(logp, f.LogP...)
		adv = append(adv, f.Adv...)
		ret = append(ret, f.Ret...)
	}
	L.adam.LR = lr
	mb := cfg.Minibatch
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	mObs := mat.NewDense(mb, L.obsDim, nil)
	mo := mObs.RawMatrix().Data
	a := make([]float64, mb)
	newLogp := make([]float64, mb)
	ent := make([]float64, mb)
	dLogp := make([]float64, mb)
	dEnt := make([]float64, mb)
	dv := mat.NewDense(mb, 1, nil)
	var mActs *mat.Dense
	var dActs []int
	if L.discrete {
		dActs = make([]int, mb)
	} else {
		mActs = mat.NewDense(mb, L.actDim, nil)
	}
	parallel := runtime.GOMAXPROCS(0) > 1
	var u Update
	var count float64
	np, nv := L.pi.NumParams(), L.vf.NumParams()
	inv := 1 / float64(mb)
	for epoch := 0; epoch < cfg.Epochs; epoch++ {
		L.rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for lo := 0; lo+mb <= n; lo += mb {
			idx := perm[lo : lo+mb]
			for r, i := range idx {
				copy(mo[r*L.obsDim:(r+1)*L.obsDim], od[i*L.obsDim:(i+1)*L.obsDim])
			}
			clear(L.grad)
			gPi, gVf, gStd := L.grad[:np], L.grad[np:np+nv], L.grad[np+nv:]

			// The value loss, on its own goroutine.
			var lossVf float64
			valueLoss := func() {
				v := L.vf.Forward(mObs).RawMatrix()
				d := dv.RawMatrix().Data
				for r, i := range idx {
					diff := v.Data[r*v.Stride] - ret[i]
					d[r] = cfg.VfCoef * 2 * diff * inv
					lossVf += diff * diff * inv
				}
				L.vf.BackwardParams(dv, gVf)
			}
			var wg sync.WaitGroup
			if parallel {
				wg.Go(valueLoss)
			} else {
				valueLoss()
			}

			// Advantages normalised per minibatch.
			var am, as float64
			for r, i := range idx {
				a[r] = adv[i]
				am += adv[i]
			}
			am /= float64(mb)
			for _, x := range a {
				as += (x - am) * (x - am)
			}
			as = math.Sqrt(as/float64(mb-1)) + 1e-8
			for r := range a {
				a[r] = (a[r] - am) / as
			}
			out := L.pi.Forward(mObs)
			if L.discrete {
				for r, i := range idx {
					dActs[r] = int(acts[i])
				}
				nn.CategoricalLogProb(out, dActs, newLogp)
				nn.CategoricalEntropy(out, ent)
			} else {
				ma := mActs.RawMatrix().Data
				for r, i := range idx {
					copy(ma[r*L.actDim:(r+1)*L.actDim], acts[i*L.actDim:(i+1)*L.actDim])
				}
				nn.GaussianLogProb(out, L.logStd, mActs, newLogp)
				h := nn.GaussianEntropy(L.logStd)
				for r := range ent {
					ent[r] = h
				}
			}
			for r, i := range idx {
				ratio := math.Exp(newLogp[r] - logp[i])
				s1, s2 := ratio*a[r], math.Max(1-clip, math.Min(1+clip, ratio))*a[r]
				if s1 <= s2 {
					dLogp[r] = -a[r] * ratio * inv
					u.LossPi -= s1 * inv
				} else {
					dLogp[r] = 0
					u.LossPi -= s2 * inv
					u.ClipFrac += inv
				}
				dEnt[r] = -cfg.EntCoef * inv
				u.Entropy += ent[r] * inv
				lr := newLogp[r] - logp[i]
				u.ApproxKL += ((ratio - 1) - lr) * inv
			}
			if L.discrete {
				L.pi.BackwardParams(nn.CategoricalBackward(out, dActs, dLogp, dEnt), gPi)
			} else {
				L.pi.BackwardParams(nn.GaussianBackward(out, L.logStd, mActs, dLogp, dEnt, gStd), gPi)
			}
			wg.Wait()
			u.LossVf += lossVf
			nn.ClipGradNorm(L.grad, cfg.MaxGrad)
			L.pack()
			L.adam.Step(L.params, L.grad)
			L.unpack()
			count++
		}
	}
	if count > 0 {
		u.LossPi /= count
		u.LossVf /= count
		u.Entropy /= count
		u.ClipFrac /= count
		u.ApproxKL /= count
	}
	u.BatchSize = n
	return u
}

// logSoftmaxAt is log softmax(logits)[a].
func logSoftmaxAt(logits []float64, a int) float64 {
	m := logits[0]
	for _, x := range logits {
		m = math.Max(m, x)
	}
	var s float64
	for _, x := range logits {
		s += math.Exp(x - m)
	}
	return logits[a] - m - math.Log(s)
}

// gaussianLogP is the log density of act under a diagonal Gaussian.
func gaussianLogP(mean, logStd, act []float64) float64 {
	var lp float64
	for k := range act {
		z := (act[k] - mean[k]) / math.Exp(logStd[k])
		lp += -0.5*z*z - logStd[k] - 0.5*math.Log(2*math.Pi)
	}
	return lp
}
