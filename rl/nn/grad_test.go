package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Gradient checks: every hand-written gradient against central finite
// differences, (f(x+h) - f(x-h)) / 2h, in float64.

const (
	fdStep = 1e-5
	// maxRelErr is the largest accepted |analytic - numeric| /
	// max(|analytic|, |numeric|, relFloor). The floor keeps entries whose
	// gradient is (near) zero from dividing rounding noise by nothing.
	maxRelErr = 1e-6
	relFloor  = 1e-3
)

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func randDense(rng *rand.Rand, r, c int, scale float64) *mat.Dense {
	d := mat.NewDense(r, c, nil)
	for i := range r {
		for j := range c {
			d.Set(i, j, scale*rng.NormFloat64())
		}
	}
	return d
}

func randVec(rng *rand.Rand, n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = scale * rng.NormFloat64()
	}
	return v
}

// randomMLP returns a network whose parameters (biases included) are all
// non-zero and whose hidden units are not saturated, so that every
// gradient entry is exercised.
func randomMLP(rng *rand.Rand, sizes []int) *MLP {
	m := NewMLP(sizes, 1.0, rng)
	for i, p := range m.Params() {
		m.Params()[i] = 0.5*p + 0.2*rng.NormFloat64()
	}
	return m
}

// checkGrad compares analytic[i] with the central difference of loss
// with respect to x[i] (x is perturbed in place and restored).
func checkGrad(t *testing.T, name string, analytic, x []float64, loss func() float64) {
	t.Helper()
	if len(analytic) != len(x) {
		t.Fatalf("%s: %d analytic values for %d variables", name, len(analytic), len(x))
	}
	worst, worstAt := 0.0, -1
	for i := range x {
		orig := x[i]
		x[i] = orig + fdStep
		fp := loss()
		x[i] = orig - fdStep
		fm := loss()
		x[i] = orig
		num := (fp - fm) / (2 * fdStep)
		a := analytic[i]
		rel := math.Abs(a-num) / max(math.Abs(a), math.Abs(num), relFloor)
		if rel > worst || math.IsNaN(rel) {
			worst, worstAt = rel, i
		}
		if !(rel < maxRelErr) {
			t.Errorf("%s[%d]: analytic %.12g, numeric %.12g, relative error %.3g", name, i, a, num, rel)
		}
	}
	t.Logf("%s: %d entries, worst relative error %.3g (at %d)", name, len(x), worst, worstAt)
}

func denseData(d *mat.Dense) []float64 {
	raw := d.RawMatrix()
	if raw.Stride != raw.Cols {
		panic("denseData: not contiguous")
	}
	return raw.Data[:raw.Rows*raw.Cols]
}

func TestMLPGradSumOfSquares(t *testing.T) {
	rng := newRNG(1)
	m := randomMLP(rng, []int{3, 7, 5, 2})
	x := randDense(rng, 6, 3, 1)
	loss := func() float64 {
		out := m.Forward(x)
		s := 0.0
		for _, v := range denseData(out) {
			s += 0.5 * v * v
		}
		return s
	}
	out := m.Forward(x)
	grad := make([]float64, m.NumParams())
	// dLoss/dOut = out; the Forward output may be passed as dOut directly.
	dIn := mat.DenseCopyOf(m.Backward(out, grad))
	checkGrad(t, "params", grad, m.Params(), loss)
	checkGrad(t, "input", denseData(dIn), denseData(x), loss)
}

func TestMLPGradLinearFunctional(t *testing.T) {
	rng := newRNG(2)
	m := randomMLP(rng, []int{4, 16, 16, 3})
	// x is a view with stride != cols, to exercise strided inputs.
	big := randDense(rng, 8, 7, 1)
	x := big.Slice(1, 6, 2, 6).(*mat.Dense)
	c := randDense(rng, 5, 3, 1)
	loss := func() float64 {
		return mat.Sum(mulElem(m.Forward(x), c))
	}
	m.Forward(x)
	grad := make([]float64, m.NumParams())
	dIn := mat.DenseCopyOf(m.Backward(c, grad))
	checkGrad(t, "params", grad, m.Params(), loss)
	// Perturb the input through big's storage.
	xs := make([]float64, 0, 20)
	var idx []int
	raw := big.RawMatrix()
	for i := 1; i < 6; i++ {
		for j := 2; j < 6; j++ {
			idx = append(idx, i*raw.Stride+j)
			xs = append(xs, dIn.At(i-1, j-2))
		}
	}
	vals := make([]float64, len(idx))
	for k, p := range idx {
		vals[k] = raw.Data[p]
	}
	lossVals := func() float64 {
		for k, p := range idx {
			raw.Data[p] = vals[k]
		}
		return loss()
	}
	checkGrad(t, "input", xs, vals, lossVals)
	for k, p := range idx { // restore the last perturbed entry
		raw.Data[p] = vals[k]
	}

	// Backward adds: a second call doubles the gradient.
	m.Forward(x)
	g2 := make([]float64, m.NumParams())
	m.Backward(c, g2)
	m.Backward(c, g2)
	for i := range grad {
		if math.Abs(g2[i]-2*grad[i]) > 1e-12*max(1, math.Abs(grad[i])) {
			t.Fatalf("Backward does not accumulate: g2[%d]=%g, 2*grad=%g", i, g2[i], 2*grad[i])
		}
	}
}

func mulElem(a, b *mat.Dense) *mat.Dense {
	var c mat.Dense
	c.MulElem(a, b)
	return &c
}

func TestMLPSingleLayerGrad(t *testing.T) {
	// A network with no hidden layer is affine.
	rng := newRNG(3)
	m := randomMLP(rng, []int{5, 3})
	x := randDense(rng, 4, 5, 1)
	c := randDense(rng, 4, 3, 1)
	loss := func() float64 { return mat.Sum(mulElem(m.Forward(x), c)) }
	m.Forward(x)
	grad := make([]float64, m.NumParams())
	dIn := mat.DenseCopyOf(m.Backward(c, grad))
	checkGrad(t, "params", grad, m.Params(), loss)
	checkGrad(t, "input", denseData(dIn), denseData(x), loss)
}

// TestCategoricalGradThroughMLP checks
// loss = sum_i (u_i log pi(a_i|s_i) + w_i H(s_i)) back to the MLP's
// parameters, as a PPO policy loss with an entropy bonus uses it.
func TestCategoricalGradThroughMLP(t *testing.T) {
	rng := newRNG(4)
	const n, k = 7, 4
	m := randomMLP(rng, []int{3, 10, 8, k})
	x := randDense(rng, n, 3, 1)
	actions := make([]int, n)
	for i := range actions {
		actions[i] = rng.IntN(k)
	}
	u := randVec(rng, n, 1)
	w := randVec(rng, n, 1)
	lp := make([]float64, n)
	ent := make([]float64, n)
	loss := func() float64 {
		logits := m.Forward(x)
		CategoricalLogProb(logits, actions, lp)
		CategoricalEntropy(logits, ent)
		s := 0.0
		for i := range n {
			s += u[i]*lp[i] + w[i]*ent[i]
		}
		return s
	}
	logits := m.Forward(x)
	dLogits := CategoricalBackward(logits, actions, u, w)
	grad := make([]float64, m.NumParams())
	m.Backward(dLogits, grad)
	checkGrad(t, "params", grad, m.Params(), loss)
}

func TestCategoricalBackwardLogits(t *testing.T) {
	rng := newRNG(5)
	const n, k = 5, 6
	logits := randDense(rng, n, k, 2)
	actions := make([]int, n)
	for i := range actions {
		actions[i] = rng.IntN(k)
	}
	u := randVec(rng, n, 1)
	w := randVec(rng, n, 1)
	lp := make([]float64, n)
	ent := make([]float64, n)
	for _, tc := range []struct {
		name string
		u, w []float64
	}{{"logp+entropy", u, w}, {"logp", u, nil}, {"entropy", nil, w}} {
		loss := func() float64 {
			CategoricalLogProb(logits, actions, lp)
			CategoricalEntropy(logits, ent)
			s := 0.0
			for i := range n {
				if tc.u != nil {
					s += tc.u[i] * lp[i]
				}
				if tc.w != nil {
					s += tc.w[i] * ent[i]
				}
			}
			return s
		}
		d := CategoricalBackward(logits, actions, tc.u, tc.w)
		checkGrad(t, tc.name, denseData(d), denseData(logits), loss)
	}
}

// TestGaussianGradThroughMLP checks
// loss = sum_i (u_i log N(a_i; mean(s_i), std) + w_i H) back to the MLP's
// parameters and to logStd.
func TestGaussianGradThroughMLP(t *testing.T) {
	rng := newRNG(6)
	const n, d = 6, 3
	m := randomMLP(rng, []int{4, 9, 7, d})
	x := randDense(rng, n, 4, 1)
	actions := randDense(rng, n, d, 1)
	logStd := randVec(rng, d, 0.3)
	u := randVec(rng, n, 1)
	w := randVec(rng, n, 1)
	lp := make([]float64, n)
	loss := func() float64 {
		mean := m.Forward(x)
		GaussianLogProb(mean, logStd, actions, lp)
		h := GaussianEntropy(logStd)
		s := 0.0
		for i := range n {
			s += u[i]*lp[i] + w[i]*h
		}
		return s
	}
	mean := m.Forward(x)
	gLogStd := make([]float64, d)
	dMean := GaussianBackward(mean, logStd, actions, u, w, gLogStd)
	grad := make([]float64, m.NumParams())
	m.Backward(dMean, grad)
	checkGrad(t, "params", grad, m.Params(), loss)
	checkGrad(t, "logStd", gLogStd, logStd, loss)
}

func TestGaussianBackwardMean(t *testing.T) {
	rng := newRNG(7)
	const n, d = 5, 2
	mean := randDense(rng, n, d, 1)
	actions := randDense(rng, n, d, 1)
	logStd := randVec(rng, d, 0.5)
	u := randVec(rng, n, 1)
	w := randVec(rng, n, 1)
	lp := make([]float64, n)
	for _, tc := range []struct {
		name string
		u, w []float64
	}{{"logp+entropy", u, w}, {"logp", u, nil}, {"entropy", nil, w}} {
		loss := func() float64 {
			GaussianLogProb(mean, logStd, actions, lp)
			h := GaussianEntropy(logStd)
			s := 0.0
			for i := range n {
				if tc.u != nil {
					s += tc.u[i] * lp[i]
				}
				if tc.w != nil {
					s += tc.w[i] * h
				}
			}
			return s
		}
		g := make([]float64, d)
		dm := GaussianBackward(mean, logStd, actions, tc.u, tc.w, g)
		checkGrad(t, tc.name+"/mean", denseData(dm), denseData(mean), loss)
		checkGrad(t, tc.name+"/logStd", g, logStd, loss)
	}
	// gLogStd may be nil.
	dm := GaussianBackward(mean, logStd, actions, u, w, nil)
	if r, c := dm.Dims(); r != n || c != d {
		t.Fatalf("dMean is %d×%d", r, c)
	}
}
