package foldin

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/internal/realdata"
	"github.com/dainx/dainx/tensor"
)

// TestMovieLensFoldInBayesFM is issue 47's fold-in acceptance test for
// the Bayesian factorization machine on the split of TestMovieLensFoldIn
// (10% of the users new, 80% of their cells folded in, 20% held out):
// the chain without the new users, with them drawn by Gibbs sampling in
// every kept sample (bayes.Model.FoldIn), predicts their held-out cells
// with an RMSE within 5% of a chain that had them from the start (same
// rank, sweeps and seed); the known entities' predictions do not move.
func TestMovieLensFoldInBayesFM(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run on a real tensor; -short")
	}
	x, err := tensor.ReadFile(realdata.Path(t, "movielens_latest_small.tsv.gz"), tensor.ReadOptions{Format: tensor.TSV, IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	base, fold, held, baseDims := heldOutUsers(t, x, 1)
	base.Dims = baseDims
	cfg := bayes.DefaultConfig()
	cfg.Rank, cfg.Samples, cfg.KeepSamples = 16, 100, 100
	m, err := bayes.Fit(context.Background(), base, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	g, err := m.Model.FoldIn(context.Background(), fold, bayes.FoldInConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	foldSecs := time.Since(t1).Seconds()
	rmse := func(p, y []float64) float64 {
		var s float64
		for i := range p {
			s += (p[i] - y[i]) * (p[i] - y[i])
		}
		return math.Sqrt(s / float64(len(p)))
	}
	p, err := g.Predict(held)
	if err != nil {
		t.Fatal(err)
	}
	rFold := rmse(p, held.Val)
	// Known cells: unchanged.
	bs := base.Subset(func() []int {
		var ks []int
		for k := 0; k < base.NNZ(); k += 50 {
			ks = append(ks, k)
		}
		return ks
	}())
	a, _ := m.Model.Predict(bs)
	b, _ := g.Predict(bs)
	for k := range a {
		if a[k] != b[k] {
			t.Fatalf("known cell %v: %v before fold-in, %v after", bs.Cell(k), a[k], b[k])
		}
	}
	all := base.Append(fold)
	all.Dims = fold.Dims
	ref, err := bayes.Fit(context.Background(), all, []*tensor.COO{held}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rScratch := rmse(ref.Pred[0], held.Val)
	t.Logf("held-out RMSE of the new users (bayes-fm, rank %d, %d samples): folded in %.4f (%.1fs), from the start %.4f (ratio %.4f); total %.1fs",
		cfg.Rank, cfg.Samples, rFold, foldSecs, rScratch, rFold/rScratch, time.Since(t0).Seconds())
	if !(rFold <= 1.05*rScratch) {
		t.Errorf("fold-in RMSE %.4f is more than 5%% above the from-the-start chain's %.4f", rFold, rScratch)
	}
}
