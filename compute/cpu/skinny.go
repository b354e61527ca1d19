package cpu

import (
	"sync"

	"github.com/dainx/dainx/compute/cpu/internal/gemm"
)

// Narrow Linear layers: few outputs per row over many rows, such as
// CoSTCo's (in = N = 3 → out = C = 20 on B·R rows, then 400 → 20, 20 → 20
// and 20 → 1 on B rows). The GEMM's 6×16 tiles fit them badly: 20 columns
// fill one 16-wide panel and leave 4 to a second one computed in full and
// finished by the slow edge path, 3 columns go through the edge path
// entirely, and at K = 3 the packing costs more than the product. On the
// avx2 path these layers run instead on kernels that read the operands in
// place:
//
//   - tile4x24 (4 rows × 24 columns) and tile8x8 (8 rows × 8 columns), for
//     y = x·wᵀ + bias (ReLU) and dx = dy·w (ReLU mask): each row's outputs
//     are summed over k as broadcast(a[r,q])·w[q,·], w packed k × 24 or
//     k × 8, and the epilogue applied in registers;
//   - dwRows, for dw = dyᵀ·x and db: the outer products dy[b,0:24]⊗x[b,s] of
//     up to 4 columns s of x (or a column of ones, for db) accumulated over
//     the rows b in a 4×24 register tile;
//   - the sparse-row kernels of sparserows.go, for dx and dw of a layer with
//     a wide input when dy is mostly zeros.
//
// Every output is summed in the GEMM's order: one FMA chain from +0 in
// increasing k over each of its k blocks (at most 256, of equal size), the
// blocks' sums added in turn; db in increasing b onto its old value or 0
// like colSums. So the results are the GEMM's bit for bit
// (TestNarrowMatchesGEMM). Rows are split over goroutines only for large calls, dw and
// db are summed by one goroutine, and nothing depends on the number of
// threads. The other paths (gonum, generic) keep the GEMM: plain Go loops
// were slower there than gonum's assembly for several of these shapes.
//
// The tiles store whole rows of 8 or 24 values even where a layer has fewer
// columns: with c's row stride below the tile width, the values past a
// row's end land on the following rows, which are stored later (rows go in
// increasing order) and overwrite them. The last rows of each call, whose
// overflow would leave its rows (or whose 8 or 24 mask values would pass
// the end of the mask), go through a scratch tile instead.

// Epilogues of the tiles (their mode argument).
const (
	tileNone     = 0
	tileBias     = 1 // + bias[j]
	tileBiasReLU = 2 // + bias[j], then max(0, v) keeping NaN and −0
	tileMask     = 3 // 0 where !(mask[r·ldm+j] > 0)
)

// narrow reports whether a Linear layer of in inputs and out outputs runs
// (on the avx2 path) on the kernels of this file: out ≤ 24, and in ≤ 24
// unless out > 16, so that the usual MLP layers (48 → 64, 64 → 32, 32 → 1)
// stay on the GEMM. With in ≤ 24, y and dx run on the tiles and dw and db
// on dwRows; with a wider input, y runs on the 4×24 tile (its long sums
// blocked as in the GEMM), dx and dw on the sparse-row kernels when dy is
// mostly zeros (see sparserows.go), else on the GEMM, and db on dwRows.
func narrow(in, out int) bool { return out <= 24 && (in <= 24 || out > 16) }

// narrowKernels reports whether the backend runs narrow layers on the
// kernels of this file: on the avx2 path, unless Options.Sparse is
// "always", which is there to test the GEMM's sparse-A path on every
// product (and rounds like it).
func (be *Backend) narrowKernels() bool { return be.simd && be.sparse != gemm.SparseAlways }

// fwdTile returns the tile width (8 or 24) on which LinearForward computes a
// layer, or 0 for the GEMM.
func fwdTile(in, out int) int {
	switch {
	case !narrow(in, out):
		return 0
	case out <= 8:
		return 8
	}
	return 24
}

// dxTile returns the tile width on which LinearBackward computes dx = dy·w
// (in columns, a sum over out), or 0.
func dxTile(in, out int) int {
	switch {
	case !narrow(in, out) || in > 24:
		return 0
	case in <= 8:
		return 8
	}
	return 24
}

// skinnyRowMACs is the least number of multiply-adds per goroutine of the
// kernels of this file. A goroutine costs a few µs to start and wake, and
// where another process keeps a core busy (as on a shared 2-core machine)
// one that is preempted while holding a share of the rows can stall the
// call for a scheduler time slice: measured there, splitting CoSTCo's
// 400 → 20 layer at B = 256 (2.5M multiply-adds, 55 µs) made the epoch 25%
// slower. So the layers of a training step at B = 256 run on one
// goroutine, larger batches (evaluation) on several.
var skinnyRowMACs = 1 << 21 // a variable for tests

// dwAcc is the size of one accumulator tile of dwRows: 4 slots × 24 columns.
const dwAcc = 4 * 24

// dwSlots gives dwAVX2 its four columns of x: slot s reads p[s] and moves
// s[s] bytes per row (0 for the constant one or zero).
type dwSlots struct {
	p [4]*float32
	s [4]int
}

// skScratch holds the packed weights, the padded copies of the last rows and
// the accumulators of one skinny call (or one goroutine's part of it).
type skScratch struct {
	w, bias, a, m, c, s []float32
	acc                 [(24 + 4) / 4][dwAcc]float32
}

var skPool = sync.Pool{New: func() any { return new(skScratch) }}

// grow returns (*s)[:n] zeroed, reallocating *s if it is too short.
func grow(s *[]float32, n int) []float32 {
	if cap(*s) < n {
		*s = make([]float32, n)
	}
	v := (*s)[:n]
	clear(v)
	return v
}

// skOne and skZero are the constant slots of dwRows.
var skOne, skZero = [1]float32{1}, [1]float32{0}

// kBlock returns the GEMM's k block for a sum over k terms: k split into
// equal blocks of at most 256.
func kBlock(k int) int {
	nk := (k + 255) / 256
	return (k + nk - 1) / nk
}

// skinnyForward is LinearForward on the tiles of width tw (batch > 0).
func (be *Backend) skinnyForward(ys, xs, ws, bs []float32, batch, in, out int, relu bool, tw int) {
	sc := skPool.Get().(*skScratch)
	defer skPool.Put(sc)
	w, bias := grow(&sc.w, in*tw), grow(&sc.bias, tw)
	for o := 0; o < out; o++ {
		bias[o] = bs[o]
		for q := 0; q < in; q++ {
			w[q*tw+o] = ws[o*in+q]
		}
	}
	mode := tileBias
	if relu {
		mode = tileBiasReLU
	}
	be.parallelFor(batch, skinnyRowMACs/(in*tw), func(lo, hi int) {
		tileRows(tw, ys[lo*out:], xs[lo*in:], w, hi-lo, in, in, out, bias, nil, 0, mode)
	})
}

// skinnyGradX sets dx = dy·w on the tiles of width tw (batch > 0), zeroed
// where !(x > 0) with maskX.
func (be *Backend) skinnyGradX(dxs, dys, xs, ws []float32, batch, in, out int, maskX bool, tw int) {
	sc := skPool.Get().(*skScratch)
	defer skPool.Put(sc)
	w := grow(&sc.w, out*tw)
	for o := 0; o < out; o++ {
		copy(w[o*tw:o*tw+in], ws[o*in:(o+1)*in])
	}
	mode := tileNone
	if maskX {
		mode = tileMask
	}
	be.parallelFor(batch, skinnyRowMACs/(out*tw), func(lo, hi int) {
		var mask []float32
		if maskX {
			mask = xs[lo*in:]
		}
		tileRows(tw, dxs[lo*in:], dys[lo*out:], w, hi-lo, out, out, in, nil, mask, in, mode)
	})
}

// tileRows sets c[r·ncols+j], for r < rows and j < ncols ≤ tw, to the
// epilogue of mode applied to Σ_{q<k} a[r·lda+q]·w[tw·q+j], summed in the
// GEMM's k blocks (see above); w is packed k × tw, bias and mask (stride
// ldm) hold tw values from the start of each row, the last row's mask at
// least ncols. c is written only in its first rows·ncols values.
func tileRows(tw int, c, a, w []float32, rows, k, lda, ncols int, bias, mask []float32, ldm, mode int) {
	if rows <= 0 {
		return
	}
	_ = a[(rows-1)*lda+k-1]
	_ = c[rows*ncols-1]
	_ = w[tw*k-1]
	if mode == tileBias || mode == tileBiasReLU {
		_ = bias[tw-1]
	}
	if mode == tileMask {
		_ = mask[(rows-1)*ldm+ncols-1]
	}
	kc := kBlock(k)
	mr := 8
	if tw == 24 {
		mr = 4
	}
	sc := skPool.Get().(*skScratch)
	defer skPool.Put(sc)
	// A sum over more than one of the GEMM's k blocks (only on the 24-wide
	// tile): the blocks but the last are summed block by block, each over
	// all the rows (so its part of w stays in L1), into prev: 24 values per
	// row, the rows rounded up to whole tiles.
	var prev []float32
	if k > kc {
		full := rows / mr * mr
		prev = grow(&sc.s, (rows+mr-1)/mr*mr*24)
		for q0 := 0; q0+kc < k; q0 += kc {
			var pv, pvt []float32
			if q0 > 0 {
				pv, pvt = prev, prev[full*24:]
			}
			if full > 0 {
				tileSIMD(24, prev, a[q0:], w[24*q0:], full, kc, lda, 24, nil, nil, pv, 0, tileNone)
			}
			if full < rows {
				pa := grow(&sc.a, mr*kc)
				for r := full; r < rows; r++ {
					copy(pa[(r-full)*kc:(r-full+1)*kc], a[r*lda+q0:])
				}
				tileSIMD(24, prev[full*24:], pa, w[24*q0:], mr, kc, kc, 24, nil, nil, pvt, 0, tileNone)
			}
		}
		q := (k - 1) / kc * kc // the last block
		a, w, k = a[q:], w[24*q:], k-q
	}
	// Rows stored in place: those whose tw values end within c's rows
	// (and read tw mask values inside mask), in whole tiles.
	n := rows - (tw+ncols-1)/ncols + 1
	if mode == tileMask {
		n = min(n, max(0, len(mask)-tw+ldm)/ldm)
	}
	n = max(0, n) / mr * mr
	if n > 0 {
		tileSIMD(tw, c, a, w, n, k, lda, ncols, bias, mask, prev, ldm, mode)
	}
	// The rest, a tile at a time, stored through a scratch tile; a and the
	// mask are read in place where the tile's rows lie in them, else from
	// padded copies.
	pc := grow(&sc.c, mr*tw)
	for r0 := n; r0 < rows; r0 += mr {
		nr := min(mr, rows-r0)
		ta, tlda, tm, tldm := a[r0*lda:], lda, []float32(nil), ldm
		if mode == tileMask {
			tm = mask[r0*ldm:]
		}
		if nr < mr {
			ta, tlda = grow(&sc.a, mr*k), k
			for r := 0; r < nr; r++ {
				copy(ta[r*k:(r+1)*k], a[(r0+r)*lda:])
			}
		}
		if mode == tileMask && (nr < mr || (mr-1)*ldm+tw > len(tm)) {
			tm, tldm = grow(&sc.m, mr*tw), tw
			for r := 0; r < nr; r++ {
				copy(tm[r*tw:r*tw+ncols], mask[(r0+r)*ldm:])
			}
		}
		var tp []float32
		if prev != nil {
			tp = prev[r0*24:]
		}
		tileSIMD(tw, pc, ta, w, mr, k, tlda, tw, bias, tm, tp, tldm, mode)
		for r := 0; r < nr; r++ {
			copy(c[(r0+r)*ncols:(r0+r+1)*ncols], pc[r*tw:])
		}
	}
}

// skinnyGradW sets (or with accumulate adds to) dw = dyᵀ·x and db = Σ_b dy
// with dwRows (out ≤ 24); either may be nil. dw is summed like the GEMM's dW
// product (from +0 over each of its k blocks of rows, the blocks added in
// turn), db in increasing b onto its old value or 0 (like colSums).
func (be *Backend) skinnyGradW(dws, dbs, dys, xs []float32, batch, in, out int, accumulate bool) {
	nx := 0 // x slots 0…nx−1, then the ones slot when db is wanted
	if dws != nil {
		nx = in
	}
	nslot := nx
	if dbs != nil {
		nslot++
	}
	if nslot == 0 {
		return
	}
	if batch == 0 {
		if !accumulate {
			clear(dws)
			clear(dbs)
		}
		return
	}
	sc := skPool.Get().(*skScratch)
	defer skPool.Put(sc)
	accs := sc.acc[:(nslot+3)/4]
	if dbs != nil {
		a := accs[nx/4][24*(nx%4):][:out]
		if accumulate {
			copy(a, dbs)
		} else {
			clear(a)
		}
	}
	kc := kBlock(batch)
	for b0 := 0; b0 < batch; b0 += kc {
		kb := min(kc, batch-b0)
		for g := range accs {
			var cols [4]int // slot t: a column of x, or −1 for ones, −2 for zeros
			for t := range cols {
				switch s := 4*g + t; {
				case s < nx:
					cols[t] = s
					clear(accs[g][24*t : 24*t+24])
				case s == nx && dbs != nil:
					cols[t] = -1
				default:
					cols[t] = -2
				}
			}
			dwRows(&accs[g], dys[b0*out:], out, kb, out, xs[b0*in:], in, cols)
		}
		for i := 0; i < nx; i++ {
			a := accs[i/4][24*(i%4):][:out]
			for o, v := range a {
				if b0 == 0 && !accumulate {
					dws[o*in+i] = v
				} else {
					dws[o*in+i] += v
				}
			}
		}
	}
	if dbs != nil {
		copy(dbs, accs[nx/4][24*(nx%4):][:out])
	}
}

// dwRows adds, for r < rows, slot t < 4 and j < 24, the product
// x_t(r)·dy[r·ldy+j] to acc[24t+j] by FMA in increasing r, where x_t(r) is
// x[r·ldx+cols[t]], or 1 where cols[t] = −1, or 0 where it is −2. Only the
// first ncols columns are meaningful (those past it are summed from dy's
// values there).
func dwRows(acc *[dwAcc]float32, dy []float32, ldy, rows, ncols int, x []float32, ldx int, cols [4]int) {
	_ = dy[(rows-1)*ldy+ncols-1]
	for _, c := range cols {
		if c >= 0 {
			_ = x[(rows-1)*ldx+c]
		}
	}
	slots := func(r0 int) (sl dwSlots) {
		for t, c := range cols {
			switch {
			case c >= 0:
				sl.p[t], sl.s[t] = &x[r0*ldx+c], 4*ldx
			case c == -1:
				sl.p[t] = &skOne[0]
			default:
				sl.p[t] = &skZero[0]
			}
		}
		return sl
	}
	// The assembly reads 24 values of each dy row: the last rows, where that
	// would pass the end of dy, take a padded copy.
	safe := min(rows, max(0, len(dy)-24+ldy)/ldy)
	if safe > 0 {
		sl := slots(0)
		dwSIMD(acc, dy, ldy, safe, &sl)
	}
	if safe < rows {
		var pad [64]float32 // < 24 values are copied; < 48 read
		copy(pad[:], dy[safe*ldy:])
		sl := slots(safe)
		dwSIMD(acc, pad[:], ldy, rows-safe, &sl)
	}
}
