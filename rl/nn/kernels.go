package nn

import "math"

// Hand-written kernels for the thin layers of small networks.
//
// gonum's Gemm is good at square-ish products, but a network's first layer
// (a handful of inputs, e.g. CartPole's 4) and its last (1-3 outputs) are
// thin: there it spends its time in loop set-up, in length-2 or length-4
// vector calls and in splitting the product over goroutines. The loops below
// handle a layer whose input or output side has at most thinMax units, with
// the work arranged so that the innermost loop runs along the long side and
// each stored value takes several multiply-adds. Layers that are wide on
// both sides still go through gonum (mlp.go). All matrices are row-major
// with the strides given.

// thinMax is the widest side at which a layer counts as thin.
const thinMax = 8

// fwdThinIn computes z[i,:] = bias + sum_k a[i,k] * wt[k,:] for n rows, where
// wt is Wᵀ (in×out, row-major) and in <= thinMax.
func fwdThinIn(n, in, out int, a []float64, sa int, wt, bias []float64, z []float64, sz int) {
	for i := range n {
		ai := a[i*sa : i*sa+in]
		zi := z[i*sz : i*sz+out]
		copy(zi, bias)
		k := 0
		for ; k+4 <= in; k += 4 {
			x0, x1, x2, x3 := ai[k], ai[k+1], ai[k+2], ai[k+3]
			w0 := wt[k*out : k*out+out]
			w1 := wt[(k+1)*out : (k+1)*out+out]
			w2 := wt[(k+2)*out : (k+2)*out+out]
			w3 := wt[(k+3)*out : (k+3)*out+out]
			for j := range zi {
				zi[j] += x0*w0[j] + x1*w1[j] + x2*w2[j] + x3*w3[j]
			}
		}
		for ; k < in; k++ {
			x := ai[k]
			w := wt[k*out : k*out+out]
			for j := range zi {
				zi[j] += x * w[j]
			}
		}
	}
}

// fwdThinOut computes z[i,j] = bias[j] + dot(a[i,:], w[j,:]) for n rows,
// where w is W (out×in, row-major) and out <= thinMax.
func fwdThinOut(n, in, out int, a []float64, sa int, w, bias []float64, z []float64, sz int) {
	for i := range n {
		ai := a[i*sa : i*sa+in]
		zi := z[i*sz : i*sz+out]
		for j := range zi {
			zi[j] = bias[j] + dot(ai, w[j*in:j*in+in])
		}
	}
}

// dot is a·b with four partial sums (len(b) >= len(a)).
func dot(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	k := 0
	for ; k+4 <= len(a); k += 4 {
		s0 += a[k] * b[k]
		s1 += a[k+1] * b[k+1]
		s2 += a[k+2] * b[k+2]
		s3 += a[k+3] * b[k+3]
	}
	for ; k < len(a); k++ {
		s0 += a[k] * b[k]
	}
	return (s0 + s1) + (s2 + s3)
}

// bwdThinIn, for a layer with in <= thinMax: gw (W's gradient, out×in) +=
// dzᵀ·a, and, if da is not nil, da = dz·W (n×in), using wt = Wᵀ (in×out).
// gt is scratch of in*out values.
func bwdThinIn(n, in, out int, a []float64, sa int, dz []float64, sdz int, wt, gw, gt []float64, da []float64, sda int) {
	// Accumulate dWᵀ (in×out) row by row of the batch: the inner loop runs
	// along out.
	clear(gt)
	for i := range n {
		ai := a[i*sa : i*sa+in]
		di := dz[i*sdz : i*sdz+out]
		k := 0
		for ; k+4 <= in; k += 4 {
			x0, x1, x2, x3 := ai[k], ai[k+1], ai[k+2], ai[k+3]
			g0 := gt[k*out : k*out+out]
			g1 := gt[(k+1)*out : (k+1)*out+out]
			g2 := gt[(k+2)*out : (k+2)*out+out]
			g3 := gt[(k+3)*out : (k+3)*out+out]
			for j, d := range di {
				g0[j] += x0 * d
				g1[j] += x1 * d
				g2[j] += x2 * d
				g3[j] += x3 * d
			}
		}
		for ; k < in; k++ {
			x := ai[k]
			g := gt[k*out : k*out+out]
			for j, d := range di {
				g[j] += x * d
			}
		}
		if da != nil {
			dai := da[i*sda : i*sda+in]
			for k := range dai {
				dai[k] = dot(di, wt[k*out:k*out+out])
			}
		}
	}
	for k := range in {
		row := gt[k*out : k*out+out]
		for j, v := range row {
			gw[j*in+k] += v
		}
	}
}

// bwdThinOut, for a layer with out <= thinMax: gw (out×in) += dzᵀ·a and,
// if da is not nil, da = dz·W (n×in), with w = W (out×in).
func bwdThinOut(n, in, out int, a []float64, sa int, dz []float64, sdz int, w, gw []float64, da []float64, sda int) {
	for i := range n {
		ai := a[i*sa : i*sa+in]
		di := dz[i*sdz : i*sdz+out]
		for j, d := range di {
			if d == 0 {
				continue
			}
			g := gw[j*in : j*in+in]
			for k, x := range ai {
				g[k] += d * x
			}
		}
		if da == nil {
			continue
		}
		dai := da[i*sda : i*sda+in]
		clear(dai)
		for j, d := range di {
			wj := w[j*in : j*in+in]
			for k, v := range wj {
				dai[k] += d * v
			}
		}
	}
}

// tanh is the hidden layers' activation, accurate to a few ulp (the tests
// compare it with math.Tanh) and cheaper than math.Tanh, and written so
// that the AVX2 version (tanh4, four values at once) computes exactly the
// same bits: with t = min(2|x|, 44) (beyond 22, tanh rounds to ±1),
// n = round(t log2 e), r = t - n ln2 (in two steps, |r| <= ln2/2),
// q = e^r - 1 by its Taylor polynomial to degree 13 (truncation below
// 2e-17 relative) and s = 2^n, e^t - 1 = (s - 1) + s q, which keeps full
// relative precision for small |x| (there n = 0 and s - 1 = 0), and
// tanh|x| = (e^t - 1) / (e^t - 1 + 2). NaN gives NaN, ±Inf ±1, ±0 ±0.
func tanh(x float64) float64 {
	t := 2 * math.Abs(x)
	if t > 44 {
		t = 44
	}
	n := math.RoundToEven(t * tanhLog2e)
	r := math.FMA(-n, tanhLn2Hi, t)
	r = math.FMA(-n, tanhLn2Lo, r)
	p := 1.0 / 6227020800 // 1/13!
	p = math.FMA(p, r, 1.0/479001600)
	p = math.FMA(p, r, 1.0/39916800)
	p = math.FMA(p, r, 1.0/3628800)
	p = math.FMA(p, r, 1.0/362880)
	p = math.FMA(p, r, 1.0/40320)
	p = math.FMA(p, r, 1.0/5040)
	p = math.FMA(p, r, 1.0/720)
	p = math.FMA(p, r, 1.0/120)
	p = math.FMA(p, r, 1.0/24)
	p = math.FMA(p, r, 1.0/6)
	p = math.FMA(p, r, 0.5)
	p = math.FMA(p, r, 1)
	q := p * r
	s := math.Float64frombits(uint64(int64(n)+1023) << 52)
	em1 := math.FMA(s, q, s-1)
	return math.Copysign(em1/(em1+2), x)
}

const (
	tanhLog2e = 1.4426950408889634
	tanhLn2Hi = 6.93147180369123816490e-01
	tanhLn2Lo = 1.90821492927058770002e-10
)

// tanhSlice applies tanh to every value of xs.
func tanhSlice(xs []float64) {
	n4 := 0
	if haveFMA {
		n4 = len(xs) &^ 3
		if n4 > 0 {
			tanh4(&xs[0], n4)
		}
	}
	for i := n4; i < len(xs); i++ {
		xs[i] = tanh(xs[i])
	}
}
