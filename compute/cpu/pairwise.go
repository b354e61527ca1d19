package cpu

import "github.com/dainx/dainx/compute"

// PairwiseForward implements compute.Backend.PairwiseForward (+=), split
// over goroutines by cells. Each cell's term is formed in float32 in the
// order the interface documents (pairwiseCell), whatever the split.
func (be *Backend) PairwiseForward(y, x compute.F32, order, width int) {
	ys, xs := f(y), f(x)
	batch := compute.CheckPairwise("PairwiseForward", nil, y, x, order, width)
	ow := order * width
	be.parallelFor(batch, max(1, 16*1024/ow), func(lo, hi int) {
		for b := lo; b < hi; b++ {
			ys[b] += pairwiseCell(xs[b*ow:(b+1)*ow], order, width)
		}
	})
}

// pairwiseCell returns one cell's factorization-machine term: for each
// factor column k < K = width−1 in turn, the running prefix p of the
// column over the modes and the products x[n,k]·p added to the pair sum
// (Σ_{n<n′} x[n,k]·x[n′,k] without cancelling squares); then the bias
// column summed over the modes; bias + pairs.
func pairwiseCell(xb []float32, order, width int) float32 {
	k := width - 1
	var pairs float32
	for f := 0; f < k; f++ {
		p := xb[f]
		for n := 1; n < order; n++ {
			v := xb[n*width+f]
			pairs += float32(v * p)
			p += v
		}
	}
	var bias float32
	for n := 0; n < order; n++ {
		bias += xb[n*width+k]
	}
	return bias + pairs
}

// PairwiseBackward implements compute.Backend.PairwiseBackward (+=), split
// over goroutines by cells: dx[b,n,k] += dy[b]·Σ_{n′≠n} x[b,n′,k], the sum
// in increasing n′, and dx[b,n,E−1] += dy[b].
func (be *Backend) PairwiseBackward(dx, dy, x compute.F32, order, width int) {
	ds, dys, xs := f(dx), f(dy), f(x)
	batch := compute.CheckPairwise("PairwiseBackward", dx, dy, x, order, width)
	ow, k := order*width, width-1
	be.parallelFor(batch, max(1, 16*1024/(ow*order)), func(lo, hi int) {
		for b := lo; b < hi; b++ {
			d := dys[b]
			xb, db := xs[b*ow:(b+1)*ow], ds[b*ow:(b+1)*ow]
			for n := 0; n < order; n++ {
				row := db[n*width : (n+1)*width]
				for f := 0; f < k; f++ {
					var s float32
					for n2 := 0; n2 < order; n2++ {
						if n2 != n {
							s += xb[n2*width+f]
						}
					}
					row[f] += float32(d * s)
				}
				row[k] += d
			}
		}
	})
}
