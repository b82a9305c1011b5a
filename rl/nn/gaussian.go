package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// The diagonal Gaussian head: actions in R^D with independent components,
// a_j ~ N(mean_j, exp(logStd_j)²). The mean comes from a network (one row
// per sample); logStd is one vector for all states, a separate parameter
// slice the caller owns and optimises (as CleanRL's continuous PPO does).

// halfLog2Pi is log(2π)/2.
var halfLog2Pi = 0.5 * math.Log(2*math.Pi)

func checkGaussian(what string, mean *mat.Dense, logStd []float64) (n, d int) {
	n, d = mean.Dims()
	if len(logStd) != d {
		panic(fmt.Sprintf("nn: %s: logStd has %d values, mean has %d columns", what, len(logStd), d))
	}
	return n, d
}

func checkSameShape(what string, a *mat.Dense, n, d int) {
	if r, c := a.Dims(); r != n || c != d {
		panic(fmt.Sprintf("nn: %s is %d×%d, want %d×%d", what, r, c, n, d))
	}
}

// invStd appends 1/std = exp(-logStd) to dst.
func invStd(dst, logStd []float64) []float64 {
	for _, ls := range logStd {
		dst = append(dst, math.Exp(-ls))
	}
	return dst
}

// GaussianLogProb writes log N(actions row i; mean row i, diag(exp(logStd))²)
// to out[i]:
//
//	sum_j -((a_j - mean_j)/std_j)²/2 - logStd_j - log(2π)/2
func GaussianLogProb(mean *mat.Dense, logStd []float64, actions *mat.Dense, out []float64) {
	n, d := checkGaussian("GaussianLogProb", mean, logStd)
	checkSameShape("GaussianLogProb: actions", actions, n, d)
	checkRows("GaussianLogProb: out", len(out), n)
	c := -float64(d) * halfLog2Pi
	for _, ls := range logStd {
		c -= ls
	}
	var buf [16]float64
	inv := invStd(buf[:0], logStd)
	for i := range n {
		mu := mean.RawRowView(i)
		a := actions.RawRowView(i)
		s := 0.0
		for j, iv := range inv {
			z := (a[j] - mu[j]) * iv
			s += z * z
		}
		out[i] = c - 0.5*s
	}
}

// GaussianEntropy returns the entropy of the diagonal Gaussian, per sample
// (the same for all samples, since the std does not depend on the state):
//
//	sum_j 1/2 + log(2π)/2 + logStd_j
func GaussianEntropy(logStd []float64) float64 {
	h := float64(len(logStd)) * (0.5 + halfLog2Pi)
	for _, ls := range logStd {
		h += ls
	}
	return h
}

// GaussianBackward returns dLoss/dmean and ADDS dLoss/dlogStd to gLogStd, given per-sample
// dLoss/dlogp and dLoss/dentropy (entropy gradient wrt logStd).
//
// dLogp[i] is dLoss/d(log-prob of sample i) and dEntropy[i] is
// dLoss/d(entropy of sample i); either may be nil, meaning zero (a loss with
// a single entropy term c·GaussianEntropy(logStd) is dEntropy[0] = c with
// the rest zero, or equivalently c/n in every sample for a mean). gLogStd
// may be nil when the log-std is not trained. The result is a new n×D
// matrix. With z_j = (a_j - mean_j)/std_j:
//
//	dlogp/dmean_j   = z_j / std_j
//	dlogp/dlogStd_j = z_j² - 1
//	dH/dlogStd_j    = 1
func GaussianBackward(mean *mat.Dense, logStd []float64, actions *mat.Dense, dLogp, dEntropy []float64, gLogStd []float64) *mat.Dense {
	n, d := checkGaussian("GaussianBackward", mean, logStd)
	if dLogp != nil {
		checkSameShape("GaussianBackward: actions", actions, n, d)
		checkRows("GaussianBackward: dLogp", len(dLogp), n)
	}
	if dEntropy != nil {
		checkRows("GaussianBackward: dEntropy", len(dEntropy), n)
	}
	if gLogStd != nil && len(gLogStd) != d {
		panic(fmt.Sprintf("nn: GaussianBackward: gLogStd has %d values, want %d", len(gLogStd), d))
	}
	dMean := mat.NewDense(n, d, nil)
	if dLogp != nil {
		var buf [16]float64
		inv := invStd(buf[:0], logStd)
		for i := range n {
			gl := dLogp[i]
			if gl == 0 {
				continue
			}
			mu := mean.RawRowView(i)
			a := actions.RawRowView(i)
			g := dMean.RawRowView(i)
			for j, iv := range inv {
				z := (a[j] - mu[j]) * iv
				g[j] = gl * z * iv
				if gLogStd != nil {
					gLogStd[j] += gl * (z*z - 1)
				}
			}
		}
	}
	if dEntropy != nil && gLogStd != nil {
		s := 0.0
		for _, v := range dEntropy {
			s += v
		}
		for j := range gLogStd {
			gLogStd[j] += s
		}
	}
	return dMean
}

// SampleGaussian writes a draw from N(mean, diag(exp(logStd))²) to out. It
// does not allocate.
func SampleGaussian(mean, logStd []float64, rng *rand.Rand, out []float64) {
	if len(logStd) != len(mean) || len(out) != len(mean) {
		panic(fmt.Sprintf("nn: SampleGaussian: mean, logStd, out have %d, %d, %d values", len(mean), len(logStd), len(out)))
	}
	for j, mu := range mean {
		out[j] = mu + math.Exp(logStd[j])*rng.NormFloat64()
	}
}
