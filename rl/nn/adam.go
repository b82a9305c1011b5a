package nn

import (
	"fmt"
	"math"
)

// Adam (Kingma & Ba) with PyTorch's defaults (beta1 0.9, beta2 0.999, eps 1e-8) and
// optional epsilon override (CleanRL uses 1e-5) and max gradient norm clipping helper
// (ClipGradNorm).
//
// Set the exported fields after NewAdam to override them, e.g. a.Eps = 1e-5;
// LR may be changed between steps (learning-rate annealing). The update is
// PyTorch's torch.optim.Adam without weight decay or amsgrad.
type Adam struct {
	LR, Beta1, Beta2, Eps float64

	m, v []float64 // first and second moment estimates
	t    int       // steps taken
}

// NewAdam returns an Adam optimiser for n parameters with learning rate lr.
func NewAdam(n int, lr float64) *Adam {
	return &Adam{
		LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8,
		m: make([]float64, n), v: make([]float64, n),
	}
}

// Step updates params in place: params -= lr * mhat / (sqrt(vhat) + eps). ES uses it with
// the negated fitness gradient.
//
// With t the step count (1 on the first step):
//
//	m = beta1 m + (1-beta1) g,   mhat = m / (1 - beta1^t)
//	v = beta2 v + (1-beta2) g²,  vhat = v / (1 - beta2^t)
//
// It panics if params or grad do not have the length given to NewAdam.
func (a *Adam) Step(params, grad []float64) {
	if len(params) != len(a.m) || len(grad) != len(a.m) {
		panic(fmt.Sprintf("nn: Adam.Step: params %d, grad %d, optimiser for %d", len(params), len(grad), len(a.m)))
	}
	a.t++
	b1, b2 := a.Beta1, a.Beta2
	bc1 := 1 - math.Pow(b1, float64(a.t))
	bc2 := 1 - math.Pow(b2, float64(a.t))
	// PyTorch's arrangement: step = lr/bc1, denom = sqrt(v)/sqrt(bc2) + eps.
	step := a.LR / bc1
	sbc2 := math.Sqrt(bc2)
	m, v := a.m[:len(params)], a.v[:len(params)]
	grad = grad[:len(params)]
	n4 := 0
	if haveFMA {
		// Four at a time (the same operations in the same order: the same bits).
		n4 = len(params) &^ 3
		if n4 > 0 {
			c := [8]float64{b1, 1 - b1, b2, 1 - b2, step, sbc2, a.Eps}
			adam4(n4, &params[0], &grad[0], &m[0], &v[0], &c)
		}
	}
	for i := n4; i < len(params); i++ {
		g := grad[i]
		mi := b1*m[i] + (1-b1)*g
		vi := b2*v[i] + (1-b2)*g*g
		m[i], v[i] = mi, vi
		params[i] -= step * mi / (math.Sqrt(vi)/sbc2 + a.Eps)
	}
}

// Steps returns the number of steps taken.
func (a *Adam) Steps() int { return a.t }

// Reset clears the moment estimates and the step count.
func (a *Adam) Reset() {
	clear(a.m)
	clear(a.v)
	a.t = 0
}

// ClipGradNorm scales grad in place so that its Euclidean norm is at most
// maxNorm, as PyTorch's clip_grad_norm_ does (scale maxNorm/(norm+1e-6) when
// that is below 1), and returns the norm before clipping (global norm over
// the slice). To clip several gradient slices jointly (e.g. actor, critic
// and log-std, as CleanRL clips all of an agent's parameters together), use
// ClipGradNorms.
func ClipGradNorm(grad []float64, maxNorm float64) float64 {
	return ClipGradNorms(maxNorm, grad)
}

// ClipGradNorms is ClipGradNorm over the concatenation of grads: the norm is
// the global norm over all slices, and all are scaled by the same factor.
// The norm is returned even when it is NaN or infinite: a NaN norm leaves
// grads unchanged, an infinite one scales them by zero (check the norm
// before stepping).
func ClipGradNorms(maxNorm float64, grads ...[]float64) float64 {
	ss := 0.0
	for _, g := range grads {
		for _, v := range g {
			ss += v * v
		}
	}
	norm := math.Sqrt(ss)
	coef := maxNorm / (norm + 1e-6)
	if coef < 1 {
		for _, g := range grads {
			for i := range g {
				g[i] *= coef
			}
		}
	}
	return norm
}
