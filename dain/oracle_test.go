package dain

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain/streams"
	"github.com/dainx/dainx/tensor"
)

// oracleExperiment returns a synthetic tensor of noise sigma, its
// generator, and an experiment on it whose configuration (method random,
// tiny models) asks for oracle values.
func oracleExperiment(t *testing.T, sigma float64, method MethodName) (*Experiment, Config, *tensor.Generator) {
	t.Helper()
	g, err := tensor.NewGenerator([]int{40, 30, 20}, 3000, 3, sigma, 5)
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.Tensor()
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.Layers, c.Epochs, c.Batch, c.Rank, c.Channels = []int{24, 8}, 2, 128, 4, 4
	c.Method, c.Values, c.Oracle = method, ValuesOracle, g
	e, err := NewExperiment(x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, c, g
}

// TestOracleValues: with -values oracle, every new cell's value is the
// generator's noise-free value (recomputed here from the generator's
// factors) plus σ·ε with ε the oracle stream's N(0, 1) draws in the cells'
// order; the residuals have mean ≈ 0 and variance ≈ σ²; the value
// predictor is never trained; a smaller n gives a prefix of the values.
func TestOracleValues(t *testing.T) {
	const sigma = 0.5
	e, c, g := oracleExperiment(t, sigma, "random")
	m, err := g.CP()
	if err != nil {
		t.Fatal(err)
	}
	const n = 4000
	aug, _, err := e.Augment(context.Background(), c, n)
	if err != nil {
		t.Fatal(err)
	}
	if aug.NNZ() != n || len(aug.Val) != n {
		t.Fatalf("%d cells, %d values; want %d", aug.NNZ(), len(aug.Val), n)
	}
	if len(e.models) != 0 {
		t.Errorf("the oracle trained %d models; the value predictor is not needed", len(e.models))
	}
	r := streams.New(c.Seed, streams.Oracle)
	var sum, ss float64
	for k := 0; k < n; k++ {
		cell := aug.Cell(k)
		// The noise-free value, computed here independently of CP.Value.
		want := 0.0
		for q := 0; q < g.Rank; q++ {
			p := 1.0
			for mode, i := range cell {
				p *= m.Factors[mode][int(i)*g.Rank+q]
			}
			want += p
		}
		eps := r.NormFloat64()
		if got := aug.Val[k]; math.Abs(got-(want+sigma*eps)) > 1e-12 {
			t.Fatalf("cell %d %v: value %v, want the generator's %v + %v·%v", k, cell, got, want, sigma, eps)
		}
		d := aug.Val[k] - want
		sum += d
		ss += d * d
	}
	mean := sum / n
	variance := ss/n - mean*mean
	if math.Abs(mean) > 4*sigma/math.Sqrt(n) {
		t.Errorf("residual mean %.4f; want ≈ 0 (within %.4f)", mean, 4*sigma/math.Sqrt(n))
	}
	if ratio := variance / (sigma * sigma); math.Abs(ratio-1) > 4*math.Sqrt(2.0/n) {
		t.Errorf("residual variance %.4f = %.3f σ²; want σ² = %.4f", variance, ratio, sigma*sigma)
	}
	small, _, err := e.Augment(context.Background(), c, n/2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(small.Val, aug.Val[:n/2]) || !slices.Equal(small.Idx, aug.Idx[:len(small.Idx)]) {
		t.Error("the cells and values of a smaller n are not a prefix of a larger n's")
	}
}

// TestOracleNoiseless: a tensor of noise 0 gets exactly the generator's
// values; duplication keeps its copies' observed values.
func TestOracleNoiseless(t *testing.T) {
	e, c, g := oracleExperiment(t, 0, "random")
	m, _ := g.CP()
	aug, _, err := e.Augment(context.Background(), c, 500)
	if err != nil {
		t.Fatal(err)
	}
	for k := range aug.Val {
		if want := m.Value(aug.Cell(k)); aug.Val[k] != want {
			t.Fatalf("cell %v: %v, want %v", aug.Cell(k), aug.Val[k], want)
		}
	}
	c.Method = "duplication"
	dup, _, err := e.Augment(context.Background(), c, 300)
	if err != nil {
		t.Fatal(err)
	}
	train := trainSet(e)
	for k := range dup.Val {
		if v, ok := train[key(dup.Cell(k))]; !ok || v != dup.Val[k] {
			t.Fatalf("duplicated cell %v: value %v, observed %v (%v)", dup.Cell(k), dup.Val[k], v, ok)
		}
	}
}

// TestOracleErrors: oracle values without a generator, or with the
// generator of another tensor, are errors that say so.
func TestOracleErrors(t *testing.T) {
	g, _ := tensor.NewGenerator([]int{40, 30, 20}, 3000, 3, 0, 5)
	x, _ := g.Tensor()
	noisy, _ := tensor.NewGenerator([]int{40, 30, 20}, 3000, 3, 0.5, 5)
	xn, _ := noisy.Tensor()
	base := DefaultConfig()
	base.Method, base.Values = "random", ValuesOracle
	withNoise := func(s float64) *tensor.Generator {
		h := *noisy
		h.Noise = s
		return &h
	}
	other := func(f func(*tensor.Generator)) *tensor.Generator {
		h := *g
		h.Dims = slices.Clone(g.Dims)
		f(&h)
		return &h
	}
	for _, tc := range []struct {
		x    *tensor.COO
		g    *tensor.Generator
		want string
	}{
		{x, nil, "dainx synth -generator-out"},
		{x, other(func(h *tensor.Generator) { h.Dims[0] = 41 }), "dims [40 30 20] are not the generator's [41 30 20]"},
		{x, other(func(h *tensor.Generator) { h.Seed = 6 }), "describes another tensor"},
		{x, other(func(h *tensor.Generator) { h.Format = "x" }), `format "x"`},
		{xn, withNoise(0.1), "noise σ is 0.1"},
		{xn, withNoise(2), "noise σ is 2"},
		{xn, withNoise(0), "generator (noise 0) gives it"},
	} {
		c := base
		c.Oracle = tc.g
		_, err := NewExperiment(tc.x, c, cpu.New())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("generator %v: error %v; want one containing %q", tc.g, err, tc.want)
		}
	}
}
