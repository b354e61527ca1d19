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
//
// Alpha is the sample's noise precision α, MuW and LamW (N values) the
// mean and precision of each mode's bias prior, MuV and LamV (N×K) those
// of each mode's factors: the state of the chain that FoldIn draws new
// entities under. They may be nil (all five), and FoldIn then refuses the
// model.
type Sample struct {
	W0 float64
	W  [][]float64
	V  [][]float64

	Alpha     float64
	MuW, LamW []float64
	MuV, LamV [][]float64
}

// Sample returns kept sample s (0 ≤ s < NumSamples, in the order of the
// chain's sweeps). Its slices are m's own: the caller must not change
// them. It panics when s is out of range.
func (m *Model) Sample(s int) Sample {
	p := m.samples[s]
	x := Sample{W0: p.w0, W: p.w, V: p.v}
	if m.hyper != nil {
		h := m.hyper[s]
		x.Alpha, x.MuW, x.LamW, x.MuV, x.LamV = h.alpha, h.muW, h.lamW, h.muV, h.lamV
	}
	return x
}

// HasPriors reports whether m holds every sample's α and priors (FoldIn
// needs them).
func (m *Model) HasPriors() bool { return m.hyper != nil }

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
		h, err := sampleHyper(x, s, len(dims), rank)
		if err != nil {
			return nil, err
		}
		if s > 0 && (h != nil) != (m.hyper != nil) {
			return nil, fmt.Errorf("bayes: sample %d has α and priors and sample 0 has none, or the other way round", s)
		}
		if h != nil {
			m.hyper = append(m.hyper, h)
		}
	}
	return m, nil
}

// sampleHyper checks x's α and priors (sample s of a model of order n
// and rank k) and returns them, or nil when x has none.
func sampleHyper(x Sample, s, n, k int) (*hyper, error) {
	if x.Alpha == 0 && x.MuW == nil && x.LamW == nil && x.MuV == nil && x.LamV == nil {
		return nil, nil
	}
	if !(x.Alpha > 0) || !finite(x.Alpha) {
		return nil, fmt.Errorf("bayes: sample %d: noise precision α = %v, want a finite value > 0", s, x.Alpha)
	}
	if len(x.MuW) != n || len(x.LamW) != n || len(x.MuV) != n || len(x.LamV) != n {
		return nil, fmt.Errorf("bayes: sample %d: priors of %d, %d, %d and %d modes, want %d", s, len(x.MuW), len(x.LamW), len(x.MuV), len(x.LamV), n)
	}
	for m := range n {
		if len(x.MuV[m]) != k || len(x.LamV[m]) != k {
			return nil, fmt.Errorf("bayes: sample %d, mode %d: factor priors of %d and %d values, want %d", s, m+1, len(x.MuV[m]), len(x.LamV[m]), k)
		}
		for f := -1; f < k; f++ {
			mu, lam := x.MuW[m], x.LamW[m]
			if f >= 0 {
				mu, lam = x.MuV[m][f], x.LamV[m][f]
			}
			if !finite(mu) || !(lam > 0) || !finite(lam) {
				return nil, fmt.Errorf("bayes: sample %d, mode %d: a prior of mean %v and precision %v, want finite, precision > 0", s, m+1, mu, lam)
			}
		}
	}
	return &hyper{alpha: x.Alpha, muW: x.MuW, lamW: x.LamW, muV: x.MuV, lamV: x.LamV}, nil
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
	if m.hyper != nil {
		out.hyper = make([]*hyper, k)
	}
	for j := range k {
		out.samples[j] = m.samples[(j+1)*len(m.samples)/k-1]
		if m.hyper != nil {
			out.hyper[j] = m.hyper[(j+1)*len(m.samples)/k-1]
		}
	}
	return &out
}

// Round32 rounds every parameter of every kept sample to the nearest
// float32, in place: the model then predicts what one saved in float32
// and loaded again predicts, bit for bit.
func (m *Model) Round32() {
	r := func(v []float64) {
		for i, y := range v {
			v[i] = float64(float32(y))
		}
	}
	for _, h := range m.hyper {
		h.alpha = float64(float32(h.alpha))
		r(h.muW)
		r(h.lamW)
		for n := range h.muV {
			r(h.muV[n])
			r(h.lamV[n])
		}
	}
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
