package envs

import "math"

// libmPow is the C library's pow(x, y) as Python's ** on floats and numpy's
// float64 scalar power call it: glibc's correctly-rounded-in-practice pow
// (sysdeps/ieee754/dbl-64/e_pow.c, worst case 0.52 ulp), in the variant that
// x86-64 CPUs with FMA and AVX2 run (__pow_fma). It matters because pow(x, 2)
// is not always x*x: when x*x lies within about 0.001 ulp of a rounding
// midpoint, pow's tiny approximation error can round it the other way.
// Acrobot's dtheta**2 hits such cases (4 times in the 122 steps of the golden
// seed-0 episode), and with them the golden final state differs in the 13th
// digit.
//
// The main path below follows the instruction sequence of __pow_fma in
// glibc 2.36 (Debian 12), including each multiply-add that GCC contracted
// into an FMA; the tables are glibc's (libm_tables.go). Inputs outside the
// main path (x zero, subnormal, infinite or NaN, negative x with a
// non-integer y, |y| outside [2^-65, 2^63), or |y*log(x)| outside
// [2^-54, 512)) fall back to Go's math.Pow; none of the environments produce
// them except x == 0, where both return the exact 0.
func libmPow(x, y float64) float64 {
	ix := math.Float64bits(x)
	iy := math.Float64bits(y)
	topx := uint32(ix >> 52)
	topy := uint32(iy >> 52)
	var signBias uint64
	if topx-0x001 >= 0x7ff-0x001 || (topy&0x7ff)-0x3be >= 0x43e-0x3be {
		// x <= 0, subnormal, Inf or NaN, or y tiny/huge/non-finite.
		if (topy&0x7ff)-0x3be >= 0x43e-0x3be || topx&0x7ff == 0 || topx&0x7ff == 0x7ff {
			return math.Pow(x, y)
		}
		// Finite normal x < 0: y must be an integer.
		switch checkint(iy) {
		case 0:
			return math.Pow(x, y) // NaN
		case 1:
			signBias = 0x800 << 7
		}
		ix &= 0x7fffffffffffffff
	}

	// log_inline: log(x) = k*Ln2 + log(c) + log1p(z/c - 1), as hi + lo.
	const off = 0x3fe6955500000000
	tmp := ix - off
	i := (tmp >> (52 - 7)) % 128
	k := int64(tmp) >> 52
	iz := ix - (tmp & (0xfff << 52))
	z := math.Float64frombits(iz)
	kd := float64(k)
	invc := math.Float64frombits(powLogTab[i][0])
	logc := math.Float64frombits(powLogTab[i][1])
	logctail := math.Float64frombits(powLogTab[i][2])
	r := math.FMA(z, invc, -1.0)
	t1 := math.FMA(kd, plLn2hi, logc)
	t2 := t1 + r
	lo1 := math.FMA(kd, plLn2lo, logctail)
	lo2 := (t1 - t2) + r
	ar := r * plA[0]
	ar2 := r * ar
	ar3 := r * ar2
	hi := t2 + ar2
	lo3 := math.FMA(ar, r, -ar2)
	lo4 := (t2 - hi) + ar2
	// p = ar3 * (A1 + r*A2 + ar2*(A3 + r*A4 + ar2*(A5 + r*A6)))
	q := math.FMA(math.FMA(r, plA[6], plA[5]), ar2, math.FMA(r, plA[4], plA[3]))
	q = math.FMA(ar2, q, math.FMA(r, plA[2], plA[1]))
	lo := math.FMA(ar3, q, lo1+lo2+lo3+lo4)
	lhi := hi + lo
	ltail := (hi - lhi) + lo

	// ehi + elo = y * log(x)
	ehi := y * lhi
	elo := math.FMA(y, ltail, math.FMA(lhi, y, -ehi))

	// exp_inline(ehi, elo, signBias)
	abstop := uint32(math.Float64bits(ehi)>>52) & 0x7ff
	if abstop-0x3c9 >= 0x408-0x3c9 {
		if abstop-0x3c9 >= 0x80000000 { // |ehi| < 2^-54
			one := 1.0 + ehi
			if signBias != 0 {
				return -one
			}
			return one
		}
		return math.Pow(x, y) // overflow, underflow or the subnormal-range special case
	}
	zz := math.FMA(ehi, exInvLn2N, exShift)
	ki := math.Float64bits(zz)
	ekd := zz - exShift
	er := math.FMA(ekd, exNegLn2loN, math.FMA(ekd, exNegLn2hiN, ehi))
	er = elo + er
	idx := 2 * (ki % 128)
	top := (ki + signBias) << (52 - 7)
	tail := math.Float64frombits(expTab[idx])
	sbits := expTab[idx+1] + top
	r2 := er * er
	etmp := math.FMA(math.FMA(er, exC[1], exC[0]), r2, er+tail)
	etmp = math.FMA(math.FMA(er, exC[3], exC[2]), r2*r2, etmp)
	scale := math.Float64frombits(sbits)
	return math.FMA(etmp, scale, scale)
}

// checkint is e_pow.c's checkint: 0 if not an integer, 1 if odd, 2 if even.
func checkint(iy uint64) int {
	e := int(iy >> 52 & 0x7ff)
	if e < 0x3ff {
		return 0
	}
	if e > 0x3ff+52 {
		return 2
	}
	if iy&(1<<(0x3ff+52-e)-1) != 0 {
		return 0
	}
	if iy&(1<<(0x3ff+52-e)) != 0 {
		return 1
	}
	return 2
}

// Scalars of __pow_log_data and __exp_data (poly coefficients pre-scaled as
// in glibc).
var (
	plLn2hi = math.Float64frombits(0x3FE62E42FEFA3800)
	plLn2lo = math.Float64frombits(0x3D2EF35793C76730)
	plA     = [7]float64{
		math.Float64frombits(0xBFE0000000000000),
		math.Float64frombits(0xBFE5555555555560),
		math.Float64frombits(0x3FE0000000000006),
		math.Float64frombits(0x3FE999999959554E),
		math.Float64frombits(0xBFE555555529A47A),
		math.Float64frombits(0xBFF2495B9B4845E9),
		math.Float64frombits(0x3FF0002B8B263FC3),
	}
	exInvLn2N   = math.Float64frombits(0x40671547652B82FE)
	exNegLn2hiN = math.Float64frombits(0xBF762E42FEFA0000)
	exNegLn2loN = math.Float64frombits(0xBD0CF79ABC9E3B3A)
	exC         = [4]float64{ // C2..C5
		math.Float64frombits(0x3FDFFFFFFFFFFDBD),
		math.Float64frombits(0x3FC555555555543C),
		math.Float64frombits(0x3FA55555CF172B91),
		math.Float64frombits(0x3F81111167A4D017),
	}
	exShift = math.Float64frombits(0x4338000000000000)
)

// pySquare is x**2 as Python floats and numpy float64 scalars compute it,
// libmPow(x, 2), with a fast path: x*x = hi + lo exactly, and when the exact
// square is more than 1/16 ulp away from a rounding midpoint, pow's result
// (within 0.52 ulp of the exact value, by glibc's error bound) must be the
// correctly rounded hi.
func pySquare(x float64) float64 {
	hi := x * x
	b := math.Float64bits(hi)
	exp := b >> 52 & 0x7ff
	if exp > 52 && exp < 0x7ff && b&(1<<52-1) != 0 { // normal, not a power of two, ulp normal
		lo := math.FMA(x, x, -hi)
		u := math.Float64frombits((exp - 52) << 52) // ulp(hi)
		if d := math.Abs(lo) - u/2; d > u/16 || d < -u/16 {
			return hi
		}
	}
	return libmPow(x, 2)
}
