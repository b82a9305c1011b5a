package envs

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// powCases are {x, y, pow(x, y)} computed by CPython 3.11's x**y (the C
// library's pow) with glibc 2.36 on an x86-64 CPU with FMA and AVX2
// (__pow_fma). The first 24 are squares where pow(x, 2) != x*x.
var powCases = [][3]float64{
	{-0x1.3280af53a2210p+4, 0x1.0000000000000p+1, 0x1.6ef7e3d3bb4c8p+8},
	{0x1.ce81dbd32a3f0p+3, 0x1.0000000000000p+1, 0x1.a1cc7ba6ba078p+7},
	{-0x1.c1cd5db74d5e9p+3, 0x1.0000000000000p+1, 0x1.8b2903be1ba32p+7},
	{-0x1.04a4662f0b126p+3, 0x1.0000000000000p+1, 0x1.095e5922a38d0p+6},
	{-0x1.3383e88441076p+4, 0x1.0000000000000p+1, 0x1.7165a3a4fe824p+8},
	{0x1.e826c1bcf5d00p+2, 0x1.0000000000000p+1, 0x1.d169e43f3ff04p+5},
	{-0x1.aa91da030b6b1p+4, 0x1.0000000000000p+1, 0x1.6364de55698e3p+9},
	{-0x1.d61918d4ec37dp+3, 0x1.0000000000000p+1, 0x1.afa014d1d7addp+7},
	{-0x1.df53d17adc2e4p+2, 0x1.0000000000000p+1, 0x1.c0bd62ada284ep+5},
	{-0x1.e31e226b77888p+1, 0x1.0000000000000p+1, 0x1.c7dd5cb6cd6efp+3},
	{0x1.34beb16fc7620p-1, 0x1.0000000000000p+1, 0x1.745b6900d4ab9p-2},
	{0x1.c3549947b95f0p+2, 0x1.0000000000000p+1, 0x1.8dd99803d4fe9p+5},
	{0x1.5668b6dce3bf8p+3, 0x1.0000000000000p+1, 0x1.c9fbf36b469b8p+6},
	{-0x1.3891ac12d93e6p+4, 0x1.0000000000000p+1, 0x1.7da36652528b8p+8},
	{0x1.be484163e1b0cp+4, 0x1.0000000000000p+1, 0x1.84ffec1e6fa35p+9},
	{0x1.18ee2e41fdd1ap+4, 0x1.0000000000000p+1, 0x1.3449e2ca664a5p+8},
	{-0x1.1e3fb9578dfaap+4, 0x1.0000000000000p+1, 0x1.401271fc60838p+8},
	{-0x1.b137254d890a4p+3, 0x1.0000000000000p+1, 0x1.6e8dcc08ab2a8p+7},
	{0x1.1ab2836c40a3ap+4, 0x1.0000000000000p+1, 0x1.382dc605846a6p+8},
	{-0x1.a17028dfef434p+2, 0x1.0000000000000p+1, 0x1.54574b26a9f8ap+5},
	{0x1.8b17a6f896034p+4, 0x1.0000000000000p+1, 0x1.30e0ffb946402p+9},
	{-0x1.342d8ce0a59e8p+1, 0x1.0000000000000p+1, 0x1.72fda31763061p+2},
	{0x1.5e461496dbe08p+3, 0x1.0000000000000p+1, 0x1.df43b37bc5620p+6},
	{-0x1.d7a3285289204p+2, 0x1.0000000000000p+1, 0x1.b274e32e0a049p+5},
	{0x1.c3235de0c52cdp+4, -0x1.1cf14caa32186p+2, 0x1.774115f7f6141p-22},
	{0x1.ee1f389a9ce67p+4, 0x1.d82652f1691e0p-2, 0x1.3737795f55262p+2},
	{0x1.77b907afb38b5p+5, -0x1.ccf1b0d51ff70p+1, 0x1.00301b7d08aacp-20},
	{0x1.754432ffe1963p+5, -0x1.2808a4f7e83b4p+2, 0x1.4799710e8ead5p-26},
	{0x1.4dc65dd9ebc15p+5, -0x1.0a5ad43cab4fcp+2, 0x1.8388dec322151p-23},
	{0x1.786b0f9ea5f00p+5, 0x1.d8328e23bb124p+1, 0x1.694b741925062p+20},
	{0x1.49ec3bc248075p+3, 0x1.320bc329e9386p+2, 0x1.119ebf42e4746p+16},
	{0x1.75cc8a6a6f36bp+5, 0x1.fb2bc88266b90p+1, 0x1.f749bfb6ebfd3p+21},
	{0x1.62be14b3e7761p+4, -0x1.2b08534471a14p+2, 0x1.14926f0266d35p-21},
	{0x1.53c2ae92f8d1bp+3, 0x1.4a0c6a47c0d80p-1, 0x1.257b4e17c1835p+2},
	{0x1.18b838b35ad09p+4, -0x1.2c9725b4f8348p+2, 0x1.80f152d57e258p-20},
	{0x1.1c525c682940ep+5, -0x1.5af0cbf9b6ffap+2, 0x1.0d97caaeb3062p-28},
	{-0x1.b333333333333p+0, 0x1.8000000000000p+1, -0x1.3a6e978d4fdf3p+2},
	{-0x1.4000000000000p+1, 0x1.0000000000000p+1, 0x1.9000000000000p+2},
	{0x0.0p+0, 0x1.0000000000000p+1, 0x0.0p+0},
	{0x1.87e92154ef7acp-665, 0x1.0000000000000p+1, 0x0.0p+0},
	{0x1.0000000000001p+0, 0x1.0000000000000p+1, 0x1.0000000000002p+0},
}

func TestLibmPow(t *testing.T) {
	for _, c := range powCases {
		if got := libmPow(c[0], c[1]); got != c[2] {
			t.Errorf("libmPow(%x, %x) = %x, want %x", c[0], c[1], got, c[2])
		}
		if c[1] == 2 {
			if got := pySquare(c[0]); got != c[2] {
				t.Errorf("pySquare(%x) = %x, want %x", c[0], got, c[2])
			}
		}
	}
	// The glibc tables: spot entries of e_pow_log_data.c and e_exp_data.c.
	if powLogTab[0] != [3]uint64{0x3FF6A00000000000, 0xBFD62C82F2B9C800, 0x3CFAB42428375680} ||
		expTab[1] != 0x3FF0000000000000 || expTab[2] != 0x3C9B3B4F1A88BF6E || expTab[3] != 0x3FEFF63DA9FB3335 {
		t.Error("pow tables do not start with glibc's entries")
	}
}

// TestPySquareFastPath: the fast path never disagrees with libmPow.
func TestPySquareFastPath(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		x := math.Ldexp(r.Float64()+0.5, r.IntN(80)-40)
		if r.IntN(2) == 0 {
			x = -x
		}
		if a, b := pySquare(x), libmPow(x, 2); a != b {
			t.Fatalf("pySquare(%x) = %x, libmPow = %x", x, a, b)
		}
	}
}

// TestSVMLSinCos checks the SVML kernels' documented accuracy (< 4 ulp)
// against math/big over the range the environments use, the value the golden
// data pins down, and signed zeros.
func TestSVMLSinCos(t *testing.T) {
	if got := sin(1.721316619099806); got != 0.9886931925969834 {
		t.Errorf("sin(1.721316619099806) = %v, want numpy's 0.9886931925969834", got)
	}
	if s := sin(math.Copysign(0, -1)); s != 0 || !math.Signbit(s) {
		t.Errorf("sin(-0) = %v", s)
	}
	if cos(0) != 1 || cos(1e-10) != 1 {
		t.Error("cos near 0 is not 1")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 3000; i++ {
		x := (r.Float64()*2 - 1) * 40
		ws, wc := bigSinCos(x)
		if d := ulps(sin(x), ws); d > 3 {
			t.Errorf("sin(%v) = %v, exact %v: %d ulp", x, sin(x), ws, d)
		}
		if d := ulps(cos(x), wc); d > 3 {
			t.Errorf("cos(%v) = %v, exact %v: %d ulp", x, cos(x), wc, d)
		}
	}
}

// bigSinCos is sin(x), cos(x) rounded from a 300-bit Taylor evaluation.
func bigSinCos(x float64) (float64, float64) {
	const prec = 300
	nf := func(v float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(v) }
	bx := nf(x)
	x2 := new(big.Float).SetPrec(prec).Mul(bx, bx)
	sum := func(term *big.Float, first int) *big.Float {
		s := new(big.Float).SetPrec(prec).Set(term)
		for n := first; n < 400; n += 2 {
			term.Mul(term, x2)
			term.Quo(term, nf(float64(n*(n+1))))
			term.Neg(term)
			s.Add(s, term)
		}
		return s
	}
	s, _ := sum(new(big.Float).SetPrec(prec).Set(bx), 2).Float64()
	c, _ := sum(nf(1), 1).Float64()
	return s, c
}

func TestFloat32SinCos(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 20000; i++ {
		x := float32((r.Float64()*2 - 1) * 10)
		ws, wc := float32(math.Sin(float64(x))), float32(math.Cos(float64(x)))
		// numpy documents a maximum error of 1.49 ulp.
		if d := ulps(float64(sin32(x)), float64(ws)); d > 3<<29 {
			t.Errorf("sin32(%v) = %v, want ~%v", x, sin32(x), ws)
		}
		if d := ulps(float64(cos32(x)), float64(wc)); d > 3<<29 {
			t.Errorf("cos32(%v) = %v, want ~%v", x, cos32(x), wc)
		}
	}
}

// TestFma32 compares fma32 with a*b+c computed exactly and rounded once.
func TestFma32(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	f := func() float32 {
		return float32(math.Ldexp(r.Float64()*2-1, r.IntN(40)-20))
	}
	check := func(a, b, c float32) {
		exact := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		exact.Mul(exact, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
		exact.Add(exact, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
		want, _ := exact.Float32()
		if got := fma32(a, b, c); got != want {
			t.Fatalf("fma32(%x, %x, %x) = %x, want %x", a, b, c, got, want)
		}
	}
	for i := 0; i < 100000; i++ {
		check(f(), f(), f())
	}
	// (1+2^-12)^2 = 1 + 2^-11 + 2^-24 is a float32 midpoint; a tiny c decides
	// the rounding but vanishes from the float64 sum.
	a := float32(1 + 0x1p-12)
	check(a, a, 0x1p-60)
	check(a, a, -0x1p-60)
	check(a, a, 0)
	check(-a, a, 0x1p-60)
	if fma32(a, a, 0x1p-60) != 1+0x1p-11+0x1p-23 || fma32(a, a, -0x1p-60) != 1+0x1p-11 {
		t.Error("fma32 breaks a float32 tie the wrong way")
	}
	// Double-rounding traps: a*b+c lands on a float32 midpoint in float64.
	for i := 0; i < 20000; i++ {
		a, b := f(), f()
		p := float64(a) * float64(b)
		mid := float32(p) // c chosen so that the float64 sum is near a midpoint
		check(a, b, -mid+float32(math.Ldexp(1, -30)))
		check(a, b, float32(math.Ldexp(float64(mid), -24)))
	}
}
