package spread

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDistinctShares: the shares add up to n, every cell is drawn ⌊n/N⌋
// times before the remainder, one process takes all n without drawing,
// and the first process's count of the remainder follows the
// hypergeometric law (χ² over 20000 splits, 1e-3 significance).
func TestDistinctShares(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	fresh := rand.New(rand.NewPCG(5, 6))
	if got := DistinctShares(r, 17, []int{4}); !slices.Equal(got, []int{17}) || r.Uint64() != fresh.Uint64() {
		t.Fatalf("one process: shares %v, or r was drawn from", got)
	}
	for _, c := range []struct {
		n     int
		sizes []int
	}{{0, []int{3, 0, 5}}, {5, []int{3, 0, 5}}, {8, []int{3, 0, 5}}, {21, []int{3, 0, 5}}, {7, []int{0, 0, 9}}} {
		got := DistinctShares(r, c.n, c.sizes)
		total, sum := 0, 0
		for _, s := range c.sizes {
			total += s
		}
		for p, k := range got {
			sum += k
			if q := c.n / total; k < q*c.sizes[p] || k > (q+1)*c.sizes[p] {
				t.Fatalf("n %d, sizes %v: process %d gets %d", c.n, c.sizes, p, k)
			}
		}
		if sum != c.n {
			t.Fatalf("n %d, sizes %v: shares %v", c.n, c.sizes, got)
		}
	}
	// 6 draws among 4 + 7 + 5 cells: the first process's count is
	// hypergeometric(6 draws, 4 marked, 16).
	const trials = 20000
	counts := make([]float64, 5)
	for range trials {
		counts[DistinctShares(r, 6, []int{4, 7, 5})[0]]++
	}
	binom := func(n, k int) float64 {
		b := 1.0
		for i := range k {
			b = b * float64(n-i) / float64(i+1)
		}
		return b
	}
	chi2 := 0.0
	for k, o := range counts {
		e := trials * binom(4, k) * binom(12, 6-k) / binom(16, 6)
		chi2 += (o - e) * (o - e) / e
	}
	if chi2 > 18.47 { // χ²(4 df) at 1e-3
		t.Fatalf("first process's counts %v: χ² %.1f against the hypergeometric law", counts, chi2)
	}
}
