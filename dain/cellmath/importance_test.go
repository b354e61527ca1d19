package cellmath

import (
	"math"
	"strings"
	"testing"
)

// TestTemper: τ = 1, mix 0 is the identity; τ = 0 is uniform; mix blends
// with uniform; τ = 2 squares and renormalises.
func TestTemper(t *testing.T) {
	w := func() [][]float64 { return [][]float64{{0.5, 0.3, 0.2, 0}} }
	for _, tc := range []struct {
		tau, mix float64
		want     []float64
	}{
		{1, 0, []float64{0.5, 0.3, 0.2, 0}},
		{0, 0, []float64{0.25, 0.25, 0.25, 0.25}},
		{1, 0.5, []float64{0.375, 0.275, 0.225, 0.125}},
		{2, 0, []float64{0.25 / 0.38, 0.09 / 0.38, 0.04 / 0.38, 0}},
		// α^τ underflows for every entity (issue 46: -temperature 1e308
		// was "every weight of mode 1 is zero"): the arg max.
		{1e308, 0, []float64{1, 0, 0, 0}},
		{2000, 0.5, []float64{0.625, 0.125, 0.125, 0.125}},
	} {
		got := w()
		if err := Temper(got, tc.tau, tc.mix); err != nil {
			t.Fatal(err)
		}
		for i := range tc.want {
			if math.Abs(got[0][i]-tc.want[i]) > 1e-12 {
				t.Errorf("τ %v mix %v: %v, want %v", tc.tau, tc.mix, got[0], tc.want)
				break
			}
		}
	}
	// Counts above 1 overflow instead (the degree baseline's weights).
	counts := [][]float64{{3, 5, 5, 1}}
	if err := Temper(counts, 1e308, 0); err != nil || counts[0][0] != 0 || counts[0][1] != 0.5 || counts[0][2] != 0.5 {
		t.Errorf("τ 1e308 on counts: %v, %v", counts, err)
	}
	if err := Temper([][]float64{{0, 0}}, 2, 0); err == nil || !strings.Contains(err.Error(), "-temperature 2") {
		t.Errorf("a mode of zero weights: %v, want an error naming -temperature", err)
	}
}
