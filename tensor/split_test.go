package tensor

import (
	"slices"
	"testing"
)

func TestSplitSizes(t *testing.T) {
	for _, c := range []struct {
		nnz, train, val, test int
		tf, vf                float64
	}{
		{10000, 7200, 1800, 1000, 0.1, 0.2},
		{100836, 72601, 18151, 10084, 0.1, 0.2}, // MovieLens: ceil, like scikit-learn
		{10, 7, 2, 1, 0.1, 0.2},
		{1, 0, 0, 1, 0.1, 0.2},
		{0, 0, 0, 0, 0.1, 0.2},
		{100, 100, 0, 0, 0, 0},
		{100, 0, 0, 100, 1, 0.5},
	} {
		train, val, test := Split(c.nnz, c.tf, c.vf, 1)
		if len(train) != c.train || len(val) != c.val || len(test) != c.test {
			t.Errorf("Split(%d, %v, %v): sizes %d/%d/%d, want %d/%d/%d",
				c.nnz, c.tf, c.vf, len(train), len(val), len(test), c.train, c.val, c.test)
		}
		seen := make([]int, c.nnz)
		for _, part := range [][]int{train, val, test} {
			if !slices.IsSorted(part) {
				t.Errorf("nnz %d: part not sorted", c.nnz)
			}
			for _, r := range part {
				seen[r]++
			}
		}
		for r, n := range seen {
			if n != 1 {
				t.Fatalf("nnz %d: row %d in %d parts", c.nnz, r, n)
			}
		}
	}
}

func TestSplitDeterministic(t *testing.T) {
	a1, b1, c1 := Split(10000, 0.1, 0.2, 42)
	a2, b2, c2 := Split(10000, 0.1, 0.2, 42)
	if !slices.Equal(a1, a2) || !slices.Equal(b1, b2) || !slices.Equal(c1, c2) {
		t.Error("same seed, different split")
	}
	_, _, c3 := Split(10000, 0.1, 0.2, 43)
	if slices.Equal(c1, c3) {
		t.Error("seeds 42 and 43 give the same test set")
	}
	// The test set is a random sample, not a prefix or a stride.
	if c1[len(c1)-1] < 9000 || c1[0] > 100 {
		t.Errorf("test set spans %d..%d", c1[0], c1[len(c1)-1])
	}
}

func TestSplitPanics(t *testing.T) {
	for _, f := range [][2]float64{{-0.1, 0.2}, {0.1, 1.5}, {nan(), 0.2}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Split fractions %v: no panic", f)
				}
			}()
			Split(10, f[0], f[1], 1)
		}()
	}
}
