package envs

import "math"

// Trigonometry as the reference computes it.
//
// Gymnasium's classic-control dynamics call numpy's np.sin/np.cos on float64
// scalars (CartPole, Pendulum, Acrobot) and Python's math.cos (MountainCar).
// On an x86-64 CPU with AVX-512, numpy 1.24 evaluates float64 sin/cos
// with Intel SVML's low-accuracy kernels (__svml_sin8/__svml_cos8 from
// numpy/SVML linux/avx512/svml_z0_{sin,cos}_d_la.s, "< 4 ulp"), which are
// not correctly rounded; the golden data (Gymnasium 1.4.0, numpy 1.24.2)
// shows it: Pendulum's first step after reset(seed=42) needs
// sin(1.721316619099806) = 0.9886931925969834, one ulp below the correctly
// rounded 0.9886931925969835 that glibc and Go's math.Sin return. sin and cos
// below are those SVML kernels transcribed operation by operation (every
// math.FMA is a vfmadd of the original), so the dynamics reproduce the
// reference bit for bit. Inputs beyond the kernels' fast range (|x| > 2^24
// for sin, |x|/pi > 2^23 for cos), where SVML switches to a table-driven
// path, fall back to Go's math package: no classic-control state reaches
// them.
//
// Python's math.cos is the C library's cos. pyCos uses Go's math.Cos
// instead, which differs from glibc's cos in the last bit for about a quarter
// of the arguments the MountainCars use (3*position in [-3.6, 1.8];
// glibc's cos is itself not correctly rounded in ~0.1% of them). This is not
// transcribed because it cannot show: the term is 0.0025*cos(3*position), so
// a last-bit difference moves the float64 velocity by < 3e-19, and the state
// is stored as float32: the stored value changes only when the float64 one
// lies within 3e-19 of a float32 rounding boundary, a chance of about
// 3e-19/ulp32 per step (< 1e-9 at |velocity| > 0.01, < 1e-6 even at 1e-5).
// The golden episodes match exactly. MountainCar-v0 keeps its state in
// float64, where the difference can survive in the last bits of the state;
// its float32 observations are affected only with a similarly tiny chance
// (see doc.go).

// SVML double-precision constants (bit patterns from __svml_dsin_data_internal
// and __svml_dcos_data_internal).
var (
	svInvPi    = math.Float64frombits(0x3FD45F306DC9C883) // 1/pi
	svRShifter = math.Float64frombits(0x4338000000000000) // 1.5 * 2^52
	svPi1      = math.Float64frombits(0x400921FB54442D18) // pi = Pi1 + Pi2 + Pi3 (FMA split)
	svPi2      = math.Float64frombits(0x3CA1A62633145C06)
	svPi3      = math.Float64frombits(0x395C1CD129024E09)

	// sin(R) ~ R + R^3 * (S1 + S2 R^2 + ... + S7 R^12)
	svS = [7]float64{
		math.Float64frombits(0xBFC55555555554A8),
		math.Float64frombits(0x3F8111111110A573),
		math.Float64frombits(0xBF2A01A019A659DD),
		math.Float64frombits(0x3EC71DE3806ADD1A),
		math.Float64frombits(0xBE5AE6355AAA4A53),
		math.Float64frombits(0x3DE60E6BEE01D83E),
		math.Float64frombits(0xBD69F1517E9F65F0),
	}
	// the cosine kernel's own coefficients for the same sine polynomial
	svC = [7]float64{
		math.Float64frombits(0xBFC55555555554A7),
		math.Float64frombits(0x3F8111111110A4A8),
		math.Float64frombits(0xBF2A01A019A5B87B),
		math.Float64frombits(0x3EC71DE38030FEA0),
		math.Float64frombits(0xBE5AE63546002231),
		math.Float64frombits(0x3DE60E6857A2F220),
		math.Float64frombits(0xBD69F0D60811AAC8),
	}
	svSinRange  = math.Float64frombits(0x4170000000000000) // 2^24
	svTwo52     = math.Float64frombits(0x4330000000000000) // 2^52
	svTwo52Half = math.Float64frombits(0x432FFFFFFFFFFFFF) // 2^52 - 0.5
	svCosRange  = math.Float64frombits(0x43300000007FFFFE) // 2^52 + 8388606
	svCosTiny   = math.Float64frombits(0x3E40000000000000) // 2^-27
	svSignMask  = uint64(1) << 63
	svAbsMask   = ^svSignMask
)

// sin is numpy 1.24's float64 np.sin on AVX-512 (SVML __svml_sin8, la):
// x = N*pi + R, sin(x) = (-1)^N * sin(R).
func sin(x float64) float64 {
	if !(math.Abs(x) <= svSinRange) { // also NaN, Inf
		return math.Sin(x)
	}
	t := math.FMA(x, svInvPi, svRShifter) // N in the low mantissa bits
	sign := math.Float64bits(t) << 63
	dN := t - svRShifter
	if x == 0 { // keep the sign of zero
		sign ^= math.Float64bits(x)
	}
	r := math.FMA(-dN, svPi1, x)
	r = math.FMA(-svPi2, dN, r)
	r2 := r * r
	R := math.FMA(-svPi3, dN, r)
	p := math.FMA(r2, svS[6], svS[5])
	r3 := r2 * R
	p = math.FMA(r2, p, svS[4])
	p = math.FMA(r2, p, svS[3])
	p = math.FMA(r2, p, svS[2])
	p = math.FMA(r2, p, svS[1])
	p = math.FMA(r2, p, svS[0])
	res := math.FMA(r3, p, R)
	return math.Float64frombits(math.Float64bits(res) ^ sign)
}

// cos is numpy 1.24's float64 np.cos on AVX-512 (SVML __svml_cos8, la):
// |x| + pi/2 = N*pi + pi - R', cos(x) = (-1)^N * sin((N+1/2)*pi - |x|).
func cos(x float64) float64 {
	ax := math.Float64frombits(math.Float64bits(x) & svAbsMask)
	t := fmaRZ(ax, svInvPi, svTwo52) // 2^52 + floor(|x|/pi)
	if !(t <= svCosRange) {          // also NaN, Inf
		return math.Cos(x)
	}
	if ax < svCosTiny {
		return 1
	}
	sign := math.Float64bits(t) << 63
	dN := t - svTwo52Half // N + 1/2
	r := math.FMA(dN, svPi1, -ax)
	r = math.FMA(svPi2, dN, r)
	r2 := r * r
	R := math.FMA(svPi3, dN, r)
	p := math.FMA(svC[6], r2, svC[5])
	p = math.FMA(r2, p, svC[4])
	p = math.FMA(r2, p, svC[3])
	p = math.FMA(r2, p, svC[2])
	Rs := math.Float64frombits(math.Float64bits(R) ^ sign)
	p = math.FMA(r2, p, svC[1])
	q := Rs * r2
	p = math.FMA(r2, p, svC[0])
	return math.FMA(q, p, Rs)
}

// fmaRZ is the {rz-sae} vfmadd231pd of __svml_cos8: c + a*b with a single
// rounding toward zero, for a, b >= 0 and c = 2^52. In [2^52, 2^53) the ulp
// is 1, so the result is c + floor(a*b) (for a*b < 2^52; larger products only
// need to fail the caller's range check). With p = RN(a*b) and e = a*b - p
// exactly, floor(a*b) = floor(p), except when p is an integer and e < 0: no
// integer lies strictly between p and a*b, since it would be nearer to a*b.
func fmaRZ(a, b, c float64) float64 {
	p := a * b
	e := math.FMA(a, b, -p)
	f := math.Floor(p)
	if f == p && e < 0 {
		f--
	}
	return c + f
}

// pyCos is Python's math.cos (the C library's cos).
func pyCos(x float64) float64 { return math.Cos(x) }

// numpy's float32 np.sin/np.cos (numpy/core/src/umath/
// loops_trigonometric.dispatch.c.src, simd_sincos_f32, the AVX2+FMA3 and
// AVX-512F targets): Cody-Waite reduction by pi/2 in three FMA steps and
// minimax polynomials, all in float32 with fused multiply-adds. Acrobot's
// first observation after Reset takes cos/sin of the float32 state.
var (
	f32TwoOverPi = float32(0x1.45f306p-1)
	f32PiO2Hi    = float32(-0x1.921fb0p+00)
	f32PiO2Med   = float32(-0x1.5110b4p-22)
	f32PiO2Lo    = float32(-0x1.846988p-48)
	f32Magic     = float32(0x1.800000p+23)
	f32Cos       = [5]float32{0x1.98e616p-16, -0x1.6c06dcp-10, 0x1.55553cp-05, -0x1.000000p-01, 0x1.000000p+00}
	f32Sin       = [4]float32{0x1.7d3bbcp-19, -0x1.a06bbap-13, 0x1.11119ap-07, -0x1.555556p-03}
)

func sin32(x float32) float32 { return sincos32(x, false) }
func cos32(x float32) float32 { return sincos32(x, true) }

func sincos32(x float32, isCos bool) float32 {
	maxCody := float32(117435.992)
	if isCos {
		maxCody = 71476.0625
	}
	if !(float32(math.Abs(float64(x))) <= maxCody) {
		// numpy calls the C library's sinf/cosf here (and NaN stays NaN).
		if isCos {
			return float32(math.Cos(float64(x)))
		}
		return float32(math.Sin(float64(x)))
	}
	q := float32(x * f32TwoOverPi)
	q = float32(float32(q+f32Magic) - f32Magic) // rint
	r := fma32(q, f32PiO2Hi, x)
	r = fma32(q, f32PiO2Med, r)
	r = fma32(q, f32PiO2Lo, r)
	r2 := float32(r * r)
	c := fma32(f32Cos[0], r2, f32Cos[1])
	c = fma32(c, r2, f32Cos[2])
	c = fma32(c, r2, f32Cos[3])
	c = fma32(c, r2, f32Cos[4])
	s := fma32(f32Sin[0], r2, f32Sin[1])
	s = fma32(s, r2, f32Sin[2])
	s = fma32(s, r2, f32Sin[3])
	s = fma32(s, r2, 0)
	s = fma32(s, r, r)
	iq := int32(q)
	if isCos {
		iq++
	}
	res := c
	if iq&1 == 0 {
		res = s
	}
	if iq&2 == 2 {
		res = float32(0 - res)
	}
	return res
}

// fma32 is a float32 fused multiply-add (a*b + c rounded once to float32):
// the product of two float32 values is exact in float64; the float64 sum is
// rounded once more, which can only go wrong when it lands exactly on a
// float32 rounding midpoint with a nonzero remainder, which is then used to
// break the tie the right way. (Normal float32 results; subnormal results
// are not needed here.)
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	cc := float64(c)
	s := p + cc
	bb := s - p
	err := (p - (s - bb)) + (cc - bb) // p + cc == s + err exactly (TwoSum)
	if err != 0 && math.Float64bits(s)&(1<<29-1) == 1<<28 {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), err))
	}
	return float32(s)
}
