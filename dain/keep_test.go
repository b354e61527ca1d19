package dain_test

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/nn"
)

// TestKeep: what Config.Keep asks for is what the run used, and asking
// changes nothing the run computes. The scores are in the training set's
// order (Split.Train), α_z = |S_z|, and each mode's importance is the sum
// of α over its entities' training cells (eq. 6), summing to 1; the models
// handed over predict what the report says.
func TestKeep(t *testing.T) {
	x := demoTensor(t, 3000)
	plain, err := dain.Run(context.Background(), x, small(), cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	c := small()
	c.Keep = dain.Keep{Split: true, Scores: true, Importance: true, AllModels: true}
	roles := map[string][]int{}
	c.Keep.Model = func(role string, net *nn.Net) error {
		roles[role] = append([]int(nil), net.Dims()...)
		return nil
	}
	r, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if r.Report.RMSEBefore != plain.Report.RMSEBefore || r.Report.RMSEAfter != plain.Report.RMSEAfter || !reflect.DeepEqual(r.Aug, plain.Aug) {
		t.Fatalf("Keep changed the run: RMSE %v→%v, want %v→%v", r.Report.RMSEBefore, r.Report.RMSEAfter, plain.Report.RMSEBefore, plain.Report.RMSEAfter)
	}
	for _, role := range []string{"theta", "predictor", "theta-prime"} {
		if !reflect.DeepEqual(roles[role], x.Dims) {
			t.Errorf("model %s handed over with dims %v, want %v", role, roles[role], x.Dims)
		}
	}
	sp := r.Split
	if sp == nil || sp.Train.NNZ() != r.Report.NTrain || sp.Val.NNZ() != r.Report.NVal || sp.Test.NNZ() != r.Report.NTest {
		t.Fatalf("split %+v does not match the report's %d/%d/%d", sp, r.Report.NTrain, r.Report.NVal, r.Report.NTest)
	}
	s := r.Scores
	if s == nil || s.Cells != sp.Train || len(s.Alpha) != sp.Train.NNZ() || len(s.S) != len(s.Alpha) {
		t.Fatalf("scores not over the training cells")
	}
	neg := 0
	for z := range s.Alpha {
		if s.Alpha[z] != float32(math.Abs(float64(s.S[z]))) {
			t.Fatalf("cell %d: α %v, S %v: want α = |S|", z, s.Alpha[z], s.S[z])
		}
		if s.S[z] < 0 {
			neg++
		}
	}
	t.Logf("%d of %d training cells have S_z < 0", neg, len(s.S))
	order := x.Order()
	if len(r.Importance) != order {
		t.Fatalf("importance of %d modes", len(r.Importance))
	}
	for n, w := range r.Importance {
		want := make([]float64, x.Dims[n])
		total := 0.0
		for z, a := range s.Alpha {
			want[sp.Train.Idx[z*order+n]] += float64(a)
			total += float64(a)
		}
		sum := 0.0
		for i := range w {
			sum += w[i]
			if d := math.Abs(w[i] - want[i]/total); d > 1e-6*math.Max(w[i], 1e-3) {
				t.Fatalf("mode %d entity %d: importance %v, Σα/Σα = %v", n+1, i, w[i], want[i]/total)
			}
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("mode %d: importance sums to %v", n+1, sum)
		}
	}
}

// TestKeepRefused: scores from a method without an influence step, and
// importance from one that draws no entity, are errors before training.
func TestKeepRefused(t *testing.T) {
	x := demoTensor(t, 3000)
	for _, k := range []struct {
		method dain.MethodName
		keep   dain.Keep
	}{{"random", dain.Keep{Scores: true}}, {"duplication", dain.Keep{Importance: true}}} {
		c := small()
		c.Method, c.Keep = k.method, k.keep
		if _, err := dain.Run(context.Background(), x, c, cpu.New()); err == nil {
			t.Errorf("%s with %+v: no error", k.method, k.keep)
		}
	}
}

// TestNoTestSet: TestFrac 0 holds out no cell, reports validation RMSEs,
// and no new cell lands on any cell of the input.
func TestNoTestSet(t *testing.T) {
	x := demoTensor(t, 3000)
	c := small()
	c.TestFrac = 0
	c.Ratio = 1
	r, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	rep := r.Report
	if rep.NTest != 0 || !rep.NoTest || rep.NTrain+rep.NVal != x.NNZ() {
		t.Fatalf("split %d/%d/%d of %d, no_test %v", rep.NTrain, rep.NVal, rep.NTest, x.NNZ(), rep.NoTest)
	}
	if rep.RMSEBefore != rep.ValRMSEBefore || rep.RMSEAfter != rep.ValRMSEAfter || !(rep.RMSEBefore > 0) {
		t.Errorf("RMSE %v→%v, validation %v→%v: want the validation RMSEs", rep.RMSEBefore, rep.RMSEAfter, rep.ValRMSEBefore, rep.ValRMSEAfter)
	}
	order := x.Order()
	in := map[[3]int32]bool{}
	for k := 0; k < x.NNZ(); k++ {
		in[[3]int32(x.Idx[k*order:(k+1)*order])] = true
	}
	if r.Aug.NNZ() == 0 {
		t.Fatal("no new cells")
	}
	for k := 0; k < r.Aug.NNZ(); k++ {
		if c := [3]int32(r.Aug.Idx[k*order : (k+1)*order]); in[c] {
			t.Fatalf("new cell %v is a cell of the input", c)
		}
	}
	// With a test share, the check above could fail: new cells may land
	// on test cells (unobserved for the model).
}
