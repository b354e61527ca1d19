package gemm

import "math"

// The sparse-A path. In DAIN's MLP most GEMMs have an operand with about
// half its entries exactly zero: the forward pass multiplies ReLU outputs,
// and the backward pass multiplies dy, which ReLU' masks. For op(A) like
// that, each row of C is formed from the nonzeros of its row of op(A) only:
//
//	C[i,:] = Σ_{p: A[i,p] ≠ 0} A[i,p]·B[p,:]
//
// with a 1×96 register tile (12 YMM accumulators; 1×32 for the last
// columns) running down a packed 64×96 B panel held in L1. Skipping a term A[i,p]·B[p,j] with A[i,p] = ±0
// changes nothing when B[p,j] is finite (the product is a zero, and adding
// a zero to a float32 sum leaves it unchanged); so the path is taken only
// when every element of B is finite, and it gives the dense product's value
// up to the order of rounding (k is blocked by 64 here, by up to 256 in the
// dense path). Whether it is taken depends only on the inputs (a sample of
// A's zeros, B's finiteness, the shape), never on the thread count, so the
// result stays deterministic.

// spEntry is one nonzero of a row of op(A) within a k block: the byte
// offset of its row in the packed B panel and its value.
type spEntry struct {
	off int32
	val float32
}

var (
	spKC   = 64 // k block: a 64×96 panel of B is 24 KiB
	spRows = 16 // rows of C per block: 16×96 of C (6 KiB) stays in L1 across the k blocks
)

// SparseMode says when Sgemm may take the sparse-A path.
type SparseMode int

const (
	// SparseAuto takes it when op(A) is mostly zeros (by a fixed sample)
	// and the shape is large enough.
	SparseAuto SparseMode = iota
	// SparseNever always runs the dense path.
	SparseNever
	// SparseAlways takes it whenever the kernel has it and B is finite
	// (for tests).
	SparseAlways
)

// spDensityMax is the largest sampled fraction of nonzeros of op(A) for
// which SparseAuto takes the sparse path. Measured on the AMD EPYC (Zen 3)
// of the benchmarks (2026-11-21, thread CPU time, best of 7): the 1×96
// kernel does one 32-byte load of B per FMA and runs at about 50% of the
// core's FMA peak per nonzero even with its B panel in L1 (synthetic loops
// of 12 FMAs with 2, 4, 6 or 12 32-byte loads from L1 ran at about 100, 85,
// 57 and 41% of peak), while the dense 6×16 kernel runs at ~90–100% in L1 and
// ~80% on a whole 1024³ product. Sparse therefore wins only below a density
// of about 0.4 on uniform zeros, and in the training step (where ReLU zeros
// cluster in dead units) it was 2–3% slower than dense at 0.3.
const spDensityMax = 0.2

// SparseKBlock reports the k blocks in which Sgemm would sum p: when it
// would take the sparse-A path for p (its op(B) finite) ok is true and the
// blocks are kc long from 0, the last one shorter; else ok is false and the
// dense path's blocks apply (k split into equal blocks of at most 256). A
// caller that computes the same product another way can so round as Sgemm
// does.
func (k *Kernel) SparseKBlock(p *Params) (kc int, ok bool) {
	if p.M == 0 || p.N == 0 || p.K == 0 || k.whole != nil || !k.sparseWorth(p) {
		return 0, false
	}
	return spKC, true
}

// sparseWorth reports whether p should run on the sparse path.
func (k *Kernel) sparseWorth(p *Params) bool {
	if k.sprows == nil || p.Sparse == SparseNever {
		return false
	}
	if p.Sparse == SparseAlways {
		return true
	}
	if p.M < 16 || p.N < 48 || p.K < 32 {
		return false
	}
	// Sample every 8th stored row of A (rows of op(A), or columns when
	// TransA).
	rows, cols := p.M, p.K
	if p.TransA {
		rows, cols = p.K, p.M
	}
	nz, n := 0, 0
	for r := 0; r < rows; r += 8 {
		for _, v := range p.A[r*p.LDA:][:cols] {
			if v != 0 {
				nz++
			}
		}
		n += cols
	}
	return float64(nz) <= spDensityMax*float64(n)
}

// spWorkspace holds the sparse path's buffers.
type spWorkspace struct {
	ent    []spEntry
	starts []int32
	b      []float32
	tile   [][]float32
}

// spPanel is one column panel of the sparse path: columns [j, j+w) of C,
// w = 96 or 32, packed at off within each k block.
type spPanel struct{ j, w, off int }

// spPanels splits n columns into 96-wide panels, then 32-wide ones (the last
// possibly partial), and returns them with the padded width.
func spPanels(n int) ([]spPanel, int) {
	var ps []spPanel
	j, off := 0, 0
	for ; n-j >= 96; j += 96 {
		ps = append(ps, spPanel{j, 96, off})
		off += spKC * 96
	}
	for ; j < n; j += 32 {
		ps = append(ps, spPanel{j, 32, off})
		off += spKC * 32
	}
	return ps, off / spKC
}

func (k *Kernel) sgemmSparse(threads int, p *Params) bool {
	m, n, kk := p.M, p.N, p.K
	nblk := (kk + spKC - 1) / spKC
	panels, npad := spPanels(n)
	ws := spPool(threads, m*kk, m*(nblk+1), nblk*spKC*npad)
	defer spPut(ws)
	// Pack all of B, checking that it is finite.
	finite := make([]bool, threads)
	parallel(threads, func(t int) {
		ok := true
		for q := t; q < nblk*len(panels); q += threads {
			blk, pan := q/len(panels), panels[q%len(panels)]
			p0 := blk * spKC
			kb := min(spKC, kk-p0)
			d := ws.b[blk*spKC*npad+pan.off:][:kb*pan.w]
			packPanel(d, p, p0, kb, pan.j, min(pan.w, n-pan.j), pan.w)
			ok = ok && allFinite(d)
		}
		finite[t] = ok
	})
	for _, ok := range finite {
		if !ok {
			return false
		}
	}
	// Lists of nonzeros, row i at ent[i·k:], block starts at starts[i·(nblk+1):].
	parallel(threads, func(t int) {
		lo, hi := t*m/threads, (t+1)*m/threads
		if !p.TransA {
			for i := lo; i < hi; i++ {
				buildRow(ws.ent[i*kk:][:kk], ws.starts[i*(nblk+1):][:nblk+1], p.A[i*p.LDA:][:kk], i*kk)
			}
			return
		}
		cnt := make([]int, hi-lo)
		for blk := 0; blk < nblk; blk++ {
			for i := lo; i < hi; i++ {
				ws.starts[i*(nblk+1)+blk] = int32(i*kk + cnt[i-lo])
			}
			// Tiles of 64 columns keep the 64 lists being appended to in L1.
			for t0 := lo; t0 < hi; t0 += 64 {
				t1 := min(hi, t0+64)
				c := cnt[t0-lo : t1-lo]
				ent := ws.ent[t0*kk : t1*kk]
				for q := blk * spKC; q < min(kk, (blk+1)*spKC); q++ {
					off := int32((q - blk*spKC) * 128)
					for x, v := range p.A[q*p.LDA+t0 : q*p.LDA+t1] {
						cx := c[x]
						ent[x*kk+cx] = spEntry{off, v}
						c[x] = cx + nonzero(v)
					}
				}
			}
		}
		for i := lo; i < hi; i++ {
			ws.starts[i*(nblk+1)+nblk] = int32(i*kk + cnt[i-lo])
		}
	})
	parallel(threads, func(t int) {
		lo, hi := t*m/threads, (t+1)*m/threads
		tile := ws.tile[t]
		for r0 := lo; r0 < hi; r0 += spRows {
			rows := min(hi, r0+spRows) - r0
			for _, pan := range panels {
				j := pan.j
				partial := n-j < pan.w
				for blk := 0; blk < nblk; blk++ {
					flags := p.blockFlags(blk > 0, blk == nblk-1)
					st := ws.starts[r0*(nblk+1)+blk:]
					bp := ws.b[blk*spKC*npad+pan.off:][:spKC*pan.w]
					if partial {
						// Row by row through tile, C updated by edge.
						for r := 0; r < rows; r++ {
							k.sprows(pan.w, 1, st[r*(nblk+1):], nblk+1, ws.ent, bp, tile, pan.w, 0, nil, nil, 0)
							edge(p, tile, pan.w, r0+r, j, 1, n-j, flags)
						}
						continue
					}
					var bias, mask []float32
					if flags&flagBias != 0 {
						bias = p.Bias[j:]
					}
					if flags&flagMask != 0 {
						mask = p.Mask[r0*p.LDMask+j:]
					}
					k.sprows(pan.w, rows, st, nblk+1, ws.ent, bp, p.C[r0*p.LDC+j:], p.LDC, flags, bias, mask, p.LDMask)
				}
			}
		}
	})
	return true
}

// nonzero returns 1 if v is not ±0 (a NaN counts as nonzero), else 0,
// without a branch.
func nonzero(v float32) int {
	u := math.Float32bits(v) << 1
	return int((u | -u) >> 31)
}

// buildRow lists the nonzeros of one row a of op(A) (k values) into ent and
// the index of each k block's first entry (plus the end) into starts, the
// indices counted from base. Entry offsets count rows of 32 floats.
func buildRow(ent []spEntry, starts []int32, a []float32, base int) {
	c := 0
	for blk := 0; blk < len(starts)-1; blk++ {
		starts[blk] = int32(base + c)
		p0 := blk * spKC
		for q, v := range a[p0:min(len(a), p0+spKC)] {
			ent[c] = spEntry{int32(q * 128), v}
			c += nonzero(v)
		}
	}
	starts[len(starts)-1] = int32(base + c)
}

// allFinite reports whether no element of v is an infinity or a NaN.
func allFinite(v []float32) bool {
	const exp = 0x7f800000
	for _, x := range v {
		if math.Float32bits(x)&exp == exp {
			return false
		}
	}
	return true
}

var spWS = make(chan *spWorkspace, 4)

func spPool(threads, nent, nstarts, nb int) *spWorkspace {
	var w *spWorkspace
	select {
	case w = <-spWS:
	default:
		w = &spWorkspace{}
	}
	if cap(w.ent) < nent {
		w.ent = make([]spEntry, nent)
	}
	w.ent = w.ent[:nent]
	if cap(w.starts) < nstarts {
		w.starts = make([]int32, nstarts)
	}
	w.starts = w.starts[:nstarts]
	if cap(w.b) < nb {
		w.b = aligned(nb)
	}
	w.b = w.b[:nb]
	for len(w.tile) < threads {
		w.tile = append(w.tile, aligned(96))
	}
	return w
}

func spPut(w *spWorkspace) {
	select {
	case spWS <- w:
	default:
	}
}
