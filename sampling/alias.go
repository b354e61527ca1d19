// Package sampling draws new tensor cells for DAIN's augmentation step
// (paper §4.4, Algorithm 1 lines 8–13): one Vose alias table per mode built
// from the entity importance α⁽ⁿ⁾, an index drawn from each mode
// independently, and rejection of cells that are already observed or already
// drawn.
//
// Tables are built on the host in float64 and quantised to 32-bit integer
// thresholds, so that the draws themselves (compute.Backend.SampleAlias,
// Philox counter-based) are bit-identical on every backend: the same seed
// gives the same augmented cells on the CPU and on a GPU.
//
// Errors: NewAlias and Cells return errors for unusable weights and for an
// exhausted cell space; a panic means a caller bug (mismatched lengths).
package sampling

import (
	"fmt"
	"math"
)

// Alias is a Vose alias table over I outcomes. Column j is kept with
// probability Thresh[j]/2³² and otherwise replaced by Alias[j]; the columns
// are chosen uniformly. P holds the normalised input weights for reference.
type Alias struct {
	Thresh []uint32
	Alias  []int32
	P      []float64
}

// NewAlias builds the alias table of the distribution p_i = w_i / Σw with
// Vose's stable O(I) method. Entities of weight 0 are never drawn.
//
// The probability each outcome gets from the quantised table differs from
// p_i by at most I·2⁻³² (each of its at most I contributing columns is
// rounded down by less than one part in 2³², and the loss goes to that
// column's alias).
//
// It returns an error if w is empty, holds a negative, NaN or infinite
// weight, has no positive weight, or has more than 2³¹−1 entries.
//
// References: M. D. Vose, "A linear algorithm for generating random numbers
// with a given distribution", IEEE TSE 17(9), 1991.
func NewAlias(w []float64) (*Alias, error) {
	n := len(w)
	if n == 0 {
		return nil, fmt.Errorf("sampling: empty weight vector")
	}
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("sampling: %d weights do not fit int32 indices", n)
	}
	var sum float64
	for i, v := range w {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("sampling: weight %d is %v; want finite and ≥ 0", i, v)
		}
		sum += v
	}
	if !(sum > 0) {
		return nil, fmt.Errorf("sampling: all %d weights are zero", n)
	}
	t := &Alias{Thresh: make([]uint32, n), Alias: make([]int32, n), P: make([]float64, n)}
	// Scaled probabilities q_i = n·p_i; columns with q < 1 are "small".
	q := make([]float64, n)
	small := make([]int32, 0, n)
	large := make([]int32, 0, n)
	for i, v := range w {
		t.P[i] = v / sum
		q[i] = t.P[i] * float64(n)
		if q[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s := small[len(small)-1]
		small = small[:len(small)-1]
		l := large[len(large)-1]
		t.Thresh[s] = quantise(q[s])
		t.Alias[s] = l
		q[l] -= 1 - q[s]
		if q[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// What remains has q = 1 up to rounding: the column keeps itself. A
	// zero-weight column can only get here through gross rounding; it must
	// still never be drawn, so it hands its column to a positive one.
	var positive int32
	for i, v := range w {
		if v > 0 {
			positive = int32(i)
			break
		}
	}
	for _, rest := range [][]int32{large, small} {
		for _, i := range rest {
			t.Thresh[i], t.Alias[i] = math.MaxUint32, i
			if w[i] == 0 {
				t.Thresh[i], t.Alias[i] = 0, positive
			}
		}
	}
	return t, nil
}

// quantise maps a keep-probability in [0, 1] to ⌊q·2³²⌋, clamped to uint32.
func quantise(q float64) uint32 {
	if q <= 0 {
		return 0
	}
	v := math.Floor(q * (1 << 32))
	if v >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}

// Prob returns the exact probability with which the quantised table draws
// each outcome (the distribution SampleAlias realises): column j contributes
// Thresh[j]/2³² to j and the rest to Alias[j], each column with weight 1/I.
func (t *Alias) Prob() []float64 {
	n := len(t.Thresh)
	p := make([]float64, n)
	for j, th := range t.Thresh {
		keep := float64(th) / (1 << 32)
		p[j] += keep / float64(n)
		p[t.Alias[j]] += (1 - keep) / float64(n)
	}
	return p
}
