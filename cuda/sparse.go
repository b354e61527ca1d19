package cuda

import "github.com/dainx/dainx/compute"

// DistinctRows implements compute.Backend.DistinctRows. TODO: kernel.
func (be *Backend) DistinctRows(rows, starts, perm, count, cells compute.I32) {
	panic("cuda: DistinctRows not implemented yet")
}

// CompactRows implements compute.Backend.CompactRows. TODO: kernel.
func (be *Backend) CompactRows(grad, dx compute.F32, starts, perm, count compute.I32, order, width int, layout compute.Layout) {
	panic("cuda: CompactRows not implemented yet")
}

// SparseAdam implements compute.Backend.SparseAdam. TODO: kernel.
func (be *Backend) SparseAdam(p, g, m, v compute.F32, rows, count compute.I32, width int, s compute.AdamStep) {
	panic("cuda: SparseAdam not implemented yet")
}
