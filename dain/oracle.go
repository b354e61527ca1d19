package dain

import (
	"context"
	"fmt"
	"time"

	"github.com/dainx/dainx/dain/streams"
	"github.com/dainx/dainx/tensor"
)

// The oracle values of new cells (issue 35, part 3): on a tensor that
// dainx synth made, whose generating CP model is known, a new cell can be
// valued by the generator itself plus the tensor's noise, so that a study
// separates where a method puts new cells from what values they get.

// OracleValues returns the oracle's values of the K×N cells: each the
// generator's noise-free value plus σ·ε, ε ~ N(0, 1) drawn in the cells'
// order from the experiment seed's oracle stream (so the values of a
// prefix of the cells are a prefix of the values). It returns an error
// when the experiment's configurations asked for no oracle.
func (e *Experiment) OracleValues(cells []int32) ([]float64, error) {
	return e.oracleValues(cells, 0)
}

// oracleValues is OracleValues of cells that follow skip others in the
// order of the noise draws (a process's share of the new cells of a run
// spread over processes follows the shares of the processes before it).
func (e *Experiment) oracleValues(cells []int32, skip int) ([]float64, error) {
	if e.oracle == nil {
		return nil, fmt.Errorf("dain: no oracle: the experiment's configurations do not ask for -values oracle")
	}
	return e.oracle.Values(cells, e.x.Order(), streams.New(e.cfg.Seed, streams.Oracle), skip), nil
}

// oracleCells makes n new cells with p's cell maker and values them by the
// oracle (Augment with -values oracle): duplication's copies, observed
// cells, keep their values; averaged values (AverageValues) are not
// computed, their cells being those of the cell maker they wrap.
func (e *Experiment) oracleCells(ctx context.Context, p Pipeline, n int, st *AugStats) (*tensor.COO, error) {
	maker := p.Cells
	if av, ok := maker.(AverageValues); ok {
		maker = av.Cells
	}
	aug, err := maker.cells(ctx, e, n, st)
	if err != nil {
		return nil, err
	}
	if _, dup := maker.(Duplicate); dup {
		return aug, nil // observed cells, with their observed values
	}
	t0 := time.Now()
	if aug.Val, err = e.oracleValues(aug.Idx, e.augFirst); err != nil {
		return nil, err
	}
	st.Predict = time.Since(t0).Seconds()
	return aug, nil
}
