package dain

import (
	"math"
	"sort"

	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
)

// Diagnostics of an entity importance (issue 35, part 4): how far it is
// more than entity frequency, and how much it concentrates the new cells.

// ModeDiagnostics describe, for one mode, the entity importance that new
// cells were drawn from (the sampler's distribution, after any temperature
// and mix) against the entities' frequency, their number of training
// cells.
type ModeDiagnostics struct {
	Mode int `json:"mode"` // 1…N
	// Entities is the number of the mode's entities with at least one
	// training cell, over which Spearman is computed.
	Entities int `json:"entities"`
	// Spearman is the Spearman rank correlation of importance with
	// frequency over those entities (ties get average ranks); nil when
	// either is constant over them (e.g. a uniform importance), where it
	// is not defined.
	Spearman *float64 `json:"spearman_importance_frequency"`
	// Top is the number of entities in the mode's top 1% by importance:
	// ⌈d/100⌉ of its d entities (at least 1), ties broken by index.
	Top int `json:"top1pct_entities"`
	// TopShareNew is the share of the new cells whose index in this mode
	// is one of those entities; TopMass the importance on them (the share
	// expected before observed and repeated cells are redrawn);
	// TopShareTrain the share of the training cells on them.
	TopShareNew   float64 `json:"top1pct_share_new_cells"`
	TopMass       float64 `json:"top1pct_importance_mass"`
	TopShareTrain float64 `json:"top1pct_share_training_cells"`
}

// ImportanceDiagnostics returns, for the method c names, the diagnostics
// of every mode of the entity importance its new cells aug were drawn
// from, or nil when the method draws from none (duplication,
// entity-replacement, random, no-aug-steps) or it has not been computed
// on this experiment. Call it after Augment(c), while the split is held.
func (e *Experiment) ImportanceDiagnostics(c Config, aug *tensor.COO) []ModeDiagnostics {
	if e.Train == nil || aug == nil {
		return nil
	}
	var tables []*sampling.Alias
	walk(PipelineOf(e.applyAuto(c)).Cells, map[stage]bool{}, func(s stage) {
		if ent, ok := s.(EntityImportance); ok && tables == nil {
			if d := e.entity[ent]; d != nil {
				tables = d.val
			}
		}
	})
	if tables == nil {
		return nil
	}
	counts := e.entityCounts()
	order := e.x.Order()
	out := make([]ModeDiagnostics, order)
	for n := range out {
		w := tables[n].P
		d := ModeDiagnostics{Mode: n + 1}
		var imp, freq []float64
		for i, f := range counts[n] {
			if f > 0 {
				imp, freq = append(imp, w[i]), append(freq, f)
			}
		}
		d.Entities = len(imp)
		if r := Spearman(imp, freq); !math.IsNaN(r) {
			d.Spearman = &r
		}
		top := TopEntities(w, 0.01)
		d.Top = len(top)
		in := make([]bool, len(w))
		for _, i := range top {
			in[i] = true
			d.TopMass += w[i]
		}
		d.TopShareNew = e.shareOn(aug.Idx, order, n, in)
		d.TopShareTrain = e.shareOn(e.Train.Idx, order, n, in)
		out[n] = d
	}
	return out
}

// shareOn returns the share of the K×order cells (this process's of
// cells spread over the processes) whose index in mode n is marked in in;
// 0 for no cells.
func (e *Experiment) shareOn(cells []int32, order, n int, in []bool) float64 {
	k := len(cells) / order
	hit := 0
	for c := 0; c < k; c++ {
		if in[cells[c*order+n]] {
			hit++
		}
	}
	if e.many() {
		s := []int64{int64(hit), int64(k)}
		e.sp.cl.SumI64(s)
		hit, k = int(s[0]), int(s[1])
	}
	if k == 0 {
		return 0
	}
	return float64(hit) / float64(k)
}

// TopEntities returns the ⌈share·len(w)⌉ entities (at least 1) of largest
// weight w, ties broken by the smaller index, in that order.
func TopEntities(w []float64, share float64) []int {
	if len(w) == 0 {
		return nil
	}
	k := max(1, int(math.Ceil(share*float64(len(w))-1e-9)))
	idx := make([]int, len(w))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return w[idx[a]] > w[idx[b]] })
	return idx[:min(k, len(w))]
}

// Ranks returns the ranks 1…n of x, ties given the average of the ranks
// they span.
func Ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1 // ranks i+1 … j+1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		i = j + 1
	}
	return r
}

// Spearman returns the Spearman rank correlation of x and y: Pearson's
// correlation of their ranks, ties given average ranks. It returns NaN for
// fewer than 2 pairs, unequal lengths, or when x or y is constant.
func Spearman(x, y []float64) float64 {
	if len(x) != len(y) || len(x) < 2 {
		return math.NaN()
	}
	rx, ry := Ranks(x), Ranks(y)
	n := float64(len(x))
	mean := (n + 1) / 2 // the mean of any ranks 1…n, ties averaged
	var sxy, sxx, syy float64
	for i := range rx {
		a, b := rx[i]-mean, ry[i]-mean
		sxy += a * b
		sxx += a * a
		syy += b * b
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}
