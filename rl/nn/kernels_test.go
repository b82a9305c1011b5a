package nn

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestTanhAgreesWithMath: the package's tanh is within 4 ulp of math.Tanh
// (the worst seen is 3), right at the special values, and the vector
// version gives the same bits as the scalar one.
func TestTanhAgreesWithMath(t *testing.T) {
	rng := newRNG(3)
	xs := []float64{0.625, -0.625, 22, -22, 23, 44, 1e-300, -1e-300, 5e-324, 1e300, 0.3465, 0.3466, 1e-8, -1e-17}
	for range 1_000_000 {
		xs = append(xs, (rng.Float64()*2-1)*25, rng.NormFloat64(), rng.NormFloat64()*1e-3)
	}
	worst := int64(0)
	for _, x := range xs {
		got, want := tanh(x), math.Tanh(x)
		d := int64(math.Float64bits(got) - math.Float64bits(want))
		worst = max(worst, d, -d)
		if d > 4 || d < -4 {
			t.Fatalf("tanh(%v) = %v, math.Tanh %v (%d ulp)", x, got, want, d)
		}
	}
	t.Logf("worst: %d ulp", worst)
	if tanh(math.Inf(1)) != 1 || tanh(math.Inf(-1)) != -1 || !math.IsNaN(tanh(math.NaN())) {
		t.Fatal("tanh at ±Inf, NaN")
	}
	if z := tanh(math.Copysign(0, -1)); z != 0 || !math.Signbit(z) {
		t.Fatal("tanh(-0) is not -0")
	}
	// The vector path (all of xs but a remainder of up to 3) against the
	// scalar one, specials included.
	xs = append(xs, math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, math.NaN(), 7)
	ys := append([]float64(nil), xs...)
	tanhSlice(ys)
	for i, x := range xs {
		want := tanh(x)
		if math.IsNaN(want) != math.IsNaN(ys[i]) || (!math.IsNaN(want) && math.Float64bits(ys[i]) != math.Float64bits(want)) {
			t.Fatalf("tanhSlice at %v gives %v, tanh %v", x, ys[i], want)
		}
	}
}

// naiveMLP computes the forward pass and the parameter and input gradients
// of sum(out ⊙ dOut) by the definitions, with math.Tanh.
func naiveMLP(m *MLP, x, dOut *mat.Dense) (out *mat.Dense, grad []float64, dx *mat.Dense) {
	n, _ := x.Dims()
	L := m.NumLayers()
	acts := []*mat.Dense{mat.DenseCopyOf(x)}
	for l := range L {
		in, o := m.sizes[l], m.sizes[l+1]
		z := mat.NewDense(n, o, nil)
		for i := range n {
			for j := range o {
				s := m.b[l].AtVec(j)
				for k := range in {
					s += acts[l].At(i, k) * m.w[l].At(j, k)
				}
				if l < L-1 {
					s = math.Tanh(s)
				}
				z.Set(i, j, s)
			}
		}
		acts = append(acts, z)
	}
	grad = make([]float64, m.NumParams())
	dz := mat.DenseCopyOf(dOut)
	for l := L - 1; l >= 0; l-- {
		in, o := m.sizes[l], m.sizes[l+1]
		da := mat.NewDense(n, in, nil)
		for i := range n {
			for j := range o {
				d := dz.At(i, j)
				grad[m.bOff[l]+j] += d
				for k := range in {
					grad[m.wOff[l]+j*in+k] += d * acts[l].At(i, k)
					da.Set(i, k, da.At(i, k)+d*m.w[l].At(j, k))
				}
			}
		}
		if l > 0 {
			for i := range n {
				for k := range in {
					h := acts[l].At(i, k)
					da.Set(i, k, da.At(i, k)*(1-h*h))
				}
			}
		}
		dz = da
	}
	return acts[L], grad, dz
}

// TestLayerKernelsMatchDefinition: every layer shape the MLP distinguishes
// (thin input with and without a remainder of 4, thin output, wide layers
// through gonum with and without the transposed copy), batches of several
// sizes and strided (view) inputs give the outputs and gradients of the
// definitions; with the AVX2 kernels and without them (as on a CPU without
// AVX2 or FMA).
func TestLayerKernelsMatchDefinition(t *testing.T) {
	avx := haveFMA
	defer func() { haveFMA = avx }()
	for _, haveFMA = range []bool{false, avx} {
		layerKernelsMatch(t)
	}
}

func layerKernelsMatch(t *testing.T) {
	rng := newRNG(5)
	for _, sizes := range [][]int{
		{6, 12, 20, 12, 3}, // thin in (4+2), gonum transposed, gonum, thin out
		{4, 64, 64, 2},
		{3, 9, 1},
		{9, 9, 9},
		{1, 16, 1},
	} {
		m := randomMLP(rng, sizes)
		for _, n := range []int{1, 7, 64} {
			big := randDense(rng, n, sizes[0]+3, 1)
			x := big.Slice(0, n, 1, 1+sizes[0]).(*mat.Dense) // a view with stride
			dOut := randDense(rng, n, sizes[len(sizes)-1], 1)
			wantOut, wantGrad, wantDx := naiveMLP(m, x, dOut)
			out := m.Forward(x)
			grad := make([]float64, m.NumParams())
			dx := m.Backward(dOut, grad)
			closeAll(t, sizes, "out", denseData(out), denseData(wantOut))
			closeAll(t, sizes, "grad", grad, wantGrad)
			closeAll(t, sizes, "dx", denseData(dx), denseData(wantDx))
			// BackwardParams: the same parameter gradient, bit for bit.
			grad2 := make([]float64, m.NumParams())
			m.BackwardParams(dOut, grad2)
			for i := range grad {
				if grad2[i] != grad[i] {
					t.Fatalf("%v: BackwardParams grad[%d] = %v, Backward %v", sizes, i, grad2[i], grad[i])
				}
			}
		}
	}
}

func closeAll(t *testing.T, sizes []int, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%v %s: %d values, want %d", sizes, what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-12*max(1, math.Abs(want[i])) {
			t.Fatalf("%v %s[%d] = %v, want %v", sizes, what, i, got[i], want[i])
		}
	}
}

// TestGemmAcc: the blocked product (micro-kernel and edge loops) against the
// definition, for A as rows and as a transposed view, shapes with and
// without remainders.
func TestGemmAcc(t *testing.T) {
	if !haveFMA {
		t.Log("no AVX2/FMA here: gemmAcc is not used")
		return
	}
	rng := newRNG(8)
	for _, sh := range [][3]int{{4, 8, 1}, {4, 8, 5}, {9, 17, 3}, {256, 64, 64}, {3, 7, 2}, {64, 4, 256}, {5, 16, 0}} {
		m, n, k := sh[0], sh[1], sh[2]
		for _, trans := range []bool{false, true} {
			var a []float64
			var ars, aps int
			if trans { // A stored k×(m+2), used transposed
				a = randVec(rng, k*(m+2)+1, 1)
				ars, aps = 1, m+2
			} else { // A stored m×(k+3)
				a = randVec(rng, m*(k+3)+1, 1)
				ars, aps = k+3, 1
			}
			b := randVec(rng, k*(n+1)+1, 1)
			c := randVec(rng, m*(n+2)+1, 1)
			want := append([]float64(nil), c...)
			for r := range m {
				for j := range n {
					for p := range k {
						want[r*(n+2)+j] += a[r*ars+p*aps] * b[p*(n+1)+j]
					}
				}
			}
			gemmAcc(m, n, k, a, ars, aps, b, n+1, c, n+2)
			closeAll(t, []int{m, n, k}, "C", c, want)
		}
	}
}

// TestAdamVectorSameBits: Adam's four-at-a-time loop gives the scalar
// loop's results bit for bit (sizes with and without a remainder).
func TestAdamVectorSameBits(t *testing.T) {
	avx := haveFMA
	defer func() { haveFMA = avx }()
	rng := newRNG(12)
	for _, n := range []int{1, 4, 11, 64} {
		p0 := randVec(rng, n, 1)
		grads := [][]float64{randVec(rng, n, 1), randVec(rng, n, 1e-3), randVec(rng, n, 10)}
		var results [2][]float64
		for k, fma := range []bool{false, avx} {
			haveFMA = fma
			a := NewAdam(n, 1e-3)
			a.Eps = 1e-5
			p := append([]float64(nil), p0...)
			for _, g := range grads {
				a.Step(p, g)
			}
			results[k] = p
		}
		for i := range p0 {
			if math.Float64bits(results[0][i]) != math.Float64bits(results[1][i]) {
				t.Fatalf("n %d: param %d: scalar %v, vector %v", n, i, results[0][i], results[1][i])
			}
		}
	}
}
