package dain

import (
	"context"
	"fmt"
	"time"

	"github.com/dainx/dainx/dain/cellmath"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/dain/streams"
	"github.com/dainx/dainx/tensor"
)

// AugStats reports how an augmentation was made.
type AugStats struct {
	Sample                              float64 // seconds drawing cells
	Predict                             float64 // seconds predicting values (the predictor's training excluded)
	Draws, RejectObserved, RejectRepeat int
}

// Augment makes n new cells with c's method (see Methods and Pipeline)
// and returns them with their values:
//
//   - dain: entities drawn from c's entity importance, values from c's
//     predictor (Algorithm 1, lines 6–15);
//   - random: entities drawn uniformly over each mode, values from c's
//     predictor (Random+MLP, Random+CoSTCo);
//   - duplication: copies of distinct random training cells (cycling when n
//     exceeds |train|);
//   - entity-replacement: a random training cell with one index replaced by
//     one of its entity's 10 nearest neighbours in Θ's embedding space
//     (Euclidean), keeping the value.
//
// With c.Values oracle, the cells are valued by the tensor's generator
// instead (Experiment.OracleValues), duplication's copies excepted.
// New cells of dain, random and entity-replacement are never observed (in
// train ∪ validation) nor repeated. The cells of a smaller n are a prefix of
// those of a larger one. Every stage c uses is computed once per
// experiment. It returns an error if c is invalid.
func (e *Experiment) Augment(ctx context.Context, c Config, n int) (*tensor.COO, AugStats, error) {
	var st AugStats
	if err := c.Validate(); err != nil {
		return nil, st, err
	}
	if n == 0 {
		return &tensor.COO{Dims: append([]int(nil), e.x.Dims...)}, st, nil
	}
	c, err := e.resolve(ctx, c)
	if err != nil {
		return nil, st, err
	}
	p := PipelineOf(c)
	if c.ValuesUsed() == ValuesOracle {
		aug, err := e.oracleCells(ctx, p, n, &st)
		return aug, st, err
	}
	aug, err := p.Cells.cells(ctx, e, n, &st)
	if err != nil {
		return nil, st, err
	}
	if p.Values != nil && p.Values.Model.Kind == PredictorEnsemble {
		if _, err := e.ensemble(ctx); err != nil {
			return nil, st, err
		}
		t0 := time.Now()
		if aug.Val, err = e.predictEnsemble(ctx, aug.Idx); err != nil {
			return nil, st, err
		}
		st.Predict = time.Since(t0).Seconds()
	} else if p.Values != nil && p.Values.Model.Kind == FinalBayesFM {
		m, err := e.bayesPredictor(ctx)
		if err != nil {
			return nil, st, err
		}
		t0 := time.Now()
		q := &tensor.COO{Dims: aug.Dims, Idx: aug.Idx, Val: make([]float64, len(aug.Idx)/len(aug.Dims))}
		if aug.Val, err = m.Predict(q); err != nil {
			return nil, st, fmt.Errorf("dain: predicting values with bayes-fm: %w", err)
		}
		st.Predict = time.Since(t0).Seconds()
	} else if p.Values != nil {
		t, err := e.model(ctx, p.Values.Model)
		if err != nil {
			return nil, st, err
		}
		t0 := time.Now()
		if aug.Val, err = cellmath.Predict(t.Net, aug.Idx); err != nil {
			return nil, st, err
		}
		st.Predict = time.Since(t0).Seconds()
	}
	return aug, st, nil
}

// replace implements entity replacement with the neighbour lists nbr (of
// the entities of this process's training cells): each new cell is a
// uniformly drawn training cell whose index in a uniformly drawn mode is
// replaced by one of the entities nearest to it, keeping its value;
// observed and repeated results are redrawn, at most 100·n + 10⁵ times.
// Spread over processes (drawRounds), each candidate's process is drawn by
// the processes' numbers of training cells; with one process this is one
// loop over one stream and makes one process's cells.
func (e *Experiment) replace(ctx context.Context, nbr [][][]int32, n int, st *AugStats) (*tensor.COO, error) {
	order := e.x.Order()
	t0 := time.Now()
	cum := make([]float64, e.sp.Cl.Size())
	for p, k := range spread.Counts(e.sp.Cl, e.Train.NNZ()) {
		cum[p] = float64(k)
		if p > 0 {
			cum[p] += cum[p-1]
		}
	}
	r := streams.New(e.cfg.Seed, streams.Rank(streams.Replace, e.sp.Cl.Rank()))
	aug, err := e.drawRounds(ctx, spread.Candidates{
		Name: "entity replacement", Cum: cum, Extra: 2, ObservedIsRepeat: true,
		Draw: func(rec []int32) ([]int32, bool) {
			z := r.IntN(e.Train.NNZ())
			rec = append(rec, e.Train.Cell(z)...)
			cell := rec[len(rec)-order:]
			mode := r.IntN(order)
			cand := nbr[mode][cell[mode]]
			if len(cand) == 0 {
				return rec[:len(rec)-order], false
			}
			cell[mode] = cand[r.IntN(len(cand))]
			return append(rec, spread.F64Bits(e.Train.Val[z:z+1])...), true
		},
	}, streams.ReplaceShares, n, st)
	st.Sample = time.Since(t0).Seconds()
	return aug, err
}
