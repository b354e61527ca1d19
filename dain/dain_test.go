package dain_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/internal/demo"
	"github.com/dainx/dainx/internal/realdata"
	"github.com/dainx/dainx/tensor"
)

func demoTensor(t *testing.T, n int) *tensor.COO {
	t.Helper()
	x, err := demo.Read()
	if err != nil {
		t.Fatal(err)
	}
	if n < x.NNZ() {
		rows := make([]int, n)
		for i := range rows {
			rows[i] = i
		}
		x = x.Subset(rows)
	}
	return x
}

func small() dain.Config {
	c := dain.DefaultConfig()
	c.Layers = []int{24, 16, 8}
	c.Epochs = 4
	c.Batch = 128
	return c
}

// TestDeterminism: the same seed gives identical report numbers and
// augmented cells on the CPU backend; another seed does not.
func TestDeterminism(t *testing.T) {
	x := demoTensor(t, 3000)
	run := func(seed uint64) *dain.Result {
		c := small()
		c.Seed = seed
		r, err := dain.Run(context.Background(), x, c, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		r.Report.Seconds = dain.Seconds{}
		for _, h := range [][]dain.EpochLog{r.Report.HistoryBefore, r.Report.HistoryAfter} {
			for i := range h {
				h[i].Seconds = 0
			}
		}
		return r
	}
	a, b, c := run(5), run(5), run(6)
	if !reflect.DeepEqual(a.Report, b.Report) {
		t.Errorf("same seed, different reports:\n%+v\n%+v", a.Report, b.Report)
	}
	if !reflect.DeepEqual(a.Aug, b.Aug) {
		t.Error("same seed, different augmented cells")
	}
	if reflect.DeepEqual(a.Aug.Idx, c.Aug.Idx) || a.Report.RMSEBefore == c.Report.RMSEBefore {
		t.Error("seeds 5 and 6 gave the same cells or RMSE: the seed is not used")
	}
}

// checkRun asserts the invariants of any finished run on x.
func checkRun(t *testing.T, x *tensor.COO, c dain.Config, r *dain.Result) {
	t.Helper()
	rep := r.Report
	if rep.NTrain+rep.NVal+rep.NTest != x.NNZ() {
		t.Errorf("split %d+%d+%d of %d cells", rep.NTrain, rep.NVal, rep.NTest, x.NNZ())
	}
	if want := int(c.Ratio * float64(rep.NTrain)); rep.NAug != want || r.Aug.NNZ() != want {
		t.Errorf("n_aug %d, %d cells; want ⌊%g·%d⌋ = %d", rep.NAug, r.Aug.NNZ(), c.Ratio, rep.NTrain, want)
	}
	for _, v := range []float64{rep.RMSEBefore, rep.RMSEAfter} {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("RMSE %v", v)
		}
	}
	if rep.BestEpoch < 1 || rep.BestEpoch > c.Epochs {
		t.Errorf("best epoch %d", rep.BestEpoch)
	}
	// New cells are new: not in train or validation, not repeated.
	train, val, _ := tensor.Split(x.NNZ(), c.TestFrac, c.ValFrac, c.Seed)
	set := tensor.NewCellSet(x.Dims, len(train)+len(val))
	for _, k := range append(train, val...) {
		set.Add(x.Cell(k))
	}
	for k := 0; k < r.Aug.NNZ(); k++ {
		if !set.Add(r.Aug.Cell(k)) {
			t.Fatalf("augmented cell %v is observed or repeated", r.Aug.Cell(k))
		}
		if v := r.Aug.Val[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("augmented value %v", v)
		}
	}
	if err := r.Aug.Validate(); err != nil {
		t.Error(err)
	}
}

// TestDemoImproves runs DAIN on the demo tensor (DAIN's synthetic_10K) with
// a reduced MLP and checks that augmentation lowers the test RMSE at a
// fixed seed, as the paper claims.
func TestDemoImproves(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; -short")
	}
	x := demoTensor(t, math.MaxInt)
	c := dain.DefaultConfig()
	c.Layers = []int{150, 64, 64, 32}
	c.Epochs = 20
	r, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, x, c, r)
	t.Logf("test RMSE %.4f → %.4f (best epochs %d, %d)", r.Report.RMSEBefore, r.Report.RMSEAfter, r.Report.BestEpoch, r.Report.BestEpochAfter)
	if !(r.Report.RMSEAfter < r.Report.RMSEBefore) {
		t.Errorf("test RMSE %.4f → %.4f: augmentation did not help", r.Report.RMSEBefore, r.Report.RMSEAfter)
	}
}

// TestMovieLens runs end to end on a real tensor (MovieLens
// ml-latest-small, GroupLens; see the shared data README) with a small MLP
// and few epochs.
func TestMovieLens(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; -short")
	}
	x, err := tensor.ReadFile(realdata.Path(t, "movielens_latest_small.tsv.gz"), tensor.ReadOptions{Format: tensor.TSV, IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := dain.DefaultConfig()
	c.Layers = []int{48, 32, 16}
	c.Epochs = 4
	c.Ratio = 0.2
	r, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, x, c, r)
	t.Logf("test RMSE %.4f → %.4f", r.Report.RMSEBefore, r.Report.RMSEAfter)
	// Ratings 0.5–5 with mean 3.5 and standard deviation ≈ 1.04: a model
	// that learned anything beats the constant predictor.
	if r.Report.RMSEBefore > 1.1 {
		t.Errorf("test RMSE before augmentation %.4f > 1.1", r.Report.RMSEBefore)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := dain.Run(ctx, demoTensor(t, 2000), small(), cpu.New())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run returned %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	x := demoTensor(t, 500)
	for name, mut := range map[string]func(*dain.Config){
		"ratio":     func(c *dain.Config) { c.Ratio = -1 },
		"epochs":    func(c *dain.Config) { c.Epochs = 0 },
		"lr":        func(c *dain.Config) { c.LR = math.NaN() },
		"test-frac": func(c *dain.Config) { c.TestFrac = 1 },
		"predictor": func(c *dain.Config) { c.Predictor = "xgboost" },
		"layers":    func(c *dain.Config) { c.Layers = []int{10, 4} }, // 10 % 3 ≠ 0
		"ratio cap": func(c *dain.Config) { c.Ratio = 1e9 },
	} {
		c := small()
		mut(&c)
		if _, err := dain.Run(context.Background(), x, c, cpu.New()); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// More new cells than the grid has free cells: the sampler gives up
	// (a ratio under the cap, on a 6×6×6 grid with 120 observed cells).
	small6 := &tensor.COO{Dims: []int{6, 6, 6}}
	for k := 0; k < 216 && small6.NNZ() < 120; k++ {
		if (k*37)%216 < 120 {
			small6.Idx = append(small6.Idx, int32(k/36), int32(k/6%6), int32(k%6))
			small6.Val = append(small6.Val, float64(1+k%5))
		}
	}
	c := small()
	c.Ratio = 50
	c.Layers = []int{6, 4}
	_, err := dain.Run(context.Background(), small6, c, cpu.New())
	t.Logf("exhausted: %v", err)
	if err == nil || !strings.Contains(err.Error(), "cannot draw") {
		t.Errorf("exhausted: %v, want an error for %d new cells on %d free cells", err, int(50*0.72*float64(small6.NNZ())), 216-small6.NNZ())
	}
}
