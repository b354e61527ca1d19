package dain

import (
	"math"

	"github.com/dainx/dainx/dain/report"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
)

// Diagnostics of an entity importance (issue 35, part 4): how far it is
// more than entity frequency, and how much it concentrates the new cells.

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
				tables = d.Val
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
		if r := report.Spearman(imp, freq); !math.IsNaN(r) {
			d.Spearman = &r
		}
		top := report.TopEntities(w, 0.01)
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
	if e.sp.Many() {
		s := []int64{int64(hit), int64(k)}
		e.sp.Cl.SumI64(s)
		hit, k = int(s[0]), int(s[1])
	}
	if k == 0 {
		return 0
	}
	return float64(hit) / float64(k)
}

// TopEntities returns the ⌈share·len(w)⌉ entities (at least 1) of largest
// weight w, ties broken by the smaller index (report.TopEntities).
func TopEntities(w []float64, share float64) []int { return report.TopEntities(w, share) }

// Ranks returns the ranks 1…n of x, ties given the average of the ranks
// they span (report.Ranks).
func Ranks(x []float64) []float64 { return report.Ranks(x) }

// Spearman returns the Spearman rank correlation of x and y, NaN where it
// is not defined (report.Spearman).
func Spearman(x, y []float64) float64 { return report.Spearman(x, y) }
