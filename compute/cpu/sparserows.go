package cpu

import (
	"math"
	"sync"

	"github.com/dainx/dainx/compute/cpu/internal/gemm"
)

// Sparse rows for the narrow layers with a wide input (CoSTCo's 400 → 20):
// their dy is mostly exact zeros (ReLU' of few live channels; about 85% in
// CoSTCo's training), and both dx[b,:] = Σ_o dy[b,o]·w[o,:] and
// dw[o,:] = Σ_b dy[b,o]·x[b,:] are sums of rows of a row-major matrix (w or
// x) scaled by entries of dy. The sparse-row kernels (sprows96/32/8) form
// each output row from the nonzero entries only, in increasing order, as one
// FMA chain from +0 over each of the GEMM's k blocks, reading the scaled
// rows in place. Leaving out a term 0·B[p,j] of a finite B[p,j] changes no
// float32 sum here (a zero product added to a chain that started at +0
// leaves it bit for bit the same), so the results are those of the dense
// GEMM exactly; the path is therefore only taken where every element of the
// scaled matrix is finite, and where dy is sparse enough to be faster
// (below spRowsDensity), which changes the speed, never the result.

// spEnt is one nonzero of a row of A for the sparse-row kernels: the byte
// offset of the row of B it scales, and its value.
type spEnt struct {
	off int32
	val float32
}

// spRowsDensity is the largest fraction of nonzeros of dy for which the
// sparse-row kernels run. Each nonzero costs one 8-wide FMA per 8 columns
// with a load of B, at about half the rate of the GEMM's dense FMAs; at
// 400 → 20, B = 256 (uniformly placed nonzeros, one thread) they took 20 and
// 26 µs for dx and dw at a density of 0.15 against the GEMM's 47 and 73,
// 40 and 55 against 45 and 59 at 0.5, and broke even at 0.6.
const spRowsDensity = 0.5

type spRowsScratch struct {
	ent    []spEnt
	starts []int32
	count  []int32
}

var spRowsPool = sync.Pool{New: func() any { return new(spRowsScratch) }}

func (s *spRowsScratch) grow(nent, nstarts int) ([]spEnt, []int32) {
	if cap(s.ent) < nent {
		s.ent = make([]spEnt, nent)
	}
	if cap(s.starts) < nstarts {
		s.starts = make([]int32, nstarts)
	}
	return s.ent[:nent], s.starts[:nstarts]
}

// nonzero returns 1 if v is not ±0 (a NaN counts as nonzero), else 0.
func nonzero(v float32) int {
	u := math.Float32bits(v) << 1
	return int((u | -u) >> 31)
}

// finite reports whether no element of v is an infinity or a NaN.
func finite(v []float32) bool {
	n := len(v) &^ 31
	if n > 0 && !finiteSIMD(v[:n]) {
		return false
	}
	for _, x := range v[n:] {
		if math.Float32bits(x)&0x7f800000 == 0x7f800000 {
			return false
		}
	}
	return true
}

// sparseGradX sets dx = dy·w (masked where !(x > 0) with maskX) on the
// sparse-row kernels and reports true, or reports false and does nothing
// when they do not apply: not on the avx2 path, in not a multiple of 8, dy
// too dense or w not finite.
func (be *Backend) sparseGradX(dxs, dys, xs, ws []float32, batch, in, out int, maskX bool) bool {
	if !be.simd || in%8 != 0 || out*in >= 1<<29 {
		return false
	}
	sc := spRowsPool.Get().(*spRowsScratch)
	defer spRowsPool.Put(sc)
	ent, starts := sc.grow(batch*out, batch+1)
	limit := int(spRowsDensity * float64(batch*out))
	n := 0
	for b := 0; b < batch; b++ {
		starts[b] = int32(n)
		for o, v := range dys[b*out : (b+1)*out] {
			ent[n] = spEnt{int32(4 * o * in), v}
			n += nonzero(v)
		}
		if n > limit {
			return false
		}
	}
	starts[batch] = int32(n)
	if !finite(ws) {
		return false
	}
	mode := spNone
	if maskX {
		mode = spMask
	}
	be.parallelFor(batch, skinnyRowMACs*batch/max(1, n*in), func(lo, hi int) {
		var mask []float32
		if maskX {
			mask = xs[lo*in:]
		}
		spRows(dxs[lo*in:], in, hi-lo, starts[lo:hi+1], 1, ent, ws, out, mask, in, mode, 0, in)
	})
	return true
}

// sparseGradW sets (or with accumulate adds to) dw = dyᵀ·x on the
// sparse-row kernels, each row o of dw summed over the nonzeros dy[b,o] in
// the k blocks of b of the GEMM (of its sparse-A path where it would take
// that, so the result is bit for bit what it would give), and reports true;
// or reports false and does nothing (as sparseGradX; batch > 0).
func (be *Backend) sparseGradW(dws, dys, xs []float32, batch, in, out int, accumulate bool) bool {
	if !be.simd || in%8 != 0 || batch*in >= 1<<29 {
		return false
	}
	nnz := 0
	for _, v := range dys[:batch*out] {
		nnz += nonzero(v)
	}
	if float64(nnz) > spRowsDensity*float64(batch*out) || !finite(xs[:batch*in]) {
		return false
	}
	// The k blocks of the GEMM (its sparse-A path's where it would take
	// that).
	kc, ok := be.kern.SparseKBlock(&gemm.Params{
		TransA: true, M: out, N: in, K: batch,
		A: dys, LDA: out, B: xs, LDB: in, C: dws, LDC: in,
		Accumulate: accumulate, Sparse: be.sparse,
	})
	if !ok {
		kc = kBlock(batch)
	}
	nblk := (batch + kc - 1) / kc
	sc := spRowsPool.Get().(*spRowsScratch)
	defer spRowsPool.Put(sc)
	// Row o of block k lists its entries in ent from starts[2(k·out+o)] to
	// starts[2(k·out+o)+1], within kb slots of its own.
	ent, starts := sc.grow(batch*out, 2*nblk*out)
	if cap(sc.count) < out {
		sc.count = make([]int32, out)
	}
	cnt := sc.count[:out]
	for k := 0; k < nblk; k++ {
		b0, b1 := k*kc, min(batch, (k+1)*kc)
		base := b0 * out
		e := ent[base : base+(b1-b0)*out]
		clear(cnt)
		for b := b0; b < b1; b++ {
			for o, v := range dys[b*out : (b+1)*out] {
				c := cnt[o]
				e[o*(b1-b0)+int(c)] = spEnt{int32(4 * b * in), v}
				cnt[o] = c + int32(nonzero(v))
			}
		}
		st := starts[2*k*out:][:2*out]
		for o, c := range cnt {
			st[2*o] = int32(base + o*(b1-b0))
			st[2*o+1] = st[2*o] + c
		}
	}
	// Columns split over goroutines by multiples of 8.
	be.parallelFor(in/8, skinnyRowMACs/max(1, 8*nnz), func(lo, hi int) {
		for k := 0; k < nblk; k++ {
			mode := spNone
			if k > 0 || accumulate {
				mode = spAcc
			}
			spRows(dws, in, out, starts[2*k*out:][:2*out], 2, ent, xs, batch, nil, 0, mode, 8*lo, 8*hi)
		}
	})
	return true
}

// Epilogues of the sparse-row kernels.
const (
	spNone = 0 // store the sums
	spAcc  = 1 // add them to C
	spMask = 3 // zero them where !(mask[r·ldm+j] > 0)
)

// spRows computes columns [jlo, jhi) (multiples of 8) of rows r < rows of C
// (stride ldc) from the entries [starts[r·ss], starts[r·ss+1]) of ent (ss 1
// or 2), which scale rows of b (kb rows of stride ldc, their offsets in
// bytes), then the epilogue of mode (mask of stride ldm).
func spRows(c []float32, ldc, rows int, starts []int32, ss int, ent []spEnt, b []float32, kb int, mask []float32, ldm, mode int, jlo, jhi int) {
	if rows <= 0 || jlo >= jhi {
		return
	}
	_ = c[(rows-1)*ldc+jhi-1]
	_ = b[(kb-1)*ldc+jhi-1]
	if mode == spMask {
		_ = mask[(rows-1)*ldm+jhi-1]
	}
	_ = starts[(rows-1)*ss+1]
	for j := jlo; j < jhi; {
		var mp []float32
		if mode == spMask {
			mp = mask[j:]
		}
		switch w := jhi - j; {
		case w >= 96:
			sprowsSIMD(96, c[j:], ldc, rows, starts, ss, ent, b[j:], mp, ldm, mode)
			j += 96
		case w >= 32:
			sprowsSIMD(32, c[j:], ldc, rows, starts, ss, ent, b[j:], mp, ldm, mode)
			j += 32
		default:
			sprowsSIMD(8, c[j:], ldc, rows, starts, ss, ent, b[j:], mp, ldm, mode)
			j += 8
		}
	}
}
