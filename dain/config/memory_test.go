package config

import (
	"math"
	"testing"
)

// TestRunBytes: a process's estimate splits the cells' part over the
// shards and keeps the tables whole; fitting bayes-fm adds its replicated
// parameters, the chain's state and the kept samples, on every process.
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
		if got, want := cfg.RunBytes(1_000_000, dims, shards)-DefaultConfig().RunBytes(1_000_000, dims, shards), 8*params*(1+MaxKeptBayes); math.Abs(got-want) > 1 {
			t.Errorf("%d shards: bayes-fm adds %v bytes, want %v", shards, got, want)
		}
	}
}
