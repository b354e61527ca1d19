package dain

import (
	"fmt"

	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/nn"
)

// This file is what a run spread over several processes (ranks) reports
// of them (DistReport, each rank's seconds per stage: package spread) and
// when it shards an embedding table by row over them (ShardTablesAbove,
// shardPlan). How the run is spread is spread.go.

// DistReport describes a run spread over processes in the report
// (spread.Report).
type DistReport = spread.Report

// RankSeconds is one rank's time per stage, in seconds, and memory, in
// MiB (DistReport.PerRank; spread.RankSeconds).
type RankSeconds = spread.RankSeconds

// ShardTablesAbove is the size of an embedding table (rows × width × 4
// bytes, one copy) from which a run spread over more than one process
// shards it by row when Config.ShardTables is auto: 64 MiB, where the
// four copies a replicated table costs each rank (parameters, Adam's two
// moments, the best epoch's) pass 256 MiB.
const ShardTablesAbove = 64 << 20

// shardPlan returns whether a model of kind (mlp or costco) over dims is
// sharded on size processes, the embedding optimiser it then trains with,
// and why (for the progress).
func (c *Config) shardPlan(kind string, dims []int, size int) (shard bool, opt, why string, err error) {
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
	explicit := c.embeddingOptimizerSetting() != nn.Auto
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
