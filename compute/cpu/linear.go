package cpu

import (
	"sync"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu/internal/gemm"
	"github.com/dainx/dainx/compute/cpu/internal/workers"
)

// LinearForward implements compute.Backend.LinearForward (=): one GEMM
// y = x·wᵀ with the bias and ReLU applied to each tile in registers, or on
// the avx2 path for a narrow layer (see skinny.go) the narrow tiles, which
// give the same bits.
func (be *Backend) LinearForward(y, x, w, bias compute.F32, in, out int, relu bool) {
	ys, xs, ws, bs := f(y), f(x), f(w), f(bias)
	batch := compute.CheckLinearForward(y, x, w, bias, in, out)
	if batch == 0 {
		return
	}
	if tw := fwdTile(in, out); tw > 0 && be.narrowKernels() {
		be.skinnyForward(ys, xs, ws, bs, batch, in, out, relu, tw)
		return
	}
	be.kern.Sgemm(be.nthreads(), &gemm.Params{
		TransB: true, M: batch, N: out, K: in,
		A: xs, LDA: in, B: ws, LDB: in, C: ys, LDC: out,
		Epilogue: gemm.Epilogue{Bias: bs, ReLU: relu}, Sparse: be.sparse,
	})
}

// LinearBackward implements compute.Backend.LinearBackward: dw = dyᵀ·x and
// dx = dy·w are GEMMs, the ReLU mask of dx fused into its epilogue; db is a
// column sum of dy split over columns. On the avx2 path a narrow layer (see
// skinny.go) runs on the narrow tiles, dwRows and the sparse-row kernels
// instead, which give the same bits. dw and dx take the same number of
// flops; when both are wanted, the layer is large and there are at least two
// threads, they run at the same time, each on half of the threads, which
// avoids the packing each GEMM duplicates across its threads and the waits
// at their ends (the results do not depend on the split).
func (be *Backend) LinearBackward(dx, dw, db, dy, x, w compute.F32, in, out int, maskX, accumulate bool) {
	dxs, dws, dbs, dys, xs, ws := f(dx), f(dw), f(db), f(dy), f(x), f(w)
	batch := compute.CheckLinearBackward(dx, dw, db, dy, x, w, in, out)
	if narrow(in, out) && be.narrowKernels() {
		switch tw := dxTile(in, out); {
		case dxs == nil:
		case batch == 0:
			dxs = nil
		case tw > 0:
			be.skinnyGradX(dxs, dys, xs, ws, batch, in, out, maskX, tw)
			dxs = nil
		case be.sparseGradX(dxs, dys, xs, ws, batch, in, out, maskX):
			dxs = nil
		}
		if in > 24 && dws != nil && batch > 0 && be.sparseGradW(dws, dys, xs, batch, in, out, accumulate) {
			dws = nil
		}
		if in > 24 {
			be.skinnyGradW(nil, dbs, dys, xs, batch, in, out, accumulate)
		} else {
			be.skinnyGradW(dws, dbs, dys, xs, batch, in, out, accumulate)
			dws = nil
		}
		dbs = nil
	}
	threads := be.nthreads()
	gradW := func(threads int) {
		be.kern.Sgemm(threads, &gemm.Params{
			TransA: true, M: out, N: in, K: batch,
			A: dys, LDA: out, B: xs, LDB: in, C: dws, LDC: in,
			Accumulate: accumulate, Sparse: be.sparse,
		})
	}
	gradX := func(threads int) {
		p := &gemm.Params{
			M: batch, N: in, K: out,
			A: dys, LDA: out, B: ws, LDB: in, C: dxs, LDC: in, Sparse: be.sparse,
		}
		if maskX {
			p.Mask, p.LDMask = xs, in
		}
		be.kern.Sgemm(threads, p)
	}
	switch {
	case dws != nil && dxs != nil && threads >= 2 && batch*in*out >= concurrentMACs:
		tw := threads / 2
		workers.Run(2, func(t int) {
			if t == 1 {
				gradW(tw)
			} else {
				gradX(threads - tw)
			}
		})
	default:
		if dws != nil {
			gradW(threads)
		}
		if dxs != nil && batch > 0 {
			gradX(threads)
		}
	}
	if dbs != nil {
		be.colSums(dbs, dys, batch, out, accumulate)
	}
}

// concurrentMACs is the smallest dw (and dx) product, in multiply-adds, for
// which LinearBackward runs the two at the same time.
const concurrentMACs = 1 << 19 // 257×64×32 of the conformance suite reaches it

// colSums sets (or with accumulate adds to) s[o] the sum over the rows b of
// the rows×cols matrix a, summed in increasing b onto the old value (or 0).
// Columns are split over goroutines; each sum's order is the same.
func (be *Backend) colSums(s, a []float32, rows, cols int, accumulate bool) {
	if !accumulate {
		clear(s)
	}
	be.parallelFor(cols, 64*1024/max(rows, 1), func(lo, hi int) {
		acc := s[lo:hi]
		for b := 0; b < rows; b++ {
			addTo(acc, a[b*cols+lo:b*cols+hi], be.simd)
		}
	})
}

// tmpPool holds scratch buffers for InfluenceDot.
var tmpPool sync.Pool

// InfluenceDot implements compute.Backend.InfluenceDot (+=). With out = 1
// (the output layer, DAIN's default) it is one dot product per row; else
// t = x·gwᵀ + gb is one GEMM with the bias fused, then score[b] +=
// eta·Σ_o dy[b,o]·t[b,o].
func (be *Backend) InfluenceDot(score, dy, x, gw, gb compute.F32, in, out int, eta float32) {
	ss, dys, xs, gws, gbs := f(score), f(dy), f(x), f(gw), f(gb)
	batch := compute.CheckInfluenceDot(score, dy, x, gw, gb, in, out)
	if batch == 0 {
		return
	}
	if out == 1 {
		be.parallelFor(batch, 64, func(lo, hi int) {
			for b := lo; b < hi; b++ {
				t := dot(xs[b*in:(b+1)*in], gws, be.simd) + gbs[0]
				ss[b] += eta * (dys[b] * t)
			}
		})
		return
	}
	tp, _ := tmpPool.Get().(*[]float32)
	if tp == nil {
		tp = new([]float32)
	}
	if cap(*tp) < batch*out {
		*tp = make([]float32, batch*out)
	}
	t := (*tp)[:batch*out]
	be.kern.Sgemm(be.nthreads(), &gemm.Params{
		TransB: true, M: batch, N: out, K: in,
		A: xs, LDA: in, B: gws, LDB: in, C: t, LDC: out,
		Epilogue: gemm.Epilogue{Bias: gbs}, Sparse: be.sparse,
	})
	be.parallelFor(batch, 64, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			ss[b] += eta * dot(dys[b*out:(b+1)*out], t[b*out:(b+1)*out], be.simd)
		}
	})
	tmpPool.Put(tp)
}
