package sampling_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/cluster/clustertest"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
)

// TestCellsShared: on 1, 2, 3 and 5 simulated processes, with rounds small
// enough that a run takes several, CellsShared's shares in process order
// are Cells' cells (each process's starting at Rank·n/Size) and its
// statistics and errors are Cells'.
func TestCellsShared(t *testing.T) {
	be := cpu.New()
	dims := []int{30, 20, 10}
	var tables []*sampling.Alias
	rng := rand.New(rand.NewPCG(3, 4))
	for _, d := range dims {
		w := make([]float64, d)
		for i := range w {
			w[i] = rng.Float64() * rng.Float64()
		}
		a, err := sampling.NewAlias(w)
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, a)
	}
	dev := sampling.Upload(be, tables)
	defer dev.Free()
	var observed []int32
	for k := 0; k < 2500; k++ {
		observed = append(observed, int32(rng.IntN(30)), int32(rng.IntN(20)), int32(rng.IntN(10)))
	}
	for _, n := range []int{0, 1, 700, 2900} {
		want, wst, werr := dev.Cells(observed, n, sampling.Options{Key: 9, Round: 100})
		for _, size := range []int{1, 2, 3, 5} {
			type result struct {
				cells []int32
				first int
				st    sampling.Stats
				err   error
			}
			res := make([]result, size)
			owned := make([]*tensor.CellSet, size)
			seen := tensor.NewCellSet(dims, 0)
			inSupport := 0
			for r := range owned {
				owned[r] = tensor.NewCellSet(dims, 0)
			}
			for k := 0; k < len(observed); k += 3 {
				c := observed[k : k+3]
				if seen.Add(c) && dev.Reachable(c) {
					inSupport++
				}
				owned[sampling.Owner(c, size)].Add(c)
			}
			clustertest.Run(size, func(r clustertest.Rank) {
				c, first, st, err := dev.CellsShared(owned[r.Rank()], inSupport, n, sampling.Options{Key: 9, Round: 100}, r)
				res[r.Rank()] = result{c, first, st, err}
			})
			var all []int32
			for r, got := range res {
				if (got.err == nil) != (werr == nil) || (werr != nil && got.err.Error() != werr.Error()) {
					t.Fatalf("n %d, %d processes, rank %d: error %v, want %v", n, size, r, got.err, werr)
				}
				if got.st != wst || (werr == nil && got.first != r*n/size) {
					t.Fatalf("n %d, %d processes, rank %d: first %d, %+v, want %d %+v", n, size, r, got.first, got.st, r*n/size, wst)
				}
				all = append(all, got.cells...)
			}
			if werr == nil && !slices.Equal(all, want) {
				t.Fatalf("n %d, %d processes: %d cells, not Cells' %d", n, size, len(all)/3, len(want)/3)
			}
		}
	}
}
