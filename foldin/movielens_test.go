package foldin

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/internal/realdata"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// envInt and envFloat read a knob of the experiment from the environment
// (for measuring other settings by hand), else def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil {
		return v
	}
	return def
}

// heldOutUsers splits MovieLens (user × movie × day) as the fold-in
// study of issue 34 does: 10% of the users (seeded) are new; each of their
// cells goes to the fold-in part (80%) or is held out (20%). Every mode
// is renumbered so that the entities of the base cells (the other users'
// cells) come first, in their order, and those that only the new users'
// cells name follow: indexed as a model trained on the base cells sees
// them. Held-out cells naming an entity neither the base nor the fold-in
// cells name are dropped (no model learns anything about it).
func heldOutUsers(t *testing.T, x *tensor.COO, seed uint64) (base, fold, held *tensor.COO, baseDims []int) {
	rng := rand.New(rand.NewPCG(seed, 34))
	order := x.Order()
	users := x.Dims[0]
	isNew := make([]bool, users)
	for _, u := range rng.Perm(users)[:users/10] {
		isNew[u] = true
	}
	var bk, fk, hk []int
	for k := 0; k < x.NNZ(); k++ {
		switch {
		case !isNew[x.Idx[k*order]]:
			bk = append(bk, k)
		case rng.Float64() < 0.8:
			fk = append(fk, k)
		default:
			hk = append(hk, k)
		}
	}
	// Renumber: base entities first, then the fold-in ones.
	remap := make([][]int32, order)
	next := make([]int, order)
	for n := range remap {
		remap[n] = make([]int32, x.Dims[n])
		for i := range remap[n] {
			remap[n][i] = -1
		}
	}
	number := func(ks []int) {
		for n := 0; n < order; n++ {
			// In index order within each group, so that the numbering
			// does not depend on the order of the cells.
			seen := make([]bool, x.Dims[n])
			for _, k := range ks {
				seen[x.Idx[k*order+n]] = true
			}
			for i, s := range seen {
				if s && remap[n][i] < 0 {
					remap[n][i] = int32(next[n])
					next[n]++
				}
			}
		}
	}
	number(bk)
	baseDims = append([]int(nil), next...)
	number(fk)
	build := func(ks []int, drop bool) *tensor.COO {
		c := &tensor.COO{Dims: append([]int(nil), next...)}
	cells:
		for _, k := range ks {
			cell := make([]int32, order)
			for n := range cell {
				if cell[n] = remap[n][x.Idx[k*order+n]]; cell[n] < 0 {
					if drop {
						continue cells
					}
					t.Fatalf("cell %d: unnumbered entity", k)
				}
			}
			c.Idx = append(c.Idx, cell...)
			c.Val = append(c.Val, x.Val[k])
		}
		return c
	}
	return build(bk, false), build(fk, false), build(hk, true), baseDims
}

// trainModel trains an MLP on cells (10% of them, seeded, for
// validation) with the study's settings.
func trainModel(t *testing.T, cells *tensor.COO, dims []int, layers []int, epochs int, seed uint64) *nn.Net {
	t.Helper()
	be := cpu.New()
	m, err := nn.NewMLP(be, nn.Config{Dims: dims, Layers: layers, Capacity: 1024}, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	tr, va, _ := tensor.Split(cells.NNZ(), 0, 0.1, seed)
	trainSet, valSet := m.NewSet(subset(cells, tr)), m.NewSet(subset(cells, va))
	defer trainSet.Free()
	defer valSet.Free()
	res, err := nn.Train(context.Background(), m, trainSet, valSet, nn.TrainConfig{Epochs: epochs, Batch: 1024, Patience: 5,
		LR: envFloat("FOLDIN_BASE_LR", 3e-3), EmbeddingOptimizer: nn.SparseAdam, Shuffle: rand.New(rand.NewPCG(seed, 2))})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("trained on %d cells: best epoch %d of %d, validation RMSE %.4f", cells.NNZ(), res.BestEpoch, len(res.Epochs), math.Sqrt(res.BestValMSE))
	return m
}

func rmseOn(t *testing.T, m *nn.Net, cells *tensor.COO) float64 {
	t.Helper()
	s := m.NewSet(cells.Idx, cells.Val)
	defer s.Free()
	mse, err := m.Evaluate(s)
	if err != nil {
		t.Fatal(err)
	}
	return math.Sqrt(mse)
}

// TestMovieLensFoldIn is issue 34's acceptance test on a real tensor
// (MovieLens ml-latest-small, user × movie × day): a model trained without
// 10% of the users, those users folded in on 80% of their cells, predicts
// their other 20% with an RMSE within 5% of a model trained with them
// from the start (same layers, epochs, seeds); the known entities'
// predictions are unchanged bit for bit.
func TestMovieLensFoldIn(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run on a real tensor; -short")
	}
	x, err := tensor.ReadFile(realdata.Path(t, "movielens_latest_small.tsv.gz"), tensor.ReadOptions{Format: tensor.TSV, IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	seed := uint64(envInt("FOLDIN_SEED", 1))
	base, fold, held, baseDims := heldOutUsers(t, x, seed)
	layers := []int{48, 32, 16}
	epochs := envInt("FOLDIN_EPOCHS", 10)
	t.Logf("base %d cells %v, fold-in %d cells, held out %d cells (dims %v)", base.NNZ(), baseDims, fold.NNZ(), held.NNZ(), fold.Dims)

	m := trainModel(t, base, baseDims, layers, epochs, seed)
	defer m.Free()
	cfg := DefaultConfig()
	cfg.Epochs = envInt("FOLDIN_FOLD_EPOCHS", cfg.Epochs)
	cfg.LR = envFloat("FOLDIN_LR", cfg.LR)
	cfg.Batch = envInt("FOLDIN_BATCH", cfg.Batch)
	if os.Getenv("FOLDIN_TUNE") != "" {
		cfg.Tune = os.Getenv("FOLDIN_TUNE")
	}
	t1 := time.Now()
	g, rep, err := Run(context.Background(), m, fold, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Free()
	foldSecs := time.Since(t1).Seconds()
	rFold := rmseOn(t, g, held)
	// For scale: the new rows as Grow draws them, before any step.
	g0, err := m.Grow(rep.Dims, 1024, rand.New(rand.NewPCG(cfg.Seed, streamInit)))
	if err != nil {
		t.Fatal(err)
	}
	rStart := rmseOn(t, g0, held)
	g0.Free()
	t.Logf("fold-in: new entities %v, %d train / %d val cells, %d epochs (best %d), val RMSE %.4f, %.1fs", rep.NewEntities, rep.NTrain, rep.NVal, rep.Epochs, rep.BestEpoch, *rep.ValRMSE, foldSecs)

	// The known entities' predictions are the base model's, bit for bit.
	bs := base.Subset(func() []int {
		var ks []int
		for k := 0; k < base.NNZ(); k += 50 {
			ks = append(ks, k)
		}
		return ks
	}())
	sb, sg := m.NewSet(bs.Idx, bs.Val), g.NewSet(bs.Idx, bs.Val)
	pb, _ := m.Predict(sb)
	pg, _ := g.Predict(sg)
	for k := range pb {
		if math.Float32bits(pb[k]) != math.Float32bits(pg[k]) {
			t.Fatalf("known cell %v: base model %v, folded model %v", bs.Cell(k), pb[k], pg[k])
		}
	}

	all := base.Append(fold)
	all.Dims = fold.Dims
	s := trainModel(t, all, fold.Dims, layers, epochs, seed)
	defer s.Free()
	rScratch := rmseOn(t, s, held)
	t.Logf("held-out RMSE of the new users: folded in %.4f, trained from the start %.4f (ratio %.4f; %.4f with the new rows untrained); total %.1fs", rFold, rScratch, rFold/rScratch, rStart, time.Since(t0).Seconds())
	if !(rFold <= 1.05*rScratch) {
		t.Errorf("fold-in RMSE %.4f is more than 5%% above the from-the-start model's %.4f", rFold, rScratch)
	}
}
