package bayes

import (
	"fmt"
	"math"
)

// Sample is one posterior sample of the factorization machine's
// parameters, as Model keeps it:
//
//	ŷ(i_1..i_N) = W0 + Σ_n W[n][i_n] + Σ_{n<m} Σ_f V[n][i_n·K+f]·V[m][i_m·K+f]
//
// W[n] has Dims[n] biases and V[n] is the Dims[n]×K factor matrix of mode
// n, row-major (K the Model's Rank).
type Sample struct {
	W0 float64
	W  [][]float64
	V  [][]float64
}

// Sample returns kept sample s (0 ≤ s < NumSamples, in the order of the
// chain's sweeps). Its slices are m's own: the caller must not change
// them. It panics when s is out of range.
func (m *Model) Sample(s int) Sample {
	p := m.samples[s]
	return Sample{W0: p.w0, W: p.w, V: p.v}
}

// NewModel returns the model that averages the clamped predictions of
// samples (at least one) over a tensor of mode sizes dims with rank K,
// clamped to [lo, hi] (lo ≤ hi, both finite). It takes the samples' slices
// without copying. It returns an error, naming the sample and mode, when
// a slice has the wrong length or a value is not finite.
func NewModel(dims []int, rank int, lo, hi float64, samples []Sample) (*Model, error) {
	switch {
	case len(dims) == 0:
		return nil, fmt.Errorf("bayes: a model of order 0")
	case rank < 1 || rank > MaxRank:
		return nil, fmt.Errorf("bayes: rank %d: want 1..%d", rank, MaxRank)
	case !(lo <= hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0):
		return nil, fmt.Errorf("bayes: clamp range [%v, %v]: want finite lo ≤ hi", lo, hi)
	case len(samples) == 0:
		return nil, fmt.Errorf("bayes: a model of no sample")
	}
	for n, d := range dims {
		if d < 1 {
			return nil, fmt.Errorf("bayes: mode %d has size %d", n+1, d)
		}
	}
	m := &Model{Dims: append([]int(nil), dims...), Rank: rank, Min: lo, Max: hi, samples: make([]*params, len(samples))}
	for s, x := range samples {
		if len(x.W) != len(dims) || len(x.V) != len(dims) {
			return nil, fmt.Errorf("bayes: sample %d has %d bias and %d factor modes, want %d", s, len(x.W), len(x.V), len(dims))
		}
		if !finite(x.W0) {
			return nil, fmt.Errorf("bayes: sample %d: w0 = %v", s, x.W0)
		}
		for n, d := range dims {
			if len(x.W[n]) != d || len(x.V[n]) != d*rank {
				return nil, fmt.Errorf("bayes: sample %d, mode %d: %d biases and %d factors, want %d and %d", s, n+1, len(x.W[n]), len(x.V[n]), d, d*rank)
			}
			for _, v := range [][]float64{x.W[n], x.V[n]} {
				for i, y := range v {
					if !finite(y) {
						return nil, fmt.Errorf("bayes: sample %d, mode %d: value %v at %d", s, n+1, y, i)
					}
				}
			}
		}
		m.samples[s] = &params{k: rank, w0: x.W0, w: x.W, v: x.V}
	}
	return m, nil
}

// Thin returns a model of k of m's samples (1 ≤ k ≤ NumSamples), evenly
// spaced over them with the last included (as Config.KeepSamples spaces
// them over the sweeps); it shares m's samples. It panics on a k out of
// range.
func (m *Model) Thin(k int) *Model {
	if k < 1 || k > len(m.samples) {
		panic(fmt.Sprintf("bayes: thin %d samples to %d", len(m.samples), k))
	}
	out := *m
	out.samples = make([]*params, k)
	for j := range k {
		out.samples[j] = m.samples[(j+1)*len(m.samples)/k-1]
	}
	return &out
}

// Round32 rounds every parameter of every kept sample to the nearest
// float32, in place: the model then predicts what one saved in float32
// and loaded again predicts, bit for bit.
func (m *Model) Round32() {
	for _, p := range m.samples {
		p.w0 = float64(float32(p.w0))
		for n := range p.w {
			for _, v := range [][]float64{p.w[n], p.v[n]} {
				for i, y := range v {
					v[i] = float64(float32(y))
				}
			}
		}
	}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
