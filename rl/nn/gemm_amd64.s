#include "textflag.h"

// func gemm4x8(k int, a *float64, ars, aps int, b *float64, ldb int, c *float64, ldc int)
//
// C[r*ldc+j] += sum_{p<k} A[r*ars+p*aps] * B[p*ldb+j] for r < 4, j < 8
// (strides in elements). AVX2 and FMA3: eight 4-wide accumulators.
TEXT ·gemm4x8(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ ars+16(FP), R8
	MOVQ aps+24(FP), R9
	MOVQ b+32(FP), DI
	MOVQ ldb+40(FP), R10
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R11
	SHLQ $3, R8
	SHLQ $3, R9
	SHLQ $3, R10
	SHLQ $3, R11
	LEAQ (SI)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	LEAQ (R13)(R8*1), R14
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	TESTQ CX, CX
	JEQ store

loop:
	VMOVUPD (DI), Y8
	VMOVUPD 32(DI), Y9
	VBROADCASTSD (SI), Y10
	VFMADD231PD Y8, Y10, Y0
	VFMADD231PD Y9, Y10, Y1
	VBROADCASTSD (R12), Y11
	VFMADD231PD Y8, Y11, Y2
	VFMADD231PD Y9, Y11, Y3
	VBROADCASTSD (R13), Y12
	VFMADD231PD Y8, Y12, Y4
	VFMADD231PD Y9, Y12, Y5
	VBROADCASTSD (R14), Y13
	VFMADD231PD Y8, Y13, Y6
	VFMADD231PD Y9, Y13, Y7
	ADDQ R9, SI
	ADDQ R9, R12
	ADDQ R9, R13
	ADDQ R9, R14
	ADDQ R10, DI
	DECQ CX
	JNZ loop

store:
	VADDPD (DX), Y0, Y0
	VMOVUPD Y0, (DX)
	VADDPD 32(DX), Y1, Y1
	VMOVUPD Y1, 32(DX)
	ADDQ R11, DX
	VADDPD (DX), Y2, Y2
	VMOVUPD Y2, (DX)
	VADDPD 32(DX), Y3, Y3
	VMOVUPD Y3, 32(DX)
	ADDQ R11, DX
	VADDPD (DX), Y4, Y4
	VMOVUPD Y4, (DX)
	VADDPD 32(DX), Y5, Y5
	VMOVUPD Y5, 32(DX)
	ADDQ R11, DX
	VADDPD (DX), Y6, Y6
	VMOVUPD Y6, (DX)
	VADDPD 32(DX), Y7, Y7
	VMOVUPD Y7, 32(DX)
	VZEROUPPER
	RET

// Four copies of each constant, for 256-bit loads.
DATA tanhAbs<>+0(SB)/8, $0x7fffffffffffffff
DATA tanhAbs<>+8(SB)/8, $0x7fffffffffffffff
DATA tanhAbs<>+16(SB)/8, $0x7fffffffffffffff
DATA tanhAbs<>+24(SB)/8, $0x7fffffffffffffff
GLOBL tanhAbs<>(SB), RODATA|NOPTR, $32
DATA tanhSign<>+0(SB)/8, $0x8000000000000000
DATA tanhSign<>+8(SB)/8, $0x8000000000000000
DATA tanhSign<>+16(SB)/8, $0x8000000000000000
DATA tanhSign<>+24(SB)/8, $0x8000000000000000
GLOBL tanhSign<>(SB), RODATA|NOPTR, $32
DATA tanhMax<>+0(SB)/8, $44.0
DATA tanhMax<>+8(SB)/8, $44.0
DATA tanhMax<>+16(SB)/8, $44.0
DATA tanhMax<>+24(SB)/8, $44.0
GLOBL tanhMax<>(SB), RODATA|NOPTR, $32
DATA tanhLog2e<>+0(SB)/8, $1.4426950408889634
DATA tanhLog2e<>+8(SB)/8, $1.4426950408889634
DATA tanhLog2e<>+16(SB)/8, $1.4426950408889634
DATA tanhLog2e<>+24(SB)/8, $1.4426950408889634
GLOBL tanhLog2e<>(SB), RODATA|NOPTR, $32
DATA tanhLn2Hi<>+0(SB)/8, $6.93147180369123816490e-01
DATA tanhLn2Hi<>+8(SB)/8, $6.93147180369123816490e-01
DATA tanhLn2Hi<>+16(SB)/8, $6.93147180369123816490e-01
DATA tanhLn2Hi<>+24(SB)/8, $6.93147180369123816490e-01
GLOBL tanhLn2Hi<>(SB), RODATA|NOPTR, $32
DATA tanhLn2Lo<>+0(SB)/8, $1.90821492927058770002e-10
DATA tanhLn2Lo<>+8(SB)/8, $1.90821492927058770002e-10
DATA tanhLn2Lo<>+16(SB)/8, $1.90821492927058770002e-10
DATA tanhLn2Lo<>+24(SB)/8, $1.90821492927058770002e-10
GLOBL tanhLn2Lo<>(SB), RODATA|NOPTR, $32
DATA tanhOne<>+0(SB)/8, $1.0
DATA tanhOne<>+8(SB)/8, $1.0
DATA tanhOne<>+16(SB)/8, $1.0
DATA tanhOne<>+24(SB)/8, $1.0
GLOBL tanhOne<>(SB), RODATA|NOPTR, $32
DATA tanhTwo<>+0(SB)/8, $2.0
DATA tanhTwo<>+8(SB)/8, $2.0
DATA tanhTwo<>+16(SB)/8, $2.0
DATA tanhTwo<>+24(SB)/8, $2.0
GLOBL tanhTwo<>(SB), RODATA|NOPTR, $32
DATA tanhBias<>+0(SB)/8, $1023
DATA tanhBias<>+8(SB)/8, $1023
DATA tanhBias<>+16(SB)/8, $1023
DATA tanhBias<>+24(SB)/8, $1023
GLOBL tanhBias<>(SB), RODATA|NOPTR, $32
DATA tanhC13<>+0(SB)/8, $1.6059043836821613e-10
DATA tanhC13<>+8(SB)/8, $1.6059043836821613e-10
DATA tanhC13<>+16(SB)/8, $1.6059043836821613e-10
DATA tanhC13<>+24(SB)/8, $1.6059043836821613e-10
GLOBL tanhC13<>(SB), RODATA|NOPTR, $32
DATA tanhC12<>+0(SB)/8, $2.08767569878681e-09
DATA tanhC12<>+8(SB)/8, $2.08767569878681e-09
DATA tanhC12<>+16(SB)/8, $2.08767569878681e-09
DATA tanhC12<>+24(SB)/8, $2.08767569878681e-09
GLOBL tanhC12<>(SB), RODATA|NOPTR, $32
DATA tanhC11<>+0(SB)/8, $2.505210838544172e-08
DATA tanhC11<>+8(SB)/8, $2.505210838544172e-08
DATA tanhC11<>+16(SB)/8, $2.505210838544172e-08
DATA tanhC11<>+24(SB)/8, $2.505210838544172e-08
GLOBL tanhC11<>(SB), RODATA|NOPTR, $32
DATA tanhC10<>+0(SB)/8, $2.755731922398589e-07
DATA tanhC10<>+8(SB)/8, $2.755731922398589e-07
DATA tanhC10<>+16(SB)/8, $2.755731922398589e-07
DATA tanhC10<>+24(SB)/8, $2.755731922398589e-07
GLOBL tanhC10<>(SB), RODATA|NOPTR, $32
DATA tanhC9<>+0(SB)/8, $2.7557319223985893e-06
DATA tanhC9<>+8(SB)/8, $2.7557319223985893e-06
DATA tanhC9<>+16(SB)/8, $2.7557319223985893e-06
DATA tanhC9<>+24(SB)/8, $2.7557319223985893e-06
GLOBL tanhC9<>(SB), RODATA|NOPTR, $32
DATA tanhC8<>+0(SB)/8, $2.48015873015873e-05
DATA tanhC8<>+8(SB)/8, $2.48015873015873e-05
DATA tanhC8<>+16(SB)/8, $2.48015873015873e-05
DATA tanhC8<>+24(SB)/8, $2.48015873015873e-05
GLOBL tanhC8<>(SB), RODATA|NOPTR, $32
DATA tanhC7<>+0(SB)/8, $0.0001984126984126984
DATA tanhC7<>+8(SB)/8, $0.0001984126984126984
DATA tanhC7<>+16(SB)/8, $0.0001984126984126984
DATA tanhC7<>+24(SB)/8, $0.0001984126984126984
GLOBL tanhC7<>(SB), RODATA|NOPTR, $32
DATA tanhC6<>+0(SB)/8, $0.001388888888888889
DATA tanhC6<>+8(SB)/8, $0.001388888888888889
DATA tanhC6<>+16(SB)/8, $0.001388888888888889
DATA tanhC6<>+24(SB)/8, $0.001388888888888889
GLOBL tanhC6<>(SB), RODATA|NOPTR, $32
DATA tanhC5<>+0(SB)/8, $0.008333333333333333
DATA tanhC5<>+8(SB)/8, $0.008333333333333333
DATA tanhC5<>+16(SB)/8, $0.008333333333333333
DATA tanhC5<>+24(SB)/8, $0.008333333333333333
GLOBL tanhC5<>(SB), RODATA|NOPTR, $32
DATA tanhC4<>+0(SB)/8, $0.041666666666666664
DATA tanhC4<>+8(SB)/8, $0.041666666666666664
DATA tanhC4<>+16(SB)/8, $0.041666666666666664
DATA tanhC4<>+24(SB)/8, $0.041666666666666664
GLOBL tanhC4<>(SB), RODATA|NOPTR, $32
DATA tanhC3<>+0(SB)/8, $0.16666666666666666
DATA tanhC3<>+8(SB)/8, $0.16666666666666666
DATA tanhC3<>+16(SB)/8, $0.16666666666666666
DATA tanhC3<>+24(SB)/8, $0.16666666666666666
GLOBL tanhC3<>(SB), RODATA|NOPTR, $32
DATA tanhC2<>+0(SB)/8, $0.5
DATA tanhC2<>+8(SB)/8, $0.5
DATA tanhC2<>+16(SB)/8, $0.5
DATA tanhC2<>+24(SB)/8, $0.5
GLOBL tanhC2<>(SB), RODATA|NOPTR, $32

// func tanh4(x *float64, n int)
//
// x[i] = tanh(x[i]) for i < n, n a multiple of 4 (AVX2 and FMA3), computing
// exactly what the scalar tanh in kernels.go computes: with t = min(2|x|, 44),
// n = round(t log2 e), r = t - n ln2 (two steps), q = e^r - 1 by a degree-13
// polynomial and s = 2^n, e^t - 1 = (s - 1) + s q and
// tanh|x| = (e^t - 1) / (e^t - 1 + 2), with the sign of x.
TEXT ·tanh4(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $2, CX
	JEQ  tdone
	VMOVUPD tanhMax<>(SB), Y13
	VMOVUPD tanhLog2e<>(SB), Y12
	VMOVUPD tanhLn2Hi<>(SB), Y11
	VMOVUPD tanhLn2Lo<>(SB), Y10
	VMOVUPD tanhOne<>(SB), Y9
	VMOVUPD tanhTwo<>(SB), Y8

tloop:
	VMOVUPD (SI), Y0
	VANDPD  tanhAbs<>(SB), Y0, Y1
	VANDPD  tanhSign<>(SB), Y0, Y2
	VADDPD  Y1, Y1, Y1
	VMINPD  Y1, Y13, Y1
	VMULPD  Y12, Y1, Y3
	VROUNDPD $0, Y3, Y3
	VMOVAPD Y1, Y4
	VFNMADD231PD Y11, Y3, Y4
	VFNMADD231PD Y10, Y3, Y4
	VMOVUPD tanhC13<>(SB), Y5
	VFMADD213PD tanhC12<>(SB), Y4, Y5
	VFMADD213PD tanhC11<>(SB), Y4, Y5
	VFMADD213PD tanhC10<>(SB), Y4, Y5
	VFMADD213PD tanhC9<>(SB), Y4, Y5
	VFMADD213PD tanhC8<>(SB), Y4, Y5
	VFMADD213PD tanhC7<>(SB), Y4, Y5
	VFMADD213PD tanhC6<>(SB), Y4, Y5
	VFMADD213PD tanhC5<>(SB), Y4, Y5
	VFMADD213PD tanhC4<>(SB), Y4, Y5
	VFMADD213PD tanhC3<>(SB), Y4, Y5
	VFMADD213PD tanhC2<>(SB), Y4, Y5
	VFMADD213PD Y9, Y4, Y5
	VMULPD  Y4, Y5, Y5
	VCVTPD2DQY Y3, X6
	VPMOVSXDQ X6, Y6
	VPADDQ  tanhBias<>(SB), Y6, Y6
	VPSLLQ  $52, Y6, Y6
	VSUBPD  Y9, Y6, Y7
	VFMADD231PD Y5, Y6, Y7
	VADDPD  Y8, Y7, Y5
	VDIVPD  Y5, Y7, Y7
	VORPD   Y2, Y7, Y7
	VMOVUPD Y7, (SI)
	ADDQ    $32, SI
	DECQ    CX
	JNZ     tloop
	VZEROUPPER

tdone:
	RET

// func adam4(n int, p, gr, m, v *float64, c *[8]float64)
//
// The Adam update of adam.go for n values (n a multiple of 4), four at a
// time, with the same operations in the same order and no fused
// multiply-adds, so the results are those of the scalar loop bit for bit.
// c holds b1, 1-b1, b2, 1-b2, step, sqrt(bias correction 2), eps.
TEXT ·adam4(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ p+8(FP), DI
	MOVQ gr+16(FP), SI
	MOVQ m+24(FP), R8
	MOVQ v+32(FP), R9
	MOVQ c+40(FP), AX
	SHRQ $2, CX
	JEQ  adone
	VBROADCASTSD 0(AX), Y8
	VBROADCASTSD 8(AX), Y9
	VBROADCASTSD 16(AX), Y10
	VBROADCASTSD 24(AX), Y11
	VBROADCASTSD 32(AX), Y12
	VBROADCASTSD 40(AX), Y13
	VBROADCASTSD 48(AX), Y14

aloop:
	VMOVUPD (SI), Y0
	VMULPD  (R8), Y8, Y1
	VMULPD  Y0, Y9, Y2
	VADDPD  Y2, Y1, Y1
	VMOVUPD Y1, (R8)
	VMULPD  (R9), Y10, Y3
	VMULPD  Y0, Y11, Y4
	VMULPD  Y0, Y4, Y4
	VADDPD  Y4, Y3, Y3
	VMOVUPD Y3, (R9)
	VSQRTPD Y3, Y3
	VDIVPD  Y13, Y3, Y3
	VADDPD  Y14, Y3, Y3
	VMULPD  Y1, Y12, Y1
	VDIVPD  Y3, Y1, Y1
	VMOVUPD (DI), Y5
	VSUBPD  Y1, Y5, Y5
	VMOVUPD Y5, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, R8
	ADDQ    $32, R9
	DECQ    CX
	JNZ     aloop
	VZEROUPPER

adone:
	RET

// func dtanh4(n int, d, h *float64)
//
// d[i] *= 1 - h[i]*h[i] for i < n, n a multiple of 4 (tanh's derivative
// from its output), with the scalar loop's operations: the same bits.
TEXT ·dtanh4(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ d+8(FP), DI
	MOVQ h+16(FP), SI
	SHRQ $2, CX
	JEQ  ddone
	VMOVUPD tanhOne<>(SB), Y9

dloop:
	VMOVUPD (SI), Y0
	VMULPD  Y0, Y0, Y0
	VSUBPD  Y0, Y9, Y0
	VMULPD  (DI), Y0, Y0
	VMOVUPD Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     dloop
	VZEROUPPER

ddone:
	RET

// func add4(n int, dst, src *float64)
//
// dst[i] += src[i] for i < n, n a multiple of 4.
TEXT ·add4(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ dst+8(FP), DI
	MOVQ src+16(FP), SI
	SHRQ $2, CX
	JEQ  sdone

sloop:
	VMOVUPD (DI), Y0
	VADDPD  (SI), Y0, Y0
	VMOVUPD Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     sloop
	VZEROUPPER

sdone:
	RET
