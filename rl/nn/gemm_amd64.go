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
