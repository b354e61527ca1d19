package dain

import (
	"context"
	"fmt"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/cellmath"
	"github.com/dainx/dainx/tensor"
)

// kept gathers what Config.Keep asks a run for, as the stages compute it.
type kept struct {
	want       Keep
	train      *tensor.COO // the training cells the scores are in the order of
	scores     *CellScores
	importance [][]float64
}

// Computes reports whether c's method computes cell scores (it has an
// influence step) and entity importance (it draws entities by importance),
// which Keep.Scores and Keep.Importance need. It panics if c does not pass
// Validate.
func Computes(c Config) (scores, importance bool) {
	walk(PipelineOf(c).Cells, map[stage]bool{}, func(s stage) {
		switch s.(type) {
		case CellImportance:
			scores = true
		case EntityImportance:
			importance = true
		}
	})
	return scores, importance
}

// checkKeep reports a Keep the method of c cannot give (Computes).
func checkKeep(c Config) error {
	cells, entity := Computes(c)
	switch {
	case c.Keep.Scores && !cells:
		return fmt.Errorf("dain: method %s scores no cell (no influence step): there are no cell scores to write", c.Method)
	case c.Keep.Importance && !entity:
		return fmt.Errorf("dain: method %s draws no entity by importance: there is no entity importance to write", c.Method)
	}
	return nil
}

// keepScores records, once, the cell scores v that cells (the importance
// the entity aggregation reads) gave: α_z as the aggregation saw it and the
// signed S_z under any Signed.
func (e *Experiment) keepScores(ctx context.Context, cells CellImportance, v compute.F32) error {
	k := e.keep
	if k == nil || !k.want.Scores || k.scores != nil || cells == nil {
		return nil
	}
	signed := v
	sg, isSigned := cells.(Signed)
	if isSigned {
		var err error
		if signed, _, err = sg.Cells.scores(ctx, e); err != nil {
			return err
		}
	}
	s := make([]float32, signed.Len())
	if err := e.be.Download(s, signed); err != nil {
		return err
	}
	k.scores = &CellScores{Cells: k.train, Alpha: cellmath.Importance(s, isSigned), S: s}
	return nil
}

// keepImportance records, once, the entity importance w the alias tables
// are built from, each mode scaled to sum to 1.
func (e *Experiment) keepImportance(w [][]float64) {
	k := e.keep
	if k == nil || !k.want.Importance || k.importance != nil {
		return
	}
	k.importance = cellmath.Shares(w)
}

// keepModels hands Θ and the value predictor to Keep.Model (with
// AllModels) before step 5 frees them.
func (e *Experiment) keepModels(c Config) error {
	k := c.Keep
	if k.Model == nil || !k.AllModels {
		return nil
	}
	if t := e.models[Embedding{c.Model}]; t != nil {
		if err := k.Model("theta", t.Val.Net); err != nil {
			return err
		}
	}
	if PipelineOf(c).Values != nil && c.Predictor != c.Model {
		if t := e.models[Embedding{c.Predictor}]; t != nil {
			if err := k.Model("predictor", t.Val.Net); err != nil {
				return err
			}
		}
	}
	return nil
}
