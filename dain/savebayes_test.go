package dain_test

import (
	"context"
	"math"
	"testing"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/nn"
)

// TestSaveBayesFM (issue 47): Keep.Bayes receives a bayes-fm Θ′ whose
// predictions of the test cells give the run's rmse_after exactly; with
// every sample kept (BayesSamples 0) that rmse_after is the run's without
// Keep to float32 rounding of the parameters, and with 3 samples the
// model holds 3 and rmse_after moves to theirs. A ratio-0 run saves the
// chain on the training cells alone; -final-model auto saves bayes-fm
// when it chooses it, and a net otherwise.
func TestSaveBayesFM(t *testing.T) {
	x := demoTensor(t, 2000)
	c := small()
	c.FinalModel, c.BayesSamples, c.Ratio, c.BayesPriors = dain.FinalBayesFM, 30, 0.3, dain.BayesPriorsMode
	c.Keep.Split = true
	plain, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	rmse := func(r *dain.Result, m *bayes.Model) float64 {
		t.Helper()
		p, err := m.Predict(r.Split.Test)
		if err != nil {
			t.Fatal(err)
		}
		var s float64
		for i, v := range p {
			d := v - r.Split.Test.Val[i]
			s += d * d
		}
		return math.Sqrt(s / float64(len(p)))
	}
	for _, tc := range []struct {
		name          string
		ratio         float64
		keep, samples int
	}{{"all samples", 0.3, 0, 30}, {"3 samples", 0.3, 3, 3}, {"ratio 0", 0, 0, 30}} {
		t.Run(tc.name, func(t *testing.T) {
			c2 := c
			c2.Ratio = tc.ratio
			var got *bayes.Model
			var want float64
			c2.Keep.Model = func(string, *nn.Net) error { t.Fatal("a net was saved for a bayes-fm Θ′"); return nil }
			c2.Keep.BayesSamples = tc.keep
			var r *dain.Result
			c2.Keep.Bayes = func(role string, m *bayes.Model) error {
				if role != "theta-prime" || got != nil {
					t.Fatalf("role %q, called before: %v", role, got != nil)
				}
				got = m
				return nil
			}
			r, err := dain.Run(context.Background(), x, c2, cpu.New())
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || got.NumSamples() != tc.samples {
				t.Fatalf("saved model %v", got)
			}
			want = rmse(r, got)
			if r.Report.RMSEAfter != want {
				t.Errorf("rmse_after %v, the saved model's predictions give %v", r.Report.RMSEAfter, want)
			}
			ref := plain.Report.RMSEAfter
			if tc.ratio == 0 {
				ref = plain.Report.RMSEBefore
			}
			d := math.Abs(r.Report.RMSEAfter/ref - 1)
			if tc.keep == 0 && d > 1e-6 {
				t.Errorf("rmse_after %v with every sample saved, %v without saving", r.Report.RMSEAfter, ref)
			}
			if tc.keep == 3 && d < 1e-6 {
				t.Errorf("rmse_after %v with 3 samples saved, %v with all: the saved samples did not set it", r.Report.RMSEAfter, ref)
			}
		})
	}
	// auto: bayes-fm is saved when chosen, a net otherwise.
	c3 := small()
	c3.FinalModel, c3.BayesSamples, c3.Ratio = dain.FinalAuto, 30, 0.3
	nets, bayesModels := 0, 0
	c3.Keep.Model = func(string, *nn.Net) error { nets++; return nil }
	c3.Keep.Bayes = func(string, *bayes.Model) error { bayesModels++; return nil }
	r, err := dain.Run(context.Background(), x, c3, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if chose := r.Report.FinalModel; (chose == dain.FinalBayesFM) != (bayesModels == 1) || nets+bayesModels != 1 {
		t.Errorf("auto chose %s: %d nets and %d bayes-fm models saved", chose, nets, bayesModels)
	}
	// Keep.Model without Keep.Bayes refuses a bayes-fm final model.
	c4 := c
	c4.Keep.Model = func(string, *nn.Net) error { return nil }
	if _, err := dain.Run(context.Background(), x, c4, cpu.New()); err == nil {
		t.Error("Keep.Model without Keep.Bayes ran a bayes-fm final model")
	}
}
