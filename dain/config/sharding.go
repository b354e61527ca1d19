package config

import (
	"fmt"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/nn"
)

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

// ShardTablesUsed is c.ShardTables with "" read as the table's Unset (auto).
func (c Config) ShardTablesUsed() TableSharding {
	return Resolved[TableSharding](c, "ShardTables")
}

// ShardTablesAbove is the size of an embedding table (rows × width × 4
// bytes, one copy) from which a run spread over more than one process
// Shards it by row when Config.ShardTables is auto: 64 MiB, where the
// four copies a replicated table costs each rank (parameters, Adam's two
// moments, the best epoch's) pass 256 MiB.
const ShardTablesAbove = 64 << 20

// ShardPlan returns whether a model of kind (mlp or costco) over dims is
// sharded on size processes, the embedding optimiser it then trains with,
// and why (for the progress).
func (c *Config) ShardPlan(kind string, dims []int, size int) (shard bool, opt, why string, err error) {
	opt, _ = c.EmbeddingOptimizerFor(kind, dims)
	rows, width := 0, c.Rank
	for _, d := range dims {
		rows += d
	}
	if kind == nn.KindMLP {
		layers := c.Layers
		if layers == nil {
			layers = nn.DefaultLayers(len(dims))
		}
		width = layers[0] / len(dims)
	}
	bytes := int64(rows) * int64(width) * 4
	explicit := c.EmbeddingOptimizerSetting() != nn.Auto
	switch c.ShardTables {
	case ShardTablesOff:
		return false, opt, "", nil
	case ShardTablesOn:
		if explicit && opt != nn.SparseAdam {
			return false, opt, "", fmt.Errorf("dain: -shard-tables on: a sharded table trains with sparse-adam, not %s (-embedding-optimizer)", opt)
		}
		if size < 2 {
			// A cluster of one holds every row: the one-process run.
			return false, opt, "", nil
		}
		return true, nn.SparseAdam, "-shard-tables on", nil
	}
	if size < 2 || bytes < ShardTablesAbove {
		return false, opt, "", nil
	}
	if explicit && opt != nn.SparseAdam {
		return false, opt, fmt.Sprintf("not sharded: its %d MiB table would be, but -embedding-optimizer %s updates every row", bytes>>20, opt), nil
	}
	return true, nn.SparseAdam, fmt.Sprintf("its %d MiB table is at least %d MiB", bytes>>20, ShardTablesAbove>>20), nil
}

// Shards returns the number of processes over which the MLP's embedding
// table is sharded on size processes (1: replicated).
func (c *Config) Shards(dims []int, size int) int {
	if on, _, _, _ := c.ShardPlan(nn.KindMLP, dims, size); on {
		return size
	}
	return 1
}

// CheckSpreadOn reports why one of cfgs cannot run with the MLP's
// embedding table sharded over shards processes, or nil.
func CheckSpreadOn(cfgs []Config, shards int) error {
	if shards == 1 {
		return nil
	}
	for _, c := range cfgs {
		switch {
		case c.Influence == "in-run":
			return fmt.Errorf("dain: -influence in-run observes every training step, which it does with the embedding tables replicated, not sharded (-shard-tables): run it with -shard-tables off")
		case c.InfluenceLayers == "all" && c.Influence != "representer":
			return fmt.Errorf("dain: -influence-layers all differentiates the embedding table, which is sharded here (-shard-tables): run it with the tables replicated (-shard-tables off)")
		case c.Method == "entity-replacement":
			return fmt.Errorf("dain: -method entity-replacement finds near entities in the whole embedding table, which is sharded here (-shard-tables): run it with the tables replicated (-shard-tables off)")
		}
	}
	return nil
}

// CheckKeepOn reports what c.Keep asks for that a run on size processes
// over a tensor of the given dims cannot give: on more than one process,
// the split and the cell scores (each process holds its own share of
// them, which is not gathered into one), and the models when an embedding
// table they hold is sharded over the processes (each holds a share of its
// rows). The entity importance is the same on every process, and the
// models otherwise replicated: those are given (OnRank0). Every process
// finds the same (a cluster.ErrAgreed error).
func (c Config) CheckKeepOn(size int, dims []int) error {
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
		on, _, _, err := c.ShardPlan(kind, dims, size)
		if err != nil {
			return cluster.Agreed(err)
		}
		if on {
			return cluster.Agreed(fmt.Errorf("dain: Config.Keep.Model (-model-out) on %d processes with %s's embedding table sharded over them (-shard-tables %s): each holds a share of its rows, and a sharded model is not gathered for saving; run with -shard-tables off (every process then holds the whole table) or without -model-out", size, kind, c.ShardTablesUsed()))
		}
	}
	return nil
}

// OnRank0 returns k with its model savers (Model, Bayes) called on rank 0
// of cl only: every process holds the same replica of a model, and one
// saves it. Every process then returns the error rank 0's saver returned
// (ErrOtherProcess on the others), so that none is left waiting in a
// collective. On one process k is returned as it is.
func (k Keep) OnRank0(cl cluster.Cluster) Keep {
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
