package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/dainx/dainx/compute"
)

// adamF32 is Adam's step in plain float32 arithmetic, each operation
// rounded on its own (the conversions keep the compiler from fusing them):
// the definition both adamAVX2 and adamGo must match bit for bit.
func adamF32(p, g, m, v float32, c *adamConst) (float32, float32, float32) {
	m = float32(float32(c.b1*m) + float32(c.omb1*g))
	v = float32(float32(c.b2*v) + float32(float32(c.omb2*g)*g))
	den := float32(float32(float32(math.Sqrt(float64(v)))*c.rc2) + c.eps)
	return float32(p - float32(float32(c.step*m)/den)), m, v
}

// adamValue draws the values that matter to the guard of adamAVX2 and to
// the float64 evaluation: zeros of both signs, subnormals, values near and
// across 2⁻⁴⁰ and 2⁴⁰, ordinary magnitudes, huge ones, infinities and NaN.
func adamValue(rng *rand.Rand, nonneg bool) float32 {
	var x float32
	switch rng.IntN(10) {
	case 0:
		x = 0
	case 1:
		x = math.Float32frombits(uint32(rng.IntN(1 << 23))) // subnormal
	case 2:
		x = float32(math.Ldexp(1+rng.Float64(), -41+rng.IntN(3))) // near 2⁻⁴⁰
	case 3:
		x = float32(math.Ldexp(1+rng.Float64(), 39+rng.IntN(3))) // near 2⁴⁰
	case 4:
		x = float32(math.Ldexp(1+rng.Float64(), -126+rng.IntN(90))) // tiny normal
	case 5:
		x = float32(math.Ldexp(1+rng.Float64(), 40+rng.IntN(88))) // huge
	case 6:
		x = []float32{float32(math.Inf(1)), float32(math.NaN()), math.MaxFloat32, math.SmallestNonzeroFloat32}[rng.IntN(4)]
	default:
		x = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-6)))
	}
	if !nonneg && rng.IntN(2) == 0 {
		x = -x
	}
	return x
}

// TestAdamLoops: adamAVX2 (both of its paths) and adamGo give plain float32
// Adam's bits on every element, subnormal and special values included, for
// early and late steps.
func TestAdamLoops(t *testing.T) {
	if off := unsafe.Offsetof(adamConst{}.d); off != 32 {
		t.Fatalf("adamConst.d at byte %d; the assembly reads it at 32", off)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	const n = 4099
	for _, step := range []int{1, 2, 10, 1000, 100000} {
		c := adamConstants(compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: step})
		p, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range p {
			p[i], g[i], m[i], v[i] = adamValue(rng, false), adamValue(rng, false), adamValue(rng, false), adamValue(rng, true)
			if rng.IntN(3) > 0 { // runs of ordinary lanes, so the fast path runs too
				p[i], g[i], m[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()*1e-2), float32(rng.NormFloat64()*1e-3), float32(rng.Float64()*1e-4)
			}
		}
		want := make([][3]float32, n)
		for i := range p {
			a, b, d := adamF32(p[i], g[i], m[i], v[i], c)
			want[i] = [3]float32{a, b, d}
		}
		for _, path := range []string{"go", "simd"} {
			pp, gg, mm, vv := append([]float32(nil), p...), append([]float32(nil), g...), append([]float32(nil), m...), append([]float32(nil), v...)
			done := 0
			if path == "simd" {
				if !New().simd {
					t.Log("no AVX2: only the Go loop")
					continue
				}
				done = adamSIMD(pp, gg, mm, vv, c)
			}
			adamGo(pp[done:], gg[done:], mm[done:], vv[done:], c)
			bad := 0
			for i := range pp {
				got := [3]float32{pp[i], mm[i], vv[i]}
				for j := range got {
					if math.Float32bits(got[j]) != math.Float32bits(want[i][j]) && !(got[j] != got[j] && want[i][j] != want[i][j]) {
						if bad++; bad <= 5 {
							t.Errorf("step %d, %s, element %d (p %g g %g m %g v %g): output %d is %g (%#x), want %g (%#x)",
								step, path, i, p[i], g[i], m[i], v[i], j, got[j], math.Float32bits(got[j]), want[i][j], math.Float32bits(want[i][j]))
						}
					}
				}
			}
		}
	}
}

// TestAdamL2: with AdamStep.L2 = λ, Adam gives each element the bits of
// plain float32 Adam with the gradient g + fl(float32(λ)·p) (p before the
// step), on every kernel path and for a length that is not a multiple of
// the L2 block or of 8; SparseAdam gives the listed rows those bits and
// leaves the other rows (and their moments) alone.
func TestAdamL2(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 13))
	const n = 2*l2Block + 37
	for _, k := range Kernels() {
		be, err := NewWith(Options{Kernel: k})
		if err != nil {
			t.Fatal(err)
		}
		for _, l2 := range []float64{1e-4, 0.3} {
			s := compute.AdamStep{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 3, L2: l2}
			c := adamConstants(s)
			p, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range p {
				p[i], g[i], m[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()*1e-2), float32(rng.NormFloat64()*1e-3), float32(rng.Float64()*1e-4)
			}
			want := make([][3]float32, n)
			for i := range p {
				gi := g[i] + float32(float32(l2)*p[i])
				a, b, d := adamF32(p[i], gi, m[i], v[i], c)
				want[i] = [3]float32{a, b, d}
			}
			pp, mm, vv := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), v...)
			be.Adam(vec(pp), vec(g), vec(mm), vec(vv), s)
			for i := range pp {
				if got := [3]float32{pp[i], mm[i], vv[i]}; got != want[i] {
					t.Fatalf("%s L2 %g: Adam element %d is %v, want %v", k, l2, i, got, want[i])
				}
			}
			// SparseAdam on a 3-row view of the same data: rows 2 and 0
			// listed (rows hold n/3 elements), row 1 not.
			w := n / 3
			pp, mm, vv = append([]float32(nil), p[:3*w]...), append([]float32(nil), m[:3*w]...), append([]float32(nil), v[:3*w]...)
			gc := make([]float32, 2*w)
			copy(gc[:w], g[2*w:3*w])
			copy(gc[w:], g[:w])
			be.SparseAdam(vec(pp), vec(gc), vec(mm), vec(vv), ivec{2, 0}, ivec{2}, w, s)
			for i := 0; i < 3*w; i++ {
				w3 := want[i]
				if i >= w && i < 2*w {
					w3 = [3]float32{p[i], m[i], v[i]}
				}
				if got := [3]float32{pp[i], mm[i], vv[i]}; got != w3 {
					t.Fatalf("%s L2 %g: SparseAdam element %d (row %d) is %v, want %v", k, l2, i, i/w, got, w3)
				}
			}
		}
	}
}
