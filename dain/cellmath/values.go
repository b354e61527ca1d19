package cellmath

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/tensor"
)

// StackWeights returns the least-squares weights b (intercept first, then
// one per column) of y on the columns cols over every process of cl's
// cells (each passing its own; a collective): the normal equations, added
// over the processes, solved by Cholesky with the ridge ρ = 10⁻⁶·n on the
// columns' weights.
func StackWeights(cl cluster.Cluster, cols [][]float64, y []float64) ([]float64, error) {
	k := len(cols) + 1
	// The Gram matrix's upper triangle, then X'y, then n.
	s := make([]float64, k*k+k+1)
	x := func(j, c int) float64 {
		if j == 0 {
			return 1
		}
		return cols[j-1][c]
	}
	for c := range y {
		for i := range k {
			xi := x(i, c)
			for j := i; j < k; j++ {
				s[i*k+j] += xi * x(j, c)
			}
			s[k*k+i] += xi * y[c]
		}
	}
	s[k*k+k] = float64(len(y))
	if cl.Size() > 1 {
		cl.SumF64(s)
	}
	gram := mat.NewSymDense(k, nil)
	for i := range k {
		for j := i; j < k; j++ {
			v := s[i*k+j]
			if i == j && i > 0 {
				v += 1e-6 * s[k*k+k]
			}
			gram.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(gram) {
		return nil, fmt.Errorf("dain: the ensemble predictor: the candidates' validation predictions are degenerate (%g validation cells)", s[k*k+k])
	}
	var b mat.VecDense
	if err := ch.SolveVecTo(&b, mat.NewVecDense(k, s[k*k:k*k+k])); err != nil {
		return nil, fmt.Errorf("dain: the ensemble predictor: %w", err)
	}
	return b.RawVector().Data, nil
}

// CheckValues returns an error naming the first cell of x whose value is
// not finite or whose square overflows float32 (|v| > tensor.MaxValue):
// the models train in float32 on squared errors, so such a value makes the
// first loss infinite. The readers refuse these values with file and line;
// this catches tensors built in memory.
func CheckValues(x *tensor.COO) error {
	for k, v := range x.Val {
		if v-v == 0 && math.Abs(v) <= tensor.MaxValue {
			continue
		}
		why := fmt.Sprintf("is too large: its square overflows float32, in which the models compute squared errors (|value| must be at most %.8g); rescale the values", tensor.MaxValue)
		if v-v != 0 {
			why = "is not finite"
		}
		return fmt.Errorf("dain: cell %d (0-based indices %v): value %v %s", k, x.Cell(k), v, why)
	}
	return nil
}

// DistinctPerMode returns, for each mode of x, how many distinct indices
// its cells use.
func DistinctPerMode(x *tensor.COO) []int {
	out := make([]int, x.Order())
	for n := range out {
		seen := make([]bool, x.Dims[n])
		for i := 0; i < x.NNZ(); i++ {
			j := x.Idx[i*x.Order()+n]
			if !seen[j] {
				seen[j] = true
				out[n]++
			}
		}
	}
	return out
}
