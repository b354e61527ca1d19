package dain

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// physicalMemory is the machine's memory in bytes (MemTotal of
// /proc/meminfo), or 0 where unknown; a variable for tests.
var physicalMemory = func() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}()

// runCellCopies is how many copies of a cell (its COO indices and value)
// a run holds at its peak: the tensor read, its split, the models' sets of
// it (Θ, the value predictor, the retraining's), the observed-cell sets
// and the new cells; an upper estimate.
const runCellCopies = 12

// RunBytes estimates the memory in bytes of one process's part of a run of
// cfg on a tensor of nnz cells with dims spread over shards processes
// (RunOn; 1 for Run): its share of the cells, each held in about
// runCellCopies copies, the per-entity tables (tableBytes) and, when the
// run fits bayes-fm (Config.UsesBayesFM), its parameters, replicated on
// every process: the chain's state and the value predictor's kept samples.
func RunBytes(nnz int, dims []int, cfg Config, shards int) float64 {
	if cfg.Layers == nil {
		cfg.Layers = nn.DefaultLayers(len(dims))
	}
	cell := float64(4*len(dims) + 8)
	b := runCellCopies*cell*float64(nnz)/float64(max(shards, 1)) + tableBytesSharded(dims, cfg, 1)
	if cfg.UsesBayesFM() {
		k := cfg.bayesConfig().Rank
		params := 1.0
		for _, d := range dims {
			params += float64(d) * float64(k+1)
		}
		b += 8 * params * (1 + maxKeptBayes)
	}
	return b
}

// PhysicalMemory returns this machine's memory in bytes, 0 where unknown.
func PhysicalMemory() int64 { return physicalMemory }

// tableBytes estimates the bytes of the per-entity tables an experiment of
// cfg on a tensor of dims holds at once: float32 embeddings of width E for Θ
// and the downstream MLP and of width R for CoSTCo, each four times
// (parameters, gradients, Adam's two moments), and an alias table (8 bytes)
// per entity.
func tableBytes(dims []int, cfg Config) float64 { return tableBytesSharded(dims, cfg, 1) }

// tableBytesSharded is tableBytes on one of shards processes over which
// the embedding tables are sharded by row (the alias tables stay whole).
func tableBytesSharded(dims []int, cfg Config, shards int) float64 {
	e := cfg.Layers[0] / len(dims)
	perEntity := float64(4*4*(2*e+cfg.Rank))/float64(shards) + 8
	total := 0.0
	for _, d := range dims {
		total += float64(d) * perEntity
	}
	return total
}

// checkMemory returns an error when the per-entity tables of cfg on x
// cannot fit this machine's memory — typically because a mode's indices
// are sparse identifiers rather than 0…n−1 — naming the largest mode.
func checkMemory(x *tensor.COO, cfg Config) error { return checkMemorySharded(x, cfg, 1) }

// checkMemorySharded is checkMemory for one of shards processes over which
// the embedding tables are sharded.
func checkMemorySharded(x *tensor.COO, cfg Config, shards int) error {
	mem := physicalMemory
	need := tableBytesSharded(x.Dims, cfg, shards)
	if mem <= 0 || need <= float64(mem)/2 {
		return nil
	}
	big := 0
	for n, d := range x.Dims {
		if d > x.Dims[big] {
			big = n
		}
	}
	return fmt.Errorf("dain: the per-entity tables (embeddings, optimiser state, alias tables) for dims %v need about %s, more than half of this machine's %s; mode %d has %d entities (its largest index + 1) for %d cells — renumber each mode's indices densely as 0…n−1",
		x.Dims, gib(need), gib(float64(mem)), big, x.Dims[big], x.NNZ())
}

func gib(b float64) string { return fmt.Sprintf("%.1f GiB", b/(1<<30)) }
