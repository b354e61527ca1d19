package dain

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/cellmath"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/dain/streams"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
)

// Variants of DAIN's steps beyond the paper's ablations, for the study of
// whether influence-guided placement beats uniform or frequency placement
// (issue 14). Each is a stage type here and an entry in a list of
// stages.go; the paper's method (dain) uses none of them.

// entityCounts returns, for every mode, each entity's number of training
// cells (over every process).
func (e *Experiment) entityCounts() [][]float64 {
	return cellmath.EntityCounts(e.sp.Cl, e.x.Dims, e.Train)
}

// FrequencyEntity is the degree baseline's entity importance: each entity's
// number of training cells, normalised per mode — eq. 6 with every α_z
// replaced by 1. It needs no cell importance and no Θ, so it is the null
// model that tells what DAIN's influence step adds to drawing popular
// entities.
type FrequencyEntity struct{}

func (FrequencyEntity) deps() []stage         { return nil }
func (FrequencyEntity) cells() CellImportance { return nil }
func (FrequencyEntity) aggregate(e *Experiment, _ compute.F32, _ *trained) ([][]float64, error) {
	w := e.entityCounts()
	return w, cellmath.Normalise(w)
}

// hostScores downloads cell scores.
func (e *Experiment) hostScores(v compute.F32) ([]float32, error) {
	alpha := make([]float32, v.Len())
	if err := e.be.Download(alpha, v); err != nil {
		return nil, fmt.Errorf("dain: %w", err)
	}
	return alpha, nil
}

// MeanEntity is entity importance by the mean instead of the sum of eq. 6:
// α⁽ⁿ⁾_i = (Σ_{z∈train, zₙ=i} |α_z|) / #{z∈train : zₙ=i}, normalised per
// mode, so that an entity's weight no longer grows with its number of
// training cells (frequency-neutral). Entities without training cells get
// 0.
type MeanEntity struct{ Cells CellImportance }

func (s MeanEntity) deps() []stage         { return []stage{s.Cells} }
func (s MeanEntity) cells() CellImportance { return s.Cells }
func (s MeanEntity) aggregate(e *Experiment, v compute.F32, t *trained) ([][]float64, error) {
	alpha, err := e.hostScores(v)
	if err != nil {
		return nil, err
	}
	return cellmath.MeanImportance(e.sp.Cl, e.x.Dims, e.Train, alpha, e.entityCounts())
}

// Signed is signed cell importance: the positive part of Cells' signed
// score instead of its absolute value (eq. 5 without |·|). TracIn's signed
// sum S_z = Σ_k η ∇ℓ(Θ_k, z)·G_k is positive when a gradient step on z
// lowers the validation loss to first order (the step changes it by
// −η ∇ℓ(Θ_k, z)·G_k), so Signed keeps only those cells (proponents) and
// scores the others 0; the aggregators then see max(S_z, 0) as α_z.
type Signed struct{ Cells CellImportance }

func (s Signed) deps() []stage { return []stage{s.Cells} }

func (s Signed) scores(ctx context.Context, e *Experiment) (compute.F32, *trained, error) {
	v, t, err := s.Cells.scores(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	out, err := e.cellScores.Get(s, func() (compute.F32, float64, error) {
		t0 := time.Now()
		alpha, err := e.hostScores(v)
		if err != nil {
			return nil, 0, err
		}
		if cellmath.PositivePart(alpha) == 0 {
			return nil, 0, fmt.Errorf("dain: no training cell has a positive (validation-loss-lowering) influence score")
		}
		b := e.be.Alloc(len(alpha))
		e.be.Upload(b, alpha)
		e.owned = append(e.owned, b)
		return b, time.Since(t0).Seconds(), nil
	})
	return out, t, err
}

// Tempered sharpens or flattens Entity's importance with a temperature τ
// and mixes it with the uniform distribution: per mode,
//
//	p_i = (1 − Mix)·α_i^τ / Σ_j α_j^τ + Mix / I_n
//
// (eq. 6 followed by this map). τ = 1 and Mix = 0 give Entity itself; τ = 0
// gives the uniform distribution over every entity (0⁰ = 1), τ > 1
// concentrates the draws on the most important entities.
type Tempered struct {
	Entity   EntityImportance
	Tau, Mix float64
}

func (s Tempered) deps() []stage         { return []stage{s.Entity} }
func (s Tempered) cells() CellImportance { return s.Entity.cells() }
func (s Tempered) aggregate(e *Experiment, v compute.F32, t *trained) ([][]float64, error) {
	w, err := s.Entity.aggregate(e, v, t)
	if err != nil {
		return nil, err
	}
	return w, cellmath.Temper(w, s.Tau, s.Mix)
}

// withTemperature wraps ent in Tempered when c asks for a temperature or a
// mixture other than the paper's (τ = 1, Mix = 0).
func withTemperature(c Config, ent EntityImportance) EntityImportance {
	if c.Temperature == 1 && c.Mix == 0 {
		return ent
	}
	return Tempered{Entity: ent, Tau: c.Temperature, Mix: c.Mix}
}

// NearCells draws new cells next to important observed cells instead of
// from independent modes (Algorithm 1, lines 8–13, changed): a training
// cell z with probability |α_z| / Σ|α| (Entity's cell importance), a mode
// n uniformly, and a new index for mode n from Entity's alias table of
// that mode; the cell keeps z's other N−1 indices. Observed and repeated
// cells are redrawn, at most 100·N_aug + 10⁵ times.
type NearCells struct{ Entity EntityImportance }

func (s NearCells) deps() []stage { return []stage{s.Entity} }

func (s NearCells) cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error) {
	src := s.Entity.cells()
	if src == nil {
		return nil, fmt.Errorf("dain: near-cells needs an entity importance built from cell importance")
	}
	v, _, err := src.scores(ctx, e)
	if err != nil {
		return nil, err
	}
	tables, err := e.tables(ctx, s.Entity)
	if err != nil {
		return nil, err
	}
	alpha, err := e.hostScores(v)
	if err != nil {
		return nil, err
	}
	return e.nearCells(ctx, tables, alpha, n, st)
}

// nearCells draws NearCells' n cells from the entity tables and the
// training cells' scores alpha (this process's cells'), spread over the
// processes (drawRounds): each candidate's process is drawn by the
// processes' shares of Σ|alpha|, and that process draws it from its own
// cells (an alias table over |alpha|), one mode and that mode's entity.
// With one process this is one loop over one stream, candidate by
// candidate, and makes one process's cells.
func (e *Experiment) nearCells(ctx context.Context, tables []*sampling.Alias, alpha []float32, n int, st *AugStats) (*tensor.COO, error) {
	t0 := time.Now()
	order := e.x.Order()
	cellTable, cum, err := e.nearCellTable(alpha)
	if err != nil {
		return nil, err
	}
	r := streams.New(e.cfg.Seed, streams.Rank(streams.Near, e.sp.Cl.Rank()))
	aug, err := e.drawRounds(ctx, spread.Candidates{
		Name: "near-cells", Cum: cum,
		Draw: func(rec []int32) ([]int32, bool) {
			rec = append(rec, e.Train.Cell(int(cellmath.DrawAlias(cellTable, r)))...)
			c := rec[len(rec)-order:]
			mode := r.IntN(order)
			c[mode] = cellmath.DrawAlias(tables[mode], r)
			return rec, true
		},
	}, streams.NearShares, n, st)
	st.Sample = time.Since(t0).Seconds()
	return aug, err
}

// nearCellTable returns the alias table over this process's |alpha| (nil
// when they are all 0 on one of several processes) and the cumulative sums
// of every process's Σ|alpha|, in process order. A weight that is not
// finite anywhere, or every weight 0, is an error of every process.
func (e *Experiment) nearCellTable(alpha []float32) (*sampling.Alias, []float64, error) {
	cl := e.sp.Cl
	w := make([]float64, len(alpha))
	cum := make([]float64, cl.Size())
	mine := 0.0
	for z, a := range alpha {
		w[z] = math.Abs(float64(a))
		mine += w[z]
	}
	cum[cl.Rank()] = mine
	cl.SumF64(cum)
	for p := 1; p < len(cum); p++ {
		cum[p] += cum[p-1]
	}
	var table *sampling.Alias
	var err error
	switch {
	case cl.Size() == 1 || mine != 0: // NaN too: NewAlias names it
		table, err = sampling.NewAlias(w)
	case cum[len(cum)-1] == 0:
		err = fmt.Errorf("sampling: all %d weights are zero", e.sp.NTrain())
	}
	if err != nil {
		err = fmt.Errorf("dain: cell importance: %w", err)
	}
	return table, cum, e.sp.AgreeErr(err)
}

// NoCells makes no new cells: the training-length control, whose
// retraining on train alone Config.Retrain stretches to the optimiser
// steps of train ∪ N_aug cells.
type NoCells struct{}

func (NoCells) deps() []stage { return nil }

func (NoCells) cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error) {
	return &tensor.COO{Dims: append([]int(nil), e.x.Dims...)}, nil
}

// AverageValues values Cells' new cells by the mean of two predictors'
// predictions, (A(z) + B(z))/2, instead of one (Algorithm 1, line 14).
type AverageValues struct {
	Cells CellMaker
	A, B  Embedding
}

func (s AverageValues) deps() []stage { return []stage{s.Cells, s.A, s.B} }

func (s AverageValues) cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error) {
	aug, err := s.Cells.cells(ctx, e, n, st)
	if err != nil {
		return nil, err
	}
	a, b, err := e.twoPredictions(ctx, s.A, s.B, aug.Idx, st)
	if err != nil {
		return nil, err
	}
	aug.Val = make([]float64, len(a))
	for i := range a {
		aug.Val[i] = tensor.Shortest(float32((a[i] + b[i]) / 2))
	}
	return aug, nil
}

// AgreeCells draws 2·N_aug candidate cells with Cells, predicts each with
// A and B, and keeps the N_aug on which the two agree best (smallest
// |A(z) − B(z)|, ties by draw order), valued by A. It filters Algorithm 1's
// new cells by the predictors' agreement, a proxy for the value's error.
type AgreeCells struct {
	Cells CellMaker
	A, B  Embedding
}

func (s AgreeCells) deps() []stage { return []stage{s.Cells, s.A, s.B} }

func (s AgreeCells) cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error) {
	cand, err := s.Cells.cells(ctx, e, 2*n, st)
	if err != nil {
		return nil, err
	}
	a, b, err := e.twoPredictions(ctx, s.A, s.B, cand.Idx, st)
	if err != nil {
		return nil, err
	}
	if e.sp.Many() {
		return e.agreeKeepOn(cand.Idx, a, b, n), nil
	}
	return cellmath.AgreeKeep(e.x.Dims, cand.Idx, a, b, n), nil
}

// twoPredictions returns the predictions of the trained models A and B for
// cells, adding the time to st.Predict.
func (e *Experiment) twoPredictions(ctx context.Context, A, B Embedding, cells []int32, st *AugStats) ([]float64, []float64, error) {
	var out [2][]float64
	for i, m := range []Embedding{A, B} {
		t, err := e.model(ctx, m)
		if err != nil {
			return nil, nil, err
		}
		t0 := time.Now()
		if out[i], err = cellmath.Predict(t.Net, cells); err != nil {
			return nil, nil, err
		}
		st.Predict += time.Since(t0).Seconds()
	}
	return out[0], out[1], nil
}

// Retrain is step 5 for c's method: Downstream on train ∪ aug, except for
// a method whose Pipeline has MatchSteps (no-aug-steps), which trains on
// train alone with its epoch cap and patience multiplied by the ratio of
// optimiser steps per epoch over train ∪ n cells to those over train
// (rounded up), so that it gets the step budget of a retraining on train ∪
// n new cells: the control for the extra training an augmentation brings.
func (e *Experiment) Retrain(ctx context.Context, c Config, aug *tensor.COO, n int, label string) (float64, nn.Result, float64, error) {
	if !PipelineOf(c).MatchSteps || n == 0 {
		return e.Downstream(ctx, aug, label)
	}
	f := cellmath.StepsScale(e.sp.NTrain(), n, e.cfg.Batch)
	saved := e.cfg
	defer func() { e.cfg = saved }()
	e.cfg.Epochs = int(math.Ceil(float64(saved.Epochs) * f))
	e.cfg.Patience = int(math.Ceil(float64(saved.Patience) * f))
	return e.Downstream(ctx, &tensor.COO{Dims: append([]int(nil), e.x.Dims...)}, label)
}

// TestPredictions returns the test-cell predictions of the embedding model
// of kind (a Models name) trained on the split, training it if needed.
func (e *Experiment) TestPredictions(ctx context.Context, kind string) ([]float64, error) {
	t, err := e.model(ctx, Embedding{kind})
	if err != nil {
		return nil, err
	}
	return cellmath.Predict(t.Net, e.Test.Idx)
}

// OnRetrained, when not nil, is called with every model Downstream trains
// and its test predictions, before the model is freed.
func (e *Experiment) OnRetrained(f func(testPred []float64)) {
	e.onRetrained = func(m *nn.Net) error {
		p, err := cellmath.Predict(m, e.Test.Idx)
		if err != nil {
			return err
		}
		f(p)
		return nil
	}
	e.onTestPred = f
	if f == nil {
		e.onRetrained = nil
	}
}
