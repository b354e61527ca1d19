package dain

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/tensor"
)

// The oracle values of new cells (issue 35, part 3): on a tensor that
// dainx synth made, whose generating CP model is known, a new cell can be
// valued by the generator itself plus the tensor's noise, so that a study
// separates where a method puts new cells from what values they get.

// streamOracle is the random stream of the oracle's noise, apart from
// experiment.go's and variants.go's lists so that none shifts another.
const streamOracle = 0x200

// checkOracle returns, when one of cfgs asks for oracle values, the
// oracle of its generator, after checking that the tensor, of which sh is
// this process's share (cl's processes holding the others), is a tensor
// the generator made: the same dims, and values that differ from the
// generator's by the generator's noise (exactly equal for noise 0; for
// noise σ > 0 a mean squared difference over every process's cells within
// 6 standard errors of σ²). Every process returns the same error, naming
// the first cell in file order that differs. It returns nil when no
// configuration asks for the oracle. The configurations share one
// generator (an experiment's methods share a tensor).
func checkOracle(cl cluster.Cluster, sh *tensor.Part, cfgs []Config) (*oracle, error) {
	x := sh.Cells
	var g *tensor.Generator
	for _, c := range cfgs {
		if c.ValuesUsed() != ValuesOracle {
			continue
		}
		if g != nil && c.Oracle != nil && !equalGenerators(g, c.Oracle) {
			return nil, fmt.Errorf("dain: values oracle: two generators for one tensor (%v, %v)", g, c.Oracle)
		}
		g = c.Oracle
	}
	if g == nil {
		return nil, nil
	}
	if !slices.Equal(x.Dims, g.Dims) {
		return nil, fmt.Errorf("dain: values oracle: the tensor's dims %v are not the generator's %v: the generator file describes another tensor", x.Dims, g.Dims)
	}
	m, err := g.CP()
	if err != nil {
		return nil, fmt.Errorf("dain: values oracle: %w", err)
	}
	// bad: the first cell off the generator (noise 0): its number in the
	// file, value and the generator's, then its indices; -1 for none.
	order := x.Order()
	bad := make([]float64, 3+order)
	bad[0] = -1
	var ss float64
	for k, v := range x.Val {
		cell := x.Cell(k)
		want := m.Value(cell)
		r := v - want
		if g.Noise == 0 && math.Abs(r) > 1e-9*(1+math.Abs(want)) && bad[0] < 0 {
			bad[0], bad[1], bad[2] = float64(sh.First+k), v, want
			for n, i := range cell {
				bad[3+n] = float64(i)
			}
		}
		ss += r * r
	}
	sums := []float64{ss, float64(x.NNZ())}
	if cl.Size() > 1 {
		cl.SumF64(sums)
		all := cl.GatherF64(bad)
		for r := 0; r < len(all); r += len(bad) {
			if all[r] >= 0 {
				bad = all[r : r+len(bad)]
				break
			}
		}
	}
	if bad[0] >= 0 {
		cell := make([]int32, order)
		for n := range cell {
			cell[n] = int32(bad[3+n])
		}
		return nil, cluster.Agreed(fmt.Errorf("dain: values oracle: cell %d (0-based indices %v) has the value %v, the generator (noise 0) gives it %v: the generator file describes another tensor", int(bad[0]), cell, bad[1], bad[2]))
	}
	if ss, n := sums[0], sums[1]; g.Noise > 0 && n > 0 {
		ratio := ss / n / (g.Noise * g.Noise)
		if tol := 6 * math.Sqrt(2/n); math.Abs(ratio-1) > tol {
			return nil, cluster.Agreed(fmt.Errorf("dain: values oracle: the tensor's values differ from the generator's by a root mean square of %.4g, its noise σ is %.4g (a ratio of squares %.3f, expected within 1 ± %.3f): the generator file describes another tensor", math.Sqrt(ss/n), g.Noise, ratio, tol))
		}
	}
	return &oracle{cp: m, noise: g.Noise}, nil
}

// equalGenerators reports whether a and b describe the same tensor.
func equalGenerators(a, b *tensor.Generator) bool {
	return slices.Equal(a.Dims, b.Dims) && a.NNZ == b.NNZ && a.Rank == b.Rank && a.Noise == b.Noise && a.Seed == b.Seed && a.Model == b.Model
}

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
	order := e.x.Order()
	r := rng(e.cfg.Seed, streamOracle)
	if e.oracle.noise > 0 {
		for range skip {
			r.NormFloat64()
		}
	}
	out := make([]float64, len(cells)/order)
	for k := range out {
		out[k] = e.oracle.cp.Value(cells[k*order : (k+1)*order])
		if e.oracle.noise > 0 {
			out[k] += e.oracle.noise * r.NormFloat64()
		}
	}
	return out, nil
}

// oracle is the generator of an experiment's tensor (Config.Oracle): its
// CP model and its noise σ.
type oracle struct {
	cp    *tensor.CP
	noise float64
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
