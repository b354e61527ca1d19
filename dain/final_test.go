package dain_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// TestFinalBayesFM (issue 37): with -final-model bayes-fm, step 5 is the
// Bayesian factorization machine: rmse_before is its RMSE on train alone
// (equal to bayes.Fit on the split's training cells with the run's chain
// seed), theta_rmse is Θ's, the same seed gives the same report, and on
// the demo tensor the FM beats the paper's MLP Θ (both bounded by the
// values' spread).
func TestFinalBayesFM(t *testing.T) {
	x := demoTensor(t, 3000)
	c := small()
	c.FinalModel, c.BayesSamples, c.Ratio, c.BayesPriors = dain.FinalBayesFM, 40, 0.3, dain.BayesPriorsMode
	c.Keep.Split = true
	r, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	rep := r.Report
	if rep.FinalModel != dain.FinalBayesFM || rep.ThetaRMSE <= 0 || rep.BestEpochAfter != 0 || len(rep.HistoryAfter) != 0 {
		t.Fatalf("report: final %q, theta %v, best epoch after %d, %d epochs after", rep.FinalModel, rep.ThetaRMSE, rep.BestEpochAfter, len(rep.HistoryAfter))
	}
	if !(rep.RMSEBefore < rep.ThetaRMSE) {
		t.Errorf("bayes-fm on train alone %.4f is not below the MLP Θ's %.4f", rep.RMSEBefore, rep.ThetaRMSE)
	}
	if !(rep.RMSEAfter > 0) || math.IsInf(rep.RMSEAfter, 0) || rep.Improved != (rep.RMSEAfter < rep.RMSEBefore) {
		t.Errorf("rmse_after %v, improved %v (before %v)", rep.RMSEAfter, rep.Improved, rep.RMSEBefore)
	}
	// rmse_before is bayes.Fit on the training cells, queried on test.
	bc := bayes.DefaultConfig()
	bc.Rank, bc.Samples, bc.BurnIn = dain.DefaultBayesRank, 40, 0
	bc.Seed = dain.BayesSeed(c.Seed)
	// -bayes-clamp auto chooses on the validation cells.
	bc.Clamp = bayes.ClampAuto
	fit, err := bayes.Fit(context.Background(), r.Split.Train, []*tensor.COO{r.Split.Val, r.Split.Test}, bc)
	if err != nil {
		t.Fatal(err)
	}
	s := 0.0
	for i, p := range fit.Pred[1] {
		d := p - r.Split.Test.Val[i]
		s += d * d
	}
	if want := math.Sqrt(s / float64(len(fit.Pred[1]))); want != rep.RMSEBefore {
		t.Errorf("rmse_before %v, bayes.Fit on the training cells gives %v", rep.RMSEBefore, want)
	}
	r2, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if r2.Report.RMSEAfter != rep.RMSEAfter || r2.Report.RMSEBefore != rep.RMSEBefore {
		t.Errorf("not deterministic: %v %v, then %v %v", rep.RMSEBefore, rep.RMSEAfter, r2.Report.RMSEBefore, r2.Report.RMSEAfter)
	}
}

// TestPredictorBayesFM: -predictor bayes-fm values the new cells with the
// FM fitted on the training cells: finite, inside the training values'
// range (its clamp), and not the training cells' values copied.
func TestPredictorBayesFM(t *testing.T) {
	x := demoTensor(t, 2000)
	c := small()
	c.Predictor, c.BayesSamples, c.Ratio = dain.FinalBayesFM, 30, 0.5
	r, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range x.Val {
		lo, hi = min(lo, v), max(hi, v)
	}
	distinct := map[float64]bool{}
	for _, v := range r.Aug.Val {
		if !(v >= lo && v <= hi) {
			t.Fatalf("a new cell's value %v outside the training range [%v, %v]", v, lo, hi)
		}
		distinct[v] = true
	}
	if r.Aug.NNZ() == 0 || len(distinct) < r.Aug.NNZ()/2 {
		t.Errorf("%d new cells with %d distinct values", r.Aug.NNZ(), len(distinct))
	}
	if r.Report.Predictor != dain.FinalBayesFM || r.Report.Seconds.Predict <= 0 {
		t.Errorf("report: predictor %q, predict seconds %v", r.Report.Predictor, r.Report.Seconds.Predict)
	}
}

// TestFinalModelErrors: a final model or predictor of another name, bayes
// settings out of range, and -model-out with bayes-fm are errors.
func TestFinalModelErrors(t *testing.T) {
	x := demoTensor(t, 500)
	for name, c := range map[string]struct {
		mut  func(*dain.Config)
		want string
	}{
		"name":      {func(c *dain.Config) { c.FinalModel = "xgboost" }, "final model"},
		"predictor": {func(c *dain.Config) { c.Predictor = "xgboost" }, "predictor"},
		"theta":     {func(c *dain.Config) { c.Model = dain.FinalBayesFM }, "model"},
		"samples":   {func(c *dain.Config) { c.FinalModel, c.BayesSamples = dain.FinalBayesFM, 1<<30 }, "samples"},
		"burn-in":   {func(c *dain.Config) { c.FinalModel, c.BayesSamples, c.BayesBurnIn = dain.FinalBayesFM, 10, 10 }, "burn-in"},
		"priors":    {func(c *dain.Config) { c.FinalModel, c.BayesPriors = dain.FinalBayesFM, "meta" }, "bayes priors"},
		"model-out without Keep.Ensemble": {func(c *dain.Config) {
			c.FinalModel = dain.FinalEnsemble
			c.Keep.Model = func(string, *nn.Net) error { return nil }
		}, "Keep.Ensemble"},
		"model-out without Keep.Bayes": {func(c *dain.Config) {
			c.FinalModel = dain.FinalBayesFM
			c.Keep.Model = func(string, *nn.Net) error { return nil }
		}, "Keep.Bayes"},
	} {
		cfg := small()
		c.mut(&cfg)
		_, err := dain.Run(context.Background(), x, cfg, cpu.New())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
}

// TestBayesPriorsAuto: -bayes-priors auto keeps, of the chains with a prior
// group per mode and with one shared group, the one of lower validation
// MSE, and the report names it; mode and shared give their own chain.
func TestBayesPriorsAuto(t *testing.T) {
	x := demoTensor(t, 3000)
	c := small()
	c.FinalModel, c.BayesSamples, c.Ratio = dain.FinalBayesFM, 30, 0.2
	c.Keep.Split = true
	rmse := map[dain.BayesPriorGroups]float64{}
	var split *dain.Split
	for _, p := range []dain.BayesPriorGroups{dain.BayesPriorsMode, dain.BayesPriorsShared, dain.BayesPriorsAuto} {
		c.BayesPriors = p
		r, err := dain.Run(context.Background(), x, c, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		rmse[p], split = r.Report.RMSEBefore, r.Split
		if p != dain.BayesPriorsAuto && r.Report.BayesPriors != p {
			t.Errorf("-bayes-priors %s: the report says %q", p, r.Report.BayesPriors)
		}
		if p == dain.BayesPriorsAuto {
			// The choice of the final chain (on train ∪ new cells) is
			// named; rmse_before's chain chose by its own validation.
			if r.Report.BayesPriors != dain.BayesPriorsMode && r.Report.BayesPriors != dain.BayesPriorsShared {
				t.Errorf("auto: the report names %q", r.Report.BayesPriors)
			}
		}
	}
	if rmse[dain.BayesPriorsMode] == rmse[dain.BayesPriorsShared] {
		t.Fatalf("mode and shared priors gave the same RMSE %v", rmse[dain.BayesPriorsMode])
	}
	// Which one auto must keep: the lower validation MSE on train alone.
	val := map[dain.BayesPriorGroups]float64{}
	for _, shared := range []bool{false, true} {
		bc := bayes.DefaultConfig()
		bc.Rank, bc.Samples, bc.BurnIn, bc.SharedPriors = dain.DefaultBayesRank, 30, 0, shared
		bc.Seed, bc.Clamp = dain.BayesSeed(c.Seed), bayes.ClampAuto
		fit, err := bayes.Fit(context.Background(), split.Train, []*tensor.COO{split.Val}, bc)
		if err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for i, p := range fit.Pred[0] {
			d := p - split.Val.Val[i]
			s += d * d
		}
		name := dain.BayesPriorsMode
		if shared {
			name = dain.BayesPriorsShared
		}
		val[name] = s
	}
	want := dain.BayesPriorsMode
	if val[dain.BayesPriorsShared] < val[dain.BayesPriorsMode] {
		want = dain.BayesPriorsShared
	}
	if rmse[dain.BayesPriorsAuto] != rmse[want] {
		t.Errorf("auto's rmse_before %v is not %s's %v (validation SSE mode %v, shared %v)", rmse[dain.BayesPriorsAuto], want, rmse[want], val[dain.BayesPriorsMode], val[dain.BayesPriorsShared])
	}
}

// TestBayesClamp: -bayes-clamp changes bayes-fm's predictions and
// nothing else. samples is the chain's libFM rule bit for bit (bayes.Fit
// with ClampSamples); mean is bayes.Fit with ClampMean and gives another
// rmse_before; auto's rmse_before is bayes.Fit with ClampAuto (the rule
// of lower validation MSE), and the report names the rule each used.
func TestBayesClamp(t *testing.T) {
	// Values piled up at their smallest, as counts are at 1: those below
	// the 40th percentile raised to it.
	x := demoTensor(t, 3000)
	v := slices.Sorted(slices.Values(x.Val))
	for c := range x.Val {
		x.Val[c] = max(x.Val[c], v[len(v)*2/5])
	}
	reps := map[bayes.ClampRule]dain.Report{}
	var split *dain.Result
	for _, rule := range []bayes.ClampRule{bayes.ClampSamples, bayes.ClampMean, bayes.ClampAuto} {
		c := small()
		c.FinalModel, c.BayesSamples, c.Ratio, c.BayesPriors, c.BayesClamp = dain.FinalBayesFM, 30, 0.3, dain.BayesPriorsMode, rule
		c.Keep.Split = true
		r, err := dain.Run(context.Background(), x, c, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		reps[rule], split = r.Report, r
	}
	if reps[bayes.ClampSamples].BayesClamp != bayes.ClampSamples || reps[bayes.ClampMean].BayesClamp != bayes.ClampMean {
		t.Fatalf("reports name %q and %q", reps[bayes.ClampSamples].BayesClamp, reps[bayes.ClampMean].BayesClamp)
	}
	if reps[bayes.ClampSamples].RMSEBefore == reps[bayes.ClampMean].RMSEBefore || reps[bayes.ClampSamples].RMSEAfter == reps[bayes.ClampMean].RMSEAfter {
		t.Fatalf("samples and mean give the same RMSEs: before %v, %v; after %v, %v", reps[bayes.ClampSamples].RMSEBefore, reps[bayes.ClampMean].RMSEBefore, reps[bayes.ClampSamples].RMSEAfter, reps[bayes.ClampMean].RMSEAfter)
	}
	if reps[bayes.ClampSamples].ThetaRMSE != reps[bayes.ClampMean].ThetaRMSE || reps[bayes.ClampSamples].NAug != reps[bayes.ClampMean].NAug {
		t.Fatalf("the clamp rule changed Θ or the new cells")
	}
	sp := split.Split
	for _, rule := range []bayes.ClampRule{bayes.ClampSamples, bayes.ClampMean, bayes.ClampAuto} {
		bc := bayes.DefaultConfig()
		bc.Rank, bc.Samples, bc.BurnIn, bc.Seed, bc.Clamp = dain.DefaultBayesRank, 30, 0, dain.BayesSeed(1), rule
		fit, err := bayes.Fit(context.Background(), sp.Train, []*tensor.COO{sp.Val, sp.Test}, bc)
		if err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for i, p := range fit.Pred[1] {
			d := p - sp.Test.Val[i]
			s += d * d
		}
		if want := math.Sqrt(s / float64(len(fit.Pred[1]))); want != reps[rule].RMSEBefore {
			t.Errorf("-bayes-clamp %s: rmse_before %v, bayes.Fit gives %v", rule, reps[rule].RMSEBefore, want)
		}
		if rule == bayes.ClampAuto {
			// The final chain (with the new cells) chose by its own
			// validation MSE, as this one did on the training cells.
			if b := reps[rule].BayesClamp; b != bayes.ClampSamples && b != bayes.ClampMean {
				t.Errorf("auto: the report names %q", b)
			}
			t.Logf("auto on the training cells: validation MSE %v by samples and mean: %s", fit.ValMSE, fit.Clamp)
		}
	}
}

// TestBayesStop: -bayes-stop ends bayes-fm's chains early (the report's
// bayes_sweeps below -bayes-samples, another rmse_after); 0 (the default)
// runs every sweep.
func TestBayesStop(t *testing.T) {
	x := demoTensor(t, 2000)
	run := func(stop int) dain.Report {
		c := small()
		c.FinalModel, c.BayesSamples, c.Ratio, c.BayesPriors, c.BayesStop = dain.FinalBayesFM, 80, 0.3, dain.BayesPriorsMode, stop
		r, err := dain.Run(context.Background(), x, c, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		return r.Report
	}
	all, early := run(0), run(5)
	if all.BayesSweeps != 80 {
		t.Errorf("-bayes-stop 0: %d sweeps, want all 80", all.BayesSweeps)
	}
	if !(early.BayesSweeps > 5 && early.BayesSweeps < 80) || early.RMSEAfter == all.RMSEAfter {
		t.Errorf("-bayes-stop 5: %d sweeps, rmse_after %v (every sweep: %v)", early.BayesSweeps, early.RMSEAfter, all.RMSEAfter)
	}
	t.Logf("-bayes-stop 5: %d of 80 sweeps, rmse_after %.5f (every sweep %.5f)", early.BayesSweeps, early.RMSEAfter, all.RMSEAfter)
	c := small()
	c.FinalModel, c.BayesStop = dain.FinalBayesFM, -1
	if _, err := dain.Run(context.Background(), x, c, cpu.New()); err == nil || !strings.Contains(err.Error(), "bayes stop") {
		t.Errorf("-bayes-stop -1: %v", err)
	}
}
