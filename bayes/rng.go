package bayes

import (
	"math"
	"math/rand/v2"
)

// Random numbers. The per-entity draws (w_n[i], V_n[i,f]) come from a
// counter-based generator: the normal variate for one draw is a pure
// function of (seed, sweep, mode, factor, entity), so the entities of a mode
// can be drawn on any number of goroutines in any order and the chain is
// the same. The few serial draws (α, w0, the hyperparameters, the initial
// V) come from one PCG stream seeded with the seed.

// mix64 is the SplitMix64 finaliser (Steele, Lea & Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014): a bijection on uint64 with
// good avalanche.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// drawKey is the key of the draws of one pair of entities: the hash of
// (seed, sweep, kind, mode, factor, pair). kind tells w (0) from V (1)
// draws.
func drawKey(seed uint64, sweep, kind, mode, factor, pair int) uint64 {
	h := mix64(seed ^ 0x6261_7965_7366_6d00) // "bayesfm"
	h = mix64(h ^ uint64(sweep))
	h = mix64(h ^ uint64(kind)<<62 ^ uint64(mode)<<40 ^ uint64(factor))
	return mix64(h ^ uint64(pair))
}

// unit53 maps a 64-bit word to a float64 in the open interval (0, 1).
func unit53(x uint64) float64 {
	return (float64(x>>11) + 0.5) * (1.0 / (1 << 53))
}

// keyNormals returns two independent standard normal variates determined
// by key (the Box–Muller transform of two uniforms derived from key).
func keyNormals(key uint64) (z0, z1 float64) {
	u1 := unit53(mix64(key ^ 0x5555_5555_5555_5555))
	u2 := unit53(mix64(key ^ 0xaaaa_aaaa_aaaa_aaaa))
	r := math.Sqrt(-2 * math.Log(u1))
	sin, cos := math.Sincos(2 * math.Pi * u2)
	return r * cos, r * sin
}

// forDraws calls draw(i, z_i) for i = lo..hi−1 in order, z_i a standard
// normal: entity i gets variate i mod 2 of keyNormals(key(i/2)), so the
// variates do not depend on how the entities are split into ranges, and
// one Box–Muller transform serves two entities.
func forDraws(lo, hi int, key func(pair int) uint64, draw func(i int, z float64)) {
	i := lo
	if i < hi && i%2 == 1 {
		_, z1 := keyNormals(key(i / 2))
		draw(i, z1)
		i++
	}
	for ; i < hi; i += 2 {
		z0, z1 := keyNormals(key(i / 2))
		draw(i, z0)
		if i+1 < hi {
			draw(i+1, z1)
		}
	}
}

// gammaRate draws from the Gamma distribution with the given shape > 0 and
// rate > 0 (density ∝ x^(shape−1) e^(−rate·x), mean shape/rate), by
// Marsaglia & Tsang, "A simple method for generating gamma variables", ACM
// TOMS 26(3), 2000; shape < 1 uses their boost Γ(a) = Γ(a+1)·U^(1/a).
func gammaRate(r *rand.Rand, shape, rate float64) float64 {
	if shape < 1 {
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		return gammaRate(r, shape+1, rate) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		var x, v float64
		for {
			x = r.NormFloat64()
			v = 1 + c*x
			if v > 0 {
				break
			}
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x {
			return d * v / rate
		}
		if u > 0 && math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v / rate
		}
	}
}
