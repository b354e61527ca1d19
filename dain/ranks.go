package dain

import (
	"fmt"

	"github.com/dainx/dainx/nn"
)

// This file is what a run spread over several processes (ranks) reports
// of them (DistReport, each rank's seconds per stage) and when it shards
// an embedding table by row over them (ShardTablesAbove, shardPlan). How
// the run is spread is spread.go.

// DistReport describes a run spread over processes in the report.
type DistReport struct {
	Ranks    int    `json:"ranks"`
	Library  string `json:"library"`
	Exchange string `json:"exchange"` // the embedding gradients' exchange: dense, sparse or sharded
	// ShardedTables names the models whose embedding table was sharded
	// by row over the ranks (Config.ShardTables).
	ShardedTables []string `json:"sharded_tables,omitempty"`
	CommSeconds   float64  `json:"comm_seconds"` // wall time in communication on rank 0
	StepComm      float64  `json:"step_comm_ms"` // mean communication per training step on rank 0, ms
	// Oversubscribed: the node of rank 0 runs more ranks than it has
	// cores, so waits yield the core and times are not those of a
	// dedicated node (memory is).
	Oversubscribed bool `json:"oversubscribed,omitempty"`
	Steps          int  `json:"steps"` // training steps of every model
	// PerRank gives each rank's seconds in each stage (split: reading
	// done, the split and sets; train: Θ with its TracIn passes; augment:
	// entity importance, sampling and the values; retrain), as
	// computation (wall time outside MPI calls) and waiting (inside them:
	// the communication and the wait for slower ranks).
	PerRank []RankSeconds `json:"per_rank"`
	// Slowest is the rank with the most computation over the run: where
	// the others wait. SlowestBy is its computation over the mean of all
	// ranks' (1 when balanced).
	Slowest   int     `json:"slowest_rank"`
	SlowestBy float64 `json:"slowest_over_mean"`
}

// RankSeconds is one rank's time per stage (DistReport.PerRank).
type RankSeconds struct {
	Rank    int                `json:"rank"`
	Compute map[string]float64 `json:"compute"`
	Wait    map[string]float64 `json:"wait"`
	// PeakRSSMiB is the rank's peak resident memory until the end of the
	// retraining (getrusage; 0 where the system does not tell).
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// PeakRSSAfter is the peak resident memory so far at the end of each
	// stage (MiB): the stage in which it last grows holds the peak.
	PeakRSSAfter map[string]float64 `json:"peak_rss_mib_after"`
}

// distStages are the stages of DistReport.PerRank, in order.
var distStages = []string{"split", "train", "augment", "retrain"}

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
