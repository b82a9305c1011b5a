package envs

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
)

// This file re-implements the part of numpy.random (numpy 1.24) that Gymnasium's
// seeding uses: np.random.SeedSequence, the PCG64 bit generator and the
// Generator methods random() and uniform(). Every constant and every step
// follows numpy/random/bit_generator.pyx, numpy/random/_pcg64.pyx,
// numpy/random/src/pcg64/pcg64.{h,c} and numpy/random/src/distributions.

// SeedSequence constants (numpy/random/bit_generator.pyx).
const (
	poolSize = 4
	initA    = 0x43b0d7e5
	multA    = 0x931e8875
	initB    = 0x8b51f9dd
	multB    = 0x58f38ded
	mixMultL = 0xca01f9dd
	mixMultR = 0x4973f715
	xshift   = 4 * 8 / 2 // sizeof(uint32) * 8 // 2
)

// SeedSequence is numpy's np.random.SeedSequence without spawn keys: it hashes
// the entropy (a non-negative integer, split into little-endian uint32 words)
// into a pool of four uint32 words, from which GenerateState draws
// well-mixed seeds for a bit generator.
type SeedSequence struct {
	pool [poolSize]uint32
}

// NewSeedSequence returns SeedSequence(seed), as numpy builds it for
// np.random.default_rng(seed) and Gymnasium's np_random(seed).
func NewSeedSequence(seed uint64) *SeedSequence {
	return NewSeedSequenceWords(intToUint32Words(seed))
}

// NewSeedSequenceWords returns a SeedSequence whose entropy is the integer
// with the given little-endian uint32 words (numpy's _coerce_to_uint32_array
// of a Python int). An empty slice means the integer 0.
func NewSeedSequenceWords(entropy []uint32) *SeedSequence {
	if len(entropy) == 0 {
		entropy = []uint32{0}
	}
	s := &SeedSequence{}
	s.mixEntropy(entropy)
	return s
}

// intToUint32Words is numpy's _int_to_uint32_array: 0 is [0], otherwise the
// little-endian 32-bit words of n without high zero words.
func intToUint32Words(n uint64) []uint32 {
	if n == 0 {
		return []uint32{0}
	}
	var w []uint32
	for n > 0 {
		w = append(w, uint32(n))
		n >>= 32
	}
	return w
}

func hashmix(value uint32, hashConst *uint32) uint32 {
	value ^= *hashConst
	*hashConst *= multA
	value *= *hashConst
	value ^= value >> xshift
	return value
}

func mix(x, y uint32) uint32 {
	result := mixMultL*x - mixMultR*y
	result ^= result >> xshift
	return result
}

// mixEntropy is SeedSequence.mix_entropy: hash the entropy into the pool, mix
// every pool word into every other, then fold in entropy beyond the pool.
func (s *SeedSequence) mixEntropy(entropy []uint32) {
	hashConst := uint32(initA)
	for i := range s.pool {
		if i < len(entropy) {
			s.pool[i] = hashmix(entropy[i], &hashConst)
		} else {
			s.pool[i] = hashmix(0, &hashConst)
		}
	}
	for iSrc := range s.pool {
		for iDst := range s.pool {
			if iSrc != iDst {
				s.pool[iDst] = mix(s.pool[iDst], hashmix(s.pool[iSrc], &hashConst))
			}
		}
	}
	for iSrc := poolSize; iSrc < len(entropy); iSrc++ {
		for iDst := range s.pool {
			s.pool[iDst] = mix(s.pool[iDst], hashmix(entropy[iSrc], &hashConst))
		}
	}
}

// GenerateState32 is generate_state(n, np.uint32).
func (s *SeedSequence) GenerateState32(n int) []uint32 {
	out := make([]uint32, n)
	hashConst := uint32(initB)
	for i := range out {
		v := s.pool[i%poolSize]
		v ^= hashConst
		hashConst *= multB
		v *= hashConst
		v ^= v >> xshift
		out[i] = v
	}
	return out
}

// GenerateState is generate_state(n, np.uint64): 2n uint32 words viewed as n
// little-endian uint64 words.
func (s *SeedSequence) GenerateState(n int) []uint64 {
	w := s.GenerateState32(2 * n)
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(w[2*i]) | uint64(w[2*i+1])<<32
	}
	return out
}

// PCG64 multiplier: PCG_DEFAULT_MULTIPLIER_128 (pcg64.h).
const (
	pcgMultHi = 2549297995355413924
	pcgMultLo = 4865540595714422341
)

// PCG64 is numpy's PCG64 bit generator: a 128-bit linear congruential
// generator with the XSL-RR output function (pcg_setseq_128_xsl_rr_64).
// The zero value is not seeded; use NewPCG64.
type PCG64 struct {
	stateHi, stateLo uint64
	incHi, incLo     uint64
}

// NewPCG64 returns PCG64(seedSequence): numpy draws generate_state(4, uint64)
// = [s0, s1, i0, i1] and calls pcg64_set_seed with the 128-bit state s0:s1 and
// increment i0:i1 (high word first).
func NewPCG64(ss *SeedSequence) *PCG64 {
	v := ss.GenerateState(4)
	p := &PCG64{}
	p.srandom(v[0], v[1], v[2], v[3])
	return p
}

// srandom is pcg_setseq_128_srandom_r.
func (p *PCG64) srandom(initHi, initLo, seqHi, seqLo uint64) {
	p.stateHi, p.stateLo = 0, 0
	p.incHi = seqHi<<1 | seqLo>>63
	p.incLo = seqLo<<1 | 1
	p.step()
	var carry uint64
	p.stateLo, carry = bits.Add64(p.stateLo, initLo, 0)
	p.stateHi, _ = bits.Add64(p.stateHi, initHi, carry)
	p.step()
}

// step advances the LCG: state = state*mult + inc (mod 2^128).
func (p *PCG64) step() {
	hi, lo := bits.Mul64(p.stateLo, pcgMultLo)
	hi += p.stateLo*pcgMultHi + p.stateHi*pcgMultLo
	var carry uint64
	lo, carry = bits.Add64(lo, p.incLo, 0)
	hi, _ = bits.Add64(hi, p.incHi, carry)
	p.stateHi, p.stateLo = hi, lo
}

// Uint64 is random_raw(): step, then the XSL-RR output of the new state.
func (p *PCG64) Uint64() uint64 {
	p.step()
	return bits.RotateLeft64(p.stateHi^p.stateLo, -int(p.stateHi>>58))
}

// Generator is numpy's np.random.Generator over a PCG64. Copying a Generator
// value copies its state.
type Generator struct {
	bg PCG64
}

// NewGenerator returns np.random.default_rng(seed), which is also what
// Gymnasium's seeding.np_random(seed) builds:
// Generator(PCG64(SeedSequence(seed))).
func NewGenerator(seed uint64) *Generator {
	return &Generator{bg: *NewPCG64(NewSeedSequence(seed))}
}

// newRandomGenerator is np.random.default_rng(None): SeedSequence draws 128
// bits of OS entropy.
func newRandomGenerator() *Generator {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("envs: reading OS entropy: " + err.Error())
	}
	w := make([]uint32, 4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	for len(w) > 1 && w[len(w)-1] == 0 { // a Python int has no high zero words
		w = w[:len(w)-1]
	}
	return &Generator{bg: *NewPCG64(NewSeedSequenceWords(w))}
}

// Uint64 is the next raw 64-bit output of the bit generator.
func (g *Generator) Uint64() uint64 { return g.bg.Uint64() }

// Random is Generator.random(): a double in [0, 1) with 53 random bits,
// (next_uint64 >> 11) * 2^-53.
func (g *Generator) Random() float64 {
	return float64(g.bg.Uint64()>>11) * (1.0 / 9007199254740992.0)
}

// Uniform is Generator.uniform(low, high) for one draw:
// low + (high-low)*random().
func (g *Generator) Uniform(low, high float64) float64 {
	rng := high - low
	return low + float64(rng*g.Random())
}
