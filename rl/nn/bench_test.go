package nn

import (
	"fmt"
	"testing"
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
