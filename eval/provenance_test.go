package eval

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dainx/dainx/dain"
)

// v0 is the config of a runs.json written before Provenance had a version:
// "base" keyed by dain.Config's Go field names, a merge's "commands" with a
// null.
const v0 = `{
  "backend": "cpu", "device": "2 cores", "dims": [3, 4], "nnz": 12, "input": "t.tsv",
  "methods": ["dain", "random-mlp"], "ratios": [0, 0.5], "repeats": 2, "seconds": 1.5,
  "commands": ["dainx eval -seed 1", null], "seeds": [1, 2], "merged_from": ["a", "b"],
  "base": {"Ratio": 0.5, "Seed": 1, "Layers": [24, 8], "Epochs": 3, "Batch": 128, "Patience": 10,
    "LR": 0.001, "TestFrac": 0.1, "ValFrac": 0.2, "EvalBatch": 4096, "Method": "dain", "Model": "mlp",
    "Predictor": "costco", "Influence": "tracin", "InfluenceLayers": "last", "Entity": "sum",
    "Rank": 4, "Channels": 4, "CoSTCoLR": 0.001, "CoSTCoBatch": 256, "CPLambda": 0.001, "CPSweeps": 30,
    "Progress": null}
}`

// TestProvenanceVersions: a version 0 record reads into the same
// Provenance as the current version's record of the same evaluation, and
// a version-1 record round-trips.
func TestProvenanceVersions(t *testing.T) {
	var old Provenance
	if err := json.Unmarshal([]byte(v0), &old); err != nil {
		t.Fatal(err)
	}
	c := dain.DefaultConfig()
	c.Seed, c.Layers, c.Epochs, c.Batch, c.Rank, c.Channels = 1, []int{24, 8}, 3, 128, 4, 4
	c.EmbeddingOptimizer = "adam" // what every record made before the setting used
	c.Split = dain.SplitLegacy    // likewise
	if old.Base.InfluenceLayers != "last" || old.Base.CoSTCoBatch != 256 || len(old.Commands) != 2 || old.Commands[1] != "" {
		t.Fatalf("version 0 read as %+v", old)
	}
	cur := Provenance{Dims: []int{3, 4}, NNZ: 12, Methods: []string{"dain", "random-mlp"}, Ratios: []float64{0, 0.5}, Base: TrainingOf(c)}
	if err := old.Compatible(cur, true); err != nil {
		t.Errorf("version 0 against the same configuration now: %v", err)
	}
	cur.Version = ProvenanceVersion
	b, err := json.Marshal(cur)
	if err != nil {
		t.Fatal(err)
	}
	var back Provenance
	if err := json.Unmarshal(b, &back); err != nil || back.Compatible(cur, true) != nil || back.Version != ProvenanceVersion {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if !strings.Contains(string(b), `"influence_layers":"last"`) {
		t.Errorf("version 1 keys: %s", b)
	}
	var future Provenance
	if err := json.Unmarshal([]byte(strings.Replace(string(b), `"version":1`, `"version":99`, 1)), &future); err == nil {
		t.Error("a newer version was read")
	}
}

// TestCompatibleNamesField: every training field takes part, named by its
// JSON key; the seed only with sameSeed.
func TestCompatibleNamesField(t *testing.T) {
	base := Provenance{Dims: []int{3}, NNZ: 1, Methods: []string{"dain"}, Ratios: []float64{0}, Base: TrainingOf(dain.DefaultConfig())}
	for _, tc := range []struct {
		mut  func(*Provenance)
		want string
	}{
		{func(p *Provenance) { p.Base.CPSweeps++ }, "cp_sweeps"},
		{func(p *Provenance) { p.Base.InfluenceEvery = 3 }, "influence_every"},
		{func(p *Provenance) { p.Base.InfluenceValSample = 7 }, "influence_val_sample"},
		{func(p *Provenance) { p.Base.InfluenceLayers = "all" }, "influence_layers"},
		{func(p *Provenance) { p.Base.Layers = []int{9} }, "layers"},
		{func(p *Provenance) { p.Ratios = []float64{0, 1} }, "ratios"},
		{func(p *Provenance) { p.NNZ = 2 }, "nnz"},
	} {
		q := base
		q.Base.Layers = append([]int(nil), base.Base.Layers...)
		tc.mut(&q)
		if err := base.Compatible(q, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v; want one naming %s", err, tc.want)
		}
	}
	q := base
	q.Base.Seed++
	if base.Compatible(q, false) != nil || base.Compatible(q, true) == nil {
		t.Error("the seed counts only with sameSeed")
	}
}

// TestCompatibleEffective: settings compare by what a run resolves them
// to (auto against the optimiser it picks on the record's dims), and a
// record that lacks a setting reads as the value the dainx that wrote it
// used, listed in Legacy and taken by Adopt unless the flag is given.
func TestCompatibleEffective(t *testing.T) {
	dims := []int{12, 10, 8} // small: auto picks dense Adam for both models
	auto := Provenance{Dims: dims, NNZ: 300, Methods: []string{"dain"}, Ratios: []float64{0}, Base: TrainingOf(dain.DefaultConfig())}
	if auto.Base.EmbeddingOptimizer != "auto" {
		t.Fatalf("default embedding optimizer %q", auto.Base.EmbeddingOptimizer)
	}
	adam, sparse := auto, auto
	adam.Base.EmbeddingOptimizer, sparse.Base.EmbeddingOptimizer = "adam", "sparse-adam"
	if err := adam.Compatible(auto, true); err != nil {
		t.Errorf("adam against auto choosing adam: %v", err)
	}
	if err := sparse.Compatible(auto, true); err == nil || !strings.Contains(err.Error(), "embedding_optimizer sparse-adam, adam") {
		t.Errorf("sparse-adam against auto choosing adam: %v", err)
	}
	if e := auto.Base.Effective(dims); e.EmbeddingOptimizer != "adam" || e.Split != dain.SplitKeyed {
		t.Errorf("effective %q %q", e.EmbeddingOptimizer, e.Split)
	}
	// A version-1 record written before -embedding-optimizer and -split.
	b, _ := json.Marshal(auto)
	var m map[string]any
	json.Unmarshal(b, &m)
	base := m["base"].(map[string]any)
	delete(base, "embedding_optimizer")
	delete(base, "split")
	m["version"] = 1
	b, _ = json.Marshal(m)
	var old Provenance
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatal(err)
	}
	if old.Base.Split != dain.SplitLegacy || old.Base.EmbeddingOptimizer != "adam" || strings.Join(old.Legacy, ",") != "embedding_optimizer,split" {
		t.Fatalf("old record read as split %q, optimizer %q, legacy %v", old.Base.Split, old.Base.EmbeddingOptimizer, old.Legacy)
	}
	if err := old.Compatible(auto, true); err == nil || !strings.Contains(err.Error(), "split legacy, keyed") {
		t.Errorf("old record against today's defaults: %v", err)
	}
	c := dain.DefaultConfig()
	given := func(flag string) bool { return flag == "-split" }
	if got := old.Adopt(&c, given); len(got) != 1 || got[0] != "-embedding-optimizer adam" || c.Split != dain.SplitKeyed {
		t.Errorf("adopt with -split given: %v, split %q", got, c.Split)
	}
	c = dain.DefaultConfig()
	old.Adopt(&c, func(string) bool { return false })
	cur := auto
	cur.Base = TrainingOf(c)
	if err := old.Compatible(cur, true); err != nil {
		t.Errorf("old record against the configuration it adopted into: %v", err)
	}
}

// TestCompatibleDefaultLayers: no layers (the default) and the default
// layers written out are the same configuration.
func TestCompatibleDefaultLayers(t *testing.T) {
	p := Provenance{Dims: []int{5, 6, 7}, NNZ: 9, Methods: []string{"dain"}, Ratios: []float64{0}, Base: TrainingOf(dain.DefaultConfig())}
	q := p
	q.Base.Layers = []int{150, 1024, 1024, 128}
	if err := p.Compatible(q, true); err != nil {
		t.Errorf("no -layers against the default layers: %v", err)
	}
	q.Base.Layers = []int{150, 1024, 128}
	if err := p.Compatible(q, true); err == nil || !strings.Contains(err.Error(), "layers") {
		t.Errorf("no -layers against other layers: %v", err)
	}
}
