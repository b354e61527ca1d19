package ref

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dainx/dainx/compute"
)

// pairwiseLemma is an order-2 factorization machine's term by Rendle's
// Lemma 3.1 (ICDM 2010): the bias sum plus ½ Σ_k ((Σ_n x)² − Σ_n x²).
func pairwiseLemma(x []float64, order, width int) float64 {
	k := width - 1
	s := 0.0
	for n := 0; n < order; n++ {
		s += x[n*width+k]
	}
	for f := 0; f < k; f++ {
		sum, sq := 0.0, 0.0
		for n := 0; n < order; n++ {
			v := x[n*width+f]
			sum += v
			sq += v * v
		}
		s += 0.5 * (sum*sum - sq)
	}
	return s
}

func randVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 2*rng.Float64() - 1
	}
	return v
}

// TestPairwiseForward: PairwiseForward adds (+=) the definition's double
// loop, which equals Lemma 3.1's form, for orders 1 to 5 and widths 2
// (no factors: the bias sum alone) to 9.
func TestPairwiseForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for order := 1; order <= 5; order++ {
		for _, width := range []int{2, 3, 9} {
			const batch = 7
			x := randVec(rng, batch*order*width)
			y0 := randVec(rng, batch)
			y := append([]float64(nil), y0...)
			PairwiseForward(y, x, order, width)
			for b := range y {
				want := y0[b] + pairwiseLemma(x[b*order*width:(b+1)*order*width], order, width)
				if math.Abs(y[b]-want) > 1e-12 {
					t.Errorf("N=%d E=%d cell %d: %v, want %v (Lemma 3.1)", order, width, b, y[b], want)
				}
			}
		}
	}
}

// TestPairwiseBackwardFiniteDifference: PairwiseBackward's dx is the
// gradient of Σ_b dy[b]·f_b(x), f_b the term PairwiseForward adds, checked
// element by element against central differences of PairwiseForward. The
// function is quadratic in each element, so the central difference is
// exact but for rounding; a wrong formula (a mode's own column counted, the
// bias column's 1 left out, dy not applied) is off by O(1).
func TestPairwiseBackwardFiniteDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	f := func(x, dy []float64, order, width int) float64 {
		y := make([]float64, len(dy))
		PairwiseForward(y, x, order, width)
		s := 0.0
		for b := range y {
			s += dy[b] * y[b]
		}
		return s
	}
	for order := 1; order <= 4; order++ {
		for _, width := range []int{2, 5, 8} {
			const batch, h = 5, 1e-3
			x, dy := randVec(rng, batch*order*width), randVec(rng, batch)
			dx0 := randVec(rng, len(x))
			dx := append([]float64(nil), dx0...)
			PairwiseBackward(dx, dy, x, order, width)
			for i := range x {
				xp, xm := append([]float64(nil), x...), append([]float64(nil), x...)
				xp[i] += h
				xm[i] -= h
				fd := (f(xp, dy, order, width) - f(xm, dy, order, width)) / (2 * h)
				if got := dx[i] - dx0[i]; math.Abs(got-fd) > 1e-9 {
					t.Errorf("N=%d E=%d x[%d] (cell %d, mode %d, column %d): gradient %v, central difference %v",
						order, width, i, i/(order*width), i%(order*width)/width, i%width, got, fd)
				}
			}
		}
	}
}

// TestAdamL2: ref.Adam with L2 = λ is ref.Adam without it on the gradient
// g + λ·p, the gradient of the loss plus (λ/2)·‖p‖², and L2 = 0 uses g.
func TestAdamL2(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 50
	p, g, m, v := randVec(rng, n), randVec(rng, n), randVec(rng, n), randVec(rng, n)
	for i := range v {
		v[i] = math.Abs(v[i])
	}
	s := compute.AdamStep{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 4, L2: 0.05}
	p1, m1, v1 := append([]float64(nil), p...), append([]float64(nil), m...), append([]float64(nil), v...)
	Adam(p1, g, m1, v1, s)
	g2 := make([]float64, n)
	for i := range g2 {
		g2[i] = g[i] + s.L2*p[i]
	}
	s0 := s
	s0.L2 = 0
	p2, m2, v2 := append([]float64(nil), p...), append([]float64(nil), m...), append([]float64(nil), v...)
	Adam(p2, g2, m2, v2, s0)
	for i := range p1 {
		if p1[i] != p2[i] || m1[i] != m2[i] || v1[i] != v2[i] {
			t.Fatalf("element %d: (%v %v %v) with L2, (%v %v %v) on g + L2·p", i, p1[i], m1[i], v1[i], p2[i], m2[i], v2[i])
		}
	}
}
