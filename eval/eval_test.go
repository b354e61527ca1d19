package eval

import (
	"context"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/internal/demo"
	"github.com/dainx/dainx/tensor"
)

// TestWelchKnown checks the Welch t-test against the first worked example of
// Wikipedia's "Welch's t-test" article (retrieved 2026): t = −2.46,
// ν ≈ 24.99, two-sided p = 0.021.
func TestWelchKnown(t *testing.T) {
	a := []float64{27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4}
	b := []float64{27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4}
	tt, df, p := Welch(a, b)
	if math.Abs(tt+2.46) > 0.005 || math.Abs(df-24.99) > 0.01 || math.Abs(p-0.021) > 0.0005 {
		t.Errorf("t %.4f, ν %.3f, p %.4f; want −2.46, 24.99, 0.021", tt, df, p)
	}
	// Symmetry and the degenerate cases.
	if t2, _, p2 := Welch(b, a); t2 != -tt || p2 != p {
		t.Errorf("Welch(b, a) = %v, %v; want %v, %v", t2, p2, -tt, p)
	}
	if _, _, p := Welch([]float64{1, 1}, []float64{1, 1}); p != 1 {
		t.Errorf("identical constant samples: p %v", p)
	}
	if _, _, p := Welch([]float64{1, 1}, []float64{2, 2}); p != 0 {
		t.Errorf("different constant samples: p %v", p)
	}
	if _, _, p := Welch([]float64{1}, []float64{2, 3}); !math.IsNaN(p) {
		t.Errorf("one value: p %v", p)
	}
	if m, s := MeanStd([]float64{2, 4, 4, 4, 5, 5, 7, 9}); m != 5 || math.Abs(s-2.138089935) > 1e-9 {
		t.Errorf("MeanStd = %v, %v; want 5 and the sample deviation 2.1381", m, s)
	}
}

// TestEvaluateTiny runs a tiny evaluation end to end and checks the files.
// tinyDemo returns the first n cells of the demo tensor and a training
// configuration that makes each run take milliseconds.
func tinyDemo(t *testing.T, n int) (*tensor.COO, dain.Config) {
	t.Helper()
	x, err := demo.Read()
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	base := dain.DefaultConfig()
	base.Layers, base.Epochs, base.Batch, base.Rank, base.Channels = []int{24, 8}, 2, 128, 4, 4
	return x.Subset(rows), base
}

func TestEvaluateTiny(t *testing.T) {
	x, base := tinyDemo(t, 1500)
	spec := Spec{Methods: []string{"dain", "duplication", "random-mlp"}, Ratios: []float64{0, 0.1, 0.2}, Repeats: 2, Base: base}
	res, err := Evaluate(context.Background(), x, spec, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2*3*3 {
		t.Fatalf("%d runs; want 18", len(res.Runs))
	}
	for _, r := range res.Runs {
		if !(r.RMSE > 0) || r.NAug != int(r.Ratio*float64(1080)) {
			t.Errorf("run %+v", r)
		}
	}
	// Ratio 0 is the shared baseline.
	s := res.Summarise()
	for _, m := range spec.Methods {
		if s.Cells[m][0].Mean != s.Cells["dain"][0].Mean {
			t.Errorf("%s at ratio 0: mean %v; the shared baseline's %v", m, s.Cells[m][0].Mean, s.Cells["dain"][0].Mean)
		}
	}
	if c := s.Cells["duplication"][0.2]; c.N != 2 || math.IsNaN(c.P) {
		t.Errorf("duplication at 20%%: %+v", c)
	}
	dir := t.TempDir()
	if err := res.WriteDir(dir, Provenance{Input: "tiny", Base: TrainingOf(base)}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"runs.csv", "runs.json", "summary.json", "summary.md", "rmse.png", "runtime.png"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	fcsv, _ := os.Open(filepath.Join(dir, "runs.csv"))
	defer fcsv.Close()
	recs, err := csv.NewReader(fcsv).ReadAll()
	if err != nil || len(recs) != 19 {
		t.Errorf("runs.csv: %d records, %v", len(recs), err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	for _, want := range []string{"| dain |", "| duplication |", "Welch", "paired", "20%"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	back, cfg, err := Load(dir)
	if err != nil || len(back.Runs) != len(res.Runs) || !reflect.DeepEqual(back.Runs[5], res.Runs[5]) || cfg.Input != "tiny" || cfg.Version != ProvenanceVersion || cfg.Base.Epochs != base.Epochs {
		t.Errorf("Load: %d runs, config %v, %v", len(back.Runs), cfg, err)
	}
	if strings.Join(back.Spec.Methods, ",") != strings.Join(spec.Methods, ",") {
		t.Errorf("Load: methods %v", back.Spec.Methods)
	}
	png, _ := os.ReadFile(filepath.Join(dir, "rmse.png"))
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Error("rmse.png is not a PNG")
	}
}

func TestSpecErrors(t *testing.T) {
	base := dain.DefaultConfig()
	for _, s := range []Spec{
		{Methods: nil, Ratios: []float64{0}, Repeats: 1, Base: base},
		{Methods: []string{"magic"}, Ratios: []float64{0}, Repeats: 1, Base: base},
		{Methods: []string{"dain", "dain"}, Ratios: []float64{0}, Repeats: 1, Base: base},
		{Methods: []string{"dain"}, Ratios: []float64{-0.1}, Repeats: 1, Base: base},
		{Methods: []string{"dain"}, Ratios: []float64{0.1}, Repeats: 0, Base: base},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

// TestPaired: d = 1, 2, 3, 4 gives t = 2.5/(1.2910/2) = 3.8730 on 3 degrees
// of freedom, between the 0.975 (3.182) and 0.99 (4.541) quantiles of
// Student's t, so 0.02 < p < 0.05 (tables give 0.0305).
func TestPaired(t *testing.T) {
	tt, df, p := Paired([]float64{2, 4, 6, 8}, []float64{1, 2, 3, 4})
	if math.Abs(tt-3.872983) > 1e-5 || df != 3 || math.Abs(p-0.0305) > 0.0005 {
		t.Errorf("t %v, ν %v, p %v; want 3.8730, 3, 0.0305", tt, df, p)
	}
	if _, _, p := Paired([]float64{1, 2}, []float64{1, 2}); p != 1 {
		t.Errorf("identical pairs: p %v", p)
	}
	if _, _, p := Paired([]float64{1}, []float64{1, 2}); !math.IsNaN(p) {
		t.Errorf("unmatched: p %v", p)
	}
}

// TestResume stops an evaluation after its first repeat through
// AfterRepeat, then resumes it: the first repeat must come from the earlier
// results (a marked value survives) and only the second be run.
func TestResume(t *testing.T) {
	x, base := tinyDemo(t, 1200)
	spec := Spec{Methods: []string{"dain", "random-mlp"}, Ratios: []float64{0, 0.1}, Repeats: 2, Base: base}
	stop := errors.New("stop")
	var partial *Results
	spec.AfterRepeat = func(r *Results) error {
		partial = &Results{Runs: append([]Run(nil), r.Runs...), Seconds: r.Seconds}
		return stop
	}
	if _, err := Evaluate(context.Background(), x, spec, cpu.New()); !errors.Is(err, stop) {
		t.Fatalf("Evaluate: %v; want the AfterRepeat error", err)
	}
	if partial == nil || len(partial.Runs) != 4 || partial.Runs[0].Repeat != 1 || !(partial.Seconds > 0) {
		t.Fatalf("after the first repeat: %+v", partial)
	}
	partial.Runs[3].RMSE = 42 // a mark: it must survive, not be recomputed
	calls := 0
	spec.AfterRepeat = func(*Results) error { calls++; return nil }
	spec.Resume = partial
	res, err := Evaluate(context.Background(), x, spec, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || len(res.Runs) != 8 || res.Runs[3].RMSE != 42 || res.Runs[4].Repeat != 2 || res.Seconds <= partial.Seconds {
		t.Errorf("resumed: %d AfterRepeat calls, %d runs, run 4 %+v, run 5 %+v, %v s", calls, len(res.Runs), res.Runs[3], res.Runs[4], res.Seconds)
	}
	// A Resume made with another seed is not used.
	spec.Base.Seed = 7
	calls = 0
	if res, err = Evaluate(context.Background(), x, spec, cpu.New()); err != nil || calls != 2 || res.Runs[3].RMSE == 42 {
		t.Errorf("other seed: %d AfterRepeat calls, %v", calls, err)
	}
}

// TestBaselines (issue 37): -baselines adds one plain run per model and
// split, at ratio 0: the final model's own is the ratio-0 run, another
// model's is that model trained on the training cells alone (bayes-fm's
// equals the ratio-0 run of an evaluation whose final model is bayes-fm);
// the summary has their rows and no method named plain; a resumed
// evaluation keeps them; auto's is the run of the model it chose (issue
// 47: the accurate preset's model as a baseline); unknown names are
// refused.
func TestBaselines(t *testing.T) {
	x, base := tinyDemo(t, 1500)
	base.BayesSamples = 20
	spec := Spec{Methods: []string{"dain"}, Ratios: []float64{0, 0.2}, Repeats: 2, Base: base, Baselines: []string{dain.FinalMLP, dain.FinalBayesFM, dain.FinalFM, dain.FinalHybrid, dain.FinalAuto}}
	res, err := Evaluate(context.Background(), x, spec, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	bayesBase := base
	bayesBase.FinalModel = dain.FinalBayesFM
	other, err := Evaluate(context.Background(), x, Spec{Methods: []string{"dain"}, Ratios: []float64{0}, Repeats: 2, Base: bayesBase}, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	plain := map[[2]any]float64{}
	ratio0 := map[int]float64{}
	for _, r := range res.Runs {
		if r.Method == Plain {
			plain[[2]any{r.Model, r.Repeat}] = r.RMSE
		} else if r.Ratio == 0 {
			ratio0[r.Repeat] = r.RMSE
		}
	}
	if len(plain) != 10 {
		t.Fatalf("%d plain runs, want 10: %v", len(plain), plain)
	}
	for rep := 1; rep <= 2; rep++ {
		a, chosen := plain[[2]any{dain.FinalAuto, rep}], 0
		for _, k := range []string{dain.FinalMLP, dain.FinalBayesFM, dain.FinalFM, dain.FinalHybrid} {
			if plain[[2]any{k, rep}] == a {
				chosen++
			}
		}
		if chosen == 0 {
			t.Errorf("repeat %d: plain auto %v is none of its candidates' plain runs %v", rep, a, plain)
		}
	}
	for _, r := range res.Runs {
		if r.BayesClamp != "" {
			t.Errorf("run %+v: an mlp final model records bayes_clamp %q", r, r.BayesClamp)
		}
	}
	for _, o := range other.Runs {
		rep := o.Repeat
		if o.BayesClamp != bayes.ClampSamples && o.BayesClamp != bayes.ClampMean {
			t.Errorf("repeat %d: a bayes-fm final model records bayes_clamp %q", rep, o.BayesClamp)
		}
		if plain[[2]any{dain.FinalMLP, rep}] != ratio0[rep] {
			t.Errorf("repeat %d: plain mlp %v, the ratio-0 run %v", rep, plain[[2]any{dain.FinalMLP, rep}], ratio0[rep])
		}
		if plain[[2]any{dain.FinalBayesFM, rep}] != o.RMSE {
			t.Errorf("repeat %d: plain bayes-fm %v, bayes-fm's ratio-0 run %v", rep, plain[[2]any{dain.FinalBayesFM, rep}], o.RMSE)
		}
		if v := plain[[2]any{dain.FinalFM, rep}]; !(v > 0) || v == ratio0[rep] {
			t.Errorf("repeat %d: plain fm %v (mlp %v)", rep, v, ratio0[rep])
		}
	}
	s := res.Summarise()
	if len(s.Plain) != 5 || s.Plain[0].Model != dain.FinalMLP || s.Plain[0].N != 2 || slicesContains(s.Methods, Plain) {
		t.Errorf("summary: plain %+v, methods %v", s.Plain, s.Methods)
	}
	dir := t.TempDir()
	if err := res.WriteDir(dir, Provenance{Baselines: spec.Baselines}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if !strings.Contains(string(md), "| bayes-fm | 2 |") {
		t.Errorf("summary.md lacks the bayes-fm baseline row:\n%s", md)
	}
	// A resumed evaluation takes the repeats it finds whole, plain runs
	// included (a marked value survives), and runs a repeat whose plain
	// run is missing again.
	prev := &Results{Seconds: res.Seconds}
	for _, r := range res.Runs {
		if r.Method == Plain && r.Model == dain.FinalFM {
			if r.Repeat == 2 {
				continue
			}
			r.RMSE = 42
		}
		prev.Runs = append(prev.Runs, r)
	}
	spec.Resume = prev
	again, err := Evaluate(context.Background(), x, spec, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Runs) != len(res.Runs) {
		t.Errorf("resumed: %d runs, want %d", len(again.Runs), len(res.Runs))
	}
	for _, r := range again.Runs {
		if r.Method == Plain && r.Model == dain.FinalFM && (r.Repeat == 1) != (r.RMSE == 42) {
			t.Errorf("resumed: repeat %d's plain fm %v (42 is repeat 1's, kept)", r.Repeat, r.RMSE)
		}
	}
	for _, bad := range []string{"xgboost"} {
		s := Spec{Methods: []string{"dain"}, Ratios: []float64{0}, Repeats: 1, Base: base, Baselines: []string{bad}}
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "baseline") {
			t.Errorf("baseline %q: %v", bad, err)
		}
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
