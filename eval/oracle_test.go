package eval

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/tensor"
)

// TestEvaluateOracle: an evaluation with -values oracle on a synthetic
// tensor runs every method with the generator's values; the runs carry
// the importance diagnostics (degree's ρ is 1; uniform cells have none);
// WriteDir writes a forest plot per reference and ratio, linked from
// summary.md beside the diagnostics table; the recorded configuration
// says oracle, and an evaluation with the methods' own values is not
// compatible with it.
func TestEvaluateOracle(t *testing.T) {
	g, err := tensor.NewGenerator([]int{30, 25, 20}, 2500, 3, 0.1, 3)
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.Tensor()
	if err != nil {
		t.Fatal(err)
	}
	base := dain.DefaultConfig()
	base.Layers, base.Epochs, base.Batch, base.Rank, base.Channels = []int{24, 8}, 2, 128, 4, 4
	base.Values, base.Oracle = dain.ValuesOracle, g
	spec := Spec{Methods: []string{"dain", "degree", "random-costco"}, Ratios: []float64{0, 0.2}, Repeats: 2, Base: base}
	res, err := Evaluate(context.Background(), x, spec, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2*3*2 {
		t.Fatalf("%d runs; want 12", len(res.Runs))
	}
	for _, r := range res.Runs {
		if !(r.RMSE > 0) {
			t.Errorf("run %+v", r)
		}
		want := r.Ratio > 0 && r.Method != "random-costco"
		if (r.Diagnostics != nil) != want {
			t.Errorf("%s at %g: diagnostics %+v; want them: %v", r.Method, r.Ratio, r.Diagnostics, want)
		}
		if r.Method == "degree" && r.Ratio > 0 {
			for _, d := range r.Diagnostics {
				if d.Spearman == nil || *d.Spearman != 1 {
					t.Errorf("degree, mode %d: ρ %v; want 1", d.Mode, d.Spearman)
				}
			}
		}
	}
	dir := t.TempDir()
	p := Provenance{Input: "synthetic", Dims: x.Dims, NNZ: x.NNZ(), Methods: spec.Methods, Ratios: spec.Ratios, Repeats: 2, Base: TrainingOf(base)}
	if err := res.WriteDir(dir, p); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	for _, ref := range []string{"dain", "degree", "random-costco", "no-augmentation"} {
		name := "forest-" + ref + "-20.png"
		png, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
			t.Errorf("%s is not a PNG: %v", name, err)
		}
		if !strings.Contains(string(md), "("+name+")") {
			t.Errorf("summary.md does not link %s", name)
		}
	}
	if !strings.Contains(string(md), "Entity importance against entity frequency") || !strings.Contains(string(md), "| degree | 1.000 | 1.000 | 1.000 |") {
		t.Errorf("summary.md lacks the diagnostics table:\n%s", md)
	}
	var cfg struct {
		Config struct {
			Base struct {
				Values string            `json:"values"`
				Oracle *tensor.Generator `json:"oracle"`
			} `json:"base"`
		} `json:"config"`
	}
	js, _ := os.ReadFile(filepath.Join(dir, "runs.json"))
	if err := json.Unmarshal(js, &cfg); err != nil || cfg.Config.Base.Values != "oracle" || cfg.Config.Base.Oracle == nil || cfg.Config.Base.Oracle.Seed != 3 {
		t.Errorf("runs.json records values %q, oracle %v (%v)", cfg.Config.Base.Values, cfg.Config.Base.Oracle, err)
	}
	sj, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if !strings.Contains(string(sj), "spearman_importance_frequency") {
		t.Error("summary.json lacks the diagnostics")
	}
	own := base
	own.Values, own.Oracle = dain.ValuesPredictor, nil
	q := p
	q.Base = TrainingOf(own)
	if err := p.Compatible(q, false); err == nil || !strings.Contains(err.Error(), "values") {
		t.Errorf("oracle against the methods' own values: %v", err)
	}
}
