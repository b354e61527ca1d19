package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Synthetic returns a tensor of nnz distinct cells drawn uniformly over the
// grid dims, with values from a rank-R CP model of random factor matrices
// (DAIN §5.6's Synthetic tensors):
//
//	x(i₁,…,i_N) = Σ_{r<R} Πₙ Aₙ[iₙ, r] + σ·ε,   Aₙ[i, r] ~ U(0, 1), ε ~ N(0, 1)
//
// drawn from a PCG stream seeded with seed (factors first, then cells). Dims
// of the result are dims. It returns an error for an empty or non-positive
// shape, rank < 1, negative noise, more cells than half the grid (the
// rejection of repeated cells would crawl), and, before allocating, more
// than SynthMaxCells cells, a rank above SynthMaxRank or factor matrices
// of more than SynthMaxFactors values in all.
// Limits of Synthetic, so that no size computed from its arguments
// overflows or asks for terabytes (issue 31).
const (
	SynthMaxCells   = 1 << 30 // cells (nnz)
	SynthMaxRank    = 1 << 20 // CP rank
	SynthMaxFactors = 1 << 31 // Σₙ dims[n]·rank factor values
)

func Synthetic(dims []int, nnz, rank int, noise float64, seed uint64) (*COO, error) {
	if len(dims) == 0 {
		return nil, fmt.Errorf("synthetic: no modes")
	}
	grid := 1.0
	for n, d := range dims {
		if d <= 0 || d > MaxDim {
			return nil, fmt.Errorf("synthetic: mode %d has size %d", n+1, d)
		}
		grid *= float64(d)
	}
	switch {
	case nnz < 1:
		return nil, fmt.Errorf("synthetic: %d cells: want ≥ 1", nnz)
	case float64(nnz) > grid/2:
		return nil, fmt.Errorf("synthetic: %d cells in a grid of %.0f: want at most half of it", nnz, grid)
	case nnz > SynthMaxCells:
		return nil, fmt.Errorf("synthetic: %d cells: above the limit %d", nnz, SynthMaxCells)
	case rank < 1 || rank > SynthMaxRank:
		return nil, fmt.Errorf("synthetic: rank %d: want 1…%d", rank, SynthMaxRank)
	case !(noise >= 0) || math.IsInf(noise, 0):
		return nil, fmt.Errorf("synthetic: noise %v: want a finite σ ≥ 0", noise)
	}
	values := 0
	for _, d := range dims { // d ≤ MaxDim, rank ≤ 2²⁰: no overflow
		if values += d * rank; values > SynthMaxFactors {
			return nil, fmt.Errorf("synthetic: dims %v × rank %d: more than %d factor values", dims, rank, SynthMaxFactors)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x5717))
	factors := make([][]float64, len(dims))
	for n, d := range dims {
		factors[n] = make([]float64, d*rank)
		for i := range factors[n] {
			factors[n][i] = rng.Float64()
		}
	}
	t := &COO{Dims: append([]int(nil), dims...), Idx: make([]int32, 0, nnz*len(dims)), Val: make([]float64, 0, nnz)}
	seen := NewCellSet(dims, nnz)
	cell := make([]int32, len(dims))
	prod := make([]float64, rank)
	for t.NNZ() < nnz {
		for n, d := range dims {
			cell[n] = int32(rng.IntN(d))
		}
		if !seen.Add(cell) {
			continue
		}
		for r := range prod {
			prod[r] = 1
		}
		for n, i := range cell {
			for r, a := range factors[n][int(i)*rank : (int(i)+1)*rank] {
				prod[r] *= a
			}
		}
		v := 0.0
		for _, p := range prod {
			v += p
		}
		if noise > 0 {
			v += noise * rng.NormFloat64()
		}
		t.Idx = append(t.Idx, cell...)
		t.Val = append(t.Val, v)
	}
	return t, nil
}
