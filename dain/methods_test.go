package dain

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain/cellmath"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/internal/demo"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// demoSubset returns the first n cells of the demo tensor.
func demoSubset(t *testing.T, n int) *tensor.COO {
	t.Helper()
	x, err := demo.Read()
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	return x.Subset(rows)
}

func experiment(t *testing.T, n int, mut func(*Config)) (*Experiment, Config) {
	t.Helper()
	x := demoSubset(t, n)
	c := DefaultConfig()
	c.Layers, c.Epochs, c.Batch, c.Rank, c.Channels = []int{24, 16, 8}, 3, 128, 4, 4
	if mut != nil {
		mut(&c)
	}
	e, err := NewExperiment(x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, c
}

func trainSet(e *Experiment) map[string]float64 {
	m := map[string]float64{}
	for k := 0; k < e.Train.NNZ(); k++ {
		m[key(e.Train.Cell(k))] = e.Train.Val[k]
	}
	return m
}

// key encodes a cell as a map key.
func key(c []int32) string {
	b := make([]byte, 0, 4*len(c))
	for _, v := range c {
		b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	return string(b)
}

// TestDuplication: duplication copies distinct training cells with their
// values.
func TestDuplication(t *testing.T) {
	e, c := experiment(t, 2000, func(c *Config) { c.Method = "duplication" })
	train := trainSet(e)
	aug, _, err := e.Augment(context.Background(), c, 500)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for k := 0; k < aug.NNZ(); k++ {
		v, ok := train[key(aug.Cell(k))]
		if !ok || v != aug.Val[k] {
			t.Fatalf("cell %v value %v is not a training cell's copy", aug.Cell(k), aug.Val[k])
		}
		if seen[key(aug.Cell(k))] {
			t.Fatalf("cell %v copied twice while n < |train|", aug.Cell(k))
		}
		seen[key(aug.Cell(k))] = true
	}
	if aug.NNZ() != 500 {
		t.Errorf("%d cells", aug.NNZ())
	}
}

// TestEntityReplacement: each new cell is a training cell with exactly one
// index changed to one of that entity's 10 nearest neighbours in Θ's
// embedding space, keeping the value; new cells are not observed.
func TestEntityReplacement(t *testing.T) {
	e, c := experiment(t, 2000, func(c *Config) { c.Method = "entity-replacement" })
	ctx := context.Background()
	aug, _, err := e.Augment(ctx, c, 400)
	if err != nil {
		t.Fatal(err)
	}
	th, _ := e.model(ctx, Embedding{"mlp"})
	table, _ := th.Net.Table()
	emb := make([]float32, table.Len())
	e.be.Download(emb, table)
	w, order := th.Net.Width(), e.x.Order()
	dist := func(n int, i, j int32) float64 {
		off := int(th.Net.Offsets()[n])
		var s float64
		for k := 0; k < w; k++ {
			d := float64(emb[(off+int(i))*w+k]) - float64(emb[(off+int(j))*w+k])
			s += d * d
		}
		return s
	}
	observed := tensor.NewCellSet(e.x.Dims, 0)
	for _, s := range []*tensor.COO{e.Train, e.Val} {
		for k := 0; k < s.NNZ(); k++ {
			observed.Add(s.Cell(k))
		}
	}
	for k := 0; k < aug.NNZ(); k++ {
		cell := aug.Cell(k)
		if observed.Has(cell) {
			t.Fatalf("cell %v is observed", cell)
		}
		// Find the training cell it came from: same value, one index off.
		found := false
		for z := 0; z < e.Train.NNZ() && !found; z++ {
			src := e.Train.Cell(z)
			if e.Train.Val[z] != aug.Val[k] {
				continue
			}
			diff := -1
			for n := 0; n < order; n++ {
				if src[n] != cell[n] {
					if diff >= 0 {
						diff = -2
						break
					}
					diff = n
				}
			}
			if diff < 0 {
				continue
			}
			// The new entity must be among the 10 nearest to the old.
			d := dist(diff, src[diff], cell[diff])
			closer := 0
			for j := 0; j < e.x.Dims[diff]; j++ {
				if int32(j) != src[diff] && dist(diff, src[diff], int32(j)) < d-1e-9 {
					closer++
				}
			}
			found = closer < cellmath.Neighbours
		}
		if !found {
			t.Fatalf("cell %v (value %v) is not a training cell with one index replaced by a top-%d neighbour", cell, aug.Val[k], cellmath.Neighbours)
		}
	}
}

// TestRandomAndDAINCells: random and dain cells are new and distinct, the
// cells of a smaller n are a prefix of a larger n's, and values are finite.
func TestRandomAndDAINCells(t *testing.T) {
	for _, method := range []MethodName{"random", "dain"} {
		for _, pred := range []string{"mlp", "costco"} {
			e, c := experiment(t, 1500, func(c *Config) { c.Method, c.Predictor = method, pred })
			ctx := context.Background()
			big, _, err := e.Augment(ctx, c, 300)
			if err != nil {
				t.Fatal(err)
			}
			small, _, err := e.Augment(ctx, c, 120)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(small.Idx, big.Idx[:len(small.Idx)]) || !slices.Equal(small.Val, big.Val[:120]) {
				t.Errorf("%s/%s: 120 cells are not a prefix of 300", method, pred)
			}
			seen := tensor.NewCellSet(e.x.Dims, 0)
			for _, s := range []*tensor.COO{e.Train, e.Val} {
				for k := 0; k < s.NNZ(); k++ {
					seen.Add(s.Cell(k))
				}
			}
			for k := 0; k < big.NNZ(); k++ {
				if !seen.Add(big.Cell(k)) {
					t.Fatalf("%s/%s: cell %v observed or repeated", method, pred, big.Cell(k))
				}
				if math.IsNaN(big.Val[k]) || math.IsInf(big.Val[k], 0) {
					t.Fatalf("%s/%s: value %v", method, pred, big.Val[k])
				}
			}
		}
	}
}

// TestAblationsRun: every influence and importance variant runs end to end
// on one experiment, sharing Θ: the TracIn passes of the configurations
// named at NewExperiment ride on one training of each Θ.
func TestAblationsRun(t *testing.T) {
	_, base := experiment(t, 1500, nil)
	var cfgs []Config
	for _, mut := range []func(*Config){
		func(c *Config) {},
		func(c *Config) { c.InfluenceLayers = "all" },
		func(c *Config) { c.Influence = "representer" },
		func(c *Config) { c.Entity = "cp1" },
		func(c *Config) { c.Model = "costco" },
		func(c *Config) { c.Model, c.InfluenceLayers = "costco", "all" },
	} {
		c := base
		mut(&c)
		cfgs = append(cfgs, c)
	}
	e, err := NewExperiment(demoSubset(t, 1500), base, cpu.New(), cfgs...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var first []int32
	for i, c := range cfgs {
		aug, _, err := e.Augment(context.Background(), c, 100)
		if err != nil {
			t.Fatalf("variant %d: %v", i, err)
		}
		if aug.NNZ() != 100 {
			t.Fatalf("variant %d: %d cells", i, aug.NNZ())
		}
		if i == 0 {
			first = aug.Idx
		} else if i == 1 && slices.Equal(first, aug.Idx) {
			t.Error("all-layer TracIn drew the same cells as last-layer TracIn")
		}
	}
	if len(e.models) != 2 || len(e.retrained) != 0 {
		t.Errorf("%d embedding models trained, %d again; want 2 (mlp, costco), 0", len(e.models), len(e.retrained))
	}
}

// TestUnplannedTracIn: a TracIn variant not named at NewExperiment still
// runs, on Θ trained again, and draws the cells it draws when planned.
func TestUnplannedTracIn(t *testing.T) {
	e, base := experiment(t, 1500, nil)
	all := base
	all.InfluenceLayers = "all"
	ctx := context.Background()
	if _, _, err := e.Augment(ctx, base, 100); err != nil {
		t.Fatal(err)
	}
	got, _, err := e.Augment(ctx, all, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.retrained) != 1 {
		t.Errorf("Θ trained again %d times; want 1", len(e.retrained))
	}
	planned, err := NewExperiment(demoSubset(t, 1500), all, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer planned.Close()
	want, _, err := planned.Augment(ctx, all, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Idx, want.Idx) || !slices.Equal(got.Val, want.Val) {
		t.Error("unplanned all-layer TracIn drew other cells than planned")
	}
}

// TestMaxEntity: the max aggregator gives each entity the largest |α_z| of
// its training cells, normalised per mode, and dain-max-entity runs.
func TestMaxEntity(t *testing.T) {
	e, c := experiment(t, 1500, func(c *Config) { c.Entity = "max" })
	ctx := context.Background()
	s := TracIn{Model: Embedding{"mlp"}, Layers: "last"}
	v, th, err := s.scores(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	w, err := MaxEntity{Cells: s}.aggregate(e, v, th)
	if err != nil {
		t.Fatal(err)
	}
	alpha := make([]float32, v.Len())
	e.be.Download(alpha, v)
	order := e.x.Order()
	for n := 0; n < order; n++ {
		want := make([]float64, e.x.Dims[n])
		var sum float64
		for z, a := range alpha {
			i := e.Train.Idx[z*order+n]
			want[i] = math.Max(want[i], math.Abs(float64(a)))
		}
		for _, x := range want {
			sum += x
		}
		for i := range want {
			if want[i] /= sum; math.Abs(w[n][i]-want[i]) > 1e-15 {
				t.Fatalf("mode %d entity %d: %v, want %v", n, i, w[n][i], want[i])
			}
		}
	}
	v2, ok := VariantNamed("dain-max-entity")
	if !ok {
		t.Fatal("dain-max-entity is not a variant")
	}
	base := DefaultConfig()
	v2.Set(&base)
	if base.Entity != "max" {
		t.Errorf("dain-max-entity sets entity %q", base.Entity)
	}
	aug, _, err := e.Augment(ctx, c, 200)
	if err != nil || aug.NNZ() != 200 {
		t.Fatalf("Augment: %v", err)
	}
}

// TestPredictChunks: predicting in chunks (of 7 cells, the last one
// short) gives the values of one chunk, in order.
func TestPredictChunks(t *testing.T) {
	dims := []int{5, 4, 3}
	m, err := nn.NewMLP(cpu.New(), nn.Config{Dims: dims, Layers: []int{12, 8}, Capacity: 4}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	var cells []int32
	for i := range 60 {
		cells = append(cells, int32(i%5), int32(i%4), int32(i%3))
	}
	whole, err := cellmath.Predict(m, cells)
	if err != nil {
		t.Fatal(err)
	}
	defer func(c int) { cellmath.PredictChunk = c }(cellmath.PredictChunk)
	cellmath.PredictChunk = 7
	parts, err := cellmath.Predict(m, cells)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) != 60 || !slices.Equal(parts, whole) || slices.Equal(whole[:7], whole[7:14]) {
		t.Errorf("chunked predictions %v\nwhole %v", parts, whole)
	}
}

// TestSplitPrint: the split's fingerprint does not depend on the order in
// which processes add their cells, and changes when one cell moves to
// another part or when the seed changes the split. Under both splits, a
// range's parts are the whole split's over that range, and the legacy
// split counts the training cells before it.
func TestSplitPrint(t *testing.T) {
	for _, split := range []SplitKind{SplitKeyed, SplitLegacy} {
		cfg := DefaultConfig()
		cfg.Split = split
		whole, _, counts := cfg.SplitParts(1000, 0, 1000)
		var all, parts spread.SplitPrint
		all.Add(whole, 0)
		for _, r := range [][2]int{{600, 1000}, {0, 300}, {300, 600}} {
			p, before, c := cfg.SplitParts(1000, r[0], r[1])
			parts.Add(p, r[0])
			if !slices.Equal(p, whole[r[0]:r[1]]) || c != counts {
				t.Fatalf("%s: cells %v: parts or counts differ from the whole split's", split, r)
			}
			if want := bytes.Count(whole[:r[0]], []byte{tensor.PartTrain}); split == SplitLegacy && before != want {
				t.Errorf("%s: %d training cells before %d, want %d", split, before, r[0], want)
			}
		}
		if all != parts || all.String() == (spread.SplitPrint{}).String() {
			t.Errorf("%s: whole %v, in parts %v", split, all, parts)
		}
		moved := slices.Clone(whole)
		moved[slices.Index(moved, tensor.PartTrain)] = tensor.PartVal
		var m spread.SplitPrint
		m.Add(moved, 0)
		cfg.Seed++
		other, _, _ := cfg.SplitParts(1000, 0, 1000)
		var o spread.SplitPrint
		o.Add(other, 0)
		if m == all || o == all {
			t.Errorf("%s: one cell moved: %v, another seed: %v, both %v", split, m, o, all)
		}
	}
}

// TestNearestPasses: cellmath.Nearest gives the same neighbour lists whatever the
// number of queries a pass (256, 7, 1).
func TestNearestPasses(t *testing.T) {
	defer func(f int) { cellmath.NearestFloats = f }(cellmath.NearestFloats)
	e, _ := experiment(t, 2000, func(c *Config) { c.Method = "entity-replacement" })
	th, err := e.model(context.Background(), Embedding{"mlp"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := cellmath.Nearest(th.Net, e.Train)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []int{7, 1} {
		cellmath.NearestFloats = q * slices.Max(e.x.Dims)
		got, err := cellmath.Nearest(th.Net, e.Train)
		if err != nil {
			t.Fatal(err)
		}
		for n := range want {
			for i := range want[n] {
				if !slices.Equal(got[n][i], want[n][i]) {
					t.Fatalf("%d queries a pass: mode %d entity %d: %v, %v with 256", q, n, i, got[n][i], want[n][i])
				}
			}
		}
	}
}
