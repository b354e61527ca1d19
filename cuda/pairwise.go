package cuda

import (
	"errors"

	"github.com/dainx/dainx/compute"
)

// errPairwiseTODO is the sticky error of the pairwise operations until
// their kernels land (issue 37).
var errPairwiseTODO = errors.New("not implemented on CUDA yet")

// PairwiseForward implements compute.Backend.PairwiseForward; see
// compute/ref.PairwiseForward. Not yet implemented on CUDA: it records a
// sticky error.
func (be *Backend) PairwiseForward(y, x compute.F32, order, width int) {
	const op = "PairwiseForward"
	be.fm(op, y)
	be.fm(op, x)
	compute.CheckPairwise(op, nil, y, x, order, width)
	be.post(func() { be.fail(op, errPairwiseTODO) })
}

// PairwiseBackward implements compute.Backend.PairwiseBackward; see
// compute/ref.PairwiseBackward. Not yet implemented on CUDA: it records a
// sticky error.
func (be *Backend) PairwiseBackward(dx, dy, x compute.F32, order, width int) {
	const op = "PairwiseBackward"
	be.fm(op, dx)
	be.fm(op, dy)
	be.fm(op, x)
	compute.CheckPairwise(op, dx, dy, x, order, width)
	be.post(func() { be.fail(op, errPairwiseTODO) })
}
