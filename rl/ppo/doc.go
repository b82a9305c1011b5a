// Package ppo is Proximal Policy Optimization (Schulman et al. 2017) with rollouts on
// ray-go actors.
//
// Rollout workers are actors, each stepping a few environment copies that persist across
// calls (episodes run across fragments). By default sampling runs in synchronous rounds
// (as Ray RLlib's synchronous sampling does): the learner puts the weights in the object
// store, asks every worker for a fragment, takes the fragments in worker order once all
// have arrived, and updates when the batch is full. What the learner sees then depends
// only on the configuration and Seed, never on the order in which fragments arrive, so a
// seed fixes a run (on one machine: the learner's floating-point kernels differ across
// architectures).
//
// Config.Async runs the Ray paper's asynchronous scatter-gather instead (§5.3.2): as each
// fragment returns, that worker is sent out again at once with the newest weights, and
// the learner updates when enough transitions have arrived, while the workers keep
// sampling. There is no barrier across workers, so a slow worker never holds the others
// up, but the batches, and so the run, depend on the arrival order. A fragment remembers
// the weight version it was sampled with, and its log-probabilities are the behaviour
// policy's, so the PPO ratio stays correct when a fragment is one version behind.
//
// Each worker computes its fragment's advantages with GAE (λ), bootstrapping from the
// value of the observation after the fragment and, where an episode was truncated by the
// time limit, from the value of its final observation (as Stable-Baselines3 does). The
// learner runs minibatch epochs of the clipped surrogate objective, with a value loss, an
// entropy bonus, per-minibatch advantage normalisation, Adam and global gradient-norm
// clipping; the learning rate and clip range decay linearly (down to a floor,
// Config.MinAnneal).
//
// Discrete actions use a categorical head; continuous ones a diagonal Gaussian with a
// state-independent log-std (the environment clips the sampled action). Policy and value
// are separate tanh MLPs (package rl/nn).
//
// The learner's work is matrix work over each minibatch: one forward and one backward
// pass per network (rl/nn: AVX2/FMA kernels on amd64, gonum elsewhere), the value
// network's on a second goroutine while the policy's run on the calling one (when
// GOMAXPROCS > 1); no per-sample passes. Weights and fragments encode themselves as
// little-endian arrays (encoding.BinaryMarshaler) for the object store.
//
// Defaults are per environment. CartPole-v1: the RL Baselines3 Zoo's tuned settings (8
// environment copies, 32 steps each, γ 0.98, λ 0.8, learning rate 1e-3 and clip 0.2
// decaying linearly over 100,000 steps), with two changes: the Zoo's 20 epochs over one
// 256-sample minibatch are 10 epochs over two of 128 (as many gradient steps, half the
// arithmetic, and as few environment steps to the threshold in our measurements), and
// the decay stops at a tenth of the start instead of 0, so that a run not solved by
// 100,000 steps keeps learning instead of sampling with frozen weights until MaxSteps.
// Pendulum-v1: the Zoo's tuned settings without gSDE (4 copies × 1024 steps, minibatches
// of 64, 10 epochs, γ 0.9, λ 0.95, learning rate 1e-3 and clip 0.2, constant). Other
// environments take the CartPole values. The score is the mean return of the last 100
// training episodes; Train stops when it reaches the environment's threshold.
package ppo
