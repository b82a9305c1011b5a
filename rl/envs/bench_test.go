package envs

import "testing"

// BenchmarkStep measures one Env.Step (ns/op = ns/step), with a simple
// policy and a Reset(-1) whenever an episode ends (Reset time included).
func BenchmarkStep(b *testing.B) {
	for _, id := range Names() {
		b.Run(id, func(b *testing.B) {
			e := mustMake(b, id)
			e.Reset(0)
			acts := actionSeq(e, 64, 0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, _, te, tr := e.Step(acts[i&63]); te || tr {
					e.Reset(-1)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/step")
		})
	}
}

// BenchmarkVecStep measures Vec.Step over 16 copies, per copy-step.
func BenchmarkVecStep(b *testing.B) {
	for _, id := range Names() {
		b.Run(id, func(b *testing.B) {
			const n = 16
			v, err := NewVec(id, n)
			if err != nil {
				b.Fatal(err)
			}
			v.Reset(0)
			acts := make([][]float64, n)
			for i := range acts {
				acts[i] = actionSeq(v.Envs()[i], 1, i)[0]
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v.Step(acts)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
}
