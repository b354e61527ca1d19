package tensor

import (
	"reflect"
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
