package nn

import "golang.org/x/sys/cpu"

// haveFMA reports whether gemm4x8 (AVX2 and FMA3) can run.
var haveFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// gemm4x8 is the AVX2/FMA micro-kernel (gemm_amd64.s): C[r*ldc+j] +=
// sum_{p<k} A[r*ars+p*aps] * B[p*ldb+j] for r < 4 and j < 8, strides in
// elements. The caller guarantees every address is inside its slice.
//
//go:noescape
func gemm4x8(k int, a *float64, ars, aps int, b *float64, ldb int, c *float64, ldc int)

// tanh4 sets x[i] = tanh(x[i]) for i < n, n a multiple of 4, computing
// bit for bit what the scalar tanh computes (gemm_amd64.s).
//
//go:noescape
func tanh4(x *float64, n int)

// adam4 is Adam.Step's loop for n values, n a multiple of 4, with the same
// results bit for bit (gemm_amd64.s). c: b1, 1-b1, b2, 1-b2, step,
// sqrt(bias correction 2), eps.
//
//go:noescape
func adam4(n int, p, gr, m, v *float64, c *[8]float64)

// dtanh4 sets d[i] *= 1 - h[i]*h[i] for i < n, n a multiple of 4
// (gemm_amd64.s; the scalar loop's bits).
//
//go:noescape
func dtanh4(n int, d, h *float64)

// add4 sets dst[i] += src[i] for i < n, n a multiple of 4 (gemm_amd64.s).
//
//go:noescape
func add4(n int, dst, src *float64)
