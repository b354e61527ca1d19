// Package gemm is the CPU backend's single-precision matrix multiply:
//
//	C (=|+=) op(A)·op(B),  then optionally  C += bias (per column),
//	C = ReLU(C),  C = C·[mask > 0]
//
// with op(A) m×k, op(B) k×n, all matrices row-major with a leading
// dimension (row stride). It is organised like BLIS (Van Zee & van de Geijn,
// ACM TOMS 41(3), 2015): the k×n operand is packed into panels of NR
// columns, kc rows at a time (kept in L3, each micro-panel in L1); the m×k
// operand into panels of MR rows, mc×kc at a time (kept in L2); a register
// blocked MR×NR micro-kernel then runs over the packed panels, and the
// epilogue (accumulation into C, bias, ReLU, mask) is applied to each tile in
// registers, after the last k block, so C is read and written once per k
// block.
//
// Kernels: a 12×32 AVX-512F micro-kernel in Go assembly on amd64 CPUs that
// have AVX-512F (see AVX512), a 6×16 AVX2/FMA one on those that have both
// features, and a 4×4 pure-Go kernel everywhere. Best returns the fastest
// one the CPU supports.
//
// # Determinism
//
// Every element of C is summed over k in the same order whatever the number
// of threads: k blocks in increasing order, each summed by one micro-kernel
// call in increasing k, tiles always aligned to multiples of MR rows and NR
// columns from the origin. Threads only split C, by whole NR column panels
// (when there are at least 8 per thread; each thread then packs its own B
// panels and all of A) or else by whole MR row tiles (each thread packing
// its own copy of B when B is the smaller operand, else sharing the packed B
// block, packed by all threads between two barriers), so the result is
// bit-identical for any thread count and on every run.
package gemm

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/dainx/dainx/compute/cpu/internal/workers"
)

// Micro-kernel flags.
const (
	flagAcc  = 1 << iota // C += tile (else C = tile)
	flagBias             // tile[i,j] += bias[j]
	flagReLU             // tile = max(0, tile), NaN and −0 kept
	flagMask             // tile[i,j] = 0 where !(mask[i,j] > 0)
)

// microFunc computes the MR×NR tile of the product of a packed A micro-panel
// (kc columns of MR values) and a packed B micro-panel (kc rows of NR
// values), applies the epilogue selected by flags and writes it to c with
// row stride ldc. bias (NR values) and mask (MR rows of NR values, stride
// ldm) are only read when their flag is set.
type microFunc func(kc int, a, b, c []float32, ldc, flags int, bias, mask []float32, ldm int)

// Kernel is one micro-kernel with its register-tile shape.
type Kernel struct {
	name   string
	mr, nr int
	micro  microFunc
	// micron, if not nil, runs micro over ntiles full tiles down the rows
	// (A panels kc·MR apart, C and mask MR rows apart) in one call.
	micron func(kc int, a, b, c []float32, ldc, flags int, bias, mask []float32, ldm, ntiles int)
	// sprows, if not nil, is the sparse-A kernel (see sparse.go): rows
	// rows of C, w = 96 or 32 columns each, from lists of nonzeros.
	sprows func(w, rows int, starts []int32, sstride int, ent []spEntry, b, c []float32, ldc, flags int, bias, mask []float32, ldm int)
	// whole, if not nil, computes the entire product and epilogue in place
	// of the blocked loops (m, n, k > 0).
	whole func(threads int, p *Params)
	// microcols, if not nil, runs micro over ntiles full tiles across the
	// columns (B panels kc·NR apart, C, mask and bias NR columns apart)
	// in one call.
	microcols func(kc int, a, b, c []float32, ldc, flags int, bias, mask []float32, ldm, ntiles int)
	// microedge, if not nil, is micro on a tile of MR rows and cols < NR
	// columns, written straight to C (instead of through the edge tile).
	microedge func(kc int, a, b, c []float32, ldc, flags int, bias, mask []float32, ldm, cols int)
	// mc and nc, if not 0, replace mcBlock and ncBlock for this kernel
	// (mc a multiple of MR, nc of NR).
	mc, nc int
	// rowsOuter makes the macro-kernel run the row tiles in the outer loop
	// and the column panels in the inner one (the A micro-panel stays in
	// L1, the B block in L2) instead of the other way round.
	rowsOuter bool
}

// blockMC and blockNC return the kernel's mc and nc block sizes.
func (k *Kernel) blockMC() int {
	if k.mc > 0 {
		return k.mc
	}
	return mcBlock
}

func (k *Kernel) blockNC() int {
	if k.nc > 0 {
		return k.nc
	}
	return ncBlock
}

// Name returns the kernel's name: "avx512", "avx2", "gonum" or "generic".
func (k *Kernel) Name() string { return k.name }

// Shape returns the kernel's register tile, e.g. "12×32", or "" for gonum
// (which has its own).
func (k *Kernel) Shape() string {
	if k.mr == 0 {
		return ""
	}
	return fmt.Sprintf("%d×%d", k.mr, k.nr)
}

// Blocking parameters (BLIS's MC, KC, NC), tuned for 32 KiB L1 and 512 KiB
// L2 per core: a 6×256 A and a 16×256 B micro-panel (22 KiB) fit L1, a
// 144×256 A block (144 KiB) fits L2.
const (
	mcBlock = 144 // multiple of every MR
	kcBlock = 256
	ncBlock = 4096 // multiple of every NR
)

// Epilogue is what is applied to C after the product.
type Epilogue struct {
	// Bias, if not nil, holds n values; Bias[j] is added to column j.
	Bias []float32
	// ReLU sets C = max(0, C) after the bias (NaN stays NaN).
	ReLU bool
	// Mask, if not nil, is an m×n matrix of stride LDMask: C[i,j] becomes
	// 0 where !(Mask[i,j] > 0). It is applied last.
	Mask   []float32
	LDMask int
}

// Params describes one product C (=|+=) op(A)·op(B). op(A) is m×k: A[i,p]
// at A[i*LDA+p], or at A[p*LDA+i] when TransA. op(B) is k×n: B[p,j] at
// B[p*LDB+j], or at B[j*LDB+p] when TransB. C[i,j] is at C[i*LDC+j].
// Accumulate selects C += (else C =, C's old contents never read).
type Params struct {
	TransA, TransB bool
	M, N, K        int
	A              []float32
	LDA            int
	B              []float32
	LDB            int
	C              []float32
	LDC            int
	Accumulate     bool
	Epilogue
	// Sparse says when the sparse-A path may be taken (default: when op(A)
	// is mostly exact zeros). It changes the rounding order, never the
	// determinism.
	Sparse SparseMode
}

// workspace holds one product's packing buffers.
type workspace struct {
	b    []float32   // packed k block of B: kc × roundup(nc, NR)
	bt   [][]float32 // per thread, for the column split: kc × roundup(nc, NR)
	a    [][]float32 // per thread: packed mc×kc block of A
	tile [][]float32 // per thread: MR×NR edge tile
}

var wsPool sync.Pool

// aligned returns a slice of n float32 whose first element is 64-byte
// aligned.
func aligned(n int) []float32 {
	s := make([]float32, n+16)
	off := int(uintptr(unsafe.Pointer(&s[0]))&63) / 4
	if off != 0 {
		off = 16 - off
	}
	return s[off : off+n : off+n]
}

func (k *Kernel) workspace(threads, kc, nc int) *workspace {
	w, _ := wsPool.Get().(*workspace)
	if w == nil {
		w = &workspace{}
	}
	if nb := kc * roundUp(nc, k.nr); cap(w.b) < nb {
		w.b = aligned(nb)
	}
	for len(w.a) < threads {
		w.a = append(w.a, nil)
		w.bt = append(w.bt, nil)
		w.tile = append(w.tile, nil)
	}
	for t := 0; t < threads; t++ {
		if nb := kc * roundUp(nc, k.nr); cap(w.bt[t]) < nb {
			w.bt[t] = aligned(nb)
		}
		if na := k.blockMC() * kc; cap(w.a[t]) < na {
			w.a[t] = aligned(na)
		}
		if cap(w.tile[t]) < k.mr*k.nr {
			w.tile[t] = aligned(k.mr * k.nr)
		}
	}
	return w
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// check panics if p's slices are too short for its shape.
func (p *Params) check() {
	if p.M < 0 || p.N < 0 || p.K < 0 {
		panic(fmt.Sprintf("gemm: m %d, n %d, k %d", p.M, p.N, p.K))
	}
	need := func(what string, have, rows, cols, ld int) {
		if rows == 0 || cols == 0 {
			return
		}
		if ld < cols || have < (rows-1)*ld+cols {
			panic(fmt.Sprintf("gemm: %s: %d elements with stride %d for %d×%d", what, have, ld, rows, cols))
		}
	}
	if p.TransA {
		need("A", len(p.A), p.K, p.M, p.LDA)
	} else {
		need("A", len(p.A), p.M, p.K, p.LDA)
	}
	if p.TransB {
		need("B", len(p.B), p.N, p.K, p.LDB)
	} else {
		need("B", len(p.B), p.K, p.N, p.LDB)
	}
	need("C", len(p.C), p.M, p.N, p.LDC)
	if p.Bias != nil && len(p.Bias) < p.N {
		panic(fmt.Sprintf("gemm: bias of %d elements for n %d", len(p.Bias), p.N))
	}
	if p.Mask != nil {
		need("mask", len(p.Mask), p.M, p.N, p.LDMask)
	}
}

// Sgemm computes the product described by p on up to threads goroutines
// (threads ≤ 1: the calling goroutine only). The result does not depend on
// threads.
func (k *Kernel) Sgemm(threads int, p *Params) {
	p.check()
	m, n, kk := p.M, p.N, p.K
	if m == 0 || n == 0 {
		return
	}
	if kk == 0 {
		k.emptyK(p)
		return
	}
	// Small products run on fewer goroutines: starting and waking one
	// costs a few µs, the time of ~10⁵ multiply-adds.
	if t := m * n * kk / minThreadMACs; t < threads {
		threads = max(1, t)
	}
	if k.whole != nil {
		k.whole(threads, p)
		return
	}
	if k.sparseWorth(p) && k.sgemmSparse(max(1, min(threads, m)), p) {
		return
	}
	tiles := (m + k.mr - 1) / k.mr
	// Split k into equal blocks of at most kcBlock.
	nk := (kk + kcBlock - 1) / kcBlock
	kc := (kk + nk - 1) / nk
	npan := (n + k.nr - 1) / k.nr
	// Two splits need no barrier until the end: each thread runs the
	// blocked loops alone on its part of C, packing its own operands.
	//   - By whole NR panels of columns, when there are enough of them:
	//     each thread packs its own B panels and all of A.
	//   - Else by whole MR tiles of rows, when B (k×n) is no larger than A
	//     (m×k): each thread packs its own copy of B and its own rows of A
	//     (n = 128 and 150 at m = 1024: the duplicated packing of B costs
	//     less than the barriers of the shared split below).
	byCols := splitCols && threads > 1 && npan >= 8*threads
	byRows := !byCols && splitRows && threads > 1 && tiles >= 8*threads && n <= m
	if byCols || byRows {
		units, size := tiles, k.mr
		if byCols {
			units, size = npan, k.nr
		}
		threads = min(threads, units)
		ws := k.workspace(threads, kc, min(n, k.blockNC()))
		defer wsPool.Put(ws)
		parallel(threads, func(t int) {
			lo, hi := t*units/threads*size, (t+1)*units/threads*size
			if byCols {
				k.serial(ws, t, p, 0, m, lo, min(n, hi), kc)
			} else {
				k.serial(ws, t, p, lo, min(m, hi), 0, n, kc)
			}
		})
		return
	}
	// Rows split over the threads, sharing each packed k block of B
	// (packed by all threads between two barriers).
	threads = max(1, min(threads, tiles))
	nc := min(n, k.blockNC())
	ws := k.workspace(threads, kc, nc)
	defer wsPool.Put(ws)
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		panels := (nb + k.nr - 1) / k.nr
		for pc := 0; pc < kk; pc += kc {
			kb := min(kc, kk-pc)
			flags := p.blockFlags(pc > 0, pc+kb == kk)
			parallel(threads, func(t int) {
				lo, hi := t*panels/threads, (t+1)*panels/threads
				for q := lo; q < hi; q++ {
					j0 := jc + q*k.nr
					packPanel(ws.b[q*kb*k.nr:][:kb*k.nr], p, pc, kb, j0, min(k.nr, n-j0), k.nr)
				}
			})
			parallel(threads, func(t int) {
				lo, hi := t*tiles/threads*k.mr, min(m, (t+1)*tiles/threads*k.mr)
				for ic := lo; ic < hi; ic += k.blockMC() {
					mb := min(k.blockMC(), hi-ic)
					k.packA(ws.a[t], p, ic, mb, pc, kb)
					k.macro(ws.b, ws, t, p, ic, mb, jc, nb, kb, flags)
				}
			})
		}
	}
}

// minThreadMACs is the least number of multiply-adds per goroutine of a
// product (variable for benchmarks).
var minThreadMACs = 1 << 18

// splitCols and splitRows enable the two barrier-free splits of Sgemm
// (variables for benchmarks): by columns when there are enough column
// panels, else by rows with private copies of B when B is the smaller
// operand to pack.
var splitCols, splitRows = true, true

// serial runs the blocked loops of p on rows [ilo, ihi) and columns
// [jlo, jhi) of C alone, with thread t's buffers (its B buffer is ws.bt[t]).
// ilo is a multiple of MR and jlo of NR, so the tiles are those of a single
// thread.
func (k *Kernel) serial(ws *workspace, t int, p *Params, ilo, ihi, jlo, jhi, kc int) {
	kk := p.K
	for jc := jlo; jc < jhi; jc += k.blockNC() {
		nb := min(k.blockNC(), jhi-jc)
		panels := (nb + k.nr - 1) / k.nr
		for pc := 0; pc < kk; pc += kc {
			kb := min(kc, kk-pc)
			flags := p.blockFlags(pc > 0, pc+kb == p.K)
			pb := ws.bt[t]
			for q := 0; q < panels; q++ {
				j0 := jc + q*k.nr
				packPanel(pb[q*kb*k.nr:][:kb*k.nr], p, pc, kb, j0, min(k.nr, jhi-j0), k.nr)
			}
			for ic := ilo; ic < ihi; ic += k.blockMC() {
				mb := min(k.blockMC(), ihi-ic)
				k.packA(ws.a[t], p, ic, mb, pc, kb)
				k.macro(pb, ws, t, p, ic, mb, jc, nb, kb, flags)
			}
		}
	}
}

// epilogueFlags returns the micro-kernel flags of p's epilogue: bias, ReLU
// and mask as p selects them.
func (p *Params) epilogueFlags() int {
	flags := 0
	if p.Bias != nil {
		flags |= flagBias
	}
	if p.ReLU {
		flags |= flagReLU
	}
	if p.Mask != nil {
		flags |= flagMask
	}
	return flags
}

// blockFlags returns the micro-kernel flags of one k block of p: C is
// accumulated into after the first block (or always with Accumulate), and
// the epilogue is applied after the last.
func (p *Params) blockFlags(notFirst, last bool) int {
	flags := 0
	if notFirst || p.Accumulate {
		flags |= flagAcc
	}
	if last {
		flags |= p.epilogueFlags()
	}
	return flags
}

// macro runs the micro-kernel over one packed mb×kb block of A and the
// packed kb×nb block of B.
func (k *Kernel) macro(pb []float32, ws *workspace, t int, p *Params, ic, mb, jc, nb, kb, flags int) {
	if k.rowsOuter {
		k.macroRows(pb, ws, t, p, ic, mb, jc, nb, kb, flags)
		return
	}
	mr, nr := k.mr, k.nr
	pa, tile := ws.a[t], ws.tile[t]
	for jr := 0; jr < nb; jr += nr {
		cols := min(nr, nb-jr)
		bp := pb[jr*kb:][:kb*nr]
		j := jc + jr
		var bias []float32
		if flags&flagBias != 0 {
			bias = p.Bias[j:]
		}
		ir := 0
		if full := mb / mr; k.micron != nil && full > 0 && cols == nr {
			var mask []float32
			if flags&flagMask != 0 {
				mask = p.Mask[ic*p.LDMask+j:]
				_ = mask[(full*mr-1)*p.LDMask+nr-1]
			}
			_ = p.C[(ic+full*mr-1)*p.LDC+j+nr-1]
			k.micron(kb, pa[:full*mr*kb], bp, p.C[ic*p.LDC+j:], p.LDC, flags, bias, mask, p.LDMask, full)
			ir = full * mr
		}
		for ; ir < mb; ir += mr {
			k.tileAt(p, pa[ir*kb:][:kb*mr], bp, tile, ic+ir, j, min(mr, mb-ir), cols, kb, flags)
		}
	}
}

// macroRows is macro with the row tiles in the outer loop: each packed A
// micro-panel runs across all the B micro-panels of the block (its full
// ones in one microcols call), so it stays in L1 while B streams from L2.
// Each tile of C is computed by the same micro-kernel call as in macro.
func (k *Kernel) macroRows(pb []float32, ws *workspace, t int, p *Params, ic, mb, jc, nb, kb, flags int) {
	mr, nr := k.mr, k.nr
	pa, tile := ws.a[t], ws.tile[t]
	full := nb / nr
	for ir := 0; ir < mb; ir += mr {
		rows := min(mr, mb-ir)
		ap := pa[ir*kb:][:kb*mr]
		i := ic + ir
		jr := 0
		if rows == mr && full > 0 && k.microcols != nil {
			var bias, mask []float32
			if flags&flagBias != 0 {
				bias = p.Bias[jc : jc+full*nr]
			}
			if flags&flagMask != 0 {
				mask = p.Mask[i*p.LDMask+jc:]
				_ = mask[(mr-1)*p.LDMask+full*nr-1]
			}
			_ = p.C[(i+mr-1)*p.LDC+jc+full*nr-1]
			k.microcols(kb, ap, pb[:full*kb*nr], p.C[i*p.LDC+jc:], p.LDC, flags, bias, mask, p.LDMask, full)
			jr = full * nr
		}
		for ; jr < nb; jr += nr {
			k.tileAt(p, ap, pb[jr*kb:][:kb*nr], tile, i, jc+jr, rows, min(nr, nb-jr), kb, flags)
		}
	}
}

// tileAt computes the rows×cols tile of C at (i, j) from the packed A
// micro-panel ap and B micro-panel bp: a full tile straight into C with
// the epilogue, a tile of MR rows and fewer columns by microedge where the
// kernel has it, any other edge tile into the scratch tile and then into C
// by edge. macro and macroRows call it in their different orders; each
// tile gets the same micro-kernel call either way.
func (k *Kernel) tileAt(p *Params, ap, bp, tile []float32, i, j, rows, cols, kb, flags int) {
	if rows == k.mr && cols == k.nr {
		var bias, mask []float32
		if flags&flagBias != 0 {
			bias = p.Bias[j:]
		}
		if flags&flagMask != 0 {
			mask = p.Mask[i*p.LDMask+j:]
		}
		k.micro(kb, ap, bp, p.C[i*p.LDC+j:], p.LDC, flags, bias, mask, p.LDMask)
		return
	}
	if rows == k.mr && k.microedge != nil {
		k.edgeCols(p, ap, bp, i, j, cols, kb, flags)
		return
	}
	k.micro(kb, ap, bp, tile, k.nr, 0, nil, nil, 0)
	edge(p, tile, k.nr, i, j, rows, cols, flags)
}

// edgeCols runs microedge on the tile of MR rows and cols < NR columns of C
// at (i, j).
func (k *Kernel) edgeCols(p *Params, ap, bp []float32, i, j, cols, kb, flags int) {
	var bias, mask []float32
	if flags&flagBias != 0 {
		bias = p.Bias[j : j+cols]
	}
	if flags&flagMask != 0 {
		mask = p.Mask[i*p.LDMask+j:]
		_ = mask[(k.mr-1)*p.LDMask+cols-1]
	}
	_ = p.C[(i+k.mr-1)*p.LDC+j+cols-1]
	k.microedge(kb, ap, bp, p.C[i*p.LDC+j:], p.LDC, flags, bias, mask, p.LDMask, cols)
}

// edge applies the epilogue of a partial tile computed into tile (stride
// ldt) to the rows×cols block of C at (i, j), with the same float32
// operations in the same order as the micro-kernels.
func edge(p *Params, tile []float32, ldt, i, j, rows, cols, flags int) {
	for r := 0; r < rows; r++ {
		c := p.C[(i+r)*p.LDC+j:][:cols]
		tr := tile[r*ldt:][:cols]
		for q := range c {
			v := tr[q]
			if flags&flagAcc != 0 {
				v += c[q]
			}
			c[q] = epilogue(v, flags, p, i+r, j+q)
		}
	}
}

// epilogue applies bias, ReLU and mask (as selected by flags) to the value v
// of C[i,j].
func epilogue(v float32, flags int, p *Params, i, j int) float32 {
	if flags&flagBias != 0 {
		v += p.Bias[j]
	}
	if flags&flagReLU != 0 && v < 0 {
		v = 0
	}
	if flags&flagMask != 0 && !(p.Mask[i*p.LDMask+j] > 0) {
		v = 0
	}
	return v
}

// emptyK handles k = 0: the product is zero.
func (k *Kernel) emptyK(p *Params) {
	flags := p.blockFlags(false, true)
	for i := 0; i < p.M; i++ {
		c := p.C[i*p.LDC:][:p.N]
		for j := range c {
			v := float32(0)
			if p.Accumulate {
				v = c[j]
			}
			c[j] = epilogue(v, flags, p, i, j)
		}
	}
}

// packA packs rows [i0, i0+mb) and columns [p0, p0+kb) of op(A) into
// micro-panels of MR rows: panel r holds, for each p, the MR values
// op(A)[i0+r·MR+·, p0+p] (rows past m are zero).
func (k *Kernel) packA(dst []float32, p *Params, i0, mb, p0, kb int) {
	mr := k.mr
	ir := 0
	if full := mb / mr; p.TransA && full > 0 && kb > 0 && packATrans(dst, p.A[p0*p.LDA+i0:], p.LDA, kb, full, mr) {
		ir = full * mr
	}
	for ; ir < mb; ir += mr {
		rows := min(mr, mb-ir)
		d := dst[ir*kb:][:kb*mr]
		switch {
		case p.TransA:
			for q := 0; q < kb; q++ {
				dq := d[q*mr:][:mr]
				copy(dq, p.A[(p0+q)*p.LDA+i0+ir:][:rows])
				clear(dq[rows:])
			}
		default:
			if rows < mr {
				clear(d)
			}
			transpose(d, mr, p.A[(i0+ir)*p.LDA+p0:], p.LDA, rows, kb)
		}
	}
}

// transpose sets d[q·ldd+r] = s[r·lds+q] for r < rows, q < kb. It works
// in blocks of 16 q so that each source row is read a cache line at a time:
// reading all rows element by element at a stride of lds (often a multiple
// of 4 KiB) would keep more lines in one L1 set than it has ways.
func transpose(d []float32, ldd int, s []float32, lds, rows, kb int) {
	if rows == 0 || kb == 0 {
		return
	}
	_ = d[(kb-1)*ldd+rows-1]
	_ = s[(rows-1)*lds+kb-1]
	for q0 := transposeAsm(d, ldd, s, lds, rows, kb); q0 < kb; q0 += 16 {
		if q0+16 > kb {
			for r := 0; r < rows; r++ {
				for q := q0; q < kb; q++ {
					d[q*ldd+r] = s[r*lds+q]
				}
			}
			break
		}
		for r := 0; r < rows; r++ {
			v := (*[16]float32)(s[r*lds+q0:])
			dd := d[q0*ldd+r:]
			dd[0], dd[ldd], dd[2*ldd], dd[3*ldd] = v[0], v[1], v[2], v[3]
			dd[4*ldd], dd[5*ldd], dd[6*ldd], dd[7*ldd] = v[4], v[5], v[6], v[7]
			dd[8*ldd], dd[9*ldd], dd[10*ldd], dd[11*ldd] = v[8], v[9], v[10], v[11]
			dd[12*ldd], dd[13*ldd], dd[14*ldd], dd[15*ldd] = v[12], v[13], v[14], v[15]
		}
	}
}

// packPanel packs columns [j0, j0+cols) and rows [p0, p0+kb) of op(B) into
// one micro-panel: for each p, the nr values op(B)[p0+p, j0+·] (columns past
// cols are zero).
func packPanel(d []float32, p *Params, p0, kb, j0, cols, nr int) {
	switch {
	case !p.TransB && cols == 16 && nr == 16 && kb > 0 && copyRows16(d, p.B[p0*p.LDB+j0:], p.LDB, kb):
	case !p.TransB && cols == 32 && nr == 32 && kb > 0 && copyRows32(d, p.B[p0*p.LDB+j0:], p.LDB, kb):
	case !p.TransB:
		for q := 0; q < kb; q++ {
			dq := d[q*nr:][:nr]
			copy(dq, p.B[(p0+q)*p.LDB+j0:][:cols])
			clear(dq[cols:])
		}
	default:
		if cols < nr {
			clear(d)
		}
		transpose(d, nr, p.B[j0*p.LDB+p0:], p.LDB, cols, kb)
	}
}

// parallel runs f(0), …, f(threads−1) concurrently and waits for them.
func parallel(threads int, f func(t int)) { workers.Run(threads, f) }
