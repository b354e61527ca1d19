package tensor

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func nan() float64 { return math.NaN() }

func TestCOOBasics(t *testing.T) {
	c := sample()
	if c.Order() != 3 || c.NNZ() != 4 {
		t.Fatalf("order %d nnz %d", c.Order(), c.NNZ())
	}
	if got := c.Cell(1); !reflect.DeepEqual(got, []int32{2, 0, 0}) || cap(got) != 3 {
		t.Errorf("Cell(1) = %v cap %d", got, cap(got))
	}
	s := c.Subset([]int{3, 0})
	want := &COO{Dims: []int{3, 5, 2}, Idx: []int32{0, 0, 0, 0, 4, 1}, Val: []float64{12345678901234.5, 2.292604}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Subset = %+v", s)
	}
	s.Idx[0], s.Dims[0] = 2, 9 // a copy
	if c.Idx[9] != 0 || c.Dims[0] != 3 {
		t.Error("Subset shares memory")
	}
	if e := c.Subset(nil); e.NNZ() != 0 || len(e.Idx) != 0 || e.Order() != 3 {
		t.Errorf("empty subset %+v", e)
	}
	u := &COO{Dims: []int{1, 9, 1}, Idx: []int32{0, 8, 0}, Val: []float64{5}}
	a := c.Append(u)
	if a.NNZ() != 5 || !reflect.DeepEqual(a.Dims, []int{3, 9, 2}) || !reflect.DeepEqual(a.Cell(4), []int32{0, 8, 0}) || a.Val[4] != 5 {
		t.Errorf("Append = %+v", a)
	}
	if err := a.Validate(); err != nil {
		t.Error(err)
	}
	if cl := c.Clone(); !reflect.DeepEqual(cl, c) || &cl.Idx[0] == &c.Idx[0] {
		t.Error("Clone")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Subset out of range: no panic")
			}
		}()
		c.Subset([]int{4})
	}()
}

func TestValidate(t *testing.T) {
	if err := sample().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		mutate func(*COO)
		want   string
	}{
		{"order 0", func(c *COO) { c.Dims = nil }, "order 0"},
		{"dim 0", func(c *COO) { c.Dims[1] = 0 }, "mode 2 has size 0"},
		{"dim huge", func(c *COO) { c.Dims[1] = MaxDim + 1 }, "mode 2 has size"},
		{"short idx", func(c *COO) { c.Idx = c.Idx[:11] }, "11 indices for 4 cells"},
		{"range", func(c *COO) { c.Idx[4] = 5 }, "cell 1 (2, 5, 0): index 5 in mode 2 out of range [0, 5)"},
		{"negative", func(c *COO) { c.Idx[2] = -1 }, "index -1 in mode 3"},
		{"nan", func(c *COO) { c.Val[3] = nan() }, "cell 3 (0, 0, 0): value NaN is not finite"},
		{"inf", func(c *COO) { c.Val[0] = math.Inf(-1) }, "is not finite"},
		{"huge", func(c *COO) { c.Val[1] = 1e20 }, "is too large"},
		{"dup", func(c *COO) { copy(c.Cell(3), c.Cell(2)) }, "cell 3 (1, 1, 1) duplicates cell 2"},
		{"dup big dims", func(c *COO) { c.Dims = []int{MaxDim, MaxDim, MaxDim}; copy(c.Cell(3), c.Cell(0)) }, "cell 3 (0, 4, 1) duplicates cell 0"},
	} {
		s := sample()
		c.mutate(s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	// Big dims without duplicates is valid (string-key path).
	s := sample()
	s.Dims = []int{MaxDim, MaxDim, MaxDim}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
}

func TestCellSet(t *testing.T) {
	for _, dims := range [][]int{
		{3, 5, 2},
		{MaxDim, MaxDim, 3}, // product > 2^63: string keys
	} {
		s := NewCellSet(dims, 4)
		if wantStr := dims[0] == MaxDim; (s.strides == nil) != wantStr {
			t.Errorf("dims %v: string fallback = %v", dims, s.strides == nil)
		}
		a, b := []int32{0, 4, 1}, []int32{2, 0, 1}
		if s.Has(a) || s.Len() != 0 {
			t.Error("empty set has a cell")
		}
		if !s.Add(a) || s.Add(a) || !s.Has(a) || s.Has(b) || s.Len() != 1 {
			t.Errorf("dims %v: after Add(a)", dims)
		}
		a[0] = 1 // the set keeps its own copy
		if s.Has(a) || !s.Has([]int32{0, 4, 1}) {
			t.Errorf("dims %v: set aliases the caller's slice", dims)
		}
		if !s.Add(b) || s.Len() != 2 || !s.Has(b) {
			t.Errorf("dims %v: after Add(b)", dims)
		}
		// Cells that differ only in one mode are distinct.
		for i := range int32(2) {
			for j := range int32(5) {
				for k := range int32(2) {
					s.Add([]int32{i, j, k})
				}
			}
		}
		if s.Len() != 21 {
			t.Errorf("dims %v: Len %d, want 21", dims, s.Len())
		}
		for _, bad := range [][]int32{{0, 0}, {3, 0, 0}, {0, -1, 0}, {0, 0, 3}} {
			if dims[0] == MaxDim && bad[0] == 3 {
				continue
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("dims %v: Has(%v) did not panic", dims, bad)
					}
				}()
				s.Has(bad)
			}()
		}
	}
	// Mixed-radix keys near the 2^63 limit stay distinct.
	dims := []int{1 << 31, 1 << 31, 1 << 0}
	s := NewCellSet(dims, 0)
	if s.strides == nil {
		t.Fatal("2^62 cells should use integer keys")
	}
	last := int32(MaxDim)
	for _, c := range [][]int32{{0, 0, 0}, {0, last, 0}, {1, 0, 0}, {last, last, 0}, {last, 0, 0}} {
		if !s.Add(c) {
			t.Errorf("%v collides", c)
		}
	}
}

// TestCellSetTable: the open-addressing table agrees with a map through
// growth from an empty and a sized set, on random cells with repeats, and
// stays within its memory bound (about 12 bytes a cell when sized ahead).
func TestCellSetTable(t *testing.T) {
	dims := []int{50, 40, 30}
	r := rand.New(rand.NewPCG(3, 4))
	for _, capacity := range []int{0, 5000, 30000} {
		s := NewCellSet(dims, capacity)
		ref := map[[3]int32]bool{}
		for range 20000 {
			c := [3]int32{int32(r.IntN(50)), int32(r.IntN(40)), int32(r.IntN(30))}
			if got, want := s.Add(c[:]), !ref[c]; got != want {
				t.Fatalf("capacity %d: Add(%v) = %v, want %v", capacity, c, got, want)
			}
			ref[c] = true
			q := [3]int32{int32(r.IntN(50)), int32(r.IntN(40)), int32(r.IntN(30))}
			if s.Has(q[:]) != ref[q] {
				t.Fatalf("capacity %d: Has(%v) = %v", capacity, q, !ref[q])
			}
		}
		if s.Len() != len(ref) {
			t.Errorf("capacity %d: Len %d, want %d", capacity, s.Len(), len(ref))
		}
		if 5*s.Len() > 4*len(s.slots) {
			t.Errorf("capacity %d: %d cells in %d slots", capacity, s.Len(), len(s.slots))
		}
	}
	if s := NewCellSet(dims, 1000); len(s.slots)*8 > 12*1000+8 {
		t.Errorf("a set sized for 1000 cells takes %d bytes", len(s.slots)*8)
	}
}
