//go:build !amd64

package nn

const haveFMA = false

func gemm4x8(k int, a *float64, ars, aps int, b *float64, ldb int, c *float64, ldc int) {
	panic("nn: gemm4x8 without AVX2")
}

func tanh4(x *float64, n int) { panic("nn: tanh4 without AVX2") }

func adam4(n int, p, gr, m, v *float64, c *[8]float64) { panic("nn: adam4 without AVX2") }

func dtanh4(n int, d, h *float64) { panic("nn: dtanh4 without AVX2") }

func add4(n int, dst, src *float64) { panic("nn: add4 without AVX2") }
