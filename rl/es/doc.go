// Package es is OpenAI-ES (Salimans et al. 2017, "Evolution Strategies as a Scalable
// Alternative to Reinforcement Learning"), as Ray's implementation runs it and as the Ray
// paper benchmarks it (§5.3.1), on ray-go actors.
//
// Each iteration perturbs the policy parameters θ with antithetic pairs ±σε, runs one
// episode per perturbation, turns the returns into centered ranks (fitness shaping), and
// steps θ along Σ (rank⁺ - rank⁻) ε / n minus an L2 weight decay, with Adam.
//
//   - The noise ε comes from one shared noise table (Ray's SharedNoiseTable): made once,
//     put in the object store once, and handed to each rollout worker as its constructor
//     argument, so a worker reads it once and tasks carry only offsets into it.
//   - Rollout workers are actors (at-most-once: they keep no state worth logging); the
//     weights go out through Put once per iteration.
//   - With Tree ≥ 2, an aggregation tree of actors of that fan-out gathers the workers'
//     results, so the driver receives one message per iteration instead of one per
//     worker (the paper's fix for the driver bottleneck with many workers).
//   - Everything random in an iteration (noise offsets, episode seeds) is drawn from
//     (seed, iteration) by the driver, and results come back in task order, so for a
//     given seed the run is the same, bit for bit, for any number of workers and with or
//     without the tree.
//
// Policies are small tanh MLPs (package rl/nn), deterministic: argmax over the outputs
// for discrete actions, the outputs themselves for continuous ones. There is no
// observation filter (Ray's MeanStdFilter): the classic-control tasks do not need one.
// The score is the mean return of the last 100 (perturbed) episodes; Train stops when it
// reaches the environment's solve threshold.
//
// Defaults differ from Ray's in size, not in kind: 50 pairs per iteration instead of
// 1000 episodes, a 4 M-float noise table instead of 250 M, a 16-unit hidden layer.
package es
