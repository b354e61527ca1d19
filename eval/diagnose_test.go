package eval

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
)

// TestBands: the band edges 0, 1, 4, 16, … and their labels.
func TestBands(t *testing.T) {
	for count, want := range map[int]int{0: 0, 1: 1, 3: 1, 4: 2, 15: 2, 16: 3, 1023: 5, 1024: 6, 1 << 20: 6} {
		if got := band(count); got != want {
			t.Errorf("band(%d) = %d, want %d", count, got, want)
		}
	}
	if got := strings.Join(BandNames(), " "); got != "0 1–3 4–15 16–63 64–255 256–1023 1024+" {
		t.Errorf("BandNames = %s", got)
	}
}

// TestDiagnose: shares sum to 1 per grouping, uniform cells reach
// entities without training cells while degree's never do, and the
// per-band RMSEs of a model combine into its overall test RMSE.
func TestDiagnose(t *testing.T) {
	x, base := tinyDemo(t, 1500)
	spec := Spec{Methods: []string{"dain", "degree", "random-costco", "no-aug-steps"}, Ratios: []float64{0, 0.2}, Repeats: 1, Base: base}
	d, err := Diagnose(context.Background(), x, spec, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Profiles) != x.Order()+1 || d.Profiles[x.Order()].Mode != "sparsest" {
		t.Fatalf("profiles %d", len(d.Profiles))
	}
	for _, p := range d.Profiles {
		for name, v := range map[string][]float64{"test": p.Test, "dain": p.NewCells["dain"], "degree": p.NewCells["degree"]} {
			var s float64
			for _, x := range v {
				s += x
			}
			if math.Abs(s-1) > 1e-9 {
				t.Errorf("%s %s: shares sum to %v", p.Mode, name, s)
			}
		}
		if p.NewCells["degree"][0] != 0 || p.NewCells["dain"][0] != 0 {
			t.Errorf("%s: degree or dain drew entities without training cells", p.Mode)
		}
		if _, ok := p.NewCells["no-aug-steps"]; ok {
			t.Errorf("no-aug-steps has new cells")
		}
	}
	if r := d.Pearson["degree"]; len(r) != x.Order() || !(r[0] > 0) {
		t.Errorf("degree's Pearson r %v", r)
	}
	// The sparse demo subset leaves most entities without training cells.
	if d.Profiles[0].NewCells["random-costco"][0] == 0 {
		t.Error("uniform cells never reached an entity without training cells")
	}
	for _, m := range append([]string{"none"}, spec.Methods...) {
		p := d.Profiles[0]
		var sum float64
		for b, r := range p.RMSE[m] {
			if !math.IsNaN(r) {
				sum += r * r * p.Test[b]
			}
		}
		if math.Abs(math.Sqrt(sum)-d.RMSE[m]) > 1e-9 {
			t.Errorf("%s: bands give RMSE %v, overall %v", m, math.Sqrt(sum), d.RMSE[m])
		}
	}
	dir := t.TempDir()
	if err := d.WriteDir(dir, Provenance{Input: "tiny", Base: TrainingOf(base)}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "diagnose.md"))
	for _, want := range []string{"### sparsest", "| degree |", "Value predictors"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("diagnose.md lacks %q", want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "diagnose.json")); err != nil || st.Size() == 0 {
		t.Errorf("diagnose.json: %v", err)
	}
}
