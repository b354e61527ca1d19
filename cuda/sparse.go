package cuda

import (
	"fmt"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda/driver"
)

// Launch shape of distinct_rows (kernels/distinct_rows.cu states the same
// numbers).
const (
	distinctThreads = 1024    // its one block
	distinctTile    = 4096    // keys it sorts in shared memory; more need scratch
	distinctMaxK    = 1 << 30 // the most rows it groups
)

var distinctBlock = driver.Dim3{X: distinctThreads, Y: 1, Z: 1}

// distinctKeys returns the number of sort keys distinct_rows uses for k
// rows: the least power of two ≥ k (1 for k = 0).
func distinctKeys(k int) int {
	p := 1
	for p < k {
		p <<= 1
	}
	return p
}

// DistinctRows implements compute.Backend.DistinctRows (=) with the kernel
// distinct_rows (kernels/distinct_rows.cu), one block of 1024 threads that
// bitonic-sorts the keys cells[k]·2³²+k and numbers the distinct rows with
// a block scan; see compute/ref.DistinctRows. The result is exact, so bit
// for bit the CPU backend's. Up to 4096 rows it sorts in shared memory;
// beyond, it uses 8 bytes of the backend's scratch memory per key (a power
// of two ≥ K), which, as for the split GEMMs, must not grow during Capture:
// run the operation once with the largest K before capturing it. U stays
// on the device, so nothing here waits for it. It panics if the lengths do
// not fit or K exceeds 2³⁰. A negative row (a caller bug; the CPU backend
// panics) is grouped after every other.
func (be *Backend) DistinctRows(rows, starts, perm, count, cells compute.I32) {
	const op = "DistinctRows"
	rs, ss, ps, cs, xs := be.iv(op, rows), be.iv(op, starts), be.iv(op, perm), be.iv(op, count), be.iv(op, cells)
	k := compute.CheckDistinctRows(rows, starts, perm, count, cells)
	if k > distinctMaxK {
		panic(fmt.Sprintf("cuda: %s: %d rows exceed the kernel's limit of %d", op, k, distinctMaxK))
	}
	nk, keys := int32(k), distinctKeys(k)
	one := driver.Dim3{X: 1, Y: 1, Z: 1}
	be.post(func() {
		if be.err != nil {
			return
		}
		var scr driver.DevicePtr
		if keys > distinctTile {
			if scr = be.scratchBuf(8 * int64(keys)); scr == 0 {
				return
			}
		}
		be.fail("distinct_rows", be.kDistinctRows(one, distinctBlock, 0, rs.ptr, ss.ptr, ps.ptr, cs.ptr, scr, xs.ptr, nk))
	})
}

// CompactRows implements compute.Backend.CompactRows (= for the first
// count[0] rows) with the kernel compact_rows (kernels/compact_rows.cu): a
// thread an element, over a grid sized for K·E since U = count[0] is read
// on the device, summing its row's positions in increasing j from 0 in
// float32, the CPU backend's order, so the result is bit for bit the CPU's
// (no atomics); see compute/ref.CompactRows. It panics if the lengths do not
// fit or order or width ≤ 0.
func (be *Backend) CompactRows(grad, dx compute.F32, starts, perm, count compute.I32, order, width int, layout compute.Layout) {
	const op = "CompactRows"
	gs, xs, ss, ps, cs := be.fm(op, grad), be.fm(op, dx), be.iv(op, starts), be.iv(op, perm), be.iv(op, count)
	k := compute.CheckCompactRows(grad, dx, starts, perm, count, order, width, layout)
	if k == 0 {
		return
	}
	nk, o, w, l := i32(op, k), i32(op, order), i32(op, width), int32(layout)
	grid := be.grid1D(int64(k)*int64(width), threads)
	be.post(func() {
		if be.err == nil {
			be.fail("compact_rows", be.kCompactRows(grid, block1D, 0, gs.ptr, xs.ptr, ss.ptr, ps.ptr, cs.ptr, nk, o, w, l))
		}
	})
}

// adamArgs returns Adam's per-step constants as the adam and sparse_adam
// kernels take them: β₁, β₂, 1−β₁, 1−β₂, lr/(1−β₁ᵗ), 1/√(1−β₂ᵗ) and ε, formed
// in float64 and rounded once, exactly as Adam forms them
// (compute.AdamScalars), the L2 coefficient rounded once (0 for none), and
// s.Scalars' storage when it is set (the adam_at and sparse_adam_at
// kernels read the two per-step constants from it when they run).
func (be *Backend) adamArgs(op string, s compute.AdamStep) (b1, b2, omb1, omb2, step, rc2, eps, l2 float32, sc *F32) {
	c := compute.AdamScalars(s)
	if s.Scalars != nil {
		sc = be.fm(op, s.Scalars)
	}
	return float32(s.Beta1), float32(s.Beta2), float32(1 - s.Beta1), float32(1 - s.Beta2), c[0], c[1], float32(s.Eps), float32(s.L2), sc
}

// SparseAdam implements compute.Backend.SparseAdam (in place on the listed
// rows) with the kernel sparse_adam (kernels/sparse_adam.cu), or
// sparse_adam_at when s.Scalars is set: adam's
// constants and arithmetic, expression for expression (L2 included), so
// each touched element gets the bits Adam gives it with the same gradient; see
// compute/ref.SparseAdam. The grid is sized for K·E since U = count[0] is
// read on the device. It panics if the lengths do not fit or s.T < 1. A
// listed row outside the table (a caller bug; the CPU backend panics) is
// skipped, and a count above K is taken as K.
func (be *Backend) SparseAdam(p, g, m, v compute.F32, rows, count compute.I32, width int, s compute.AdamStep) {
	const op = "SparseAdam"
	ps, gs, ms, vs, rs, cs := be.fm(op, p), be.fm(op, g), be.fm(op, m), be.fm(op, v), be.iv(op, rows), be.iv(op, count)
	tableRows, k := compute.CheckSparseAdam(p, g, m, v, rows, count, width, s)
	if k == 0 || tableRows == 0 {
		return
	}
	nk, w, r := i32(op, k), i32(op, width), i32(op, tableRows)
	b1, b2, omb1, omb2, step, rc2, eps, l2, sc := be.adamArgs(op, s)
	grid := be.grid1D(int64(k)*int64(width), threads)
	be.post(func() {
		switch {
		case be.err != nil:
		case sc != nil:
			be.fail("sparse_adam_at", be.kSparseAdamAt(grid, block1D, 0, ps.ptr, ms.ptr, vs.ptr, gs.ptr, rs.ptr, cs.ptr, sc.ptr, nk, w, r, b1, b2, omb1, omb2, eps, l2))
		default:
			be.fail("sparse_adam", be.kSparseAdam(grid, block1D, 0, ps.ptr, ms.ptr, vs.ptr, gs.ptr, rs.ptr, cs.ptr, nk, w, r, b1, b2, omb1, omb2, step, rc2, eps, l2))
		}
	})
}
