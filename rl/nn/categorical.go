package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// The categorical head: a distribution over K discrete actions given by K
// unnormalised logits, pi(a) = exp(z_a) / sum_j exp(z_j). Logits of -Inf
// (masked actions) are allowed as long as each row has a finite one.

// logSumExp returns max(z) and log(sum(exp(z - max(z)))), whose sum is
// log(sum(exp(z))). Log-probabilities are (z_j - zmax) - logS, which keeps
// full precision for large logits.
func logSumExp(z []float64) (zmax, logS float64) {
	zmax = math.Inf(-1)
	for _, v := range z {
		zmax = max(zmax, v)
	}
	s := 0.0
	for _, v := range z {
		s += math.Exp(v - zmax)
	}
	return zmax, math.Log(s)
}

func checkRows(what string, got, want int) {
	if got != want {
		panic(fmt.Sprintf("nn: %s has %d values for %d samples", what, got, want))
	}
}

// CategoricalLogProb writes log pi(actions[i] | logits row i) to out[i].
func CategoricalLogProb(logits *mat.Dense, actions []int, out []float64) {
	n, _ := logits.Dims()
	checkRows("CategoricalLogProb: actions", len(actions), n)
	checkRows("CategoricalLogProb: out", len(out), n)
	for i := range n {
		z := logits.RawRowView(i)
		zmax, logS := logSumExp(z)
		out[i] = (z[actions[i]] - zmax) - logS
	}
}

// CategoricalEntropy writes the entropy -sum_a pi(a) log pi(a) of each row's
// distribution to out.
func CategoricalEntropy(logits *mat.Dense, out []float64) {
	n, _ := logits.Dims()
	checkRows("CategoricalEntropy: out", len(out), n)
	for i := range n {
		out[i] = entropyRow(logits.RawRowView(i))
	}
}

func entropyRow(z []float64) float64 {
	zmax, logS := logSumExp(z)
	h := 0.0
	for _, v := range z {
		lp := (v - zmax) - logS
		if p := math.Exp(lp); p > 0 {
			h -= p * lp
		}
	}
	return h
}

// CategoricalBackward: given per-sample dLoss/dlogp and dLoss/dentropy, returns dLoss/dlogits.
//
// dLogp[i] is dLoss/d(log pi(actions[i]|row i)) and dEntropy[i] is
// dLoss/d(entropy of row i); either may be nil, meaning zero. The result is a
// new n×K matrix. With p = softmax(z) and H the entropy:
//
//	dlogp/dz_k = [k == a] - p_k
//	dH/dz_k    = -p_k (log p_k + H)
func CategoricalBackward(logits *mat.Dense, actions []int, dLogp, dEntropy []float64) *mat.Dense {
	n, k := logits.Dims()
	if dLogp != nil {
		checkRows("CategoricalBackward: actions", len(actions), n)
		checkRows("CategoricalBackward: dLogp", len(dLogp), n)
	}
	if dEntropy != nil {
		checkRows("CategoricalBackward: dEntropy", len(dEntropy), n)
	}
	dz := mat.NewDense(n, k, nil)
	for i := range n {
		z := logits.RawRowView(i)
		g := dz.RawRowView(i)
		zmax, logS := logSumExp(z)
		var gl, ge float64
		if dLogp != nil {
			gl = dLogp[i]
		}
		if dEntropy != nil {
			ge = dEntropy[i]
		}
		h := 0.0
		if ge != 0 {
			for _, v := range z {
				lp := (v - zmax) - logS
				if p := math.Exp(lp); p > 0 {
					h -= p * lp
				}
			}
		}
		for j, v := range z {
			lp := (v - zmax) - logS
			p := math.Exp(lp)
			d := -gl * p
			if ge != 0 && p > 0 {
				d -= ge * p * (lp + h)
			}
			g[j] = d
		}
		if gl != 0 {
			g[actions[i]] += gl
		}
	}
	return dz
}

// SampleCategorical draws an action from softmax(logits); at least one logit
// must be finite (-Inf marks a masked action, never drawn). It does not allocate.
func SampleCategorical(logits []float64, rng *rand.Rand) int {
	zmax := math.Inf(-1)
	for _, v := range logits {
		zmax = max(zmax, v)
	}
	s := 0.0
	for _, v := range logits {
		s += math.Exp(v - zmax)
	}
	u := rng.Float64() * s
	last := 0
	for j, v := range logits {
		p := math.Exp(v - zmax)
		if p == 0 {
			continue
		}
		last = j
		u -= p
		if u < 0 {
			return j
		}
	}
	return last // rounding: u landed past the end
}

// Argmax returns the index of the largest value (the first one on ties),
// the greedy action for logits. It returns -1 for an empty slice.
func Argmax(xs []float64) int {
	best := -1
	bv := math.Inf(-1)
	for i, v := range xs {
		if best < 0 || v > bv {
			best, bv = i, v
		}
	}
	return best
}
