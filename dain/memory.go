package dain

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/dainx/dainx/internal/memlimit"
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

// RunBytes estimates the memory in bytes of one process's part of a run of
// cfg on a tensor of nnz cells with dims spread over shards processes
// (config.Config.RunBytes).
func RunBytes(nnz int, dims []int, cfg Config, shards int) float64 {
	return cfg.RunBytes(nnz, dims, shards)
}

// MemoryParts estimates the memory in bytes of this process's part of a
// run of cfg on nnz cells (this process's share) of a tensor with dims,
// with its embedding tables sharded over shards processes, by what holds
// it (config.Config.MemoryParts, given the models cfg's method trains:
// the embedding models of its stages and its value predictor's). cfg must
// pass Validate.
func MemoryParts(nnz int, dims []int, cfg Config, shards int) []memlimit.Part {
	var models []string
	p := PipelineOf(cfg)
	walk(p.Cells, map[stage]bool{}, func(s stage) {
		if m, ok := s.(Embedding); ok {
			models = append(models, m.Kind)
		}
	})
	if p.Values != nil {
		models = append(models, p.Values.Model.Kind)
	}
	return cfg.MemoryParts(nnz, dims, shards, models)
}

// PhysicalMemory returns this machine's memory in bytes, 0 where unknown.
func PhysicalMemory() int64 { return physicalMemory }

// checkMemoryLimit refuses a run of cfg on x (this process's share, its
// tables sharded over shards processes) whose MemoryParts exceed
// cfg.MaxMemory, or when that is 0 what the system says this process may
// still allocate (memlimit.Available).
func checkMemoryLimit(x *tensor.COO, cfg Config, shards int) error {
	err := memlimit.Check("the run", MemoryParts(x.NNZ(), x.Dims, cfg, shards), memlimit.Limit(cfg.MaxMemory), cfg.MaxMemory)
	if err != nil {
		return fmt.Errorf("dain: %w", err)
	}
	return nil
}

// checkMemory returns an error when the per-entity tables of cfg on x
// cannot fit this machine's memory — typically because a mode's indices
// are sparse identifiers rather than 0…n−1 — naming the largest mode.
func checkMemory(x *tensor.COO, cfg Config) error { return checkMemorySharded(x, cfg, 1) }

// checkMemorySharded is checkMemory for one of shards processes over which
// the embedding tables are sharded.
func checkMemorySharded(x *tensor.COO, cfg Config, shards int) error {
	mem := physicalMemory
	need := cfg.TableBytes(x.Dims, shards)
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
