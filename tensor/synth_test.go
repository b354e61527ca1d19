package tensor

import (
	"reflect"
	"strings"
	"testing"
)

func TestSynthetic(t *testing.T) {
	x, err := Synthetic([]int{30, 20, 10, 5}, 2000, 3, 0, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Validate(); err != nil {
		t.Fatal(err)
	}
	if x.NNZ() != 2000 || !reflect.DeepEqual(x.Dims, []int{30, 20, 10, 5}) {
		t.Fatalf("%d cells, dims %v", x.NNZ(), x.Dims)
	}
	// Rank 3 with U(0,1) factors: 0 < value < 3, mean 3·(1/2)⁴ = 0.1875.
	var mean float64
	for _, v := range x.Val {
		if !(v > 0 && v < 3) {
			t.Fatalf("value %v outside (0, 3)", v)
		}
		mean += v
	}
	mean /= float64(x.NNZ())
	if mean < 0.15 || mean > 0.23 {
		t.Errorf("mean value %.4f; want ≈ 0.1875", mean)
	}
	y, _ := Synthetic([]int{30, 20, 10, 5}, 2000, 3, 0, 7)
	z, _ := Synthetic([]int{30, 20, 10, 5}, 2000, 3, 0, 8)
	if !reflect.DeepEqual(x, y) || reflect.DeepEqual(x.Idx, z.Idx) {
		t.Error("not a deterministic function of the seed")
	}
	for _, bad := range []func() error{
		func() error { _, err := Synthetic(nil, 10, 1, 0, 1); return err },
		func() error { _, err := Synthetic([]int{4, 4}, 9, 1, 0, 1); return err },
		func() error { _, err := Synthetic([]int{4, 0}, 1, 1, 0, 1); return err },
		func() error { _, err := Synthetic([]int{40, 40}, 10, 0, 0, 1); return err },
		func() error { _, err := Synthetic([]int{40, 40}, 10, 1, -1, 1); return err },
	} {
		if bad() == nil {
			t.Error("bad arguments accepted")
		}
	}
}

// TestSyntheticLimits: sizes that would ask for terabytes (or overflow) are
// errors before any allocation: dainx synth -nnz 10¹² was a fatal
// out-of-memory (issue 31).
func TestSyntheticLimits(t *testing.T) {
	for _, tc := range []struct {
		dims      []int
		nnz, rank int
		want      string
	}{
		{[]int{100000, 100000, 100000}, 1_000_000_000_000, 3, "synthetic: 1000000000000 cells: above the limit 1073741824"},
		{[]int{40, 40}, 10, 1 << 40, "synthetic: rank 1099511627776: want 1…1048576"},
		{[]int{MaxDim, MaxDim}, 10, 1 << 20, "more than 2147483648 factor values"},
	} {
		_, err := Synthetic(tc.dims, tc.nnz, tc.rank, 0, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Synthetic(%v, %d, %d): %v, want %q", tc.dims, tc.nnz, tc.rank, err, tc.want)
		}
	}
}
