package keyperm

import (
	"math"
	"testing"
)

// TestBijection: for every n up to 700 and some larger ones, At is a
// permutation of 0..n−1 and Inv its inverse.
func TestBijection(t *testing.T) {
	ns := []int{0, 1, 2, 3, 4, 5}
	for n := 6; n <= 700; n++ {
		ns = append(ns, n)
	}
	ns = append(ns, 1<<16, 1<<16+1, 100003, 1<<20-1)
	for _, n := range ns {
		p := New(n, uint64(n)*7+1, 3)
		if p.Len() != n {
			t.Fatalf("Len %d, want %d", p.Len(), n)
		}
		seen := make([]bool, n)
		for i := 0; i < n; i++ {
			j := p.At(i)
			if j < 0 || j >= n || seen[j] {
				t.Fatalf("n %d: At(%d) = %d: not a permutation", n, i, j)
			}
			seen[j] = true
			if back := p.Inv(j); back != i {
				t.Fatalf("n %d: Inv(At(%d)) = %d", n, i, back)
			}
		}
	}
}

// TestKeys: the same key gives the same permutation; another seed or
// stream gives another one.
func TestKeys(t *testing.T) {
	n := 1000
	a, b := New(n, 5, 1), New(n, 5, 1)
	c, d := New(n, 6, 1), New(n, 5, 2)
	same, diffSeed, diffStream := true, 0, 0
	for i := 0; i < n; i++ {
		same = same && a.At(i) == b.At(i)
		if a.At(i) != c.At(i) {
			diffSeed++
		}
		if a.At(i) != d.At(i) {
			diffStream++
		}
	}
	if !same {
		t.Error("one key gave two permutations")
	}
	if diffSeed < n*9/10 || diffStream < n*9/10 {
		t.Errorf("another seed moved %d of %d items, another stream %d", diffSeed, n, diffStream)
	}
}

// chi2 returns Pearson's statistic of counts against a uniform
// expectation.
func chi2(counts []int, total int) float64 {
	e := float64(total) / float64(len(counts))
	s := 0.0
	for _, c := range counts {
		s += (float64(c) - e) * (float64(c) - e) / e
	}
	return s
}

// TestUniform: over many seeds, the position of an item is uniform
// (χ² over the n positions for items at the start, middle and end), and
// so is the item at a position, for a power of two and for an n that
// needs cycle-walking. 20000 keys, n = 16 or 23: the 0.1% critical values
// of χ² with 15 and 22 degrees of freedom are 37.7 and 48.3.
func TestUniform(t *testing.T) {
	const keys = 20000
	for _, c := range []struct {
		n    int
		crit float64
	}{{16, 37.7}, {23, 48.3}} {
		for _, item := range []int{0, c.n / 2, c.n - 1} {
			pos, at := make([]int, c.n), make([]int, c.n)
			for s := 0; s < keys; s++ {
				p := New(c.n, uint64(s), 11)
				pos[p.At(item)]++
				at[p.Inv(item)]++
			}
			if x := chi2(pos, keys); x > c.crit {
				t.Errorf("n %d: position of item %d: χ² %.1f > %.1f", c.n, item, x, c.crit)
			}
			if x := chi2(at, keys); x > c.crit {
				t.Errorf("n %d: item at position %d: χ² %.1f > %.1f", c.n, item, x, c.crit)
			}
		}
	}
}

// TestSplitFraction: a split by position (the first 10% of positions)
// takes about 10% of every block of items, at every scale: the
// permutation does not keep neighbours together.
func TestSplitFraction(t *testing.T) {
	n := 1 << 18
	p := New(n, 42, 0)
	const blocks = 64
	per := n / blocks
	for b := 0; b < blocks; b++ {
		k := 0
		for i := b * per; i < (b+1)*per; i++ {
			if p.At(i) < n/10 {
				k++
			}
		}
		// Binomial(per, 0.1): sd = sqrt(per·0.09) ≈ 38; allow 5 sd.
		if d := math.Abs(float64(k) - 0.1*float64(per)); d > 5*math.Sqrt(0.09*float64(per)) {
			t.Errorf("block %d of items: %d of %d in the first tenth of positions", b, k, per)
		}
	}
}
