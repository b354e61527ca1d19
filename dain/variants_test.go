package dain

import (
	"context"
	"math"
	"testing"

	"github.com/dainx/dainx/dain/cellmath"
)

// variantConfig returns the default configuration as the named variant
// sets it.
func variantConfig(t *testing.T, name string) Config {
	t.Helper()
	v, ok := VariantNamed(name)
	if !ok {
		t.Fatalf("%s is not a variant", name)
	}
	c := DefaultConfig()
	v.Set(&c)
	if err := c.Validate(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c
}

// TestFrequencyEntity: the degree method draws each mode's entities in
// proportion to their training-cell counts, with no cell importance (no
// TracIn pass, no Θ), and its new cells are new.
func TestFrequencyEntity(t *testing.T) {
	e, c := experiment(t, 1500, func(c *Config) {
		*c = func() Config {
			v := variantConfig(t, "degree")
			v.Layers, v.Epochs, v.Batch, v.Rank, v.Channels = c.Layers, c.Epochs, c.Batch, c.Rank, c.Channels
			return v
		}()
	})
	if c.Method != "degree" {
		t.Fatalf("degree sets method %q", c.Method)
	}
	w, err := FrequencyEntity{}.aggregate(e, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	order := e.x.Order()
	for n := 0; n < order; n++ {
		count := make([]float64, e.x.Dims[n])
		for z := 0; z < e.Train.NNZ(); z++ {
			count[e.Train.Idx[z*order+n]]++
		}
		for i := range count {
			if want := count[i] / float64(e.Train.NNZ()); math.Abs(w[n][i]-want) > 1e-15 {
				t.Fatalf("mode %d entity %d: %v, want %v", n, i, w[n][i], want)
			}
		}
	}
	aug, _, err := e.Augment(context.Background(), c, 200)
	if err != nil || aug.NNZ() != 200 || len(aug.Val) != 200 {
		t.Fatalf("Augment: %v", err)
	}
	if _, ok := e.models[Embedding{"mlp"}]; ok {
		t.Error("degree trained Θ")
	}
	train := trainSet(e)
	for k := 0; k < aug.NNZ(); k++ {
		if _, ok := train[key(aug.Cell(k))]; ok {
			t.Fatalf("cell %v is a training cell", aug.Cell(k))
		}
	}
}

// TestMeanEntity: the mean aggregator divides each entity's summed |α_z|
// by its number of training cells.
func TestMeanEntity(t *testing.T) {
	e, _ := experiment(t, 1500, nil)
	ctx := context.Background()
	s := TracIn{Model: Embedding{"mlp"}, Layers: "last"}
	v, th, err := s.scores(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	w, err := MeanEntity{Cells: s}.aggregate(e, v, th)
	if err != nil {
		t.Fatal(err)
	}
	alpha := make([]float32, v.Len())
	e.be.Download(alpha, v)
	order := e.x.Order()
	for n := 0; n < order; n++ {
		sum, cnt := make([]float64, e.x.Dims[n]), make([]float64, e.x.Dims[n])
		for z, a := range alpha {
			i := e.Train.Idx[z*order+n]
			sum[i] += math.Abs(float64(a))
			cnt[i]++
		}
		var tot float64
		for i := range sum {
			if cnt[i] > 0 {
				sum[i] /= cnt[i]
			}
			tot += sum[i]
		}
		for i := range sum {
			if want := sum[i] / tot; math.Abs(w[n][i]-want) > 1e-12 {
				t.Fatalf("mode %d entity %d: %v, want %v", n, i, w[n][i], want)
			}
		}
	}
	if c := variantConfig(t, "dain-mean-entity"); c.Entity != "mean" {
		t.Errorf("dain-mean-entity sets entity %q", c.Entity)
	}
}

// TestSigned: signed importance keeps the positive part of TracIn's signed
// sum and zeroes the rest.
func TestSigned(t *testing.T) {
	e, _ := experiment(t, 1500, func(c *Config) { c.Sign = "positive" })
	ctx := context.Background()
	s := TracIn{Model: Embedding{"mlp"}, Layers: "last"}
	raw, _, err := s.scores(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	pos, _, err := Signed{Cells: s}.scores(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	a, b := make([]float32, raw.Len()), make([]float32, pos.Len())
	e.be.Download(a, raw)
	e.be.Download(b, pos)
	neg := 0
	for z := range a {
		if want := max(a[z], 0); b[z] != want {
			t.Fatalf("cell %d: signed %v, want max(%v, 0)", z, b[z], a[z])
		}
		if a[z] < 0 {
			neg++
		}
	}
	if neg == 0 || neg == len(a) {
		t.Logf("%d of %d scores negative", neg, len(a))
	}
	if c := variantConfig(t, "dain-signed"); c.Sign != "positive" {
		t.Errorf("dain-signed sets sign %q", c.Sign)
	}
	c := e.cfg
	if _, ok := entityOf(c).cells().(Signed); !ok {
		t.Errorf("sign positive builds %T", entityOf(c).cells())
	}
}

// TestTemperVariants: the variants of a temperature or a mix build a
// Tempered entity importance (cellmath.Temper's own test is in package
// cellmath), the paper's none, and a mix above 1 is refused.
func TestTemperVariants(t *testing.T) {
	if c := variantConfig(t, "dain-tau0.5"); c.Temperature != 0.5 {
		t.Errorf("dain-tau0.5: τ %v", c.Temperature)
	}
	c := variantConfig(t, "dain-mix0.5")
	if ent, ok := entityOf(c).(Tempered); !ok || ent.Mix != 0.5 || ent.Tau != 1 {
		t.Errorf("dain-mix0.5 builds %#v", entityOf(c))
	}
	if _, ok := entityOf(DefaultConfig()).(SumEntity); !ok {
		t.Error("the paper's configuration is no longer SumEntity")
	}
	bad := DefaultConfig()
	bad.Mix = 1.5
	if bad.Validate() == nil {
		t.Error("mix 1.5 accepted")
	}
}

// TestNearCells: near-cells keep all but one index of a training cell, and
// the cells are new.
func TestNearCells(t *testing.T) {
	e, c := experiment(t, 1500, func(c *Config) { c.Method = "near-cells" })
	aug, _, err := e.Augment(context.Background(), c, 200)
	if err != nil || aug.NNZ() != 200 {
		t.Fatalf("Augment: %v", err)
	}
	train := trainSet(e)
	order := e.x.Order()
	// Index the training cells by every (N−1)-subset of their indices.
	near := map[string]bool{}
	for z := 0; z < e.Train.NNZ(); z++ {
		for m := 0; m < order; m++ {
			cell := append([]int32(nil), e.Train.Cell(z)...)
			cell[m] = -1
			near[key(cell)] = true
		}
	}
	for k := 0; k < aug.NNZ(); k++ {
		if _, ok := train[key(aug.Cell(k))]; ok {
			t.Fatalf("cell %v is a training cell", aug.Cell(k))
		}
		found := false
		for m := 0; m < order && !found; m++ {
			cell := append([]int32(nil), aug.Cell(k)...)
			cell[m] = -1
			found = near[key(cell)]
		}
		if !found {
			t.Fatalf("cell %v differs from every training cell in more than one index", aug.Cell(k))
		}
	}
	if v := variantConfig(t, "dain-near-cells"); v.Method != "near-cells" {
		t.Errorf("dain-near-cells sets method %q", v.Method)
	}
}

// TestPredictorVariants: dain-average values cells by the mean of CoSTCo
// and Θ on dain's cells; dain-agree keeps the half of 2·N_aug dain cells
// with the smallest disagreement, valued by CoSTCo.
func TestPredictorVariants(t *testing.T) {
	e, base := experiment(t, 1500, nil)
	ctx := context.Background()
	dain, _, err := e.Augment(ctx, base, 200)
	if err != nil {
		t.Fatal(err)
	}
	avg := base
	avg.Method = "dain-average"
	got, _, err := e.Augment(ctx, avg, 200)
	if err != nil {
		t.Fatal(err)
	}
	mlp, err := cellmath.Predict(e.models[Embedding{"mlp"}].Val.Net, dain.Idx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range dain.Val {
		if want := (dain.Val[k] + mlp[k]) / 2; math.Abs(got.Val[k]-want) > 1e-6 {
			t.Fatalf("cell %d: %v, want (%v + %v)/2", k, got.Val[k], dain.Val[k], mlp[k])
		}
	}
	agree := base
	agree.Method = "dain-agree"
	kept, _, err := e.Augment(ctx, agree, 100)
	if err != nil || kept.NNZ() != 100 {
		t.Fatalf("agree: %v", err)
	}
	// dain's first 200 cells are the agree variant's candidates.
	gap := map[string]float64{}
	for k := 0; k < 200; k++ {
		gap[key(dain.Cell(k))] = math.Abs(dain.Val[k] - mlp[k])
	}
	worstKept, bestDropped := 0.0, math.Inf(1)
	keptSet := map[string]bool{}
	for k := 0; k < kept.NNZ(); k++ {
		g, ok := gap[key(kept.Cell(k))]
		if !ok {
			t.Fatalf("kept cell %v is not a candidate", kept.Cell(k))
		}
		keptSet[key(kept.Cell(k))] = true
		worstKept = math.Max(worstKept, g)
	}
	for k, g := range gap {
		if !keptSet[k] {
			bestDropped = math.Min(bestDropped, g)
		}
	}
	if worstKept > bestDropped+1e-6 {
		t.Errorf("kept a cell with disagreement %v while dropping one with %v", worstKept, bestDropped)
	}
	for _, name := range []string{"dain-avg-predictor", "dain-agree", "dain-mix-avg", "random-avg-predictor"} {
		variantConfig(t, name)
	}
	mixAvg := variantConfig(t, "dain-mix-avg")
	if p := PipelineOf(mixAvg).Cells.(AverageValues); p.Cells.(ImportanceCells).Entity.(Tempered).Mix != 0.5 {
		t.Errorf("dain-mix-avg builds %#v", p)
	}
	if p := PipelineOf(variantConfig(t, "random-avg-predictor")).Cells.(AverageValues); p.Cells != (UniformCells{}) {
		t.Errorf("random-avg-predictor builds %#v", p)
	}
}

// TestNoAugSteps: the training-length control makes no cells, and its
// retraining on train alone runs the optimiser steps of train ∪ N_aug.
func TestNoAugSteps(t *testing.T) {
	if f := cellmath.StepsScale(1000, 500, 128); f != 12.0/8 {
		t.Errorf("cellmath.StepsScale(1000, 500, 128) = %v, want 12/8", f)
	}
	e, c := experiment(t, 1500, func(c *Config) { c.Method = "no-aug-steps"; c.Patience = 100 })
	ctx := context.Background()
	n := e.Train.NNZ() / 2
	aug, _, err := e.Augment(ctx, c, n)
	if err != nil || aug.NNZ() != 0 {
		t.Fatalf("Augment: %d cells, %v", aug.NNZ(), err)
	}
	_, res, _, err := e.Retrain(ctx, c, aug, n, "")
	if err != nil {
		t.Fatal(err)
	}
	want := int(math.Ceil(float64(c.Epochs) * cellmath.StepsScale(e.Train.NNZ(), n, c.Batch)))
	if len(res.Epochs) != want || want <= c.Epochs {
		t.Errorf("control trained %d epochs, want %d (> %d)", len(res.Epochs), want, c.Epochs)
	}
	if e.cfg.Epochs != c.Epochs {
		t.Errorf("Retrain left the experiment's epochs at %d", e.cfg.Epochs)
	}
	_, res, _, err = e.Retrain(ctx, DefaultConfig(), aug, n, "")
	if err != nil || len(res.Epochs) != c.Epochs {
		t.Errorf("dain's retraining on train alone: %d epochs, %v", len(res.Epochs), err)
	}
}
