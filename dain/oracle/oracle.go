// Package oracle is the generator of a tensor that dainx synth made, as
// the values of new cells (-values oracle; issue 35, part 3): its CP model
// plus the tensor's noise, checked against the tensor's cells (Check), so
// that a study separates where a method puts new cells from what values
// they get.
package oracle

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/dain/config"
	"github.com/dainx/dainx/tensor"
)

// Oracle is the generator of an experiment's tensor (Config.Oracle): its
// CP model and its noise σ.
type Oracle struct {
	cp    *tensor.CP
	noise float64
}

// Check returns, when one of cfgs asks for oracle values
// (config.ValuesOracle), the oracle of its generator (Config.Oracle),
// after checking that the tensor, of which sh is this process's share
// (cl's processes holding the others), is a tensor the generator made: the
// same dims, and values that differ from the generator's by the
// generator's noise (exactly equal for noise 0; for noise σ > 0 a mean
// squared difference over every process's cells within 6 standard errors
// of σ²). Every process returns the same error, naming the first cell in
// file order that differs. It returns nil when no configuration asks for
// the oracle. The configurations share one generator (an experiment's
// methods share a tensor).
func Check(cl cluster.Cluster, sh *tensor.Part, cfgs []config.Config) (*Oracle, error) {
	x := sh.Cells
	var g *tensor.Generator
	for _, c := range cfgs {
		if c.ValuesUsed() != config.ValuesOracle {
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
	return &Oracle{cp: m, noise: g.Noise}, nil
}

// equalGenerators reports whether a and b describe the same tensor.
func equalGenerators(a, b *tensor.Generator) bool {
	return slices.Equal(a.Dims, b.Dims) && a.NNZ == b.NNZ && a.Rank == b.Rank && a.Noise == b.Noise && a.Seed == b.Seed && a.Model == b.Model
}

// Values returns the oracle's values of the K×order cells (entity
// indices, order per cell): each the generator's noise-free value plus
// σ·ε, ε ~ N(0, 1) drawn in the cells' order from r after skip draws (a
// process's share of the new cells follows the skip cells of the
// processes before it), none drawn for noise 0.
func (o *Oracle) Values(cells []int32, order int, r *rand.Rand, skip int) []float64 {
	if o.noise > 0 {
		for range skip {
			r.NormFloat64()
		}
	}
	out := make([]float64, len(cells)/order)
	for k := range out {
		out[k] = o.cp.Value(cells[k*order : (k+1)*order])
		if o.noise > 0 {
			out[k] += o.noise * r.NormFloat64()
		}
	}
	return out
}
