// Package nn provides the small neural networks that reinforcement learning
// in ray-go needs (policy and value networks for PPO, policies searched by
// evolution strategies), built on gonum.
//
// # Why gradients are written by hand
//
// No maintained Go automatic-differentiation library is available, so every
// layer and every distribution head here has its gradient written by hand.
// Each one is checked against central finite differences in the package
// tests (relative error below 1e-6 in float64): the MLP's parameters and
// inputs, the categorical log-probability and entropy through the logits
// into an MLP, and the diagonal Gaussian log-probability and entropy into
// the mean (through an MLP) and the log-std vector.
//
// # What the package offers
//
//   - [MLP]: a fully connected network with tanh on the hidden layers and
//     the identity on the output, initialised as CleanRL and Stable-Baselines3
//     do ([NewMLP]: orthogonal weights, gain sqrt(2) on hidden layers and a
//     chosen gain on the output layer, zero biases). [MLP.Forward] and
//     [MLP.Backward] work on batches ([MLP.BackwardParams] when the input
//     gradient is not needed); [MLP.Act] evaluates one observation
//     without allocating, for rollouts.
//   - A categorical head over logits: [CategoricalLogProb],
//     [CategoricalEntropy], [CategoricalBackward], [SampleCategorical],
//     [Argmax].
//   - A diagonal Gaussian head with a state-independent log-std vector:
//     [GaussianLogProb], [GaussianEntropy], [GaussianBackward],
//     [SampleGaussian].
//   - [Adam] with PyTorch's defaults, and [ClipGradNorm] (PyTorch's
//     clip_grad_norm_) for global gradient-norm clipping.
//
// # Kernels
//
// Forward and backward passes are matrix products over the batch. Layers
// with at most 8 units on one side (a network's input and output layers)
// use hand-written loops (kernels.go), where gonum's general Gemm spends its
// time on set-up. Wider layers, on amd64 CPUs with AVX2 and FMA, use a
// 4×8 register-blocked micro-kernel in assembly (gemm_amd64.s; about 5
// times gonum's Gemm on a 256×64×64 product, BenchmarkGemm256x64x64); the
// tanh activation, Adam's update, tanh's derivative and the bias sums also
// run four values at a time there (the last three with the scalar loops'
// bits). On other CPUs the wide layers go through gonum and the rest through
// plain loops. The assembly was written by hand because no maintained Go
// library offers SIMD matrix products for float64 (gonum's assembly covers
// level-1 vector operations only). The tanh is this package's own (within 4
// ulp of math.Tanh, tested), with the same bits in the scalar and vector
// versions, so Act and Forward agree.
//
// # Conventions
//
// Batches are *mat.Dense with one sample per row. Matrix arguments may be
// views (any stride).
//
// An MLP's parameters live in one flat []float64, layer by layer: first the
// layer's weight matrix, out×in, row-major (PyTorch's nn.Linear layout),
// then its bias (out values). [MLP.Params] returns that live vector, so an
// optimiser or an evolution strategy can treat the network as a vector, and
// writes to it change the network. Gradients use the same layout and have
// length [MLP.NumParams].
//
// Backward functions ADD into the gradient slices they are given
// ([MLP.Backward], the gLogStd argument of [GaussianBackward]); the caller
// zeroes them (clear(grad)) before accumulating a new minibatch. That makes it
// easy to accumulate several loss terms, or several minibatches, into one
// gradient. Functions that return a gradient with respect to their inputs
// (dLoss/dInput, dLoss/dlogits, dLoss/dmean) return it as a matrix.
//
// Losses are minimised: pass dLoss/d(something). For an objective to be
// maximised (a PPO surrogate, an ES fitness), negate its gradient; [Adam.Step]
// always steps against the gradient it is given.
//
// Buffers are reused between calls for speed: the matrix [MLP.Forward]
// returns is valid until the next Forward on the same MLP, and the one
// [MLP.Backward] returns until the next Backward. Copy them to keep them.
// The input given to Forward is kept (not copied) for Backward, so it must
// not be changed in between. An MLP is not safe for concurrent use
// (Forward, Backward and Act use internal buffers); give each goroutine its
// own [MLP.Clone], or use [MLP.ActWith] with per-goroutine scratch to share
// one network's parameters read-only.
//
// Random numbers come from a caller-supplied *rand.Rand (math/rand/v2), so
// runs are reproducible from a seed.
package nn
