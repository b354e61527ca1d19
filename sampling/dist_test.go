package sampling_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
)

// orGroup combines byte slices of n goroutines by bitwise or, as MPI's
// Allreduce would across processes.
type orGroup struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n, in   int
	gen     int
	acc     []byte
	outcome []byte
}

func (g *orGroup) or(b []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.in == 0 {
		g.acc = make([]byte, len(b))
	}
	for i, v := range b {
		g.acc[i] |= v
	}
	g.in++
	gen := g.gen
	if g.in == g.n {
		g.outcome, g.in = g.acc, 0
		g.gen++
		g.cond.Broadcast()
	} else {
		for g.gen == gen {
			g.cond.Wait()
		}
	}
	copy(b, g.outcome)
}

// TestCellsShared: the cells, statistics and errors of CellsShared on 1, 2
// and 3 simulated processes are those of Cells.
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
		for _, size := range []int{1, 2, 3} {
			g := &orGroup{n: size}
			g.cond = sync.NewCond(&g.mu)
			type result struct {
				cells []int32
				st    sampling.Stats
				err   error
			}
			res := make([]result, size)
			var wg sync.WaitGroup
			for r := 0; r < size; r++ {
				owned := tensor.NewCellSet(dims, 0)
				all := tensor.NewCellSet(dims, 0)
				inSupport := 0
				for k := 0; k < len(observed); k += 3 {
					c := observed[k : k+3]
					if all.Add(c) && dev.Reachable(c) {
						inSupport++
					}
					if sampling.Owner(c, size) == r {
						owned.Add(c)
					}
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, st, err := dev.CellsShared(owned, inSupport, n, sampling.Options{Key: 9, Round: 100}, sampling.Shared{Rank: r, Size: size, Or: g.or})
					res[r] = result{c, st, err}
				}()
			}
			wg.Wait()
			for r, got := range res {
				if (got.err == nil) != (werr == nil) || (werr != nil && got.err.Error() != werr.Error()) {
					t.Fatalf("n %d, %d processes, rank %d: error %v, want %v", n, size, r, got.err, werr)
				}
				if !slices.Equal(got.cells, want) || got.st != wst {
					t.Fatalf("n %d, %d processes, rank %d: %d cells %+v, want %d %+v", n, size, r, len(got.cells), got.st, len(want), wst)
				}
			}
		}
	}
}
