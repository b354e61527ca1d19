package dain

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dainx/dainx/cluster/clustertest"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/tensor"
)

// TestRunOnRanks: RunOn on 2 and 3 ranks (goroutines of one process, each
// holding a contiguous share of the cells, one of them none, and its own
// backend) gives Run's
// split fingerprint, new-cell count and new cells (the ranks' shares in
// rank order), and test RMSEs within 1%, for the paper's method, degree,
// duplication (whose ranks copy their own cells: distinct cells of the
// tensor with their values, not Run's), one that chooses among every new
// cell (dain-agree) and in-run (step hooks on every rank); the observed cells travel to their owners in
// several rounds (exchangeRound cut to 97 cells). The tensor fills 60% of
// its grid, so that most draws hit an observed cell: one missed in the
// exchange would be drawn as new.
func TestRunOnRanks(t *testing.T) {
	x := denseTensor(16, 12, 10, 0.6)
	defer func(r int) { exchangeRound = r }(exchangeRound)
	exchangeRound = 97
	for _, method := range []string{"dain", "degree", "duplication", "dain-agree", "dain-in-run", "bayes-fm", "auto"} {
		cfg := DefaultConfig()
		cfg.Layers, cfg.Epochs, cfg.Batch, cfg.Ratio = []int{24, 16, 8}, 3, 128, 0.3
		cfg.InfluenceValSample = 50 // in-run's sample, drawn over the ranks' validation cells
		cfg.BayesRank, cfg.BayesSamples = 4, 20
		if v, ok := VariantNamed(method); ok {
			v.Set(&cfg)
		} else {
			// bayes-fm's Gibbs chain (final model and value predictor),
			// and auto's choice among it and the trained models.
			cfg.FinalModel, cfg.Predictor = method, method
		}
		want, err := Run(context.Background(), x, cfg, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		// Each layout gives rank r the cells [bounds[r], bounds[r+1]); the
		// last leaves a rank with none, which still takes part in every
		// collective.
		n := x.NNZ()
		for _, bounds := range [][]int{{0, n / 2, n}, {0, n / 3, 2 * n / 3, n}, {0, n / 2, n, n}} {
			p := len(bounds) - 1
			res := make([]*Result, p)
			errs := make([]error, p)
			clustertest.Run(p, func(r clustertest.Rank) {
				lo, hi := bounds[r.Rank()], bounds[r.Rank()+1]
				sh := &Shard{Cells: x.Subset(seq(lo, hi)), First: lo, NNZ: x.NNZ()}
				res[r.Rank()], errs[r.Rank()] = RunOn(context.Background(), r, sh, cfg, cpu.New())
			})
			var cells []int32
			for r, got := range res {
				if errs[r] != nil {
					t.Fatalf("%s, %d ranks: rank %d: %v", method, p, r, errs[r])
				}
				g, w := got.Report, want.Report
				if g.SplitFingerprint != w.SplitFingerprint || g.NAug != w.NAug || g.Dist == nil || g.Dist.Ranks != p {
					t.Fatalf("%s, %d ranks: rank %d: split %s, %d new cells, dist %+v; Run's %s, %d", method, p, r, g.SplitFingerprint, g.NAug, g.Dist, w.SplitFingerprint, w.NAug)
				}
				if g.FinalModel != w.FinalModel || g.Predictor != w.Predictor || (method == "bayes-fm" && w.FinalModel != method) {
					t.Fatalf("%s, %d ranks: rank %d: final model %s, predictor %s; Run's %s, %s", method, p, r, g.FinalModel, g.Predictor, w.FinalModel, w.Predictor)
				}
				for _, c := range [][2]float64{{g.RMSEBefore, w.RMSEBefore}, {g.RMSEAfter, w.RMSEAfter}} {
					if math.Abs(c[0]/c[1]-1) > 0.01 {
						t.Errorf("%s, %d ranks: rank %d: RMSE %v, Run's %v", method, p, r, c[0], c[1])
					}
				}
				cells = append(cells, got.Aug.Idx...)
			}
			switch method {
			case "dain-agree":
				// dain-agree ranks candidates by predictions whose last
				// bits follow the summation order.
			case "duplication":
				// Each process copies its own training cells: a random
				// set as Run's is, not the same one.
				var vals []float64
				for _, got := range res {
					vals = append(vals, got.Aug.Val...)
				}
				checkCopies(t, x, cells, vals, 1)
			default:
				if !slices.Equal(cells, want.Aug.Idx) {
					t.Errorf("%s, %d ranks: the new cells differ from Run's", method, p)
				}
			}
			if len(cells) != len(want.Aug.Idx) {
				t.Errorf("%s, %d ranks: %d new cell indices, Run's %d", method, p, len(cells), len(want.Aug.Idx))
			}
		}
	}
}

// denseTensor returns a tensor of dims a×b×c holding the given share of
// its grid's cells, in random order, valued by a rank-1 model plus noise.
func denseTensor(a, b, c int, share float64) *tensor.COO {
	r := rand.New(rand.NewPCG(11, 12))
	x := &tensor.COO{Dims: []int{a, b, c}}
	for _, k := range r.Perm(a * b * c)[:int(share*float64(a*b*c))] {
		i, j, l := k/(b*c), k/c%b, k%c
		x.Idx = append(x.Idx, int32(i), int32(j), int32(l))
		x.Val = append(x.Val, 1+float64(i%3)*float64(j%4)*float64(l%5)/12+0.1*r.NormFloat64())
	}
	return x
}

func seq(lo, hi int) []int {
	out := make([]int, hi-lo)
	for i := range out {
		out[i] = lo + i
	}
	return out
}

// TestOracleOnRanks: -values oracle spread over ranks (one holding no
// cells) values each rank's share of dain's new cells as one process
// values those cells, noise draws included (a rank's share follows the
// draws of the shares before it); a cell off a noiseless generator on one
// rank is reported by every rank, numbered in the file.
func TestOracleOnRanks(t *testing.T) {
	for _, sigma := range []float64{0.1, 0} {
		g, err := tensor.NewGenerator([]int{20, 16, 12}, 1500, 3, sigma, 5)
		if err != nil {
			t.Fatal(err)
		}
		x, err := g.Tensor()
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.Layers, cfg.Epochs, cfg.Batch, cfg.Ratio, cfg.Rank, cfg.Channels = []int{24, 16, 8}, 2, 128, 0.3, 4, 4
		cfg.Values, cfg.Oracle = ValuesOracle, g
		want, err := Run(context.Background(), x, cfg, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		n := x.NNZ()
		for _, bounds := range [][]int{{0, n / 2, n}, {0, n / 3, n / 3, n}} {
			p := len(bounds) - 1
			res := make([]*Result, p)
			errs := make([]error, p)
			clustertest.Run(p, func(r clustertest.Rank) {
				lo, hi := bounds[r.Rank()], bounds[r.Rank()+1]
				res[r.Rank()], errs[r.Rank()] = RunOn(context.Background(), r, &Shard{Cells: x.Subset(seq(lo, hi)), First: lo, NNZ: n}, cfg, cpu.New())
			})
			var cells []int32
			var vals []float64
			for r, got := range res {
				if errs[r] != nil {
					t.Fatalf("σ %v, %d ranks: rank %d: %v", sigma, p, r, errs[r])
				}
				cells, vals = append(cells, got.Aug.Idx...), append(vals, got.Aug.Val...)
			}
			if !slices.Equal(cells, want.Aug.Idx) || !slices.Equal(vals, want.Aug.Val) {
				t.Errorf("σ %v, %d ranks: the new cells or their oracle values differ from one process's", sigma, p)
			}
		}
		if sigma > 0 {
			continue
		}
		// Cell 1000 off the noiseless generator: rank 1 holds it.
		y := x.Subset(seq(0, n))
		y.Val[1000] += 1
		errs := make([]error, 2)
		clustertest.Run(2, func(r clustertest.Rank) {
			lo, hi := r.Rank()*n/2, (r.Rank()+1)*n/2
			_, errs[r.Rank()] = RunOn(context.Background(), r, &Shard{Cells: y.Subset(seq(lo, hi)), First: lo, NNZ: n}, cfg, cpu.New())
		})
		for r, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "cell 1000 ") {
				t.Errorf("a cell off the generator on rank 1: rank %d: %v", r, err)
			}
		}
	}
}

// TestAgreeKeepOn: dain-agree's choice spread over ranks (shares of any
// size, some empty) keeps exactly agreeKeep's cells and values, each rank
// its share in draw order, also when many candidates tie at the cut.
func TestAgreeKeepOn(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	dims := []int{50, 40, 30}
	const m = 400
	cand := make([]int32, 3*m)
	a, b := make([]float64, m), make([]float64, m)
	for i := range m {
		cand[3*i], cand[3*i+1], cand[3*i+2] = int32(r.IntN(50)), int32(r.IntN(40)), int32(r.IntN(30))
		a[i] = float64(r.IntN(7)) / 4 // few distinct differences: ties everywhere
		b[i] = float64(r.IntN(7)) / 4
	}
	for _, n := range []int{0, 1, 57, 200, 399, 400} {
		want := agreeKeep(dims, cand, a, b, n)
		for _, cuts := range [][]int{{0, m}, {0, 150, m}, {0, 0, 220, 220, m}} {
			p := len(cuts) - 1
			got := make([]*tensor.COO, p)
			first := make([]int, p)
			clustertest.Run(p, func(rk clustertest.Rank) {
				lo, hi := cuts[rk.Rank()], cuts[rk.Rank()+1]
				e := &Experiment{x: &tensor.COO{Dims: dims}, sp: spread{cl: rk}}
				got[rk.Rank()] = e.agreeKeepOn(cand[3*lo:3*hi], a[lo:hi], b[lo:hi], n)
				first[rk.Rank()] = e.augFirst
			})
			var idx []int32
			var val []float64
			for k, g := range got {
				if first[k] != len(val) || g.NNZ() != (k+1)*n/p-k*n/p {
					t.Fatalf("n %d, cuts %v: rank %d holds %d cells from %d, want %d from %d", n, cuts, k, g.NNZ(), first[k], (k+1)*n/p-k*n/p, len(val))
				}
				idx, val = append(idx, g.Idx...), append(val, g.Val...)
			}
			if !slices.Equal(idx, want.Idx) || !slices.Equal(val, want.Val) {
				t.Fatalf("n %d, cuts %v: the kept cells differ from agreeKeep's", n, cuts)
			}
		}
	}
}

// checkCopies checks that cells (with vals) are copies of x's cells with
// their values, none more than times times.
func checkCopies(t *testing.T, x *tensor.COO, cells []int32, vals []float64, times int) {
	t.Helper()
	order := x.Order()
	if len(cells) != len(vals)*order {
		t.Fatalf("%d indices for %d values", len(cells), len(vals))
	}
	value := map[[3]int32]float64{}
	for k := range x.NNZ() {
		value[[3]int32(x.Cell(k))] = x.Val[k]
	}
	seen := map[[3]int32]int{}
	for k := range vals {
		c := [3]int32(cells[k*order : (k+1)*order])
		v, ok := value[c]
		if !ok || v != vals[k] {
			t.Fatalf("new cell %v (value %v) is not a cell of the tensor with its value (%v, %v)", c, vals[k], v, ok)
		}
		if seen[c]++; seen[c] > times {
			t.Fatalf("cell %v copied %d times, at most %d expected", c, seen[c], times)
		}
	}
}

// TestDistinctShares: the shares add up to n, every cell is drawn ⌊n/N⌋
// times before the remainder, one process takes all n without drawing,
// and the first process's count of the remainder follows the
// hypergeometric law (χ² over 20000 splits, 1e-3 significance).
func TestDistinctShares(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	fresh := rand.New(rand.NewPCG(5, 6))
	if got := distinctShares(r, 17, []int{4}); !slices.Equal(got, []int{17}) || r.Uint64() != fresh.Uint64() {
		t.Fatalf("one process: shares %v, or r was drawn from", got)
	}
	for _, c := range []struct {
		n     int
		sizes []int
	}{{0, []int{3, 0, 5}}, {5, []int{3, 0, 5}}, {8, []int{3, 0, 5}}, {21, []int{3, 0, 5}}, {7, []int{0, 0, 9}}} {
		got := distinctShares(r, c.n, c.sizes)
		total, sum := 0, 0
		for _, s := range c.sizes {
			total += s
		}
		for p, k := range got {
			sum += k
			if q := c.n / total; k < q*c.sizes[p] || k > (q+1)*c.sizes[p] {
				t.Fatalf("n %d, sizes %v: process %d gets %d", c.n, c.sizes, p, k)
			}
		}
		if sum != c.n {
			t.Fatalf("n %d, sizes %v: shares %v", c.n, c.sizes, got)
		}
	}
	// 6 draws among 4 + 7 + 5 cells: the first process's count is
	// hypergeometric(6 draws, 4 marked, 16).
	const trials = 20000
	counts := make([]float64, 5)
	for range trials {
		counts[distinctShares(r, 6, []int{4, 7, 5})[0]]++
	}
	binom := func(n, k int) float64 {
		b := 1.0
		for i := range k {
			b = b * float64(n-i) / float64(i+1)
		}
		return b
	}
	chi2 := 0.0
	for k, o := range counts {
		e := trials * binom(4, k) * binom(12, 6-k) / binom(16, 6)
		chi2 += (o - e) * (o - e) / e
	}
	if chi2 > 18.47 { // χ²(4 df) at 1e-3
		t.Fatalf("first process's counts %v: χ² %.1f against the hypergeometric law", counts, chi2)
	}
}

// TestDuplicateOnRanks: duplication on 1, 2 and 3 ranks (one of them
// empty) makes n copies of training cells with their values, each cell
// ⌊n/N⌋ or ⌈n/N⌉ times when n exceeds the training cells; the ranks'
// augFirst follow their shares; one rank makes one process's cells.
func TestDuplicateOnRanks(t *testing.T) {
	x := denseTensor(8, 7, 6, 0.5)
	cfg := DefaultConfig()
	e1, err := NewExperiment(x, cfg, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer e1.Close()
	ntrain := e1.Train.NNZ()
	for _, n := range []int{1, ntrain / 3, 2*ntrain + 5} {
		var st AugStats
		want, err := Duplicate{}.cells(context.Background(), e1, n, &st)
		if err != nil {
			t.Fatal(err)
		}
		for _, cuts := range [][]int{{0, ntrain}, {0, ntrain / 2, ntrain}, {0, 0, ntrain / 3, ntrain}} {
			p := len(cuts) - 1
			got := make([]*tensor.COO, p)
			first := make([]int, p)
			errs := make([]error, p)
			clustertest.Run(p, func(rk clustertest.Rank) {
				lo, hi := cuts[rk.Rank()], cuts[rk.Rank()+1]
				e := &Experiment{x: e1.x, cfg: e1.cfg, Train: e1.Train.Subset(seq(lo, hi)), sp: spread{cl: rk}}
				var st AugStats
				got[rk.Rank()], errs[rk.Rank()] = Duplicate{}.cells(context.Background(), e, n, &st)
				first[rk.Rank()] = e.augFirst
			})
			var idx []int32
			var val []float64
			for k, g := range got {
				if errs[k] != nil {
					t.Fatal(errs[k])
				}
				if first[k] != len(val) {
					t.Fatalf("n %d, cuts %v: rank %d starts at %d, after %d cells", n, cuts, k, first[k], len(val))
				}
				idx, val = append(idx, g.Idx...), append(val, g.Val...)
			}
			if len(val) != n {
				t.Fatalf("n %d, cuts %v: %d new cells", n, cuts, len(val))
			}
			if p == 1 && (!slices.Equal(idx, want.Idx) || !slices.Equal(val, want.Val)) {
				t.Fatalf("n %d: one rank's cells differ from one process's", n)
			}
			checkCopies(t, e1.Train, idx, val, (n+ntrain-1)/ntrain)
			if n > ntrain { // every cell at least ⌊n/N⌋ times
				seen := map[[3]int32]int{}
				for k := 0; k < len(idx); k += 3 {
					seen[[3]int32(idx[k:k+3])]++
				}
				for k := range ntrain {
					if seen[[3]int32(e1.Train.Cell(k))] < n/ntrain {
						t.Fatalf("n %d, cuts %v: training cell %d copied %d times", n, cuts, k, seen[[3]int32(e1.Train.Cell(k))])
					}
				}
			}
		}
	}
}
