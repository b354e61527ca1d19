package bayes

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dainx/dainx/cluster/clustertest"
	"github.com/dainx/dainx/tensor"
)

// floored returns a tensor from the model class whose values pile up at
// their smallest value, as counts do at 1: every value below the 40th
// percentile is raised to it. Its first 20% of cells are the validation
// set, the next 20% the test set, the rest training.
func floored(seed uint64) (train, val, test *tensor.COO) {
	x, _ := fmTensor([]int{30, 25, 12}, 3, 6000, 0.3, seed)
	s := slices.Sorted(slices.Values(x.Val))
	floor := s[len(s)*2/5]
	for c, v := range x.Val {
		x.Val[c] = max(v, floor)
	}
	n, cut := x.NNZ(), x.NNZ()/5
	idx := func(lo, hi int) []int {
		var out []int
		for c := lo; c < hi; c++ {
			out = append(out, c)
		}
		return out
	}
	return x.Subset(idx(2*cut, n)), x.Subset(idx(0, cut)), x.Subset(idx(cut, 2*cut))
}

// rawMean returns, for each cell of q, the mean over m's samples of their
// unclamped predictions: the reference that ClampMean clamps.
func rawMean(m *Model, q *tensor.COO) []float64 {
	n := len(m.Dims)
	out := make([]float64, q.NNZ())
	sum, sq := make([]float64, m.Rank), make([]float64, m.Rank)
	for c := range out {
		for _, p := range m.samples {
			out[c] += p.predict(q.Idx[c*n:(c+1)*n], sum, sq)
		}
		out[c] /= float64(len(m.samples))
	}
	return out
}

// TestClampRules: the clamp rule changes the predictions, never the
// chain. "" is ClampSamples bit for bit; ClampMean's predictions are the
// clamped mean of the kept samples' raw predictions (computed here from
// the samples); ClampAuto returns, bit for bit, the rule of lower
// validation MSE, its ValMSE the two rules' MSEs; the kept Model
// predicts as Result.Pred under every rule.
func TestClampRules(t *testing.T) {
	train, val, test := floored(11)
	fit := func(rule ClampRule) *Result {
		cfg := Config{Rank: 3, Samples: 30, BurnIn: 5, Seed: 9, InitStd: 0.1, KeepSamples: 25, Clamp: rule}
		res, err := Fit(context.Background(), train, []*tensor.COO{val, test}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	none, each, mean, auto := fit(""), fit(ClampSamples), fit(ClampMean), fit(ClampAuto)
	for _, r := range []*Result{each, mean, auto} {
		if !slices.Equal(r.TrainRMSE, none.TrainRMSE) || r.Alpha != none.Alpha {
			t.Fatalf("clamp %s: the chain changed", r.Clamp)
		}
	}
	if none.Clamp != ClampSamples || each.Clamp != ClampSamples || mean.Clamp != ClampMean {
		t.Fatalf("Result.Clamp: %q, %q, %q", none.Clamp, each.Clamp, mean.Clamp)
	}
	for j := range 2 {
		if !slices.Equal(none.Pred[j], each.Pred[j]) || !slices.Equal(none.QueryRMSE[j], each.QueryRMSE[j]) {
			t.Fatalf("query set %d: \"\" and samples differ", j)
		}
	}
	if none.ValMSE != nil || mean.ValMSE != nil {
		t.Errorf("ValMSE without auto: %v, %v", none.ValMSE, mean.ValMSE)
	}

	// ClampMean against the kept samples (all of them: Samples − BurnIn).
	differ := 0
	for j, q := range []*tensor.COO{val, test} {
		ref := rawMean(mean.Model, q)
		for c := range ref {
			want := min(max(ref[c], mean.Min), mean.Max)
			if math.Abs(mean.Pred[j][c]-want) > 1e-12*max(1, math.Abs(want)) {
				t.Fatalf("mean: query set %d cell %d = %v, the clamped mean of the samples %v", j, c, mean.Pred[j][c], want)
			}
			if mean.Pred[j][c] != each.Pred[j][c] {
				differ++
			}
		}
		if got := rmse(mean.Pred[j], q.Val); math.Abs(mean.QueryRMSE[j][len(mean.QueryRMSE[j])-1]-got) > 1e-12 {
			t.Errorf("mean: query set %d's last QueryRMSE %v, RMSE of Pred %v", j, mean.QueryRMSE[j][len(mean.QueryRMSE[j])-1], got)
		}
	}
	if differ == 0 {
		t.Fatal("mean and samples gave the same predictions on a floored tensor")
	}
	t.Logf("test RMSE: samples %.5f, mean %.5f (%d of %d cells differ)", rmse(each.Pred[1], test.Val), rmse(mean.Pred[1], test.Val), differ, val.NNZ()+test.NNZ())

	// ClampAuto: the rule of lower validation MSE, bit for bit.
	mse := func(p []float64) float64 { r := rmse(p, val.Val); return r * r }
	if len(auto.ValMSE) != 2 || math.Abs(auto.ValMSE[0]-mse(each.Pred[0])) > 1e-12 || math.Abs(auto.ValMSE[1]-mse(mean.Pred[0])) > 1e-12 {
		t.Fatalf("auto: ValMSE %v, the rules' validation MSEs %v, %v", auto.ValMSE, mse(each.Pred[0]), mse(mean.Pred[0]))
	}
	want := each
	if mse(mean.Pred[0]) < mse(each.Pred[0]) {
		want = mean
	}
	if auto.Clamp != want.Clamp || auto.Model.Clamp != want.Clamp {
		t.Fatalf("auto chose %q (model %q), validation says %q", auto.Clamp, auto.Model.Clamp, want.Clamp)
	}
	for j := range 2 {
		if !slices.Equal(auto.Pred[j], want.Pred[j]) || !slices.Equal(auto.QueryRMSE[j], want.QueryRMSE[j]) {
			t.Fatalf("auto: query set %d's predictions are not %s's", j, want.Clamp)
		}
	}
	for _, r := range []*Result{each, mean, auto} {
		for j, q := range []*tensor.COO{val, test} {
			p, err := r.Model.Predict(q)
			if err != nil {
				t.Fatal(err)
			}
			for c := range p {
				if math.Abs(p[c]-r.Pred[j][c]) > 1e-12*max(1, math.Abs(p[c])) {
					t.Fatalf("%s: Model.Predict cell %d = %v, Result.Pred %v", r.Clamp, c, p[c], r.Pred[j][c])
				}
			}
		}
	}

	// Auto without a query set keeps samples.
	res, err := Fit(context.Background(), train, nil, Config{Rank: 3, Samples: 3, Seed: 9, InitStd: 0.1, KeepSamples: 1, Clamp: ClampAuto})
	if err != nil || res.Clamp != ClampSamples || res.Model.Clamp != ClampSamples {
		t.Fatalf("auto without queries: %v, rule %q", err, res.Clamp)
	}
	// Bad rules.
	if err := (Config{Rank: 3, Samples: 3, Clamp: "median"}).Validate(); err == nil || !strings.Contains(err.Error(), "clamp rule") {
		t.Errorf("clamp rule median: %v", err)
	}
	bad := *mean.Model
	bad.Clamp = ClampAuto
	if _, err := bad.Predict(test); err == nil || !strings.Contains(err.Error(), "clamp rule") {
		t.Errorf("a model of clamp rule auto predicts: %v", err)
	}
}

// TestClampVariance: under ClampMean the variance is that of the
// samples' raw predictions, under ClampSamples of their clamped ones.
func TestClampVariance(t *testing.T) {
	train, _, test := floored(12)
	res, err := Fit(context.Background(), train, nil, Config{Rank: 3, Samples: 12, Seed: 2, InitStd: 0.1, KeepSamples: 6})
	if err != nil {
		t.Fatal(err)
	}
	n := len(res.Model.Dims)
	sum, sq := make([]float64, 3), make([]float64, 3)
	for _, rule := range []ClampRule{ClampSamples, ClampMean} {
		m := *res.Model
		m.Clamp = rule
		got, err := m.Variance(test)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := m.Min, m.Max
		if rule == ClampMean {
			lo, hi = math.Inf(-1), math.Inf(1)
		}
		for c := range test.NNZ() {
			var ys []float64
			for _, p := range m.samples {
				ys = append(ys, min(max(p.predict(test.Idx[c*n:(c+1)*n], sum, sq), lo), hi))
			}
			var mu, v float64
			for _, y := range ys {
				mu += y / float64(len(ys))
			}
			for _, y := range ys {
				v += (y - mu) * (y - mu) / float64(len(ys))
			}
			if math.Abs(got[c]-v) > 1e-12*max(1, v) {
				t.Fatalf("%s: cell %d variance %v, want %v", rule, c, got[c], v)
			}
		}
	}
}

// TestClampAutoOnRanks: spread over processes, ClampAuto makes the same
// choice on every process as Fit on all the cells, and every process's
// ValMSE is the whole validation set's.
func TestClampAutoOnRanks(t *testing.T) {
	train, val, _ := floored(13)
	cfg := Config{Rank: 3, Samples: 15, Seed: 4, InitStd: 0.1, Clamp: ClampAuto}
	want, err := Fit(context.Background(), train, []*tensor.COO{val}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	part := func(c *tensor.COO, k, p int) *tensor.COO {
		n, lo, hi := len(c.Dims), k*c.NNZ()/p, (k+1)*c.NNZ()/p
		return &tensor.COO{Dims: c.Dims, Idx: c.Idx[lo*n : hi*n], Val: c.Val[lo:hi]}
	}
	const p = 3
	res := make([]*Result, p)
	errs := make([]error, p)
	clustertest.Run(p, func(r clustertest.Rank) {
		k := r.Rank()
		res[k], errs[k] = FitOn(context.Background(), r, part(train, k, p), []*tensor.COO{part(val, k, p)}, cfg)
	})
	var pred []float64
	for k, r := range res {
		if errs[k] != nil {
			t.Fatal(errs[k])
		}
		if r.Clamp != want.Clamp || len(r.ValMSE) != 2 {
			t.Fatalf("rank %d chose %q, Fit %q", k, r.Clamp, want.Clamp)
		}
		for i := range 2 {
			if math.Abs(r.ValMSE[i]-want.ValMSE[i]) > 1e-9*want.ValMSE[i] {
				t.Fatalf("rank %d: ValMSE %v, Fit's %v", k, r.ValMSE, want.ValMSE)
			}
		}
		pred = append(pred, r.Pred[0]...)
	}
	for c := range pred {
		if math.Abs(pred[c]-want.Pred[0][c]) > 1e-9*max(1, math.Abs(pred[c])) {
			t.Fatalf("cell %d: %v on ranks, %v by Fit", c, pred[c], want.Pred[0][c])
		}
	}
	t.Logf("chose %s: validation MSE %v", want.Clamp, want.ValMSE)
}
