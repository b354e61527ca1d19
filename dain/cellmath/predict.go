// Package cellmath is the arithmetic of DAIN's cell makers and value
// predictors that needs no experiment (package dain's Experiment): a
// model's predictions of cells (Predict), the nearest entities in a
// model's embedding table (Nearest, entity replacement's), the
// normalisation and tempering of an entity importance, a host draw from
// an alias table, dain-agree's choice of cells on one process, the
// retraining's step scale of no-aug-steps, and a mean squared error.
package cellmath

import (
	"fmt"
	"sort"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// Predict returns m's predictions for cells (K×N entity indices), each
// rounded to the shortest decimal of its float32 (tensor.Shortest). It sends
// the backend PredictChunk cells at a time; an error is the backend's.
func Predict(m *nn.Net, cells []int32) ([]float64, error) {
	order := m.Order()
	n := len(cells) / order
	out := make([]float64, n)
	// In chunks of PredictChunk cells, so that the cells' copy on the
	// backend and the float32 predictions do not grow with the cells; a
	// sharded table's processes run as many chunks as the one with most.
	chunks := (n + PredictChunk - 1) / PredictChunk
	all := m.Batches(chunks)
	zero := make([]float64, min(n, PredictChunk))
	for c := 0; c < all; c++ {
		lo, hi := min(c*PredictChunk, n), min((c+1)*PredictChunk, n)
		s := m.NewSet(cells[lo*order:hi*order], zero[:hi-lo])
		p, err := m.Predict(s)
		s.Free()
		if err != nil {
			return nil, fmt.Errorf("dain: predicting values: %w", err)
		}
		for i, v := range p {
			out[lo+i] = tensor.Shortest(v)
		}
	}
	return out, nil
}

// PredictChunk is the number of cells Predict sends to the backend at
// once.
var PredictChunk = 1 << 20

// Neighbours is the number of nearest entities entity replacement picks
// from (paper §5.1.2).
const Neighbours = 10

// NearestFloats bounds the distances Nearest holds at once: 2^23 floats
// (32 MiB) on the device and as many on the host (a variable for tests).
var NearestFloats = 1 << 23

// Nearest returns, for every mode n and every entity i of it that occurs
// in train, the (up to) Neighbours other entities of mode n nearest to i
// in m's embedding table by Euclidean distance (ties broken by index), as
// out[n][i]; nil for an entity not in train. Distances come from the
// backend's GEMM: ‖a−b‖² = ‖a‖² + ‖b‖² − 2a·b. An error is the backend's.
func Nearest(m *nn.Net, train *tensor.COO) ([][][]int32, error) {
	be, order, width := m.Backend(), m.Order(), m.Width()
	table, _ := m.Table()
	host := make([]float32, table.Len())
	if err := be.Download(host, table); err != nil {
		return nil, fmt.Errorf("dain: %w", err)
	}
	out := make([][][]int32, order)
	for n, d := range m.Dims() {
		out[n] = make([][]int32, d)
		used := make([]bool, d)
		var queries []int32
		for k := n; k < len(train.Idx); k += order {
			if i := train.Idx[k]; !used[i] {
				used[i] = true
				queries = append(queries, i)
			}
		}
		sort.Slice(queries, func(a, b int) bool { return queries[a] < queries[b] })
		off := int(m.Offsets()[n])
		emb := host[off*width : (off+d)*width]
		norm := make([]float64, d)
		for i := range norm {
			for _, v := range emb[i*width : (i+1)*width] {
				norm[i] += float64(v) * float64(v)
			}
		}
		all, zero := be.Alloc(d*width), be.Alloc(d)
		be.Upload(all, emb)
		// Queries a pass: up to 256, fewer for a large mode, so that the
		// pass's distances (q·d, on the device and on the host) stay
		// within NearestFloats each.
		q := max(1, min(256, NearestFloats/max(d, 1)))
		qbuf, dots := be.Alloc(q*width), be.Alloc(q*d)
		qhost, dhost := make([]float32, q*width), make([]float32, q*d)
		for lo := 0; lo < len(queries); lo += q {
			hi := min(lo+q, len(queries))
			for j, i := range queries[lo:hi] {
				copy(qhost[j*width:(j+1)*width], emb[int(i)*width:(int(i)+1)*width])
			}
			nq := hi - lo
			be.Upload(qbuf.Slice(0, nq*width), qhost[:nq*width])
			// dots[j, i] = query_j · entity_i
			be.LinearForward(dots.Slice(0, nq*d), qbuf.Slice(0, nq*width), all, zero, width, d, false)
			if err := be.Download(dhost[:nq*d], dots.Slice(0, nq*d)); err != nil {
				return nil, fmt.Errorf("dain: %w", err)
			}
			for j, i := range queries[lo:hi] {
				out[n][i] = topK(dhost[j*d:(j+1)*d], norm, int(i), Neighbours)
			}
		}
		for _, b := range []compute.F32{all, zero, qbuf, dots} {
			b.Free()
		}
	}
	return out, nil
}

// topK returns the k entities j ≠ self with the smallest ‖e_j‖² − 2·dot_j
// (the squared distance to self up to the constant ‖e_self‖²).
func topK(dots []float32, norm []float64, self, k int) []int32 {
	type cand struct {
		d float64
		j int32
	}
	best := make([]cand, 0, k+1)
	for j, dot := range dots {
		if j == self {
			continue
		}
		dist := norm[j] - 2*float64(dot)
		if len(best) == k && !(dist < best[k-1].d) {
			continue
		}
		pos := sort.Search(len(best), func(p int) bool { return best[p].d > dist })
		best = append(best, cand{})
		copy(best[pos+1:], best[pos:])
		best[pos] = cand{dist, int32(j)}
		if len(best) > k {
			best = best[:k]
		}
	}
	out := make([]int32, len(best))
	for i, b := range best {
		out[i] = b.j
	}
	return out
}
