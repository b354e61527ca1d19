package dain

import (
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain/cellmath"
	"github.com/dainx/dainx/tensor"
)

// TestCheckMemory: a tensor whose largest index is a sparse identifier
// (50 million entities for 40 cells) is refused up front on a machine with
// 1 GiB, naming the mode; the same cells renumbered densely are accepted.
func TestCheckMemory(t *testing.T) {
	defer func(m int64) { physicalMemory = m }(physicalMemory)
	physicalMemory = 1 << 30
	x := &tensor.COO{Dims: []int{50_000_000, 10, 10}}
	dense := &tensor.COO{Dims: []int{40, 10, 10}}
	for i := 0; i < 40; i++ {
		x.Idx = append(x.Idx, int32(i*1_000_000), int32(i%10), int32(i/4))
		x.Val = append(x.Val, float64(i))
		dense.Idx = append(dense.Idx, int32(i), int32(i%10), int32(i/4))
		dense.Val = append(dense.Val, float64(i))
	}
	_, err := NewExperiment(x, DefaultConfig(), cpu.New())
	if err == nil || !strings.Contains(err.Error(), "mode 0 has 50000000 entities") || !strings.Contains(err.Error(), "renumber") {
		t.Errorf("sparse identifiers: %v", err)
	}
	e, err := NewExperiment(dense, DefaultConfig(), cpu.New())
	if err != nil {
		t.Fatalf("dense indices: %v", err)
	}
	e.Close()
	if got := cellmath.DistinctPerMode(x); got[0] != 40 || got[1] != 10 || got[2] != 10 {
		t.Errorf("distinct per mode %v; want [40 10 10]", got)
	}
}

// TestCheckMemorySharded: tables too large for one process of a 1 GiB
// machine (600 000 entities, about 1.1 GiB) are accepted on each of 8
// processes that shard them by row (about 0.15 GiB each), not on 2.
func TestCheckMemorySharded(t *testing.T) {
	defer func(m int64) { physicalMemory = m }(physicalMemory)
	physicalMemory = 1 << 30
	cfg := DefaultConfig()
	cfg.Layers = []int{150, 64}
	x := &tensor.COO{Dims: []int{300_000, 299_990, 10}}
	for _, c := range []struct {
		shards int
		ok     bool
	}{{1, false}, {2, false}, {8, true}} {
		if err := checkMemorySharded(x, cfg, c.shards); (err == nil) != c.ok {
			t.Errorf("%d shards: %v", c.shards, err)
		}
	}
}

// TestMaxMemory (issue 46): a Config whose estimate exceeds MaxMemory is
// refused by NewExperiment before any model is built, naming the largest
// part's flags; the estimate counts -ratio's new cells and CoSTCo's
// rank × channels without overflow; a limit it fits is accepted.
func TestMaxMemory(t *testing.T) {
	g, err := tensor.NewGenerator([]int{30, 20, 10}, 2000, 3, 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.Tensor()
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Rank, cfg.Channels = 1<<20, 1<<20
	cfg.MaxMemory = 1 << 40
	_, err = NewExperiment(x, cfg, cpu.New())
	if err == nil || !strings.Contains(err.Error(), "the CoSTCo model (-rank 1048576, -channels 1048576, -costco-batch 256)") || !strings.Contains(err.Error(), "-max-memory 1.0 TiB") {
		t.Errorf("rank and channels 2²⁰: %v", err)
	}
	sum := func(cfg Config) (total float64, byWhat map[string]float64) {
		byWhat = map[string]float64{}
		for _, p := range MemoryParts(x.NNZ(), x.Dims, cfg, 1) {
			total += p.Bytes
			byWhat[p.What] += p.Bytes
		}
		return
	}
	cfg = DefaultConfig()
	_, one := sum(cfg)
	cfg.Ratio = 1000
	_, many := sum(cfg)
	if many["the new cells"] != 2000*one["the new cells"] || one["the new cells"] <= 0 {
		t.Errorf("new cells at ratio 0.5 %v and 1000 %v bytes", one["the new cells"], many["the new cells"])
	}
	cfg = DefaultConfig()
	total, _ := sum(cfg)
	cfg.MaxMemory = int64(total) + 1
	e, err := NewExperiment(x, cfg, cpu.New())
	if err != nil {
		t.Fatalf("a limit the estimate fits: %v", err)
	}
	e.Close()
	cfg.MaxMemory = int64(total) - 1
	if _, err := NewExperiment(x, cfg, cpu.New()); err == nil || !strings.Contains(err.Error(), "the mlp model (-layers 150,1024,1024,128, -batch 1024)") {
		t.Errorf("a limit one byte below the estimate: %v", err)
	}
}
