package tracin

import (
	"fmt"
	"math"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
)

// Representer computes representer-point cell importance (the influence
// estimator of the paper's §5.4 ablation) at the model's current parameters:
// a training cell's contribution to a validation prediction is
// α_z·⟨h_z, h_z'⟩ with α_z ∝ −∂ℓ_z/∂x̂_z, so its influence on the
// validation loss is, up to a positive constant,
//
//	score_z = 2e_z · ⟨h_z, Σ_{z'∈val} 2e_z' h_z'⟩
//
// with h the output layer's input. It returns |train| signed scores on the
// backend (the caller frees them); α_z = |score_z| as for TracIn.
//
// References: C.-K. Yeh, J. S. Kim, I. E. H. Yen, P. Ravikumar,
// "Representer point selection for explaining deep neural networks",
// NeurIPS 2018 (Theorem 3.1).
func Representer(m *nn.Net, train, val *nn.Set) (compute.F32, error) {
	return RepresenterSummed(m, train, val, nil)
}

// RepresenterSummed is Representer of training and validation cells spread
// over processes, each calling it with its own: sum, if not nil, replaces
// the validation sum Σ_{z'} 2e_z' h_z' (LastHidden()+1 float32s) by its sum
// over the processes, in place. With sum nil it is Representer.
func RepresenterSummed(m *nn.Net, train, val *nn.Set, sum func([]float32)) (compute.F32, error) {
	be := m.Backend()
	d, order, B := m.LastHidden(), m.Order(), m.Capacity()
	g := be.Alloc(d + 1)
	defer g.Free()
	if _, err := m.EvaluateGrad(val, g); err != nil {
		return nil, fmt.Errorf("tracin: representer: %w", err)
	}
	if sum != nil {
		host := make([]float32, d+1)
		if err := be.Download(host, g); err != nil {
			return nil, fmt.Errorf("tracin: representer: %w", err)
		}
		sum(host)
		be.Upload(g, host)
	}
	be.Fill(g.Slice(d, 1), 0) // the kernel has no bias term
	score, delta := be.Alloc(train.Len()), be.Alloc(B)
	defer delta.Free()
	nb := (train.Len() + B - 1) / B
	all := m.Batches(nb) // a sharded table: as many batches as every process
	for lo := 0; lo < train.Len(); lo += B {
		hi := min(lo+B, train.Len())
		pred := m.Forward(train.Rows.Slice(lo*order, (hi-lo)*order))
		dl := delta.Slice(0, hi-lo)
		be.MSEGrad(dl, nil, pred, train.Vals.Slice(lo, hi-lo), 2)
		be.InfluenceDot(score.Slice(lo, hi-lo), dl, m.Hidden(hi-lo), g.Slice(0, d), g.Slice(d, 1), d, 1, 1)
	}
	for i := nb; i < all; i++ {
		m.Skip()
	}
	if err := be.Sync(); err != nil {
		score.Free()
		return nil, fmt.Errorf("tracin: representer: %w", err)
	}
	return score, nil
}

// EntityImportanceCP1 computes entity importance as the rank-1 CP
// factorisation of the cell importance tensor (paper eq. 7, the ablation of
// §5.5): it minimises
//
//	Σ_{z∈train} (|score_z| − Πₙ a⁽ⁿ⁾_{zₙ})² + λ Σₙ ‖a⁽ⁿ⁾‖²
//
// by alternating least squares (sweeps of the closed-form update of each
// mode), after scaling |score| to mean 1, and returns each factor made
// non-negative and normalised to sum 1. Entities of no training cell get 0.
// rows are the training cells' global rows, dims the mode sizes. It returns
// an error if a factor vanishes (every score zero, or λ too large) or the
// backend failed.
func EntityImportanceCP1(be compute.Backend, score compute.F32, rows compute.I32, dims []int, lambda float64, sweeps int) ([][]float64, error) {
	return EntityImportanceCP1Summed(be, score, rows, dims, lambda, sweeps, nil)
}

// EntityImportanceCP1Summed is EntityImportanceCP1 of training cells spread
// over processes, each calling it with its own cells' scores and rows:
// sum, if not nil, replaces x by its element-wise sum over the processes,
// in place; it is called on the scores' sum and count (the mean), and on
// every mode's normal equations of every sweep (2·dims[n] float64s), so
// every process takes the same steps. With sum nil it is
// EntityImportanceCP1.
func EntityImportanceCP1Summed(be compute.Backend, score compute.F32, rows compute.I32, dims []int, lambda float64, sweeps int, sum func([]float64)) ([][]float64, error) {
	order, T := len(dims), score.Len()
	s32, r32 := make([]float32, T), make([]int32, T*order)
	if err := be.Download(s32, score); err != nil {
		return nil, fmt.Errorf("tracin: %w", err)
	}
	if err := be.DownloadI32(r32, rows); err != nil {
		return nil, fmt.Errorf("tracin: %w", err)
	}
	// Entity index per mode from global rows.
	offs := make([]int32, order)
	for n := 1; n < order; n++ {
		offs[n] = offs[n-1] + int32(dims[n-1])
	}
	idx := make([]int32, T*order)
	for k, r := range r32 {
		idx[k] = r - offs[k%order]
	}
	y := make([]float64, T)
	var mean float64
	for t, v := range s32 {
		y[t] = math.Abs(float64(v))
		mean += y[t]
	}
	count := float64(T)
	if sum != nil {
		mc := []float64{mean, count}
		sum(mc)
		mean, count = mc[0], mc[1]
	}
	mean /= count
	if err := NoImportance(mean, -1); err != nil {
		return nil, fmt.Errorf("tracin: %w", err)
	}
	// Start from the all-ones rank-1 tensor (the data have mean 1).
	a := make([][]float64, order)
	for n, d := range dims {
		a[n] = make([]float64, d)
		for i := range a[n] {
			a[n][i] = 1
		}
	}
	for t := range y {
		y[t] /= mean
	}
	var num, den []float64
	for sweep := 0; sweep < sweeps; sweep++ {
		for n, d := range dims {
			num, den = resize(num, d), resize(den, d)
			for t := 0; t < T; t++ {
				p := 1.0
				for m := 0; m < order; m++ {
					if m != n {
						p *= a[m][idx[t*order+m]]
					}
				}
				i := idx[t*order+n]
				num[i] += y[t] * p
				den[i] += p * p
			}
			if sum != nil {
				nd := append(append(make([]float64, 0, 2*d), num...), den...)
				sum(nd)
				copy(num, nd[:d])
				copy(den, nd[d:])
			}
			for i := range a[n] {
				a[n][i] = num[i] / (den[i] + lambda)
			}
		}
	}
	for n := range a {
		var sum float64
		for i, v := range a[n] {
			a[n][i] = math.Abs(v)
			sum += a[n][i]
		}
		if !(sum > 0) {
			return nil, fmt.Errorf("tracin: rank-1 CP factor of mode %d vanished (λ = %g)", n+1, lambda)
		}
		for i := range a[n] {
			a[n][i] /= sum
		}
	}
	return a, nil
}

// resize returns a zeroed slice of length n, reusing s's storage.
func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	s = s[:n]
	clear(s)
	return s
}
