package nn

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// orthogonal fills w (rows×cols) with a random orthogonal matrix times gain,
// as torch.nn.init.orthogonal_ does: draw a standard normal matrix, take the
// Q of its QR factorisation (of its transpose when w is wide), with the
// signs fixed by R's diagonal so that the result is uniformly (Haar)
// distributed. A tall w then has orthonormal columns (WᵀW = gain²I), a wide
// one orthonormal rows (WWᵀ = gain²I).
func orthogonal(w *mat.Dense, gain float64, rng *rand.Rand) {
	rows, cols := w.Dims()
	g := mat.NewDense(rows, cols, nil)
	for i := range rows {
		for j := range cols {
			g.Set(i, j, rng.NormFloat64())
		}
	}
	wide := rows < cols
	var a mat.Matrix = g
	if wide {
		a = g.T()
	}
	m, k := a.Dims() // m >= k
	var qr mat.QR
	qr.Factorize(a)
	var q, r mat.Dense
	qr.QTo(&q) // m×m
	qr.RTo(&r) // m×k
	qk := q.Slice(0, m, 0, k).(*mat.Dense)
	for j := range k {
		s := gain
		if r.At(j, j) < 0 {
			s = -gain
		}
		for i := range m {
			qk.Set(i, j, s*qk.At(i, j))
		}
	}
	if wide {
		w.Copy(qk.T())
	} else {
		w.Copy(qk)
	}
}
