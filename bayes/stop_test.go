package bayes

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/dainx/dainx/tensor"
)

// TestStopWindow: a chain that StopWindow ends early is the chain of that
// many sweeps, bit for bit (predictions, traces, α, kept samples); it
// stops where its validation RMSE stopped improving by StopTol over the
// window, and not before; 0 runs every sweep.
func TestStopWindow(t *testing.T) {
	x, _ := fmTensor([]int{30, 25, 12}, 3, 5000, 0.3, 21)
	train, val := splitCOO(x, 0.2)
	const samples, burn = 400, 5
	for _, rule := range []ClampRule{ClampSamples, ClampAuto} {
		cfg := Config{Rank: 3, Samples: samples, BurnIn: burn, Seed: 7, InitStd: 0.1, KeepSamples: samples - burn, Clamp: rule, StopWindow: 10, StopTol: 1e-3}
		early, err := Fit(context.Background(), train, []*tensor.COO{val}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if early.Sweeps >= samples || early.Sweeps < burn+cfg.StopWindow+1 {
			t.Fatalf("%s: stopped after %d sweeps (of %d)", rule, early.Sweeps, samples)
		}
		q := early.QueryRMSE[0]
		n := len(q)
		if n != early.Sweeps-burn {
			t.Fatalf("%s: %d query RMSEs for %d sweeps after burn-in", rule, n, early.Sweeps-burn)
		}
		t.Logf("%s: stopped after %d sweeps, validation RMSE %.5f (%.5f ten sweeps before)", rule, early.Sweeps, q[n-1], q[n-11])
		full := cfg
		full.Samples, full.StopWindow, full.KeepSamples = early.Sweeps, 0, early.Sweeps-burn
		want, err := Fit(context.Background(), train, []*tensor.COO{val}, full)
		if err != nil {
			t.Fatal(err)
		}
		if want.Sweeps != early.Sweeps || !slices.Equal(early.Pred[0], want.Pred[0]) || !slices.Equal(early.TrainRMSE, want.TrainRMSE) ||
			early.Alpha != want.Alpha || early.Clamp != want.Clamp || early.Model.NumSamples() != want.Model.NumSamples() {
			t.Fatalf("%s: the early-stopped chain is not the chain of %d sweeps", rule, early.Sweeps)
		}
		p, err := early.Model.Predict(val)
		if err != nil {
			t.Fatal(err)
		}
		for c := range p {
			if math.Abs(p[c]-early.Pred[0][c]) > 1e-12*max(1, math.Abs(p[c])) {
				t.Fatalf("%s: the kept samples predict %v, Pred %v", rule, p[c], early.Pred[0][c])
			}
		}
		// It did not converge earlier: no earlier sweep met the rule.
		for k := cfg.StopWindow; k < n-1; k++ {
			if rule == ClampSamples && q[k] > (1-cfg.StopTol)*q[k-cfg.StopWindow] {
				t.Fatalf("%s: converged at sweep %d already, stopped at %d", rule, burn+k+1, early.Sweeps)
			}
		}
	}
	off, err := Fit(context.Background(), train, []*tensor.COO{val}, Config{Rank: 3, Samples: 30, Seed: 7, InitStd: 0.1})
	if err != nil || off.Sweeps != 30 {
		t.Fatalf("no StopWindow: %v, %d sweeps", err, off.Sweeps)
	}
	for _, bad := range []Config{{Rank: 3, Samples: 3, StopWindow: -1}, {Rank: 3, Samples: 3, StopWindow: 2, StopTol: math.NaN()}} {
		if bad.Validate() == nil {
			t.Errorf("%+v: valid", bad)
		}
	}
}
