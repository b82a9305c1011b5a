package nn

import (
	"fmt"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Benchmarks on the network CartPole-sized PPO uses: 4-64-64-2.

var benchSizes = []int{4, 64, 64, 2}

func BenchmarkForwardBackward(b *testing.B) {
	for _, n := range []int{64, 256, 2048} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			rng := newRNG(1)
			m := NewMLP(benchSizes, 0.01, rng)
			x := randDense(rng, n, benchSizes[0], 1)
			dOut := randDense(rng, n, benchSizes[len(benchSizes)-1], 1)
			grad := make([]float64, m.NumParams())
			b.ReportAllocs()
			for b.Loop() {
				m.Forward(x)
				m.Backward(dOut, grad)
			}
		})
	}
}

func BenchmarkForward(b *testing.B) {
	for _, n := range []int{64, 2048} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			rng := newRNG(1)
			m := NewMLP(benchSizes, 0.01, rng)
			x := randDense(rng, n, benchSizes[0], 1)
			b.ReportAllocs()
			for b.Loop() {
				m.Forward(x)
			}
		})
	}
}

func BenchmarkAct(b *testing.B) {
	rng := newRNG(1)
	m := NewMLP(benchSizes, 0.01, rng)
	x := randVec(rng, benchSizes[0], 1)
	out := make([]float64, benchSizes[len(benchSizes)-1])
	b.ReportAllocs()
	for b.Loop() {
		m.Act(x, out)
	}
}

func BenchmarkActSample(b *testing.B) {
	// One rollout step's policy work: Act plus sampling an action.
	rng := newRNG(1)
	m := NewMLP(benchSizes, 0.01, rng)
	x := randVec(rng, benchSizes[0], 1)
	out := make([]float64, benchSizes[len(benchSizes)-1])
	b.ReportAllocs()
	for b.Loop() {
		m.Act(x, out)
		SampleCategorical(out, rng)
	}
}

func BenchmarkCategoricalHead(b *testing.B) {
	// Log-prob, entropy and their backward for a batch of 64.
	const n, k = 64, 2
	rng := newRNG(1)
	logits := randDense(rng, n, k, 1)
	actions := make([]int, n)
	for i := range actions {
		actions[i] = rng.IntN(k)
	}
	lp, ent := make([]float64, n), make([]float64, n)
	u, w := randVec(rng, n, 1), randVec(rng, n, 1)
	b.ReportAllocs()
	for b.Loop() {
		CategoricalLogProb(logits, actions, lp)
		CategoricalEntropy(logits, ent)
		CategoricalBackward(logits, actions, u, w)
	}
}

func BenchmarkAdamStep(b *testing.B) {
	rng := newRNG(1)
	m := NewMLP(benchSizes, 0.01, rng)
	grad := randVec(rng, m.NumParams(), 1)
	opt := NewAdam(m.NumParams(), 3e-4)
	b.ReportAllocs()
	for b.Loop() {
		opt.Step(m.Params(), grad)
	}
}

// BenchmarkGemm256x64x64 is the product of a 64-unit hidden layer over a
// 256-row minibatch: the AVX2/FMA kernel against gonum's Gemm
// (2·256·64·64 floating-point operations; flop/s in the output).
func BenchmarkGemm256x64x64(b *testing.B) {
	const m, n, k = 256, 64, 64
	rng := newRNG(2)
	a, w, c := randVec(rng, m*k, 1), randVec(rng, k*n, 1), make([]float64, m*n)
	flops := float64(2 * m * n * k)
	b.Run("avx2", func(b *testing.B) {
		if !haveFMA {
			b.Skip("no AVX2/FMA")
		}
		for b.Loop() {
			gemmAcc(m, n, k, a, k, 1, w, n, c, n)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("gonum", func(b *testing.B) {
		ga := blas64.General{Rows: m, Cols: k, Stride: k, Data: a}
		gw := blas64.General{Rows: k, Cols: n, Stride: n, Data: w}
		gc := blas64.General{Rows: m, Cols: n, Stride: n, Data: c}
		for b.Loop() {
			blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, ga, gw, 1, gc)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}
