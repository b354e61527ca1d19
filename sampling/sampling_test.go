package sampling_test

import (
	"flag"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/sampling"
)

// -prob runs the χ² tests with fresh random seeds; they then fail about
// once in 1000 runs each (the test's significance level).
var prob = flag.Bool("prob", false, "run the stochastic χ² variants with random seeds")

// chi2 draws n samples of column col from table a via SampleAlias on be and
// returns the χ² statistic against the exact probabilities of the
// quantised table, and the degrees of freedom.
func chi2(t *testing.T, be compute.Backend, a *sampling.Alias, n int, key uint64) (float64, int) {
	t.Helper()
	tab := sampling.Upload(be, []*sampling.Alias{a})
	defer tab.Free()
	out := be.AllocI32(n)
	tab.Draw(out, key, 0)
	got := make([]int32, n)
	if err := be.DownloadI32(got, out); err != nil {
		t.Fatal(err)
	}
	counts := make([]float64, len(a.Thresh))
	for _, j := range got {
		counts[j]++
	}
	p := a.Prob()
	var stat float64
	df := -1
	for j, c := range counts {
		e := p[j] * float64(n)
		if e == 0 {
			if c != 0 {
				t.Fatalf("entity %d has probability 0 but was drawn %v times", j, c)
			}
			continue
		}
		stat += (c - e) * (c - e) / e
		df++
	}
	return stat, df
}

func weights(rng *rand.Rand, n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		switch {
		case i%7 == 3:
			w[i] = 0 // entities never seen in training
		case i%11 == 0:
			w[i] = 50 * rng.Float64() // a few heavy ones
		default:
			w[i] = rng.ExpFloat64()
		}
	}
	return w
}

// TestAliasChiSquare checks, at a fixed seed, that draws follow the table's
// distribution: χ² below its 0.999 quantile.
func TestAliasChiSquare(t *testing.T) {
	be := cpu.New()
	seeds := []uint64{1, 2, 3}
	if *prob {
		seeds = []uint64{rand.Uint64(), rand.Uint64(), rand.Uint64()}
	}
	for _, size := range []int{1, 2, 17, 500} {
		for _, seed := range seeds {
			a, err := sampling.NewAlias(weights(rand.New(rand.NewPCG(seed, 9)), size))
			if err != nil {
				t.Fatal(err)
			}
			stat, df := chi2(t, be, a, 200000, seed)
			if df == 0 {
				continue // one reachable outcome: nothing to test but zeros above
			}
			crit := distuv.ChiSquared{K: float64(df)}.Quantile(0.999)
			if stat > crit {
				t.Errorf("size %d seed %d: χ² = %.1f > %.1f (df %d, p < 0.001)", size, seed, stat, crit, df)
			}
		}
	}
}

// TestAliasProb checks that the quantised table realises the normalised
// weights to within I·2⁻³² per outcome.
func TestAliasProb(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, size := range []int{1, 3, 64, 1000} {
		w := weights(rng, size)
		if size == 1 {
			w[0] = 1
		}
		a, err := sampling.NewAlias(w)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, v := range w {
			sum += v
		}
		for i, p := range a.Prob() {
			if d := math.Abs(p - w[i]/sum); d > float64(size+1)/(1<<32)+1e-15 {
				t.Errorf("size %d entity %d: table gives %g, weights %g", size, i, p, w[i]/sum)
			}
			if w[i] == 0 && p != 0 {
				t.Errorf("size %d entity %d: weight 0 but probability %g", size, i, p)
			}
		}
	}
}

func TestNewAliasErrors(t *testing.T) {
	for _, w := range [][]float64{nil, {0, 0}, {1, -1}, {1, math.NaN()}, {math.Inf(1), 1}} {
		if _, err := sampling.NewAlias(w); err == nil {
			t.Errorf("NewAlias(%v) succeeded", w)
		}
	}
}

func tables(t *testing.T, w ...[]float64) []*sampling.Alias {
	var out []*sampling.Alias
	for _, v := range w {
		a, err := sampling.NewAlias(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// TestCellsRejects checks that drawn cells are distinct, never observed,
// only use entities of positive weight, and do not depend on the round
// size.
func TestCellsRejects(t *testing.T) {
	be := cpu.New()
	w := tables(t, []float64{5, 1, 0, 1}, []float64{1, 3, 1}, []float64{2, 0, 2})
	// Observe a dense block of the heavy entities.
	var observed []int32
	for i := int32(0); i < 2; i++ {
		for j := int32(0); j < 3; j++ {
			observed = append(observed, i, j, 0)
		}
	}
	var first []int32
	for _, round := range []int{1, 7, 0} {
		tab := sampling.Upload(be, w)
		cells, st, err := tab.Cells(observed, 12, sampling.Options{Key: 99, Round: round})
		tab.Free()
		if err != nil {
			t.Fatal(err)
		}
		if st.Observed == 0 {
			t.Errorf("round %d: no observed candidate was rejected; the test does not exercise rejection", round)
		}
		seen := map[[3]int32]bool{}
		for k := 0; k < len(cells); k += 3 {
			c := [3]int32{cells[k], cells[k+1], cells[k+2]}
			if c[0] == 2 || c[2] == 1 {
				t.Errorf("cell %v uses an entity of weight 0", c)
			}
			if c[2] == 0 && c[0] < 2 {
				t.Errorf("cell %v is observed", c)
			}
			if seen[c] {
				t.Errorf("cell %v drawn twice", c)
			}
			seen[c] = true
		}
		if len(seen) != 12 || st.Draws != 12+st.Observed+st.Duplicate {
			t.Errorf("round %d: %d cells, stats %+v", round, len(seen), st)
		}
		if first == nil {
			first = cells
		} else if !slices.Equal(first, cells) {
			t.Errorf("round %d changed the cells drawn", round)
		}
	}
}

// TestCellsExhausted checks the clear errors when the space runs out.
func TestCellsExhausted(t *testing.T) {
	be := cpu.New()
	tab := sampling.Upload(be, tables(t, []float64{1, 1, 0}, []float64{1, 1}))
	defer tab.Free()
	// 2×2 reachable cells, one observed: 3 free.
	observed := []int32{0, 0, 2, 1}
	if _, _, err := tab.Cells(observed, 4, sampling.Options{}); err == nil {
		t.Error("4 cells from a space of 3: no error")
	}
	cells, _, err := tab.Cells(observed, 3, sampling.Options{Key: 1})
	if err != nil || len(cells) != 6 {
		t.Errorf("3 cells from a space of 3: %v, %v", cells, err)
	}
	// A bound on draws that cannot be met gives the "gave up" error.
	tab2 := sampling.Upload(be, tables(t, []float64{1e9, 1, 1, 1}, []float64{1e9, 1, 1, 1}))
	defer tab2.Free()
	if _, _, err := tab2.Cells(nil, 10, sampling.Options{MaxDraws: 20}); err == nil {
		t.Error("MaxDraws 20 for 10 cells of a spiked distribution: no error")
	}
}
