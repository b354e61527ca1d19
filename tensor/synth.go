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
// of more than SynthMaxFactors values in all. Generator describes the same
// tensor and gives its noise-free values (the oracle of dainx augment
// -values oracle).
// Limits of Synthetic, so that no size computed from its arguments
// overflows or asks for terabytes (issue 31).
const (
	SynthMaxCells   = 1 << 30 // cells (nnz)
	SynthMaxRank    = 1 << 20 // CP rank
	SynthMaxFactors = 1 << 31 // Σₙ dims[n]·rank factor values
)

func Synthetic(dims []int, nnz, rank int, noise float64, seed uint64) (*COO, error) {
	if err := checkSynthetic(dims, nnz, rank, noise); err != nil {
		return nil, err
	}
	rng := synthRNG(seed)
	m := drawCP(rng, dims, rank)
	t := &COO{Dims: append([]int(nil), dims...), Idx: make([]int32, 0, nnz*len(dims)), Val: make([]float64, 0, nnz)}
	seen := NewCellSet(dims, nnz)
	cell := make([]int32, len(dims))
	for t.NNZ() < nnz {
		for n, d := range dims {
			cell[n] = int32(rng.IntN(d))
		}
		if !seen.Add(cell) {
			continue
		}
		v := m.Value(cell)
		if noise > 0 {
			v += noise * rng.NormFloat64()
		}
		t.Idx = append(t.Idx, cell...)
		t.Val = append(t.Val, v)
	}
	return t, nil
}

// checkSynthetic returns Synthetic's error for arguments it refuses, or nil.
func checkSynthetic(dims []int, nnz, rank int, noise float64) error {
	if len(dims) == 0 {
		return fmt.Errorf("synthetic: no modes")
	}
	grid := 1.0
	for n, d := range dims {
		if d <= 0 || d > MaxDim {
			return fmt.Errorf("synthetic: mode %d has size %d", n+1, d)
		}
		grid *= float64(d)
	}
	switch {
	case nnz < 1:
		return fmt.Errorf("synthetic: %d cells: want ≥ 1", nnz)
	case float64(nnz) > grid/2:
		return fmt.Errorf("synthetic: %d cells in a grid of %.0f: want at most half of it", nnz, grid)
	case nnz > SynthMaxCells:
		return fmt.Errorf("synthetic: %d cells: above the limit %d", nnz, SynthMaxCells)
	case rank < 1 || rank > SynthMaxRank:
		return fmt.Errorf("synthetic: rank %d: want 1…%d", rank, SynthMaxRank)
	case !(noise >= 0) || math.IsInf(noise, 0):
		return fmt.Errorf("synthetic: noise %v: want a finite σ ≥ 0", noise)
	}
	values := 0
	for _, d := range dims { // d ≤ MaxDim, rank ≤ 2²⁰: no overflow
		if values += d * rank; values > SynthMaxFactors {
			return fmt.Errorf("synthetic: dims %v × rank %d: more than %d factor values", dims, rank, SynthMaxFactors)
		}
	}
	return nil
}

// synthRNG is the PCG stream of Synthetic's seed.
func synthRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5717)) }

// drawCP draws the factor matrices of dims and rank from rng as Synthetic
// does: mode by mode, each row-major (entity i's R values together).
func drawCP(rng *rand.Rand, dims []int, rank int) *CP {
	m := &CP{Rank: rank, Factors: make([][]float64, len(dims))}
	for n, d := range dims {
		m.Factors[n] = make([]float64, d*rank)
		for i := range m.Factors[n] {
			m.Factors[n][i] = rng.Float64()
		}
	}
	return m
}

// CP is a CP model: Factors[n] is mode n's factor matrix, entity i's Rank
// values at [i·Rank, (i+1)·Rank).
type CP struct {
	Rank    int
	Factors [][]float64
}

// Value returns Σ_r Πₙ Factors[n][cell[n], r], computed as Synthetic
// computes a cell's noise-free value (the same operations in the same
// order, so the same float64). cell must be within the factors' modes.
func (m *CP) Value(cell []int32) float64 {
	v := 0.0
	for r := 0; r < m.Rank; r++ {
		p := 1.0
		for n, i := range cell {
			p *= m.Factors[n][int(i)*m.Rank+r]
		}
		v += p
	}
	return v
}
