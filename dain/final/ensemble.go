package final

import (
	"math"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/dain/cellmath"
	"github.com/dainx/dainx/tensor"
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

// Stack fits the ensemble of the candidates kinds (bayes-fm last) on the
// validation cells (package dain's -final-model ensemble): their
// predictions val and test (one column per candidate, this process's
// validation and test cells of d) stacked with weights fitted by least
// squares over every process (cellmath.StackWeights), clamped to the
// training values' range (TrainRange). It returns the stack, its test
// predictions, its validation MSE and its test RMSE (the validation RMSE
// when d has no test cells); an error is StackWeights'.
func Stack(d Data, kinds []string, val, test [][]float64) (m *Ensemble, testPred []float64, valMSE, rmse float64, err error) {
	w, err := cellmath.StackWeights(d.Cl, val, d.Val.Val)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	lo, hi := TrainRange(d.Cl, d.Train)
	m = &Ensemble{Kinds: kinds, Weights: w, Lo: lo, Hi: hi}
	pv, pt := m.Combine(val), m.Combine(test)
	valMSE = MSEAll(d.Cl, pv, d.Val.Val)
	rmse = math.Sqrt(valMSE)
	if d.NTest > 0 {
		rmse = math.Sqrt(MSEAll(d.Cl, pt, d.Test.Val))
	}
	return m, pt, valMSE, rmse, nil
}

// TrainRange returns the smallest and largest values of the training
// cells over every process of cl (train: this process's).
func TrainRange(cl cluster.Cluster, train *tensor.COO) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range train.Val {
		lo, hi = min(lo, v), max(hi, v)
	}
	if cl.Size() > 1 {
		all := cl.GatherF64([]float64{lo, hi})
		for r := 0; r+1 < len(all); r += 2 {
			lo, hi = min(lo, all[r]), max(hi, all[r+1])
		}
	}
	return lo, hi
}
