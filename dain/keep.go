package dain

import (
	"context"
	"fmt"
	"math"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
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
// which Keep.Scores and Keep.Importance need.
func (c Config) Computes() (scores, importance bool) {
	walk(c.Pipeline().Cells, map[stage]bool{}, func(s stage) {
		switch s.(type) {
		case CellImportance:
			scores = true
		case EntityImportance:
			importance = true
		}
	})
	return scores, importance
}

// checkKeep reports a Keep the method cannot give (Computes).
func (c Config) checkKeep() error {
	cells, entity := c.Computes()
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
	alpha := make([]float32, len(s))
	for z, x := range s {
		if isSigned {
			alpha[z] = max(x, 0)
		} else {
			alpha[z] = float32(math.Abs(float64(x)))
		}
	}
	k.scores = &CellScores{Cells: k.train, Alpha: alpha, S: s}
	return nil
}

// keepImportance records, once, the entity importance w the alias tables
// are built from, each mode scaled to sum to 1.
func (e *Experiment) keepImportance(w [][]float64) {
	k := e.keep
	if k == nil || !k.want.Importance || k.importance != nil {
		return
	}
	k.importance = make([][]float64, len(w))
	for n, m := range w {
		sum := 0.0
		for _, x := range m {
			sum += x
		}
		k.importance[n] = make([]float64, len(m))
		for i, x := range m {
			k.importance[n][i] = x / sum
		}
	}
}

// keepModels hands Θ and the value predictor to Keep.Model (with
// AllModels) before step 5 frees them.
func (e *Experiment) keepModels(c Config) error {
	k := c.Keep
	if k.Model == nil || !k.AllModels {
		return nil
	}
	if t := e.models[Embedding{c.Model}]; t != nil {
		if err := k.Model("theta", t.val.net); err != nil {
			return err
		}
	}
	if c.Pipeline().Values != nil && c.Predictor != c.Model {
		if t := e.models[Embedding{c.Predictor}]; t != nil {
			if err := k.Model("predictor", t.val.net); err != nil {
				return err
			}
		}
	}
	return nil
}

// bestValRMSE is the validation RMSE of the best epoch in h.
func bestValRMSE(h []EpochLog, best int) float64 {
	for _, ep := range h {
		if ep.Epoch == best {
			return math.Sqrt(ep.ValMSE)
		}
	}
	return math.NaN()
}

// checkKeepOn reports what c.Keep asks for that a run on size processes
// over a tensor of the given dims cannot give: on more than one process,
// the split and the cell scores (each process holds its own share of
// them, which is not gathered into one), and the models when an embedding
// table they hold is sharded over the processes (each holds a share of its
// rows). The entity importance is the same on every process, and the
// models otherwise replicated: those are given (onRank0). Every process
// finds the same (an ErrAgreed error).
func (c Config) checkKeepOn(size int, dims []int) error {
	if size <= 1 {
		return nil
	}
	if err := c.Validate(); err != nil {
		return err
	}
	k := c.Keep
	switch {
	case k.Split:
		return cluster.Agreed(fmt.Errorf("dain: Config.Keep.Split (-split-out) on %d processes: each holds its own share of the split, which is not gathered into one; the keyed split (-split keyed, the default) is the same on any number of processes, so a run of one process with the same -seed, -test-frac and -val-frac writes it", size))
	case k.Scores:
		return cluster.Agreed(fmt.Errorf("dain: Config.Keep.Scores (-scores-out) on %d processes: each holds the scores of its own training cells, which are not gathered into one; run on one process to write them", size))
	}
	if k.Model == nil {
		return nil
	}
	kinds := []string{nn.KindMLP}
	if c.Model == nn.KindCoSTCo || c.Predictor == nn.KindCoSTCo {
		kinds = append(kinds, nn.KindCoSTCo)
	}
	for _, kind := range kinds {
		on, _, _, err := c.shardPlan(kind, dims, size)
		if err != nil {
			return cluster.Agreed(err)
		}
		if on {
			return cluster.Agreed(fmt.Errorf("dain: Config.Keep.Model (-model-out) on %d processes with %s's embedding table sharded over them (-shard-tables %s): each holds a share of its rows, and a sharded model is not gathered for saving; run with -shard-tables off (every process then holds the whole table) or without -model-out", size, kind, c.shardTables()))
		}
	}
	return nil
}

// shardTables is c.ShardTables with "" read as the table's Unset (auto).
func (c Config) shardTables() TableSharding {
	return resolved[TableSharding](c, "ShardTables")
}

// TableSharding is Config.ShardTables: whether a run spread over
// processes shards a model's embedding table by row over them.
// TableShardings lists its accepted values; "" means ShardTablesAuto (the
// table's Unset). A checkpoint records it as its string.
type TableSharding string

// The values of Config.ShardTables.
const (
	ShardTablesAuto TableSharding = "auto"
	ShardTablesOn   TableSharding = "on"
	ShardTablesOff  TableSharding = "off"
)

// TableShardings are the accepted values of Config.ShardTables.
var TableShardings = []TableSharding{ShardTablesAuto, ShardTablesOn, ShardTablesOff}

// onRank0 returns k with its model savers (Model, Bayes) called on rank 0
// of cl only: every process holds the same replica of a model, and one
// saves it. Every process then returns the error rank 0's saver returned
// (ErrOtherProcess on the others), so that none is left waiting in a
// collective. On one process k is returned as it is.
func (k Keep) onRank0(cl cluster.Cluster) Keep {
	if cl.Size() == 1 {
		return k
	}
	if save := k.Model; save != nil {
		k.Model = func(role string, net *nn.Net) error {
			var err error
			if cl.Rank() == 0 {
				err = save(role, net)
			}
			return cluster.Agree(cl, err, "dain: saving the model "+role)
		}
	}
	if save := k.Bayes; save != nil {
		k.Bayes = func(role string, m *bayes.Model) error {
			var err error
			if cl.Rank() == 0 {
				err = save(role, m)
			}
			return cluster.Agree(cl, err, "dain: saving the model "+role)
		}
	}
	return k
}
