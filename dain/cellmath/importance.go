package cellmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"gonum.org/v1/gonum/floats"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tracin"
)

// Normalise scales each mode of w to sum 1; it fails for a mode whose
// weights are all zero.
func Normalise(w [][]float64) error {
	for n := range w {
		sum := floats.Sum(w[n])
		if !(sum > 0) {
			return fmt.Errorf("every weight of mode %d is zero, so it has no entity to draw", n+1)
		}
		floats.Scale(1/sum, w[n])
	}
	return nil
}

// Temper applies package dain's Tempered map to w (w[mode][entity]) in
// place: α^τ (tau), normalised, then mixed with the uniform distribution
// by share mix. Where a mode's α^τ underflows to zero for every entity or
// overflows (a large τ: 1e308 on weights below 1), the mode is raised as
// (α/max α)^τ instead, the same distribution in exact arithmetic, so that
// the largest weights keep 1 and a τ that sharpens without bound ends at
// the arg max, not at an empty mode. A mode whose weights are all zero
// before the power is an error naming -temperature's input.
func Temper(w [][]float64, tau, mix float64) error {
	for n := range w {
		orig := slices.Clone(w[n])
		sum := 0.0
		for i, a := range w[n] {
			w[n][i] = math.Pow(a, tau)
			sum += w[n][i]
		}
		if sum > 0 && !math.IsInf(sum, 0) {
			continue
		}
		top := slices.Max(orig)
		if !(top > 0) {
			break // Normalise names the mode
		}
		for i, a := range orig {
			w[n][i] = math.Pow(a/top, tau)
		}
	}
	if err := Normalise(w); err != nil {
		return fmt.Errorf("-temperature %v: %w", tau, err)
	}
	for n := range w {
		u := mix / float64(len(w[n]))
		for i := range w[n] {
			w[n][i] = (1-mix)*w[n][i] + u
		}
	}
	return nil
}

// DrawAlias draws one outcome of a on the host.
func DrawAlias(a *sampling.Alias, r *rand.Rand) int32 {
	j := r.IntN(len(a.Thresh))
	if r.Uint32() < a.Thresh[j] {
		return int32(j)
	}
	return a.Alias[j]
}

// AgreeKeep returns the n of the candidate cells cand on whose predictions
// a and b agree best (smallest |a − b|, ties by draw order), in draw
// order, valued by a.
func AgreeKeep(dims []int, cand []int32, a, b []float64, n int) *tensor.COO {
	order := len(dims)
	idx := make([]int, len(a))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool {
		return math.Abs(a[idx[i]]-b[idx[i]]) < math.Abs(a[idx[j]]-b[idx[j]])
	})
	keep := idx[:n]
	slices.Sort(keep) // draw order
	aug := &tensor.COO{Dims: append([]int(nil), dims...)}
	for _, k := range keep {
		aug.Idx = append(aug.Idx, cand[k*order:(k+1)*order]...)
		aug.Val = append(aug.Val, a[k])
	}
	return aug
}

// StepsScale returns how many times more optimiser steps an epoch over
// train ∪ n cells takes than one over train alone, at batch b.
func StepsScale(train, n, b int) float64 {
	steps := func(m int) int { return (m + b - 1) / b }
	return float64(steps(train+n)) / float64(steps(train))
}

// MSE returns the mean squared difference of p and y (NaN when empty).
func MSE(p, y []float64) float64 {
	if len(p) == 0 {
		return math.NaN()
	}
	s := 0.0
	for i, v := range p {
		d := v - y[i]
		s += d * d
	}
	return s / float64(len(p))
}

// EntityCounts returns each mode's entities' numbers of training cells
// (train, this process's share, cells of dims), summed over the processes
// of cl: w[mode][entity].
func EntityCounts(cl cluster.Cluster, dims []int, train *tensor.COO) [][]float64 {
	order := len(dims)
	w := make([][]float64, order)
	for n := range w {
		w[n] = make([]float64, dims[n])
	}
	for k, i := range train.Idx {
		w[k%order][i]++
	}
	spread.SumModes(cl, w)
	return w
}

// MaxImportance returns each mode's entity importance as the largest
// |α_z| of the entity's training cells (train, this process's share, with
// their scores alpha in train's order) over every process of cl,
// normalised to sum 1 per mode; an error (tracin.NoImportance) names a
// mode whose importances are all zero.
func MaxImportance(cl cluster.Cluster, dims []int, train *tensor.COO, alpha []float32) ([][]float64, error) {
	order := len(dims)
	w := make([][]float64, order)
	for n := range w {
		w[n] = make([]float64, dims[n])
		for z, a := range alpha {
			i := train.Idx[z*order+n]
			w[n][i] = max(w[n][i], math.Abs(float64(a)))
		}
	}
	spread.MaxModes(cl, w)
	for n := range w {
		sum := floats.Sum(w[n])
		if err := tracin.NoImportance(sum, n); err != nil {
			return nil, err
		}
		floats.Scale(1/sum, w[n])
	}
	return w, nil
}

// MeanImportance returns each mode's entity importance as the mean |α_z|
// of the entity's training cells over every process of cl (train, this
// process's share, with their scores alpha in train's order; counts, from
// EntityCounts, the cells of each entity over every process), normalised
// to sum 1 per mode (Normalise's error for a mode of zeros).
func MeanImportance(cl cluster.Cluster, dims []int, train *tensor.COO, alpha []float32, counts [][]float64) ([][]float64, error) {
	order := len(dims)
	w := make([][]float64, order)
	for n := range w {
		w[n] = make([]float64, dims[n])
	}
	for z, a := range alpha {
		for n := 0; n < order; n++ {
			w[n][train.Idx[z*order+n]] += math.Abs(float64(a))
		}
	}
	spread.SumModes(cl, w)
	for n := range w {
		for i, c := range counts[n] {
			if c > 0 {
				w[n][i] /= c
			}
		}
	}
	return w, Normalise(w)
}

// PositivePart sets every score of alpha that is not positive to 0, in
// place, and returns how many are positive.
func PositivePart(alpha []float32) int {
	pos := 0
	for z, a := range alpha {
		if a > 0 {
			pos++
		} else {
			alpha[z] = 0
		}
	}
	return pos
}

// Shares returns a copy of w (w[mode][entity]) with each mode scaled to
// sum to 1.
func Shares(w [][]float64) [][]float64 {
	out := make([][]float64, len(w))
	for n, m := range w {
		sum := 0.0
		for _, x := range m {
			sum += x
		}
		out[n] = make([]float64, len(m))
		for i, x := range m {
			out[n][i] = x / sum
		}
	}
	return out
}

// Importance returns the importance α_z of signed cell scores s: |S_z|,
// or with positive max(S_z, 0) (-sign positive).
func Importance(s []float32, positive bool) []float32 {
	alpha := make([]float32, len(s))
	for z, x := range s {
		if positive {
			alpha[z] = max(x, 0)
		} else {
			alpha[z] = float32(math.Abs(float64(x)))
		}
	}
	return alpha
}
