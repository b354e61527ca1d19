package dain_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/tensor"
)

// threeWay is a 16×16×16 tensor (two thirds of its cells observed) whose
// values are a product of ±1 entity signs over all three modes: an
// interaction of order 3, which no factorization machine of order 2 can
// represent and the MLP learns.
func threeWay() *tensor.COO {
	x := &tensor.COO{Dims: []int{16, 16, 16}}
	sgn := func(i int) float64 {
		if (i*7)%5 < 2 {
			return -1
		}
		return 1
	}
	for i := range 16 {
		for j := range 16 {
			for k := range 16 {
				if (i*3+j*5+k*11)%3 == 0 {
					continue
				}
				x.Idx = append(x.Idx, int32(i), int32(j), int32(k))
				x.Val = append(x.Val, sgn(i)*sgn(j)*sgn(k))
			}
		}
	}
	return x
}

// pairwise is a 30×30×30 tensor (half its cells observed) of pairwise
// products of entity values, u_i·v_j + v_j·w_k + u_i·w_k: an FM of order 2
// and rank 1 is exact for it.
func pairwise() *tensor.COO {
	r := rand.New(rand.NewPCG(1, 2))
	x := &tensor.COO{Dims: []int{30, 30, 30}}
	u := make([]float64, 90)
	for i := range u {
		u[i] = r.NormFloat64()
	}
	for i := range 30 {
		for j := range 30 {
			for k := range 30 {
				if r.Float64() < 0.5 {
					continue
				}
				x.Idx = append(x.Idx, int32(i), int32(j), int32(k))
				x.Val = append(x.Val, u[i]*u[30+j]+u[30+j]*u[60+k]+u[i]*u[60+k])
			}
		}
	}
	return x
}

// TestFinalAuto (issues 37, 51): -final-model auto -predictor auto picks,
// on the split, the candidate (MLP, fm, hybrid, bayes-fm) of lowest
// validation RMSE trained on the training cells alone, values the new
// cells with the ensemble of the candidates, and then runs exactly as the
// explicit configuration of that choice with -predictor ensemble: bayes-fm
// on the demo tensor, which an FM fits better than the MLP; the hybrid
// (an MLP beside the pairwise term) on a tensor of an order-3
// interaction, which an FM of order 2 cannot fit; the fm on a tensor of
// pairwise products, which it fits exactly while a two-sweep Gibbs chain
// has not converged.
func TestFinalAuto(t *testing.T) {
	demo := small()
	demo.BayesSamples, demo.Ratio = 30, 0.3
	three := small()
	three.Epochs, three.LR, three.BayesSamples, three.Ratio = 30, 1e-2, 30, 0.2
	pair := small()
	pair.Epochs, pair.LR, pair.BayesSamples, pair.Ratio, pair.FMRank = 30, 1e-2, 2, 0.1, 4
	for _, c := range []struct {
		name             string
		x                *tensor.COO
		cfg              dain.Config
		final, predictor string
	}{
		{"demo", demoTensor(t, 3000), demo, dain.FinalBayesFM, dain.PredictorEnsemble},
		{"order 3", threeWay(), three, dain.FinalHybrid, dain.PredictorEnsemble},
		{"pairwise", pairwise(), pair, dain.FinalFM, dain.PredictorEnsemble},
	} {
		auto := c.cfg
		auto.FinalModel, auto.Predictor = dain.FinalAuto, dain.FinalAuto
		r, err := dain.Run(context.Background(), c.x, auto, cpu.New())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		rep := r.Report
		a := rep.AutoChoice
		if a == nil || len(a.Candidates) != 4 || a.Candidates[dain.FinalFM] == 0 || a.Candidates[dain.FinalHybrid] == 0 {
			t.Fatalf("%s: auto choice %+v", c.name, a)
		}
		if a.FinalModel != c.final || a.Predictor != c.predictor || rep.FinalModel != c.final || rep.Predictor != c.predictor {
			t.Fatalf("%s: auto chose %s/%s (report %s/%s; candidates %v), want %s/%s", c.name, a.FinalModel, a.Predictor, rep.FinalModel, rep.Predictor, a.Candidates, c.final, c.predictor)
		}
		for other, v := range a.Candidates {
			if other != c.final && !(a.Candidates[c.final] < v) {
				t.Errorf("%s: chose %s with validation RMSE %v over %s's %v", c.name, c.final, a.Candidates[c.final], other, v)
			}
		}
		explicit := c.cfg
		explicit.FinalModel, explicit.Predictor = c.final, c.predictor
		r2, err := dain.Run(context.Background(), c.x, explicit, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		e := r2.Report
		if e.RMSEBefore != rep.RMSEBefore || e.RMSEAfter != rep.RMSEAfter || e.NAug != rep.NAug || e.AutoChoice != nil {
			t.Errorf("%s: auto gave %v → %v (%d cells), the explicit %s/%s %v → %v (%d cells, auto %v)", c.name, rep.RMSEBefore, rep.RMSEAfter, rep.NAug, c.final, c.predictor, e.RMSEBefore, e.RMSEAfter, e.NAug, e.AutoChoice)
		}
	}
}

// TestGradientFinalModels (issue 37): fm and hybrid run as Θ (TracIn on
// their gradients), value predictor and final model Θ′: rmse_before is
// the final model's own on train alone and theta_rmse Θ's, the cell
// scores are finite and not all equal, the same seed gives the same
// report, and -l2 changes what is trained.
func TestGradientFinalModels(t *testing.T) {
	x := demoTensor(t, 3000)
	for _, kind := range []string{dain.FinalFM, dain.FinalHybrid} {
		for _, layers := range []dain.LayerSet{"last", "all"} {
			c := small()
			c.Model, c.Predictor, c.FinalModel, c.InfluenceLayers, c.FMRank = kind, kind, kind, layers, 8
			c.Keep.Scores = true
			r, err := dain.Run(context.Background(), x, c, cpu.New())
			if err != nil {
				t.Fatalf("%s, %s layers: %v", kind, layers, err)
			}
			rep := r.Report
			if rep.FinalModel != kind || rep.Model != kind || !(rep.RMSEBefore > 0) || !(rep.ThetaRMSE > 0) || len(rep.HistoryAfter) == 0 {
				t.Errorf("%s: report final %q model %q before %v theta %v, %d epochs after", kind, rep.FinalModel, rep.Model, rep.RMSEBefore, rep.ThetaRMSE, len(rep.HistoryAfter))
			}
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, s := range r.Scores.S {
				if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
					t.Fatalf("%s, %s layers: score %v", kind, layers, s)
				}
				lo, hi = min(lo, float64(s)), max(hi, float64(s))
			}
			if !(hi > lo) {
				t.Errorf("%s, %s layers: every TracIn score is %v", kind, layers, lo)
			}
			if layers == "all" {
				continue
			}
			r2, err := dain.Run(context.Background(), x, c, cpu.New())
			if err != nil {
				t.Fatal(err)
			}
			if r2.Report.RMSEAfter != rep.RMSEAfter || r2.Report.RMSEBefore != rep.RMSEBefore {
				t.Errorf("%s: not deterministic: %v %v, then %v %v", kind, rep.RMSEBefore, rep.RMSEAfter, r2.Report.RMSEBefore, r2.Report.RMSEAfter)
			}
			c.L2 = 1e-2
			r3, err := dain.Run(context.Background(), x, c, cpu.New())
			if err != nil {
				t.Fatal(err)
			}
			if r3.Report.RMSEAfter == rep.RMSEAfter {
				t.Errorf("%s: -l2 1e-2 trained the same Θ′ (RMSE %v) as no L2", kind, rep.RMSEAfter)
			}
		}
	}
}
