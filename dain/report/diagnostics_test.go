package report

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestSpearmanTies: Spearman's ρ with ties is Pearson's correlation of
// average ranks, computed here by hand: x = (1, 2, 2, 3, 4) ranks
// (1, 2.5, 2.5, 4, 5), y = (2, 1, 3, 3, 5) ranks (2, 1, 3.5, 3.5, 5);
// deviations from the mean rank 3 give Σdxdy = 7.25, Σdx² = Σdy² = 9.5,
// ρ = 7.25/9.5 = 0.76316 (the no-ties formula 1 − 6Σd²/(n(n²−1)) would
// give 0.775).
func TestSpearmanTies(t *testing.T) {
	if r := Ranks([]float64{1, 2, 2, 3, 4}); !slices.Equal(r, []float64{1, 2.5, 2.5, 4, 5}) {
		t.Errorf("ranks %v", r)
	}
	if r := Ranks([]float64{2, 1, 3, 3, 5}); !slices.Equal(r, []float64{2, 1, 3.5, 3.5, 5}) {
		t.Errorf("ranks %v", r)
	}
	if r := Ranks([]float64{7, 7, 7}); !slices.Equal(r, []float64{2, 2, 2}) {
		t.Errorf("ranks of a constant %v", r)
	}
	if r := Spearman([]float64{1, 2, 2, 3, 4}, []float64{2, 1, 3, 3, 5}); math.Abs(r-7.25/9.5) > 1e-15 {
		t.Errorf("ρ %.6f; want 7.25/9.5 = %.6f", r, 7.25/9.5)
	}
	// Monotone transforms do not change ρ; reversal negates it.
	x := []float64{0.1, 5, 3, 3, 9, 0.2}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = math.Exp(v)
	}
	if r := Spearman(x, y); r != 1 {
		t.Errorf("ρ of a monotone transform %v; want 1", r)
	}
	for i := range y {
		y[i] = -y[i]
	}
	if r := Spearman(x, y); r != -1 {
		t.Errorf("ρ of a reversed order %v; want −1", r)
	}
	for _, c := range [][2][]float64{{{1, 1, 1}, {1, 2, 3}}, {{1}, {2}}, {{1, 2}, {1, 2, 3}}} {
		if r := Spearman(c[0], c[1]); !math.IsNaN(r) {
			t.Errorf("Spearman(%v, %v) = %v; want NaN", c[0], c[1], r)
		}
	}
}

// TestRanksTopEntitiesAsStableSort: on values with many ties, Ranks and
// TopEntities give what a stable sort by value gives (average ranks over
// each tie; the heaviest entities first, ties by entity number).
func TestRanksTopEntitiesAsStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 7, 1000, 5000} {
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(r.IntN(max(1, n/10))) // ties
		}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		up := slices.Clone(idx)
		sort.SliceStable(up, func(a, b int) bool { return x[up[a]] < x[up[b]] })
		want := make([]float64, n)
		for i := 0; i < n; {
			j := i
			for j+1 < n && x[up[j+1]] == x[up[i]] {
				j++
			}
			for k := i; k <= j; k++ {
				want[up[k]] = float64(i+j)/2 + 1
			}
			i = j + 1
		}
		if got := Ranks(x); !slices.Equal(got, want) {
			t.Fatalf("n %d: Ranks differ from the stable sort's", n)
		}
		down := slices.Clone(idx)
		sort.SliceStable(down, func(a, b int) bool { return x[down[a]] > x[down[b]] })
		for _, share := range []float64{0.01, 0.1, 0.5, 1} {
			k := max(1, int(math.Ceil(share*float64(n)-1e-9)))
			if got := TopEntities(x, share); !slices.Equal(got, down[:min(k, n)]) {
				t.Fatalf("n %d, share %v: TopEntities %v, the stable sort's %v", n, share, got[:min(5, len(got))], down[:min(5, k)])
			}
		}
	}
}
