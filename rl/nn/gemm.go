package nn

import (
	"fmt"

	"gonum.org/v1/gonum/blas/blas64"
)

// gemmAcc computes C += A·B for an m×k matrix A whose element (r, p) is
// a[r*ars+p*aps] (so A may be a transposed view: ars 1, aps the stride), a
// row-major k×n matrix B (row stride ldb) and a row-major m×n matrix C (row
// stride ldc). 4×8 blocks go through the AVX2/FMA micro-kernel; the
// remaining rows and columns through plain loops. Callers check haveFMA.
func gemmAcc(m, n, k int, a []float64, ars, aps int, b []float64, ldb int, c []float64, ldc int) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	// Every address the loops touch must be inside the slices (the
	// micro-kernel does not check).
	if last := (m-1)*ars + (k-1)*aps; last >= len(a) {
		panic(fmt.Sprintf("nn: gemmAcc: A needs %d values, has %d", last+1, len(a)))
	}
	if last := (k-1)*ldb + n - 1; last >= len(b) {
		panic(fmt.Sprintf("nn: gemmAcc: B needs %d values, has %d", last+1, len(b)))
	}
	if last := (m-1)*ldc + n - 1; last >= len(c) {
		panic(fmt.Sprintf("nn: gemmAcc: C needs %d values, has %d", last+1, len(c)))
	}
	m4, n8 := m&^3, n&^7
	for i := 0; i < m4; i += 4 {
		for j := 0; j < n8; j += 8 {
			gemm4x8(k, &a[i*ars], ars, aps, &b[j], ldb, &c[i*ldc+j], ldc)
		}
	}
	// Columns n8..n of every row, then rows m4..m of columns 0..n8.
	gemmLoops(0, m, n8, n, k, a, ars, aps, b, ldb, c, ldc)
	gemmLoops(m4, m, 0, n8, k, a, ars, aps, b, ldb, c, ldc)
}

// gemmLoops is gemmAcc's definition for rows r0..r1 and columns j0..j1.
func gemmLoops(r0, r1, j0, j1, k int, a []float64, ars, aps int, b []float64, ldb int, c []float64, ldc int) {
	if j0 >= j1 {
		return
	}
	for r := r0; r < r1; r++ {
		cr := c[r*ldc+j0 : r*ldc+j1]
		for p := range k {
			x := a[r*ars+p*aps]
			bp := b[p*ldb+j0 : p*ldb+j1]
			for j, v := range bp {
				cr[j] += x * v
			}
		}
	}
}

// bwdFMA is Backward for one layer through gemmAcc: gw (W's gradient,
// out×in) += dzᵀ·a, accumulated as dWᵀ in the scratch gt (in×out) so that
// the kernel's columns run along out; and, unless da.Data is nil,
// da = dz·W, through gemmAcc when
// the input side is wide, by dot products with the rows of wt (Wᵀ as of
// Forward) when it is thin.
func bwdFMA(n, in, out int, a, dz blas64.General, wt, w, gw, gt []float64, da blas64.General) {
	clear(gt)
	gemmAcc(in, out, n, a.Data, 1, a.Stride, dz.Data, dz.Stride, gt, out)
	for k := range in {
		row := gt[k*out : k*out+out]
		for j, v := range row {
			gw[j*in+k] += v
		}
	}
	if da.Data == nil {
		return
	}
	if in <= thinMax {
		for i := range n {
			di := dz.Data[i*dz.Stride : i*dz.Stride+out]
			dai := da.Data[i*da.Stride : i*da.Stride+in]
			for k := range dai {
				dai[k] = dot(di, wt[k*out:k*out+out])
			}
		}
		return
	}
	for i := range n {
		clear(da.Data[i*da.Stride : i*da.Stride+in])
	}
	gemmAcc(n, in, out, dz.Data, dz.Stride, 1, w, in, da.Data, da.Stride)
}
