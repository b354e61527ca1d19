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

// TestKeyedSplit: the keyed split has Split's part sizes for every size
// and fraction, covers every cell once, gives each range of cells the
// same parts as the whole (so any number of processes agree), and spreads
// every part over the whole file.
func TestKeyedSplit(t *testing.T) {
	for _, nnz := range []int{0, 1, 2, 3, 10, 97, 1000, 4099} {
		for _, f := range [][2]float64{{0.1, 0.2}, {0, 0.5}, {0.3, 0}, {1, 0}} {
			tr, va, te := Split(nnz, f[0], f[1], 9)
			s := NewKeyedSplit(nnz, f[0], f[1], 9)
			ktr, kva, kte := s.Counts()
			if ktr != len(tr) || kva != len(va) || kte != len(te) {
				t.Fatalf("nnz %d, fractions %v: sizes %d/%d/%d, Split's %d/%d/%d", nnz, f, ktr, kva, kte, len(tr), len(va), len(te))
			}
			atr, ava, ate := s.Cells(0, nnz)
			if len(atr) != ktr || len(ava) != kva || len(ate) != kte {
				t.Fatalf("nnz %d: Cells gives %d/%d/%d, Counts %d/%d/%d", nnz, len(atr), len(ava), len(ate), ktr, kva, kte)
			}
			seen := make([]int, nnz)
			for _, part := range [][]int{atr, ava, ate} {
				if !slices.IsSorted(part) {
					t.Fatalf("nnz %d: a part is not ascending", nnz)
				}
				for _, c := range part {
					seen[c]++
				}
			}
			for c, k := range seen {
				if k != 1 {
					t.Fatalf("nnz %d: cell %d in %d parts", nnz, c, k)
				}
			}
			for _, ranks := range []int{2, 3, 7} {
				var gtr, gva, gte []int
				for r := 0; r < ranks; r++ {
					a, b, c := s.Cells(r*nnz/ranks, (r+1)*nnz/ranks)
					gtr, gva, gte = append(gtr, a...), append(gva, b...), append(gte, c...)
				}
				if !slices.Equal(gtr, atr) || !slices.Equal(gva, ava) || !slices.Equal(gte, ate) {
					t.Fatalf("nnz %d, %d ranges: parts differ from the whole's", nnz, ranks)
				}
			}
		}
	}
	// Spread: the test cells of 100000 fall in every tenth of the file
	// about equally (10% each; binomial sd ≈ 95 of 1000 expected).
	s := NewKeyedSplit(100000, 0.1, 0.2, 3)
	_, _, te := s.Cells(0, 100000)
	tenth := make([]int, 10)
	for _, c := range te {
		tenth[c/10000]++
	}
	for i, k := range tenth {
		if k < 850 || k > 1150 {
			t.Errorf("tenth %d of the file holds %d of the %d test cells", i, k, len(te))
		}
	}
}

// TestKeyedPartsPartition: Parts gives each cell the part Cells puts it
// in, and Partition copies each part's cells, in order, with their values.
func TestKeyedPartsPartition(t *testing.T) {
	s := NewKeyedSplit(5000, 0.1, 0.2, 11)
	lo, hi := 1234, 4321
	part := make([]uint8, hi-lo)
	s.Parts(part, lo)
	tr, va, te := s.Cells(lo, hi)
	x := &COO{Dims: []int{5000, 3}}
	for c := lo; c < hi; c++ {
		x.Idx = append(x.Idx, int32(c), int32(c%3))
		x.Val = append(x.Val, float64(c)/7)
	}
	parts := x.Partition(part, 3)
	for p, cells := range [][]int{tr, va, te} {
		got := parts[p]
		if got.NNZ() != len(cells) || cap(got.Val) != len(cells) {
			t.Fatalf("part %d: %d cells (capacity %d), want %d", p, got.NNZ(), cap(got.Val), len(cells))
		}
		for i, c := range cells {
			if got.Idx[2*i] != int32(c) || got.Idx[2*i+1] != int32(c%3) || got.Val[i] != float64(c)/7 {
				t.Fatalf("part %d cell %d: %v %v, want cell %d", p, i, got.Cell(i), got.Val[i], c)
			}
		}
	}
}
