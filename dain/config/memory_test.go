package config

import (
	"math"
	"testing"
)

// TestRunBytes: a process's estimate splits the cells' part over the
// shards and keeps the tables whole; fitting bayes-fm adds its replicated
// parameters, the chain's state and the kept samples, on every process,
// and (clamp auto) a second average of its share of the validation and
// test cells; a loss weight adds 4 bytes per training and new cell.
func TestRunBytes(t *testing.T) {
	dims := []int{1000, 500, 20}
	cfg := DefaultConfig()
	one, two := cfg.RunBytes(1_000_000, dims, 1), cfg.RunBytes(1_000_000, dims, 2)
	cells := runCellCopies * float64(4*3+8) * 1_000_000
	if math.Abs((one-two)-cells/2) > 1 {
		t.Errorf("one process %v, one of two %v: want the cells' %v halved", one, two, cells)
	}
	cfg.FinalModel, cfg.BayesRank = FinalBayesFM, 8
	params := 1 + float64(1000+500+20)*9
	for _, shards := range []int{1, 2} {
		query := 8 * 1_000_000 / float64(shards) * (cfg.TestFrac + (1-cfg.TestFrac)*cfg.ValFrac)
		if got, want := cfg.RunBytes(1_000_000, dims, shards)-DefaultConfig().RunBytes(1_000_000, dims, shards), 8*params*(1+MaxKeptBayes)+query; math.Abs(got-want) > 1 {
			t.Errorf("%d shards: bayes-fm adds %v bytes, want %v", shards, got, want)
		}
	}
	w := DefaultConfig()
	w.AugWeight = 0.5
	train := 1_000_000 * (1 - w.TestFrac) * (1 - w.ValFrac)
	if got, want := w.RunBytes(1_000_000, dims, 1)-DefaultConfig().RunBytes(1_000_000, dims, 1), 4*train*(1+w.Ratio); math.Abs(got-want) > 1 {
		t.Errorf("-aug-weight 0.5 adds %v bytes, want %v", got, want)
	}
}
