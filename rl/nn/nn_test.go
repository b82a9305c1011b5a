package nn

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

func TestOrthogonalInit(t *testing.T) {
	rng := newRNG(10)
	sizes := []int{4, 64, 64, 2}
	const outGain = 0.01
	m := NewMLP(sizes, outGain, rng)
	if m.NumLayers() != 3 {
		t.Fatalf("NumLayers = %d", m.NumLayers())
	}
	want := 4*64 + 64 + 64*64 + 64 + 64*2 + 2
	if m.NumParams() != want || len(m.Params()) != want {
		t.Fatalf("NumParams = %d, len(Params) = %d, want %d", m.NumParams(), len(m.Params()), want)
	}
	for l := range m.NumLayers() {
		w := m.Weights(l)
		r, c := w.Dims()
		if r != sizes[l+1] || c != sizes[l] {
			t.Fatalf("layer %d: W is %d×%d", l, r, c)
		}
		gain := math.Sqrt2
		if l == m.NumLayers()-1 {
			gain = outGain
		}
		// Orthonormal along the shorter side: WᵀW for tall (or square)
		// W, WWᵀ for wide (or square) W.
		if r >= c {
			checkScaledIdentity(t, "WᵀW", l, mat.NewDense(c, c, nil), w.T(), w, gain*gain)
		}
		if r <= c {
			checkScaledIdentity(t, "WWᵀ", l, mat.NewDense(r, r, nil), w, w.T(), gain*gain)
		}
		for j := range r {
			if b := m.Bias(l).AtVec(j); b != 0 {
				t.Fatalf("layer %d: bias[%d] = %g, want 0", l, j, b)
			}
		}
	}
	// Deterministic given the seed.
	m2 := NewMLP(sizes, outGain, newRNG(10))
	if !slices.Equal(m.Params(), m2.Params()) {
		t.Fatal("same seed gave different parameters")
	}
	m3 := NewMLP(sizes, outGain, newRNG(11))
	if slices.Equal(m.Params(), m3.Params()) {
		t.Fatal("different seeds gave the same parameters")
	}
}

func checkScaledIdentity(t *testing.T, what string, l int, dst *mat.Dense, a, b mat.Matrix, s float64) {
	t.Helper()
	dst.Mul(a, b)
	n, _ := dst.Dims()
	for i := range n {
		for j := range n {
			want := 0.0
			if i == j {
				want = s
			}
			if got := dst.At(i, j); math.Abs(got-want) > 1e-12*max(1, s) {
				t.Fatalf("layer %d: (%s)[%d,%d] = %g, want %g", l, what, i, j, got, want)
			}
		}
	}
}

func TestOrthogonalSignsUniform(t *testing.T) {
	// With the sign fix from R's diagonal the distribution is Haar: the
	// diagonal entries of a square orthogonal W are symmetric about zero.
	rng := newRNG(12)
	pos := 0
	const trials = 400
	for range trials {
		m := NewMLP([]int{3, 3}, 1, rng)
		if m.Weights(0).At(0, 0) > 0 {
			pos++
		}
	}
	if pos < trials/2-60 || pos > trials/2+60 {
		t.Fatalf("W[0,0] > 0 in %d of %d draws", pos, trials)
	}
}

func TestActEqualsForward(t *testing.T) {
	rng := newRNG(13)
	m := randomMLP(rng, []int{4, 64, 64, 2})
	x := randDense(rng, 9, 4, 1)
	out := mat.DenseCopyOf(m.Forward(x))
	got := make([]float64, 2)
	scratch := make([]float64, m.ActScratchLen())
	got2 := make([]float64, 2)
	for i := range 9 {
		m.Act(x.RawRowView(i), got)
		m.ActWith(x.RawRowView(i), got2, scratch)
		for j := range 2 {
			want := out.At(i, j)
			if math.Abs(got[j]-want) > 1e-12*max(1, math.Abs(want)) {
				t.Fatalf("row %d: Act gives %v, Forward %v", i, got, out.RawRowView(i))
			}
			if got2[j] != got[j] {
				t.Fatalf("row %d: ActWith gives %v, Act %v", i, got2, got)
			}
		}
	}
	// Act leaves the batch caches alone: Backward still matches that Forward.
	if !mat.Equal(out, m.Forward(x)) {
		t.Fatal("Forward changed after Act")
	}
	// Both see parameter writes made after a Forward (every layer's weights).
	for i := range m.Params() {
		m.Params()[i] *= 1.1
	}
	out = mat.DenseCopyOf(m.Forward(x))
	for i := range 9 {
		m.Act(x.RawRowView(i), got)
		for j := range 2 {
			if want := out.At(i, j); math.Abs(got[j]-want) > 1e-12*max(1, math.Abs(want)) {
				t.Fatalf("after a parameter change, row %d: Act gives %v, Forward %v", i, got, out.RawRowView(i))
			}
		}
	}
	if !mat.Equal(out, m.Clone().Forward(x)) {
		t.Fatal("clone disagrees after a parameter change")
	}
	if allocs := testing.AllocsPerRun(100, func() { m.Act(x.RawRowView(0), got) }); allocs != 0 {
		t.Fatalf("Act allocates %v times", allocs)
	}
	if allocs := testing.AllocsPerRun(100, func() { m.ActWith(x.RawRowView(0), got, scratch) }); allocs != 0 {
		t.Fatalf("ActWith allocates %v times", allocs)
	}
}

func TestMLPParamsCloneSet(t *testing.T) {
	rng := newRNG(14)
	m := NewMLP([]int{3, 5, 2}, 1, rng)
	x := randDense(rng, 2, 3, 1)
	before := mat.DenseCopyOf(m.Forward(x))

	c := m.Clone()
	if !slices.Equal(c.Sizes(), m.Sizes()) || !slices.Equal(c.Params(), m.Params()) {
		t.Fatal("Clone differs")
	}
	// Params is live.
	w0, b0 := m.LayerOffsets(1)
	if w0 != 5*3+5 || b0 != w0+2*5 {
		t.Fatalf("LayerOffsets(1) = %d, %d", w0, b0)
	}
	m.Params()[b0] += 1
	after := m.Forward(x)
	for i := range 2 {
		if math.Abs(after.At(i, 0)-before.At(i, 0)-1) > 1e-12 {
			t.Fatalf("writing the output bias through Params did not shift the output")
		}
	}
	if m.Bias(1).AtVec(0) != m.Params()[b0] {
		t.Fatal("Bias view does not alias Params")
	}
	// The clone is independent.
	if !mat.Equal(c.Forward(x), before) {
		t.Fatal("clone changed with the original")
	}
	// SetParams copies.
	p := slices.Clone(c.Params())
	m.SetParams(p)
	p[0] = 42
	if m.Params()[0] == 42 {
		t.Fatal("SetParams kept the caller's slice")
	}
	if !mat.Equal(m.Forward(x), before) {
		t.Fatal("SetParams did not restore the network")
	}
	// Sizes is a copy.
	s := m.Sizes()
	s[0] = 99
	if m.Sizes()[0] != 3 {
		t.Fatal("Sizes exposes internal state")
	}
}

func TestForwardBatchSizeChanges(t *testing.T) {
	rng := newRNG(15)
	m := randomMLP(rng, []int{3, 8, 2})
	ref := m.Clone()
	for _, n := range []int{5, 1, 7, 5, 64} {
		x := randDense(rng, n, 3, 1)
		dOut := randDense(rng, n, 2, 1)
		out := m.Forward(x)
		grad := make([]float64, m.NumParams())
		dIn := m.Backward(dOut, grad)
		if r, c := out.Dims(); r != n || c != 2 {
			t.Fatalf("n=%d: output %d×%d", n, r, c)
		}
		if r, c := dIn.Dims(); r != n || c != 3 {
			t.Fatalf("n=%d: dIn %d×%d", n, r, c)
		}
		// Row by row with a fresh network gives the same results.
		for i := range n {
			xi := mat.NewDense(1, 3, slices.Clone(x.RawRowView(i)))
			oi := ref.Forward(xi)
			for j := range 2 {
				if math.Abs(oi.At(0, j)-out.At(i, j)) > 1e-12 {
					t.Fatalf("n=%d row %d: batch and single-row outputs differ", n, i)
				}
			}
		}
	}
}

func TestCategoricalClosedForms(t *testing.T) {
	logits := mat.NewDense(3, 4, []float64{
		1, 2, 3, 0.5,
		0, 0, 0, 0,
		-20, 5, 5.5, math.Inf(-1), // a masked action
	})
	actions := []int{2, 1, 0}
	lp := make([]float64, 3)
	ent := make([]float64, 3)
	CategoricalLogProb(logits, actions, lp)
	CategoricalEntropy(logits, ent)
	for i := range 3 {
		row := logits.RawRowView(i)
		w := make([]float64, len(row))
		for j, z := range row {
			w[j] = math.Exp(z)
		}
		d := distuv.NewCategorical(w, nil)
		if want := d.LogProb(float64(actions[i])); math.Abs(lp[i]-want) > 1e-12*max(1, math.Abs(want)) {
			t.Errorf("row %d: log-prob %.15g, want %.15g", i, lp[i], want)
		}
		if want := d.Entropy(); math.Abs(ent[i]-want) > 1e-12 {
			t.Errorf("row %d: entropy %.15g, want %.15g", i, ent[i], want)
		}
	}
	// Uniform over 4: log-prob -log 4, entropy log 4.
	if math.Abs(lp[1]+math.Log(4)) > 1e-15 || math.Abs(ent[1]-math.Log(4)) > 1e-15 {
		t.Errorf("uniform: log-prob %g, entropy %g, want ∓log 4", lp[1], ent[1])
	}
	// By hand: softmax(1,2,3,0.5) at 2.
	s := math.Exp(1) + math.Exp(2) + math.Exp(3) + math.Exp(0.5)
	if want := 3 - math.Log(s); math.Abs(lp[0]-want) > 1e-14 {
		t.Errorf("log-prob %g, want %g", lp[0], want)
	}
	// Stable for large logits.
	big := mat.NewDense(1, 2, []float64{1000, 1000})
	CategoricalLogProb(big, []int{0}, lp[:1])
	CategoricalEntropy(big, ent[:1])
	if math.Abs(lp[0]+math.Ln2) > 1e-15 || math.Abs(ent[0]-math.Ln2) > 1e-15 {
		t.Errorf("large logits: log-prob %g, entropy %g", lp[0], ent[0])
	}
	// The gradient of a masked logit is zero, and finite elsewhere.
	d := CategoricalBackward(logits, actions, []float64{1, 1, 1}, []float64{1, 1, 1})
	if d.At(2, 3) != 0 {
		t.Errorf("masked logit gradient %g", d.At(2, 3))
	}
	for _, v := range denseData(d) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("non-finite gradient %v", denseData(d))
		}
	}
}

func TestArgmax(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want int
	}{
		{[]float64{1, 3, 2}, 1},
		{[]float64{5}, 0},
		{[]float64{2, 2, 1}, 0},
		{[]float64{math.Inf(-1), -1e300}, 1},
		{[]float64{math.Inf(-1), math.Inf(-1)}, 0},
		{nil, -1},
	} {
		if got := Argmax(tc.xs); got != tc.want {
			t.Errorf("Argmax(%v) = %d, want %d", tc.xs, got, tc.want)
		}
	}
}

func TestSampleCategoricalFrequencies(t *testing.T) {
	rng := newRNG(16)
	logits := []float64{0, 1, -1, 2, math.Inf(-1)}
	zmax, logS := logSumExp(logits)
	lse := zmax + logS
	const n = 200000
	counts := make([]int, len(logits))
	for range n {
		counts[SampleCategorical(logits, rng)]++
	}
	for j, c := range counts {
		p := math.Exp(logits[j] - lse)
		sd := math.Sqrt(p * (1 - p) / n)
		if f := float64(c) / n; math.Abs(f-p) > 5*sd+1e-12 {
			t.Errorf("action %d: frequency %.4f, probability %.4f", j, f, p)
		}
	}
	if counts[4] != 0 {
		t.Errorf("masked action sampled %d times", counts[4])
	}
	if allocs := testing.AllocsPerRun(100, func() { SampleCategorical(logits, rng) }); allocs != 0 {
		t.Errorf("SampleCategorical allocates %v times", allocs)
	}
}

func TestGaussianClosedForms(t *testing.T) {
	mean := mat.NewDense(2, 3, []float64{0, 1, -2, 0.5, 0, 3})
	actions := mat.NewDense(2, 3, []float64{0.3, 1, -1, -0.5, 2, 3})
	logStd := []float64{0, math.Log(0.5), 0.7}
	lp := make([]float64, 2)
	GaussianLogProb(mean, logStd, actions, lp)
	for i := range 2 {
		want := 0.0
		for j := range 3 {
			d := distuv.Normal{Mu: mean.At(i, j), Sigma: math.Exp(logStd[j])}
			want += d.LogProb(actions.At(i, j))
		}
		if math.Abs(lp[i]-want) > 1e-13*max(1, math.Abs(want)) {
			t.Errorf("row %d: log-prob %.15g, want %.15g", i, lp[i], want)
		}
	}
	want := 0.0
	for _, ls := range logStd {
		want += distuv.Normal{Mu: 0, Sigma: math.Exp(ls)}.Entropy()
	}
	if h := GaussianEntropy(logStd); math.Abs(h-want) > 1e-14 {
		t.Errorf("entropy %.15g, want %.15g", h, want)
	}
	// 1-D standard normal at its mean: -log(2π)/2; entropy log(2πe)/2.
	one := mat.NewDense(1, 1, []float64{0})
	GaussianLogProb(one, []float64{0}, one, lp[:1])
	if math.Abs(lp[0]+0.5*math.Log(2*math.Pi)) > 1e-15 {
		t.Errorf("standard normal log-density at 0: %g", lp[0])
	}
	if h := GaussianEntropy([]float64{0}); math.Abs(h-0.5*math.Log(2*math.Pi*math.E)) > 1e-15 {
		t.Errorf("standard normal entropy: %g", h)
	}
}

func TestSampleGaussianMoments(t *testing.T) {
	rng := newRNG(17)
	mean := []float64{1, -2}
	logStd := []float64{math.Log(0.5), math.Log(2)}
	const n = 100000
	var sum, sq [2]float64
	out := make([]float64, 2)
	for range n {
		SampleGaussian(mean, logStd, rng, out)
		for j, v := range out {
			sum[j] += v
			sq[j] += v * v
		}
	}
	for j := range 2 {
		mu := sum[j] / n
		sd := math.Sqrt(sq[j]/n - mu*mu)
		want := math.Exp(logStd[j])
		if math.Abs(mu-mean[j]) > 5*want/math.Sqrt(n) {
			t.Errorf("dim %d: sample mean %.4f, want %.4f", j, mu, mean[j])
		}
		if math.Abs(sd-want) > 0.01*want {
			t.Errorf("dim %d: sample std %.4f, want %.4f", j, sd, want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { SampleGaussian(mean, logStd, rng, out) }); allocs != 0 {
		t.Errorf("SampleGaussian allocates %v times", allocs)
	}
}

func TestAdamOneStepByHand(t *testing.T) {
	a := NewAdam(2, 0.1)
	if a.Beta1 != 0.9 || a.Beta2 != 0.999 || a.Eps != 1e-8 {
		t.Fatalf("defaults %v %v %v", a.Beta1, a.Beta2, a.Eps)
	}
	p := []float64{1, -2}
	g := []float64{0.5, -3}
	a.Step(p, g)
	// Step 1: mhat = g, vhat = g², so p -= lr * g / (|g| + eps).
	want := []float64{1 - 0.1*0.5/(0.5+1e-8), -2 + 0.1*3/(3+1e-8)}
	for i := range p {
		if math.Abs(p[i]-want[i]) > 1e-15 {
			t.Fatalf("step 1: p = %v, want %v", p, want)
		}
	}
	// Step 2 with g' = (1, 1):
	//   m = 0.9 m + 0.1 g',   mhat = m / (1 - 0.9²)
	//   v = 0.999 v + 0.001 g'², vhat = v / (1 - 0.999²)
	g2 := []float64{1, 1}
	a.Step(p, g2)
	for i := range p {
		m1, v1 := 0.1*g[i], 0.001*g[i]*g[i]
		m2, v2 := 0.9*m1+0.1*g2[i], 0.999*v1+0.001*g2[i]*g2[i]
		mhat, vhat := m2/(1-0.81), v2/(1-0.999*0.999)
		want[i] -= 0.1 * mhat / (math.Sqrt(vhat) + 1e-8)
		if math.Abs(p[i]-want[i]) > 1e-14 {
			t.Fatalf("step 2: p[%d] = %.17g, want %.17g", i, p[i], want[i])
		}
	}
	if a.Steps() != 2 {
		t.Fatalf("Steps = %d", a.Steps())
	}
	a.Reset()
	if a.Steps() != 0 {
		t.Fatal("Reset kept the step count")
	}
}

func TestAdamQuadraticBowl(t *testing.T) {
	// f(x) = sum_i c_i (x_i - t_i)², an ill-conditioned bowl.
	c := []float64{1, 10, 100, 0.1}
	target := []float64{3, -1, 0.5, 2}
	x := make([]float64, 4)
	g := make([]float64, 4)
	a := NewAdam(4, 0.05)
	a.Eps = 1e-5 // CleanRL's override
	for range 3000 {
		for i := range x {
			g[i] = 2 * c[i] * (x[i] - target[i])
		}
		a.Step(x, g)
	}
	for i := range x {
		if math.Abs(x[i]-target[i]) > 1e-3 {
			t.Fatalf("x = %v, want %v", x, target)
		}
	}
}

func TestAdamTrainsMLP(t *testing.T) {
	// End to end: fit y = sin(x0) + x1² with a small MLP.
	rng := newRNG(18)
	m := NewMLP([]int{2, 32, 32, 1}, 1, rng)
	const n = 128
	x := randDense(rng, n, 2, 1)
	y := mat.NewDense(n, 1, nil)
	for i := range n {
		y.Set(i, 0, math.Sin(x.At(i, 0))+x.At(i, 1)*x.At(i, 1))
	}
	opt := NewAdam(m.NumParams(), 3e-3)
	grad := make([]float64, m.NumParams())
	dOut := mat.NewDense(n, 1, nil)
	mse := func() float64 {
		out := m.Forward(x)
		s := 0.0
		for i := range n {
			d := out.At(i, 0) - y.At(i, 0)
			s += d * d
		}
		return s / n
	}
	start := mse()
	for range 1500 {
		out := m.Forward(x)
		for i := range n {
			dOut.Set(i, 0, 2*(out.At(i, 0)-y.At(i, 0))/n)
		}
		clear(grad)
		m.Backward(dOut, grad)
		ClipGradNorm(grad, 0.5)
		opt.Step(m.Params(), grad)
	}
	if end := mse(); end > 0.01*start || end > 0.02 {
		t.Fatalf("MSE %.4g -> %.4g", start, end)
	}
}

func TestClipGradNorm(t *testing.T) {
	g := []float64{3, 4}
	if n := ClipGradNorm(g, 10); n != 5 || g[0] != 3 || g[1] != 4 {
		t.Fatalf("below max: norm %g, g %v", n, g)
	}
	if n := ClipGradNorm(g, 1); n != 5 {
		t.Fatalf("norm %g", n)
	}
	coef := 1 / (5 + 1e-6)
	if math.Abs(g[0]-3*coef) > 1e-15 || math.Abs(g[1]-4*coef) > 1e-15 {
		t.Fatalf("clipped g %v", g)
	}
	// Jointly over several slices.
	a, b := []float64{3}, []float64{0, 4}
	if n := ClipGradNorms(2.5, a, b); n != 5 {
		t.Fatalf("joint norm %g", n)
	}
	if math.Abs(math.Hypot(a[0], b[1])-2.5) > 1e-6 || math.Abs(a[0]/b[1]-0.75) > 1e-12 {
		t.Fatalf("joint clip gave %v %v", a, b)
	}
}
