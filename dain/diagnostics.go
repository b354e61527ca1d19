package dain

import (
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
		d, in := report.ModeOf(n, tables[n].P, counts[n])
		d.TopShareNew = e.sp.ShareOn(aug.Idx, order, n, in)
		d.TopShareTrain = e.sp.ShareOn(e.Train.Idx, order, n, in)
		out[n] = d
	}
	return out
}
