package cluster

import (
	"slices"
	"testing"
)

// TestLocal: on one process the sums change nothing, and every gather and
// exchange returns this process's data in memory of its own.
func TestLocal(t *testing.T) {
	var c Cluster = Local{}
	if c.Size() != 1 || c.Rank() != 0 {
		t.Fatalf("size %d, rank %d", c.Size(), c.Rank())
	}
	f := []float32{1.5, -2}
	c.SumF32(f)
	d := []float64{3}
	c.SumF64(d)
	i := []int64{-4}
	c.SumI64(i)
	if f[0] != 1.5 || f[1] != -2 || d[0] != 3 || i[0] != -4 {
		t.Errorf("sums changed x: %v %v %v", f, d, i)
	}
	g := c.GatherF32(f)
	g[0] = 9
	if f[0] != 1.5 {
		t.Error("GatherF32 returned x itself")
	}
	s := []int32{5, 6, 7}
	if got := c.AlltoallI32(s, []int32{2}); !slices.Equal(got, []int32{5, 6}) {
		t.Errorf("AlltoallI32: %v", got)
	}
	recv := []int32{0}
	got := c.AlltoallvI32(make([]int32, 0, 1), s, []int32{3}, recv)
	if !slices.Equal(got, s) || recv[0] != 3 {
		t.Errorf("AlltoallvI32: %v, received %v", got, recv)
	}
	if got := c.AlltoallvF32(nil, f, []int32{2}, []int32{2}); !slices.Equal(got, f) {
		t.Errorf("AlltoallvF32: %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("AlltoallI32 with two counts on one process did not panic")
		}
	}()
	c.AlltoallI32(s, []int32{1, 1})
}
