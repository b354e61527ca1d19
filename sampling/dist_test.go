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

// group lets n goroutines exchange as MPI processes would: Alltoall and
// Sum wait for every member's call of the same round.
type group struct {
	mu    sync.Mutex
	cond  *sync.Cond
	n, in int
	gen   int
	sends [][]int32
	cnts  [][]int32
	sums  []int64
	out   [][]int32
	total []int64
}

func newGroup(n int) *group {
	g := &group{n: n, sends: make([][]int32, n), cnts: make([][]int32, n)}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// wait ends a round: the last member to arrive runs done.
func (g *group) wait(done func()) {
	g.in++
	gen := g.gen
	if g.in == g.n {
		done()
		g.in = 0
		g.gen++
		g.cond.Broadcast()
		return
	}
	for g.gen == gen {
		g.cond.Wait()
	}
}

func (g *group) alltoall(rank int, send, counts []int32) []int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sends[rank], g.cnts[rank] = send, counts
	g.wait(func() {
		g.out = make([][]int32, g.n)
		for src := range g.n {
			off := int32(0)
			for dst := range g.n {
				c := g.cnts[src][dst]
				g.out[dst] = append(g.out[dst], g.sends[src][off:off+c]...)
				off += c
			}
		}
	})
	return append([]int32{}, g.out[rank]...)
}

func (g *group) sum(x []int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.in == 0 {
		g.sums = make([]int64, len(x))
	}
	for i, v := range x {
		g.sums[i] += v
	}
	g.wait(func() { g.total = g.sums })
	copy(x, g.total)
}

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
			g := newGroup(size)
			type result struct {
				cells []int32
				first int
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
					sh := sampling.Shared{Rank: r, Size: size, Sum: g.sum,
						Alltoall: func(send, counts []int32) []int32 { return g.alltoall(r, send, counts) }}
					c, first, st, err := dev.CellsShared(owned, inSupport, n, sampling.Options{Key: 9, Round: 100}, sh)
					res[r] = result{c, first, st, err}
				}()
			}
			wg.Wait()
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
