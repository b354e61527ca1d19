package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/foldin"
	"github.com/dainx/dainx/internal/memlimit"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/tensor"
)

// ErrFoldEnsemble is the error of a fold-in of the stacked ensemble
// saved at path, which fold-in does not grow (its members, each a net or
// a bayes-fm, can be folded in one by one, but their stack was fitted
// without the new entities).
func ErrFoldEnsemble(path string) error {
	return fmt.Errorf("model %s is an %s (a stack of saved models): fold-in grows one net or bayes-fm, not a stack; fold in one of its members (%s.KIND) or save a single final model (-final-model auto, bayes-fm, mlp, …)", path, model.KindEnsemble, model.DefaultName)
}

// RunBayes is Run for a bayes-fm model (meta.Kind model.KindBayesFM): the
// new entities of cells are drawn by Gibbs sampling in each of the
// model's posterior samples, every other parameter held
// (bayes.Model.FoldIn, -sweeps sweeps per sample, -seed), and the grown
// model is written as Run writes a net. Only -tune new applies; -epochs,
// -batch, -lr, -patience, -l2 and -val-frac are for nets and are not
// used. Cells that name no new entity are left out (n_skipped); none
// naming one is foldin.ErrNoNewEntity.
func (f *FoldIn) RunBayes(ctx context.Context, t *FoldInTx, meta model.Meta, cells *tensor.COO, input, version string, extra Extra, stderr io.Writer) ([]byte, error) {
	t0 := time.Now()
	if f.Config.Tune != foldin.TuneNew {
		return nil, fmt.Errorf("%w: -tune %s: a bayes-fm model folds in its new entities only (-tune new); its known entities keep their posterior samples", ErrUsage, f.Config.Tune)
	}
	m, meta, err := model.LoadBayes(f.Model)
	if err != nil {
		return nil, err
	}
	grown, err := foldin.GrownDims(meta.Dims, cells)
	if err != nil {
		return nil, err
	}
	// The grown model (float64) and its float32 copy while it is written,
	// beside the model read, before FoldIn allocates them.
	params := 1.0
	for _, d := range grown {
		params += float64(d) * float64(meta.Rank+1)
	}
	part := memlimit.Part{What: "the grown bayes-fm model", Flags: fmt.Sprintf("dims %v, rank %d, %d samples", grown, meta.Rank, meta.Samples),
		Bytes: 12 * params * float64(meta.Samples)}
	if err := memlimit.Check("the fold-in", []memlimit.Part{part}, memlimit.Limit(0), 0); err != nil {
		return nil, err
	}
	n := len(grown)
	rep := &foldin.Report{Kind: model.KindBayesFM, Tune: foldin.TuneNew, DimsBefore: meta.Dims, Dims: grown,
		NewEntities: make([]int, n), NewWithoutCells: make([]int, n), NCells: cells.NNZ(), Seed: f.Config.Seed, Sweeps: f.Sweeps}
	named := make([]map[int32]bool, n)
	var used []int
	for c := range cells.NNZ() {
		fresh := false
		for d, i := range cells.Idx[c*n : (c+1)*n] {
			if int(i) >= meta.Dims[d] {
				if named[d] == nil {
					named[d] = map[int32]bool{}
				}
				named[d][i], fresh = true, true
			}
		}
		if fresh {
			used = append(used, c)
		}
	}
	for d := range n {
		rep.NewEntities[d] = grown[d] - meta.Dims[d]
		rep.NewWithoutCells[d] = rep.NewEntities[d] - len(named[d])
		rep.TrainedRows += len(named[d])
	}
	if len(used) == 0 {
		return nil, fmt.Errorf("fold-in: %w: every cell names known entities only (new ones have indices from the model's sizes %v on)", foldin.ErrNoNewEntity, meta.Dims)
	}
	rep.NSkipped, rep.NTrain = cells.NNZ()-len(used), len(used)
	train := cells.Subset(used)
	train.Dims = grown
	if !f.Quiet {
		fmt.Fprintf(stderr, "dainx: fold-in: bayes-fm model %v → %v (new entities per mode %v); %d cells, %d skipped (no new entity); %d sweeps in each of %d samples\n",
			meta.Dims, grown, rep.NewEntities, len(used), rep.NSkipped, max(f.Sweeps, 1), m.NumSamples())
	}
	g, err := m.FoldIn(ctx, train, bayes.FoldInConfig{Sweeps: f.Sweeps, Seed: f.Config.Seed})
	if err != nil {
		return nil, err
	}
	p, err := g.Predict(train)
	if err != nil {
		return nil, err
	}
	var se float64
	for c, v := range p {
		se += (v - train.Val[c]) * (v - train.Val[c])
	}
	rep.TrainRMSE = math.Sqrt(se / float64(len(p)))
	rep.Seconds = time.Since(t0).Seconds()
	record := map[string]any{"tune": foldin.TuneNew, "sweeps": f.Sweeps, "seed": f.Config.Seed}
	save := func(dir string, out model.Meta) error { return model.SaveBayes(dir, model.DefaultName, g, out) }
	return f.commit(t, meta, rep, record, save, extra, input, version, "cpu (float64)")
}
