// Package ref holds the float64 reference loops that define every operation
// of compute.Backend. They are written to be read, not to be fast: the
// conformance suite (compute/computetest) runs each backend operation in
// float32 and compares it with the loop of the same name here, computed in
// float64 on the same float32-rounded inputs.
//
// Shapes, layout and the meaning of each argument are those of the Backend
// method of the same name; these functions do not check lengths beyond what
// indexing checks.
package ref

import (
	"math"
	"sort"

	"github.com/dainx/dainx/compute"
)

// Gather is compute.Backend.Gather (=).
func Gather(x, table []float64, cells []int32, order, width int, layout compute.Layout) {
	batch := len(cells) / order
	for b := 0; b < batch; b++ {
		for n := 0; n < order; n++ {
			row := int(cells[b*order+n])
			for e := 0; e < width; e++ {
				x[b*order*width+pos(n, e, width, order, layout)] = table[row*width+e]
			}
		}
	}
}

// ScatterRows is compute.Backend.ScatterRows (+=).
func ScatterRows(dtable, dx []float64, cells []int32, order, width int, layout compute.Layout) {
	batch := len(cells) / order
	for b := 0; b < batch; b++ {
		for n := 0; n < order; n++ {
			row := int(cells[b*order+n])
			for e := 0; e < width; e++ {
				dtable[row*width+e] += dx[b*order*width+pos(n, e, width, order, layout)]
			}
		}
	}
}

// pos is the offset of embedding element e of mode n within a batch row.
func pos(n, e, width, order int, layout compute.Layout) int {
	if layout == compute.RankMajor {
		return e*order + n
	}
	return n*width + e
}

// LinearForward is compute.Backend.LinearForward (=).
func LinearForward(y, x, w, bias []float64, in, out int, relu bool) {
	batch := len(x) / in
	for b := 0; b < batch; b++ {
		for o := 0; o < out; o++ {
			s := bias[o]
			for i := 0; i < in; i++ {
				s += x[b*in+i] * w[o*in+i]
			}
			if relu && s < 0 {
				s = 0
			}
			y[b*out+o] = s
		}
	}
}

// LinearBackward is compute.Backend.LinearBackward; nil outputs are skipped.
func LinearBackward(dx, dw, db, dy, x, w []float64, in, out int, maskX, accumulate bool) {
	batch := len(x) / in
	if dw != nil {
		for o := 0; o < out; o++ {
			for i := 0; i < in; i++ {
				s := 0.0
				for b := 0; b < batch; b++ {
					s += dy[b*out+o] * x[b*in+i]
				}
				if accumulate {
					dw[o*in+i] += s
				} else {
					dw[o*in+i] = s
				}
			}
		}
	}
	if db != nil {
		for o := 0; o < out; o++ {
			s := 0.0
			for b := 0; b < batch; b++ {
				s += dy[b*out+o]
			}
			if accumulate {
				db[o] += s
			} else {
				db[o] = s
			}
		}
	}
	if dx != nil {
		for b := 0; b < batch; b++ {
			for i := 0; i < in; i++ {
				s := 0.0
				for o := 0; o < out; o++ {
					s += dy[b*out+o] * w[o*in+i]
				}
				if maskX && !(x[b*in+i] > 0) {
					s = 0
				}
				dx[b*in+i] = s
			}
		}
	}
}

// MSEGrad is compute.Backend.MSEGrad (=); sq may be nil.
func MSEGrad(delta, sq, pred, y []float64, scale float64) {
	s := 0.0
	for b := range pred {
		e := pred[b] - y[b]
		delta[b] = scale * e
		s += e * e
	}
	if sq != nil {
		sq[0] = s
	}
}

// Mul is compute.Backend.Mul (=): dst[i] = a[i]·b[i].
func Mul(dst, a, b []float64) {
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

// Adam is compute.Backend.Adam (in place). With s.L2 > 0 the gradient is
// g + L2·p, p before the step (coupled L2; compute.AdamStep).
func Adam(p, g, m, v []float64, s compute.AdamStep) {
	c1 := 1 - math.Pow(s.Beta1, float64(s.T))
	c2 := 1 - math.Pow(s.Beta2, float64(s.T))
	for i := range p {
		gi := g[i]
		if s.L2 != 0 {
			gi += s.L2 * p[i]
		}
		m[i] = s.Beta1*m[i] + (1-s.Beta1)*gi
		v[i] = s.Beta2*v[i] + (1-s.Beta2)*gi*gi
		p[i] -= s.LR / c1 * m[i] / (math.Sqrt(v[i])/math.Sqrt(c2) + s.Eps)
	}
}

// PairwiseForward is compute.Backend.PairwiseForward (+=): the bias
// column summed over the modes plus, for every pair of modes n < n′, the
// dot product of their K = width−1 factor columns, written as the double
// loop of the definition (Rendle, ICDM 2010, eq. 1).
func PairwiseForward(y, x []float64, order, width int) {
	k := width - 1
	for b := range y {
		xb := x[b*order*width : (b+1)*order*width]
		s := 0.0
		for n := 0; n < order; n++ {
			s += xb[n*width+k]
			for n2 := n + 1; n2 < order; n2++ {
				for f := 0; f < k; f++ {
					s += xb[n*width+f] * xb[n2*width+f]
				}
			}
		}
		y[b] += s
	}
}

// PairwiseBackward is compute.Backend.PairwiseBackward (+=).
func PairwiseBackward(dx, dy, x []float64, order, width int) {
	k := width - 1
	for b := range dy {
		o := b * order * width
		for n := 0; n < order; n++ {
			for f := 0; f < k; f++ {
				s := 0.0
				for n2 := 0; n2 < order; n2++ {
					if n2 != n {
						s += x[o+n2*width+f]
					}
				}
				dx[o+n*width+f] += dy[b] * s
			}
			dx[o+n*width+k] += dy[b]
		}
	}
}

// InfluenceDot is compute.Backend.InfluenceDot (+=).
func InfluenceDot(score, dy, x, gw, gb []float64, in, out int, eta float64) {
	for b := range score {
		t := 0.0
		for o := 0; o < out; o++ {
			s := gb[o]
			for i := 0; i < in; i++ {
				s += gw[o*in+i] * x[b*in+i]
			}
			t += dy[b*out+o] * s
		}
		score[b] += eta * t
	}
}

// EmbeddingInfluence is compute.Backend.EmbeddingInfluence (+=).
func EmbeddingInfluence(score, dx []float64, cells []int32, gtable []float64, width int, layout compute.Layout, eta float64) {
	if len(score) == 0 {
		return
	}
	order := len(cells) / len(score)
	for b := range score {
		t := 0.0
		for n := 0; n < order; n++ {
			row := int(cells[b*order+n])
			for e := 0; e < width; e++ {
				t += dx[b*order*width+pos(n, e, width, order, layout)] * gtable[row*width+e]
			}
		}
		score[b] += eta * t
	}
}

// EntityImportance is compute.Backend.EntityImportance (+=).
func EntityImportance(imp, score []float64, cells []int32) {
	if len(score) == 0 {
		return
	}
	order := len(cells) / len(score)
	for t := range score {
		for n := 0; n < order; n++ {
			imp[cells[t*order+n]] += math.Abs(score[t])
		}
	}
}

// SampleAlias is compute.Backend.SampleAlias (= for column col).
func SampleAlias(out []int32, order, col int, thresh []uint32, alias []int32, key, ctr uint64) {
	for m := 0; m < len(out)/order; m++ {
		out[m*order+col] = compute.AliasDraw(thresh, alias, col, key, ctr, m)
	}
}

// DistinctRows is compute.Backend.DistinctRows (=): rows[:U], starts[:U+1],
// perm and count[0] = U.
func DistinctRows(rows, starts, perm, count []int32, cells []int32) {
	for k := range perm {
		perm[k] = int32(k)
	}
	sort.SliceStable(perm, func(a, b int) bool { return cells[perm[a]] < cells[perm[b]] })
	u := 0
	for j, k := range perm {
		if j == 0 || cells[k] != cells[perm[j-1]] {
			rows[u], starts[u] = cells[k], int32(j)
			u++
		}
	}
	starts[u] = int32(len(perm))
	count[0] = int32(u)
}

// CompactRows is compute.Backend.CompactRows (= for the first count[0]
// rows).
func CompactRows(grad, dx []float64, starts, perm, count []int32, order, width int, layout compute.Layout) {
	for u := 0; u < int(count[0]); u++ {
		for e := 0; e < width; e++ {
			s := 0.0
			for _, k := range perm[starts[u]:starts[u+1]] {
				b, n := int(k)/order, int(k)%order
				s += dx[b*order*width+pos(n, e, width, order, layout)]
			}
			grad[u*width+e] = s
		}
	}
}

// SparseAdam is compute.Backend.SparseAdam (in place on the listed rows).
func SparseAdam(p, g, m, v []float64, rows, count []int32, width int, s compute.AdamStep) {
	for u := 0; u < int(count[0]); u++ {
		r := int(rows[u])
		sl := r * width
		Adam(p[sl:sl+width], g[u*width:(u+1)*width], m[sl:sl+width], v[sl:sl+width], s)
	}
}
