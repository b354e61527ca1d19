package main

import (
	"math"
	"testing"
)

// TestMedianRun: each stage's seconds are that stage's median over the
// runs (not the median-total run's), the peak RSS the largest, the rates
// follow the median seconds, and a failed run is returned as it is.
func TestMedianRun(t *testing.T) {
	runs := []Run{
		{NTrain: 100, Epochs: 1, MaxRSSMiB: 10, Seconds: map[string]float64{"train": 9, "predict": 1, "total": 12}},
		{NTrain: 100, Epochs: 1, MaxRSSMiB: 30, Seconds: map[string]float64{"train": 2, "predict": 5, "total": 8}},
		{NTrain: 100, Epochs: 1, MaxRSSMiB: 20, Seconds: map[string]float64{"train": 4, "predict": 3, "total": 9}},
	}
	m := medianRun(runs)
	if m.Seconds["train"] != 4 || m.Seconds["predict"] != 3 || m.Seconds["total"] != 9 {
		t.Errorf("median seconds %v, want train 4, predict 3, total 9", m.Seconds)
	}
	if m.MaxRSSMiB != 30 {
		t.Errorf("peak RSS %v, want the largest, 30", m.MaxRSSMiB)
	}
	if m.TrainCPS != 25 {
		t.Errorf("train cells/s %v, want 100 cells / 4 s", m.TrainCPS)
	}
	if runs[0].Seconds["train"] != 9 {
		t.Errorf("medianRun changed its input")
	}
	runs[1].Error = "dainx failed"
	if m := medianRun(runs); m.Error != "dainx failed" {
		t.Errorf("a failed run gave %+v", m)
	}
}

// TestFitRSS: runs made from a known a + b·cells/P + c·cells give it back;
// fewer than three runs give no fit.
func TestFitRSS(t *testing.T) {
	a, b, c := 60.0, 40.0, 3.0 // MiB, B/cell, B/cell
	var runs []DistRun
	for _, n := range []int{2_000_000, 5_000_000, 40_000_000} {
		for _, p := range []int{1, 2, 4} {
			rss := a*(1<<20) + b*float64(n)/float64(p) + c*float64(n)
			runs = append(runs, DistRun{Ranks: p, Run: Run{Cells: n, MaxRSSMiB: rss / (1 << 20)}})
		}
	}
	ga, gb, gc, ok := fitRSS(runs)
	if !ok || math.Abs(ga-a) > 1e-6 || math.Abs(gb-b) > 1e-6 || math.Abs(gc-c) > 1e-6 {
		t.Errorf("fit %v: %v MiB + %v B·cells/P + %v B·cells, want %v + %v + %v", ok, ga, gb, gc, a, b, c)
	}
	if _, _, _, ok := fitRSS(runs[:2]); ok {
		t.Error("a fit from two runs")
	}
}
