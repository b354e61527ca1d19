package clustertest

import (
	"slices"
	"testing"
)

// TestCollectives: on 3 ranks, sums, gathers and all-to-all give what MPI
// gives: the same sum everywhere, concatenation in rank order, and each
// rank receiving its part of every rank's send in rank order.
func TestCollectives(t *testing.T) {
	const p = 3
	got := make([][]int32, p)
	sums := make([][]int64, p)
	gathers := make([][]float64, p)
	Run(p, func(r Rank) {
		x := []int64{int64(r.Rank()), 10}
		r.SumI64(x)
		sums[r.Rank()] = x
		gathers[r.Rank()] = r.GatherF64(slices.Repeat([]float64{float64(r.Rank())}, r.Rank()))
		// Rank q sends its number, q+1 times… to rank 0; nothing to 1; one
		// copy to rank 2.
		me := int32(r.Rank())
		send := append(slices.Repeat([]int32{me}, r.Rank()+1), me)
		recv := make([]int32, p)
		got[r.Rank()] = r.AlltoallvI32(nil, send, []int32{int32(r.Rank() + 1), 0, 1}, recv)
	})
	for q := 0; q < p; q++ {
		if !slices.Equal(sums[q], []int64{3, 30}) {
			t.Errorf("rank %d: sum %v", q, sums[q])
		}
		if !slices.Equal(gathers[q], []float64{1, 2, 2}) {
			t.Errorf("rank %d: gather %v", q, gathers[q])
		}
	}
	if !slices.Equal(got[0], []int32{0, 1, 1, 2, 2, 2}) || len(got[1]) != 0 || !slices.Equal(got[2], []int32{0, 1, 2}) {
		t.Errorf("alltoallv: %v", got)
	}
}
