package cuda

import "github.com/dainx/dainx/compute"

// PairwiseForward implements compute.Backend.PairwiseForward (+=) with the
// kernel pairwise_forward (kernels/pairwise_forward.cu): one warp per
// cell, the lanes over the factor columns (the pair sum formed directly
// with a running prefix over the modes), a butterfly warp sum, then the
// bias column; deterministic. See compute/ref.PairwiseForward. It queues
// one launch and allocates nothing, so it may be captured in a graph.
func (be *Backend) PairwiseForward(y, x compute.F32, order, width int) {
	const op = "PairwiseForward"
	ys, xs := be.fm(op, y), be.fm(op, x)
	batch := compute.CheckPairwise(op, nil, y, x, order, width)
	if batch == 0 {
		return
	}
	nb, o, w := i32(op, batch), i32(op, order), i32(op, width)
	i32(op, order*width)
	grid := be.grid1D(int64(batch), warpsPerBlk)
	be.post(func() {
		if be.err == nil {
			be.fail("pairwise_forward", be.kPairwiseForward(grid, block1D, 0, ys.ptr, xs.ptr, nb, o, w))
		}
	})
}

// PairwiseBackward implements compute.Backend.PairwiseBackward (+=) with
// the kernel pairwise_backward (kernels/pairwise_backward.cu): one thread
// per element of dx, the sum over the other modes formed in increasing
// mode; deterministic. See compute/ref.PairwiseBackward. One launch, no
// allocation: capturable.
func (be *Backend) PairwiseBackward(dx, dy, x compute.F32, order, width int) {
	const op = "PairwiseBackward"
	ds, dys, xs := be.fm(op, dx), be.fm(op, dy), be.fm(op, x)
	batch := compute.CheckPairwise(op, dx, dy, x, order, width)
	if batch == 0 {
		return
	}
	nb, o, w := i32(op, batch), i32(op, order), i32(op, width)
	i32(op, order*width)
	grid := be.grid1D(int64(xs.n), threads)
	be.post(func() {
		if be.err == nil {
			be.fail("pairwise_backward", be.kPairwiseBackward(grid, block1D, 0, ds.ptr, dys.ptr, xs.ptr, nb, o, w))
		}
	})
}
