package final

import (
	"github.com/dainx/dainx/bayes"
)

// Ensemble is the ensemble value predictor of step 4 (package dain's
// -predictor ensemble): the candidates
// of -final-model auto (Config.AutoKinds' nets and the bayes-fm chain), each
// trained on the training cells alone, whose predictions are combined
// with weights fitted on the validation cells by least squares
// (stacking: Wolpert, Neural Networks 5(2), 1992; Breiman, Machine
// Learning 24, 1996):
//
//	ŷ = b₀ + Σ_j b_j·ŷ_j,  b = argmin Σ_{v∈val} (y_v − b₀ − Σ_j b_j ŷ_j(v))² + ρ·Σ_{j≥1} b_j²,
//
// ρ = 10⁻⁶·|val| only to keep the normal equations regular when two
// candidates agree. The test cells are never seen. The value of a new
// cell is ŷ clamped to the training values' range.
type Ensemble struct {
	Kinds   []string  // the candidates, bayes-fm last
	Weights []float64 // b₀ then one per candidate
	ValRMSE float64   // the stack's validation RMSE
	Bayes   *bayes.Model
	Lo, Hi  float64 // the training values' range
}

// Combine returns b₀ + Σ_j b_j·cols[j] for every cell (cols[j] the
// predictions of candidate j, in Kinds' order), clamped to m's range.
func (m *Ensemble) Combine(cols [][]float64) []float64 {
	n := 0
	if len(cols) > 0 {
		n = len(cols[0])
	}
	out := make([]float64, n)
	for c := range out {
		y := m.Weights[0]
		for j, col := range cols {
			y += m.Weights[j+1] * col[c]
		}
		out[c] = min(max(y, m.Lo), m.Hi)
	}
	return out
}
