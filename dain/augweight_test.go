package dain_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/tensor"
)

// rmseOf returns the RMSE of p against y.
func rmseOf(p, y []float64) float64 {
	s := 0.0
	for i, v := range p {
		d := v - y[i]
		s += d * d
	}
	return math.Sqrt(s / float64(len(p)))
}

// TestAugWeightBayesFM (issue 51): with the bayes-fm final model,
// -aug-weight sets how much the new cells count. Its rmse_after is
// bayes.Fit on train ∪ the new cells: as observations with weight 1 (the
// chain of every dainx before the setting: NewCells 0), with their own
// noise precision w·α with a weight w (auto: DefaultBayesAugWeight), drawn
// with learn. Each of these gives another result, and the report says
// which was used. With -bayes-priors auto and a weight, the chain on
// train ∪ the new cells takes the grouping the chain on the training
// cells chose (the report's bayes_priors), without fitting the other.
func TestAugWeightBayesFM(t *testing.T) {
	x := demoTensor(t, 2000)
	priors := dain.BayesPriorsMode
	run := func(w dain.AugWeight) (*dain.Result, float64) {
		c := small()
		c.FinalModel, c.BayesSamples, c.Ratio, c.BayesPriors, c.AugWeight = dain.FinalBayesFM, 30, 0.5, priors, w
		c.Keep.Split = true
		r, err := dain.Run(context.Background(), x, c, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		bc := bayes.DefaultConfig()
		bc.Rank, bc.Samples, bc.BurnIn, bc.Seed = dain.DefaultBayesRank, 30, 0, dain.BayesSeed(c.Seed)
		bc.SharedPriors, bc.Clamp = r.Report.BayesPriors == dain.BayesPriorsShared, r.Report.BayesClamp
		switch w {
		case 1:
		case dain.AugWeightLearn:
			bc.NewCells, bc.NewLearn = r.Aug.NNZ(), true
		case dain.AugWeightAuto:
			bc.NewCells, bc.NewWeight = r.Aug.NNZ(), dain.DefaultBayesAugWeight
		default:
			bc.NewCells, bc.NewWeight = r.Aug.NNZ(), float64(w)
		}
		train := &tensor.COO{Dims: x.Dims, Idx: slices.Concat(r.Split.Train.Idx, r.Aug.Idx), Val: slices.Concat(r.Split.Train.Val, r.Aug.Val)}
		fit, err := bayes.Fit(context.Background(), train, []*tensor.COO{r.Split.Test}, bc)
		if err != nil {
			t.Fatal(err)
		}
		return r, rmseOf(fit.Pred[0], r.Split.Test.Val)
	}
	seen := map[float64]dain.AugWeight{}
	for _, c := range []struct {
		w      dain.AugWeight
		report string
	}{{1, "weight 1"}, {0.25, "weight 0.25"}, {dain.AugWeightLearn, "learned"}, {dain.AugWeightAuto, "auto: weight 0.1"}} {
		r, want := run(c.w)
		rep := r.Report
		if c.w == dain.AugWeightAuto && strings.HasPrefix(rep.AugWeight, "auto: none") {
			// The guard (TestAugWeightAutoGuard): the new cells raised
			// the validation MSE, so Θ′ is the chain alone.
			if rep.RMSEAfter != rep.RMSEBefore || !(rep.ValRMSEAfter == rep.ValRMSEBefore) {
				t.Errorf("-aug-weight auto, new cells rejected: rmse_after %v, rmse_before %v", rep.RMSEAfter, rep.RMSEBefore)
			}
			continue
		}
		if rep.RMSEAfter != want {
			t.Errorf("-aug-weight %s: rmse_after %v, bayes.Fit on train ∪ new cells %v", c.w.String(), rep.RMSEAfter, want)
		}
		if rep.AugWeight != c.report {
			t.Errorf("-aug-weight %s: report says %q, want %q", c.w.String(), rep.AugWeight, c.report)
		}
		if w, ok := seen[rep.RMSEAfter]; ok {
			t.Errorf("-aug-weight %s and %s gave the same rmse_after %v", w.String(), c.w.String(), rep.RMSEAfter)
		}
		seen[rep.RMSEAfter] = c.w
	}
	priors = dain.BayesPriorsAuto
	for _, w := range []dain.AugWeight{0.25, dain.AugWeightLearn} {
		r, want := run(w)
		if r.Report.RMSEAfter != want || (r.Report.BayesPriors != dain.BayesPriorsMode && r.Report.BayesPriors != dain.BayesPriorsShared) {
			t.Errorf("-bayes-priors auto -aug-weight %s: rmse_after %v with priors %q, bayes.Fit with that grouping %v", w.String(), r.Report.RMSEAfter, r.Report.BayesPriors, want)
		}
	}
}

// TestAugWeightErrors: -aug-weight parses auto, learn and weights in
// (0, bayes.MaxNewWeight] and nothing else; an Adam-trained final model
// refuses learn.
func TestAugWeightErrors(t *testing.T) {
	for _, s := range []string{"0", "-1", "nan", "inf", "2e6", "", "half"} {
		var w dain.AugWeight
		if err := w.Set(s); err == nil {
			t.Errorf("-aug-weight %q: no error", s)
		}
	}
	for s, want := range map[string]dain.AugWeight{"auto": dain.AugWeightAuto, "learn": dain.AugWeightLearn, "0.1": 0.1, "1": 1, "1e6": 1e6} {
		var w dain.AugWeight
		if err := w.Set(s); err != nil || w != want || w.String() != s && s != "1e6" {
			t.Errorf("-aug-weight %q: %v, %v (%s)", s, err, float64(w), w.String())
		}
	}
	x := demoTensor(t, 300)
	for _, f := range []string{dain.FinalMLP, dain.FinalFM, dain.FinalHybrid} {
		c := small()
		c.FinalModel, c.AugWeight = f, dain.AugWeightLearn
		if _, err := dain.Run(context.Background(), x, c, cpu.New()); err == nil || !strings.Contains(err.Error(), "aug weight learn") {
			t.Errorf("-final-model %s -aug-weight learn: error %v", f, err)
		}
	}
	c := small()
	c.FinalModel, c.AugWeight = dain.FinalBayesFM, -3
	if _, err := dain.Run(context.Background(), x, c, cpu.New()); err == nil {
		t.Error("aug weight -3 in code: no error")
	}
}

// TestAugWeightAdam (issue 51): for the Adam-trained final models a
// weight w scales each new cell's squared error in the loss
// (nn.TrainConfig.NewWeight, whose gradient is tested in nn): weight 1 is
// the run of auto bit for bit; another weight changes rmse_after alone
// (Θ, the new cells and rmse_before stay), and the report says it.
func TestAugWeightAdam(t *testing.T) {
	x := demoTensor(t, 1500)
	for _, f := range []string{dain.FinalMLP, dain.FinalFM} {
		run := func(w dain.AugWeight) dain.Report {
			c := small()
			c.FinalModel, c.AugWeight, c.Ratio = f, w, 0.5
			r, err := dain.Run(context.Background(), x, c, cpu.New())
			if err != nil {
				t.Fatal(err)
			}
			return r.Report
		}
		auto, one, quarter := run(dain.AugWeightAuto), run(1), run(0.25)
		if one.RMSEAfter != auto.RMSEAfter || one.RMSEBefore != auto.RMSEBefore || auto.AugWeight != "" || one.AugWeight != "" {
			t.Errorf("%s: weight 1 rmse_after %v, auto's %v (aug_weight %q, %q)", f, one.RMSEAfter, auto.RMSEAfter, one.AugWeight, auto.AugWeight)
		}
		if quarter.RMSEAfter == auto.RMSEAfter || quarter.RMSEBefore != auto.RMSEBefore || quarter.NAug != auto.NAug || quarter.AugWeight != "weight 0.25" {
			t.Errorf("%s: weight 0.25 rmse_after %v (auto %v), rmse_before %v (%v), %d new cells (%d), aug_weight %q",
				f, quarter.RMSEAfter, auto.RMSEAfter, quarter.RMSEBefore, auto.RMSEBefore, quarter.NAug, auto.NAug, quarter.AugWeight)
		}
		t.Logf("%s: rmse_before %.5f, after: weight 1 %.5f, 0.25 %.5f", f, auto.RMSEBefore, auto.RMSEAfter, quarter.RMSEAfter)
	}
}

// TestEnsemblePredictor (issue 51): -predictor ensemble values the new
// cells with the candidates of -final-model auto stacked on the
// validation cells. The values lie in the training range and are not any
// one candidate's; and the stack never sees a test cell: changing every
// test cell's value leaves the new cells and their values unchanged bit
// for bit (while rmse_before, which is measured on them, changes).
func TestEnsemblePredictor(t *testing.T) {
	x := demoTensor(t, 2000)
	c := small()
	c.Predictor, c.FinalModel, c.BayesSamples, c.Ratio = dain.PredictorEnsemble, dain.FinalBayesFM, 20, 0.4
	c.Keep.Split = true
	r, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if r.Report.Predictor != dain.PredictorEnsemble || r.Aug.NNZ() == 0 {
		t.Fatalf("report: predictor %q, %d new cells", r.Report.Predictor, r.Aug.NNZ())
	}
	lo, hi := slices.Min(r.Split.Train.Val), slices.Max(r.Split.Train.Val)
	for _, v := range r.Aug.Val {
		if !(v >= lo && v <= hi) {
			t.Fatalf("a new cell's value %v outside the training range [%v, %v]", v, lo, hi)
		}
	}
	other := c
	other.Predictor = dain.FinalBayesFM
	r2, err := dain.Run(context.Background(), x, other, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(r2.Aug.Val, r.Aug.Val) || !slices.Equal(r2.Aug.Idx, r.Aug.Idx) {
		t.Error("-predictor ensemble and bayes-fm gave the same values (or other cells)")
	}
	// The test cells' values, changed: the cells are found by their
	// indices in x.
	key := func(idx []int32) string { return fmt.Sprint(idx) }
	test := map[string]bool{}
	n := x.Order()
	for i := range r.Split.Test.NNZ() {
		test[key(r.Split.Test.Idx[i*n:(i+1)*n])] = true
	}
	y := &tensor.COO{Dims: x.Dims, Idx: x.Idx, Val: slices.Clone(x.Val)}
	changed := 0
	for i := range y.NNZ() {
		if test[key(y.Idx[i*n:(i+1)*n])] {
			y.Val[i] = -y.Val[i] + 7
			changed++
		}
	}
	if changed != r.Split.Test.NNZ() {
		t.Fatalf("found %d of the %d test cells", changed, r.Split.Test.NNZ())
	}
	r3, err := dain.Run(context.Background(), y, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r3.Aug.Idx, r.Aug.Idx) || !slices.Equal(r3.Aug.Val, r.Aug.Val) {
		t.Error("changing the test cells' values changed the new cells or their ensemble values")
	}
	if r3.Report.RMSEBefore == r.Report.RMSEBefore {
		t.Error("changing the test cells' values left rmse_before as it was: the test did not reach them")
	}
}

// TestUncertaintyPlacement (issue 51): -influence uncertainty scores each
// training cell by the posterior variance of the bayes-fm chain on the
// training cells alone (its kept samples: bayes.Fit with the run's chain
// seed, bayes.Model.Variance), and uncertainty-tracin by that variance
// times TracIn's |α_z|; both draw other new cells than TracIn alone.
func TestUncertaintyPlacement(t *testing.T) {
	x := demoTensor(t, 2000)
	run := func(influence dain.InfluenceKind) *dain.Result {
		c := small()
		c.FinalModel, c.BayesSamples, c.Ratio, c.BayesPriors, c.Influence = dain.FinalBayesFM, 20, 0.3, dain.BayesPriorsMode, influence
		c.Keep.Split, c.Keep.Scores = true, true
		r, err := dain.Run(context.Background(), x, c, cpu.New())
		if err != nil {
			t.Fatalf("-influence %s: %v", influence, err)
		}
		return r
	}
	unc, both, tr := run(dain.InfluenceUncertainty), run(dain.InfluenceUncertaintyTracIn), run("tracin")
	bc := bayes.DefaultConfig()
	bc.Rank, bc.Samples, bc.BurnIn, bc.Seed, bc.KeepSamples = dain.DefaultBayesRank, 20, 0, dain.BayesSeed(1), 20
	fit, err := bayes.Fit(context.Background(), unc.Split.Train, nil, bc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fit.Model.Variance(unc.Split.Train)
	if err != nil {
		t.Fatal(err)
	}
	for z, v := range want {
		if got := unc.Scores.Alpha[z]; got != float32(v) {
			t.Fatalf("cell %d: uncertainty score %v, the chain's posterior variance %v", z, got, v)
		}
		if got, w := both.Scores.Alpha[z], float32(v)*tr.Scores.Alpha[z]; got != w {
			t.Fatalf("cell %d: uncertainty-tracin score %v, variance × |TracIn| %v", z, got, w)
		}
	}
	if slices.Equal(unc.Aug.Idx, tr.Aug.Idx) || slices.Equal(both.Aug.Idx, tr.Aug.Idx) {
		t.Error("placement by uncertainty drew TracIn's cells")
	}
}

// TestFinalEnsemble (issue 51): -final-model ensemble stacks the
// candidates of auto, each trained on train ∪ the new cells exactly as
// that final model is (-final-model mlp, fm, hybrid, bayes-fm on the same
// split and new cells), with weights fitted on the validation cells: its
// validation RMSE is at most the best member's (each member alone is one
// of the stacks least squares chooses among), and the test cells play no
// part in it (changing their values changes rmse_after but not the
// validation RMSE).
func TestFinalEnsemble(t *testing.T) {
	x := demoTensor(t, 2000)
	run := func(x *tensor.COO, final string) dain.Report {
		c := small()
		c.FinalModel, c.BayesSamples, c.Ratio, c.BayesPriors, c.Predictor = final, 20, 0.3, dain.BayesPriorsMode, dain.PredictorEnsemble
		c.Keep.Split = true
		r, err := dain.Run(context.Background(), x, c, cpu.New())
		if err != nil {
			t.Fatalf("-final-model %s: %v", final, err)
		}
		return r.Report
	}
	ens := run(x, dain.FinalEnsemble)
	best := math.Inf(1)
	for _, k := range []string{dain.FinalMLP, dain.FinalFM, dain.FinalHybrid, dain.FinalBayesFM} {
		rep := run(x, k)
		t.Logf("%s: validation RMSE %.5f, test %.5f", k, rep.ValRMSEAfter, rep.RMSEAfter)
		best = min(best, rep.ValRMSEAfter)
	}
	t.Logf("ensemble: validation RMSE %.5f, test %.5f", ens.ValRMSEAfter, ens.RMSEAfter)
	if !(ens.ValRMSEAfter <= best*(1+1e-6)) || ens.FinalModel != dain.FinalEnsemble {
		t.Errorf("ensemble (final %q): validation RMSE %v above its best member's %v", ens.FinalModel, ens.ValRMSEAfter, best)
	}
	// Every test value moved: the stack's validation fit is the same.
	y := &tensor.COO{Dims: x.Dims, Idx: x.Idx, Val: slices.Clone(x.Val)}
	c := small()
	c.Keep.Split = true
	r, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	test := map[string]bool{}
	n := x.Order()
	for i := range r.Split.Test.NNZ() {
		test[fmt.Sprint(r.Split.Test.Idx[i*n:(i+1)*n])] = true
	}
	for i := range y.NNZ() {
		if test[fmt.Sprint(y.Idx[i*n:(i+1)*n])] {
			y.Val[i] += 0.5
		}
	}
	moved := run(y, dain.FinalEnsemble)
	if moved.ValRMSEAfter != ens.ValRMSEAfter || moved.RMSEAfter == ens.RMSEAfter {
		t.Errorf("test values moved: validation RMSE %v → %v (want unchanged), test RMSE %v → %v (want changed)", ens.ValRMSEAfter, moved.ValRMSEAfter, ens.RMSEAfter, moved.RMSEAfter)
	}
}

// TestAugWeightAutoGuard: with -aug-weight auto, bayes-fm keeps new cells
// only when they lower its validation MSE. New cells whose values are
// garbage raise it, and the final model is then the chain on the training
// cells alone, bit for bit; new cells that are the validation cells with
// their true values lower it, and the chain with them is kept (its
// validation RMSE below the chain alone's). An explicit weight is never
// overruled.
func TestAugWeightAutoGuard(t *testing.T) {
	x := demoTensor(t, 2000)
	c := small()
	c.FinalModel, c.BayesSamples, c.BayesPriors = dain.FinalBayesFM, 20, dain.BayesPriorsMode
	c.Keep.Split = true
	r, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	sp := r.Split
	e, err := dain.NewExperiment(x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	alone, ares, _, err := e.Downstream(context.Background(), &tensor.COO{Dims: x.Dims}, "")
	if err != nil {
		t.Fatal(err)
	}
	garbage := &tensor.COO{Dims: x.Dims, Idx: sp.Train.Idx[:300*3], Val: make([]float64, 300)}
	for i := range garbage.Val {
		garbage.Val[i] = 50 * float64(i%7-3)
	}
	got, res, _, err := e.Downstream(context.Background(), garbage, "")
	if err != nil {
		t.Fatal(err)
	}
	if got != alone || res.BestValMSE != ares.BestValMSE {
		t.Errorf("garbage new cells: rmse %v (validation MSE %v), the chain alone %v (%v)", got, res.BestValMSE, alone, ares.BestValMSE)
	}
	truth := &tensor.COO{Dims: x.Dims, Idx: sp.Val.Idx, Val: sp.Val.Val}
	got, res, _, err = e.Downstream(context.Background(), truth, "")
	if err != nil {
		t.Fatal(err)
	}
	if got == alone || !(res.BestValMSE < ares.BestValMSE) {
		t.Errorf("the validation cells as new cells: rmse %v (validation MSE %v), the chain alone %v (%v): not kept", got, res.BestValMSE, alone, ares.BestValMSE)
	}
	// An explicit weight keeps even garbage.
	c.AugWeight = 0.1
	e2, err := dain.NewExperiment(x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if _, _, _, err := e2.Downstream(context.Background(), &tensor.COO{Dims: x.Dims}, ""); err != nil {
		t.Fatal(err)
	}
	got, _, _, err = e2.Downstream(context.Background(), garbage, "")
	if err != nil {
		t.Fatal(err)
	}
	if got == alone {
		t.Error("-aug-weight 0.1: garbage new cells were dropped")
	}
}
