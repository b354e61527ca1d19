package dain_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
)

// TestDivergenceStops: a learning rate far too high stops the run at the
// stage and epoch where the loss left the sane range, with a remedy, for
// Θ and for CoSTCo.
func TestDivergenceStops(t *testing.T) {
	x := demoTensor(t, 1500)
	for _, v := range []struct {
		set  func(*dain.Config)
		want []string
	}{
		{func(c *dain.Config) { c.LR = 100 }, []string{"training Θ (mlp) diverged at epoch 1", "lower the learning rate (-lr 100; try 10) or rescale the values"}},
		{func(c *dain.Config) { c.CoSTCoLR = 1e4 }, []string{"training Θc (costco) diverged at epoch", "-costco-lr 10000"}},
	} {
		c := small()
		c.Rank, c.Channels = 4, 4
		v.set(&c)
		_, err := dain.Run(context.Background(), x, c, cpu.New())
		if err == nil {
			t.Errorf("%v: no error", v.want)
			continue
		}
		for _, w := range v.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
	}
}

// TestValueRange: a value whose square overflows float32, or that is not
// finite, is refused before training, naming the cell.
func TestValueRange(t *testing.T) {
	x := demoTensor(t, 500)
	for _, v := range []float64{1e30, -2e19, math.NaN(), math.Inf(1)} {
		y := x.Subset(nil)
		y.Idx, y.Val = append([]int32(nil), x.Idx...), append([]float64(nil), x.Val...)
		y.Val[42] = v
		_, err := dain.Run(context.Background(), y, small(), cpu.New())
		if err == nil || !strings.Contains(err.Error(), "cell 42 (0-based indices") {
			t.Errorf("value %v: %v", v, err)
		}
	}
	y := x.Subset(nil)
	y.Idx, y.Val = append([]int32(nil), x.Idx...), append([]float64(nil), x.Val...)
	y.Val[42] = 1.8e19 // the largest accepted are accepted
	c := small()
	c.Epochs = 1
	if _, err := dain.Run(context.Background(), y, c, cpu.New()); err != nil && strings.Contains(err.Error(), "cell 42") {
		t.Errorf("value 1.8e19 refused: %v", err)
	}
}

// TestImprovedReported: the report says whether the augmentation lowered
// the test RMSE, and the progress says so in words when it did not.
func TestImprovedReported(t *testing.T) {
	x := demoTensor(t, 1500)
	seen := map[bool]bool{}
	for seed := uint64(1); seed <= 6 && len(seen) < 2; seed++ {
		c := small()
		c.Seed, c.Epochs, c.Rank, c.Channels = seed, 2, 4, 4
		var progress bytes.Buffer
		c.Progress = &progress
		r, err := dain.Run(context.Background(), x, c, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		rep := r.Report
		if rep.Improved != (rep.RMSEAfter < rep.RMSEBefore) {
			t.Errorf("seed %d: improved %v with RMSE %g → %g", seed, rep.Improved, rep.RMSEBefore, rep.RMSEAfter)
		}
		if said := strings.Contains(progress.String(), "the augmentation did not lower the test RMSE"); said == rep.Improved {
			t.Errorf("seed %d: improved %v, progress says it did not: %v", seed, rep.Improved, said)
		}
		seen[rep.Improved] = true
	}
	t.Logf("outcomes seen: %v", seen)
}
