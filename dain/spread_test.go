package dain

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/cluster/clustertest"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain/cellmath"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/dain/streams"
	"github.com/dainx/dainx/sampling"
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
// several rounds (spread.ExchangeRound cut to 97 cells). The tensor fills 60% of
// its grid, so that most draws hit an observed cell: one missed in the
// exchange would be drawn as new.
func TestRunOnRanks(t *testing.T) {
	x := denseTensor(16, 12, 10, 0.6)
	defer func(r int) { spread.ExchangeRound = r }(spread.ExchangeRound)
	spread.ExchangeRound = 97
	for _, method := range []string{"dain", "degree", "duplication", "dain-agree", "dain-in-run", "bayes-fm", "auto", "ensemble", "uncertainty"} {
		cfg := DefaultConfig()
		cfg.Layers, cfg.Epochs, cfg.Batch, cfg.Ratio = []int{24, 16, 8}, 3, 128, 0.3
		cfg.InfluenceValSample = 50 // in-run's sample, drawn over the ranks' validation cells
		cfg.BayesRank, cfg.BayesSamples = 4, 20
		if v, ok := VariantNamed(method); ok {
			v.Set(&cfg)
		} else if method == "uncertainty" {
			// Placement by bayes-fm's posterior variance; its bayes-fm
			// final model counts the new cells as a tenth of an observation.
			cfg.Influence, cfg.FinalModel = InfluenceUncertaintyTracIn, FinalBayesFM
		} else {
			// bayes-fm's Gibbs chain (final model and value predictor),
			// auto's choice among it and the trained models (the new
			// cells valued by their ensemble), and the ensemble as final
			// model and value predictor (its weights' sums over ranks).
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
				sh := &tensor.Part{Cells: x.Subset(seq(lo, hi)), First: lo, NNZ: x.NNZ()}
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
				res[r.Rank()], errs[r.Rank()] = RunOn(context.Background(), r, &tensor.Part{Cells: x.Subset(seq(lo, hi)), First: lo, NNZ: n}, cfg, cpu.New())
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
			_, errs[r.Rank()] = RunOn(context.Background(), r, &tensor.Part{Cells: y.Subset(seq(lo, hi)), First: lo, NNZ: n}, cfg, cpu.New())
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
		want := cellmath.AgreeKeep(dims, cand, a, b, n)
		for _, cuts := range [][]int{{0, m}, {0, 150, m}, {0, 0, 220, 220, m}} {
			p := len(cuts) - 1
			got := make([]*tensor.COO, p)
			first := make([]int, p)
			clustertest.Run(p, func(rk clustertest.Rank) {
				lo, hi := cuts[rk.Rank()], cuts[rk.Rank()+1]
				e := &Experiment{x: &tensor.COO{Dims: dims}, sp: spread.State{Cl: rk}}
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
			got, _, first, errs := onRanks(p, func(rk clustertest.Rank) *Experiment {
				r := rk.Rank()
				return &Experiment{x: e1.x, cfg: e1.cfg, Train: e1.Train.Subset(seq(cuts[r], cuts[r+1])), sp: spread.State{Cl: rk}}
			}, func(e *Experiment, st *AugStats) (*tensor.COO, error) {
				return Duplicate{}.cells(context.Background(), e, n, st)
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

// nearCellsLoop is near-cells as one process drew it before it was spread
// over processes: one loop over one stream, candidate by candidate.
func nearCellsLoop(e *Experiment, tables []*sampling.Alias, alpha []float32, n int, st *AugStats) (*tensor.COO, error) {
	w := make([]float64, len(alpha))
	for z, a := range alpha {
		w[z] = math.Abs(float64(a))
	}
	cellTable, err := sampling.NewAlias(w)
	if err != nil {
		return nil, err
	}
	order := e.x.Order()
	observed := spread.ObservedSet(e.x.Dims, e.Train, e.Val, 0)
	drawn := tensor.NewCellSet(e.x.Dims, n)
	r := streams.New(e.cfg.Seed, streams.Near)
	aug := &tensor.COO{Dims: e.x.Dims}
	cell := make([]int32, order)
	for len(aug.Idx) < n*order {
		if st.Draws >= 100*n+100000 {
			return nil, fmt.Errorf("gave up")
		}
		st.Draws++
		copy(cell, e.Train.Cell(int(cellmath.DrawAlias(cellTable, r))))
		mode := r.IntN(order)
		cell[mode] = cellmath.DrawAlias(tables[mode], r)
		if observed.Has(cell) {
			st.RejectObserved++
			continue
		}
		if !drawn.Add(cell) {
			st.RejectRepeat++
			continue
		}
		aug.Idx = append(aug.Idx, cell...)
	}
	return aug, nil
}

// nearSetup returns an experiment on one process over a 24×20×16 tensor
// whose cells use the lower half of each mode: the training cells of
// "light" source (mode 1 index < 6 and mode 2 index < 5) first, with cell
// score 1, then the "heavy" ones (≥ 6, ≥ 5), with score −3 (|α| counts);
// and entity tables that draw only from each mode's upper half, so that a
// near cell is never observed and keeps its source's other two indices.
func nearSetup(t *testing.T) (*Experiment, []*sampling.Alias, []float32, int) {
	dims := []int{24, 20, 16}
	r := rand.New(rand.NewPCG(8, 9))
	x := &tensor.COO{Dims: dims}
	seen := map[[3]int32]bool{}
	add := func(i0, i1, n int) {
		for len(seen) < n {
			c := [3]int32{int32(i0 + r.IntN(6)), int32(i1 + r.IntN(5)), int32(r.IntN(8))}
			if !seen[c] {
				seen[c] = true
				x.Idx = append(x.Idx, c[:]...)
				x.Val = append(x.Val, r.Float64())
			}
		}
	}
	add(0, 0, 120) // light
	add(6, 5, 300) // heavy: 180 more
	var tr, va []int
	for k := range x.NNZ() {
		if k%6 == 5 {
			va = append(va, k)
		} else {
			tr = append(tr, k)
		}
	}
	e := &Experiment{x: x, cfg: DefaultConfig(), sp: spread.State{Cl: cluster.Local{}}}
	e.Train, e.Val = x.Subset(tr), x.Subset(va)
	e.sp.Counts = [3]int{len(tr), len(va), 0}
	light := 0 // 100 light training cells, then 150 heavy
	for light < len(tr) && e.Train.Cell(light)[0] < 6 {
		light++
	}
	var tables []*sampling.Alias
	for _, d := range dims {
		w := make([]float64, d)
		for i := d / 2; i < d; i++ {
			w[i] = 1
		}
		a, err := sampling.NewAlias(w)
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, a)
	}
	alpha := make([]float32, len(tr))
	for z := range alpha {
		alpha[z] = 1
		if z >= light {
			alpha[z] = -3
		}
	}
	return e, tables, alpha, light
}

// TestNearCellsOneLoop: on one process, near-cells in rounds (of 1, 7 and
// 2^20 candidates) make the cells and statistics of one loop over one
// stream, with cells drawn twice among them; and with every draw observed
// both give up at the same point.
func TestNearCellsOneLoop(t *testing.T) {
	defer func(r int) { spread.DrawRound = r }(spread.DrawRound)
	e, tables, alpha, _ := nearSetup(t)
	for _, n := range []int{1, 50, 400} {
		var ws AugStats
		want, err := nearCellsLoop(e, tables, alpha, n, &ws)
		if err != nil {
			t.Fatal(err)
		}
		if n == 400 && ws.RejectRepeat == 0 {
			t.Fatal("no cell drawn twice: the test misses the repeats")
		}
		for _, round := range []int{1, 7, 1 << 20} {
			spread.DrawRound = round
			var gs AugStats
			got, err := e.nearCells(context.Background(), tables, alpha, n, &gs)
			if err != nil {
				t.Fatal(err)
			}
			gs.Sample = 0
			if !slices.Equal(got.Idx, want.Idx) || gs != ws {
				t.Fatalf("n %d, rounds of %d: %d cells, %+v; one loop's %d, %+v", n, round, len(got.Idx)/3, gs, len(want.Idx)/3, ws)
			}
		}
	}
	// Entity tables of the lower halves only, on a tensor whose one
	// training cell's neighbours are all observed: every draw is rejected.
	full := denseTensor(2, 2, 2, 1)
	f := &Experiment{x: full, cfg: DefaultConfig(), sp: spread.State{Cl: cluster.Local{}}, Train: full, Val: &tensor.COO{Dims: full.Dims}}
	var ones []*sampling.Alias
	for range 3 {
		a, _ := sampling.NewAlias([]float64{1, 1})
		ones = append(ones, a)
	}
	spread.DrawRound = 1 << 20
	var st AugStats
	if _, err := f.nearCells(context.Background(), ones, make([]float32, 8), 1, &st); err == nil {
		t.Fatal("all-zero cell scores accepted")
	}
	st = AugStats{}
	alpha8 := []float32{1, 1, 1, 1, 1, 1, 1, 1}
	if _, err := f.nearCells(context.Background(), ones, alpha8, 1, &st); err == nil || st.Draws != 100*1+100000 {
		t.Fatalf("no free cell: %v after %d draws", err, st.Draws)
	}
}

// TestNearCellsOnRanks: near-cells on 2 and 3 ranks (one of them with no
// cells; rounds of 13 candidates) make n distinct new cells, each keeping
// two indices of a training cell, the ranks' augFirst following their
// shares and every rank's statistics the same and adding up; and the
// candidates' sources follow |α| over every rank: the heavy training
// cells (|α| 3, on their own ranks) are the sources of 3·150/(3·150 + 100)
// of the new cells (χ², 1 degree of freedom, 1e-3).
func TestNearCellsOnRanks(t *testing.T) {
	defer func(r int) { spread.DrawRound = r }(spread.DrawRound)
	spread.DrawRound = 13
	e1, tables, alpha, light := nearSetup(t)
	nt := e1.Train.NNZ()
	const n = 400
	for _, cuts := range [][]int{{0, light, nt}, {0, 0, light, nt}, {0, light / 2, light, nt}} {
		p := len(cuts) - 1
		got, stats, first, errs := onRanks(p, func(rk clustertest.Rank) *Experiment {
			r := rk.Rank()
			return rankExperiment(e1, rk, p, e1.Train.Subset(seq(cuts[r], cuts[r+1])))
		}, func(e *Experiment, st *AugStats) (*tensor.COO, error) {
			r := e.sp.Cl.Rank()
			return e.nearCells(context.Background(), tables, alpha[cuts[r]:cuts[r+1]], n, st)
		})
		seen := tensor.NewCellSet(e1.x.Dims, n)
		total, heavy := 0, 0
		for k, g := range got {
			if errs[k] != nil {
				t.Fatalf("cuts %v: rank %d: %v", cuts, k, errs[k])
			}
			if first[k] != total {
				t.Fatalf("cuts %v: rank %d starts at %d, after %d cells", cuts, k, first[k], total)
			}
			s := stats[k]
			if s != stats[0] || s.Draws != n+s.RejectObserved+s.RejectRepeat || s.RejectObserved != 0 {
				t.Fatalf("cuts %v: rank %d's statistics %+v, rank 0's %+v", cuts, k, stats[k], stats[0])
			}
			for z := 0; z < len(g.Idx); z += 3 {
				c := g.Idx[z : z+3]
				if !seen.Add(c) {
					t.Fatalf("cuts %v: new cell %v drawn twice", cuts, c)
				}
				// Exactly one index is in its mode's upper half (redrawn);
				// mode 1's index, or mode 2's when mode 1 was redrawn,
				// names the source.
				up := 0
				for m, i := range c {
					if int(i) >= e1.x.Dims[m]/2 {
						up++
					}
				}
				if up != 1 {
					t.Fatalf("cuts %v: new cell %v", cuts, c)
				}
				if c[0] >= 6 && c[0] < 12 || c[0] >= 12 && c[1] >= 5 {
					heavy++
				}
			}
			total += len(g.Idx) / 3
		}
		if total != n {
			t.Fatalf("cuts %v: %d new cells", cuts, total)
		}
		pHeavy := 3.0 * float64(nt-light) / (3*float64(nt-light) + float64(light))
		exp := n * pHeavy
		chi2 := (float64(heavy)-exp)*(float64(heavy)-exp)/exp + (float64(n-heavy)-(n-exp))*(float64(n-heavy)-(n-exp))/(n-exp)
		if chi2 > 10.83 {
			t.Fatalf("cuts %v: %d of %d new cells from heavy sources, %.0f expected (χ² %.1f)", cuts, heavy, n, exp, chi2)
		}
	}
}

// nearCellsRef is near-cells over the ranks' training cells trains (with
// their scores alphas) and observed set, as nearCells defines it, in one
// loop: candidate k's rank drawn by the ranks' shares of Σ|α| from one
// stream, the candidate from that rank's cells and stream, each accepted
// unless observed or drawn before, until n are; it returns each rank's
// accepted cells (by sampling.Owner over len(trains) ranks) in order and
// the statistics.
func nearCellsRef(e *Experiment, trains []*tensor.COO, alphas [][]float32, observed *tensor.CellSet, tables []*sampling.Alias, n int) ([][]int32, AugStats) {
	p := len(trains)
	cum := make([]float64, p)
	cells := make([]*sampling.Alias, p)
	gens := make([]*rand.Rand, p)
	for r := range p {
		w := make([]float64, len(alphas[r]))
		for z, a := range alphas[r] {
			w[z] = math.Abs(float64(a))
			cum[r] += w[z]
		}
		if cum[r] > 0 {
			cells[r], _ = sampling.NewAlias(w)
		}
		if r > 0 {
			cum[r] += cum[r-1]
		}
		gens[r] = streams.New(e.cfg.Seed, streams.Rank(streams.Near, r))
	}
	shared := streams.New(e.cfg.Seed, streams.NearShares)
	drawn := tensor.NewCellSet(e.x.Dims, n)
	out := make([][]int32, p)
	var st AugStats
	for kept := 0; kept < n; {
		st.Draws++
		r := spread.PickShare(cum, shared.Float64()*cum[p-1])
		c := append([]int32(nil), trains[r].Cell(int(cellmath.DrawAlias(cells[r], gens[r])))...)
		mode := gens[r].IntN(3)
		c[mode] = cellmath.DrawAlias(tables[mode], gens[r])
		switch {
		case observed.Has(c):
			st.RejectObserved++
		case !drawn.Add(c):
			st.RejectRepeat++
		default:
			o := sampling.Owner(c, p)
			out[o] = append(out[o], c...)
			kept++
		}
	}
	return out, st
}

// TestNearCellsRanksRef: on 2 and 3 ranks, with observed cells among the
// candidates and rounds of 1, 13 and 2^20 candidates, near-cells make
// exactly nearCellsRef's cells on each rank and its statistics.
func TestNearCellsRanksRef(t *testing.T) {
	defer func(r int) { spread.DrawRound = r }(spread.DrawRound)
	e1, _, alpha, light := nearSetup(t)
	// Entity tables over the whole of each mode: many candidates are
	// observed, some drawn twice.
	var tables []*sampling.Alias
	for _, d := range e1.x.Dims {
		w := make([]float64, d)
		for i := range w {
			w[i] = float64(1 + i%3)
		}
		a, _ := sampling.NewAlias(w)
		tables = append(tables, a)
	}
	nt := e1.Train.NNZ()
	observed := spread.ObservedSet(e1.x.Dims, e1.Train, e1.Val, 0)
	const n = 300
	for _, cuts := range [][]int{{0, light, nt}, {0, 0, light / 2, nt}} {
		p := len(cuts) - 1
		var trains []*tensor.COO
		var alphas [][]float32
		for r := range p {
			trains = append(trains, e1.Train.Subset(seq(cuts[r], cuts[r+1])))
			alphas = append(alphas, alpha[cuts[r]:cuts[r+1]])
		}
		want, ws := nearCellsRef(e1, trains, alphas, observed, tables, n)
		if ws.RejectObserved == 0 || ws.RejectRepeat == 0 {
			t.Fatalf("reference statistics %+v: the test misses observed or repeated candidates", ws)
		}
		for _, round := range []int{1, 13, 1 << 20} {
			spread.DrawRound = round
			got, stats, _, errs := onRanks(p, func(rk clustertest.Rank) *Experiment {
				return rankExperiment(e1, rk, p, trains[rk.Rank()])
			}, func(e *Experiment, st *AugStats) (*tensor.COO, error) {
				return e.nearCells(context.Background(), tables, alphas[e.sp.Cl.Rank()], n, st)
			})
			for r := range p {
				if errs[r] != nil || !slices.Equal(got[r].Idx, want[r]) || stats[r] != ws {
					t.Fatalf("cuts %v, rounds of %d: rank %d: %v, %d cells, %+v; the reference's %d, %+v",
						cuts, round, r, errs[r], len(got[r].Idx)/3, stats[r], len(want[r])/3, ws)
				}
			}
		}
	}
}

// TestReplaceRanksRef: entity replacement on 1, 2 and 3 ranks (one with no
// cells; rounds of 1, 13 and 2^20 candidates), with neighbour lists some
// of which are empty, makes on each rank exactly the cells and values of
// its definition drawn in one loop (each candidate's rank by the ranks'
// training-cell counts from one stream, the candidate from that rank's
// cells and stream, an empty list or an observed or repeated result
// rejected) and its statistics.
func TestReplaceRanksRef(t *testing.T) {
	defer func(r int) { spread.DrawRound = r }(spread.DrawRound)
	e1, _, _, light := nearSetup(t)
	dims, nt := e1.x.Dims, e1.Train.NNZ()
	r := rand.New(rand.NewPCG(10, 11))
	nbr := make([][][]int32, 3)
	for m, d := range dims {
		nbr[m] = make([][]int32, d)
		for i := range d {
			if i%4 == 3 {
				continue // no neighbours
			}
			for range 1 + r.IntN(10) {
				nbr[m][i] = append(nbr[m][i], int32(r.IntN(d)))
			}
		}
	}
	observed := spread.ObservedSet(e1.x.Dims, e1.Train, e1.Val, 0)
	const n = 250
	for _, cuts := range [][]int{{0, nt}, {0, light, nt}, {0, 0, light / 2, nt}} {
		p := len(cuts) - 1
		// The definition in one loop.
		cum := make([]float64, p)
		gens := make([]*rand.Rand, p)
		for q := range p {
			cum[q] = float64(cuts[q+1] - cuts[0])
			gens[q] = streams.New(e1.cfg.Seed, streams.Rank(streams.Replace, q))
		}
		shared := streams.New(e1.cfg.Seed, streams.ReplaceShares)
		drawn := tensor.NewCellSet(dims, n)
		want, wantV := make([][]int32, p), make([][]float64, p)
		var ws AugStats
		for kept := 0; kept < n; {
			ws.Draws++
			q := 0
			if p > 1 {
				q = spread.PickShare(cum, shared.Float64()*cum[p-1])
			}
			s := gens[q]
			z := cuts[q] + s.IntN(cuts[q+1]-cuts[q])
			c := append([]int32(nil), e1.Train.Cell(z)...)
			mode := s.IntN(3)
			if len(nbr[mode][c[mode]]) == 0 {
				ws.RejectObserved++
				continue
			}
			c[mode] = nbr[mode][c[mode]][s.IntN(len(nbr[mode][c[mode]]))]
			if observed.Has(c) || !drawn.Add(c) {
				ws.RejectRepeat++
				continue
			}
			o := sampling.Owner(c, p)
			want[o], wantV[o] = append(want[o], c...), append(wantV[o], e1.Train.Val[z])
			kept++
		}
		if ws.RejectObserved == 0 || ws.RejectRepeat == 0 {
			t.Fatalf("reference statistics %+v: the test misses a kind of rejection", ws)
		}
		for _, round := range []int{1, 13, 1 << 20} {
			spread.DrawRound = round
			got, stats, _, errs := onRanks(p, func(rk clustertest.Rank) *Experiment {
				q := rk.Rank()
				return rankExperiment(e1, rk, p, e1.Train.Subset(seq(cuts[q], cuts[q+1])))
			}, func(e *Experiment, st *AugStats) (*tensor.COO, error) {
				return e.replace(context.Background(), nbr, n, st)
			})
			for q := range p {
				if errs[q] != nil || !slices.Equal(got[q].Idx, want[q]) || !slices.Equal(got[q].Val, wantV[q]) || stats[q] != ws {
					t.Fatalf("cuts %v, rounds of %d: rank %d: %v, %d cells, %+v; the definition's %d, %+v",
						cuts, round, q, errs[q], got[q].NNZ(), stats[q], len(wantV[q]), ws)
				}
			}
		}
	}
}

// onRanks runs f on p goroutine ranks, each on the experiment that exp
// makes for it, and returns every rank's cells, statistics (without the
// seconds), augFirst and error.
func onRanks(p int, exp func(rk clustertest.Rank) *Experiment, f func(e *Experiment, st *AugStats) (*tensor.COO, error)) ([]*tensor.COO, []AugStats, []int, []error) {
	got, stats := make([]*tensor.COO, p), make([]AugStats, p)
	first, errs := make([]int, p), make([]error, p)
	clustertest.Run(p, func(rk clustertest.Rank) {
		r := rk.Rank()
		e := exp(rk)
		got[r], errs[r] = f(e, &stats[r])
		stats[r].Sample = 0
		first[r] = e.augFirst
	})
	return got, stats, first, errs
}

// rankExperiment is e1's experiment as rank rk of p holds it: train as its
// training cells and the rank's p-th of e1's validation cells.
func rankExperiment(e1 *Experiment, rk clustertest.Rank, p int, train *tensor.COO) *Experiment {
	r, nv := rk.Rank(), e1.Val.NNZ()
	return &Experiment{x: e1.x, cfg: e1.cfg, Train: train, Val: e1.Val.Subset(seq(r*nv/p, (r+1)*nv/p)),
		sp: spread.State{Cl: rk, Counts: e1.sp.Counts}}
}
