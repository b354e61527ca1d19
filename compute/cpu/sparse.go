package cpu

import (
	"fmt"
	"sync"

	"github.com/dainx/dainx/compute"
)

// radixScratch is the ping-pong buffer and digit histogram of
// DistinctRows' radix sort, pooled so that a training step allocates
// nothing.
type radixScratch struct {
	tmp  []int32
	hist [1 << radixBits]int32
}

const radixBits = 11

var radixPool = sync.Pool{New: func() any { return new(radixScratch) }}

// DistinctRows implements compute.Backend.DistinctRows (=): a stable LSD
// radix sort of the positions by row, 11 bits a pass and only as many
// passes as the largest row needs (1 up to 2048 rows, 2 up to 4M, 3
// above), then one pass that numbers the distinct rows. O(K) per call,
// independent of the table.
func (*Backend) DistinctRows(rows, starts, perm, count, cells compute.I32) {
	rs, ss, ps, cs, cells32 := iv(rows), iv(starts), iv(perm), iv(count), iv(cells)
	k := compute.CheckDistinctRows(rows, starts, perm, count, cells)
	var top int32
	for _, r := range cells32 {
		if r < 0 {
			panic(fmt.Sprintf("cpu: DistinctRows: embedding row %d is negative", r))
		}
		top = max(top, r)
	}
	for i := range ps {
		ps[i] = int32(i)
	}
	sc := radixPool.Get().(*radixScratch)
	defer radixPool.Put(sc)
	if cap(sc.tmp) < k {
		sc.tmp = make([]int32, k)
	}
	src, dst := ps, sc.tmp[:k]
	for shift := 0; shift == 0 || top>>shift != 0; shift += radixBits {
		h := &sc.hist
		clear(h[:])
		for _, p := range src {
			h[(cells32[p]>>shift)&(1<<radixBits-1)]++
		}
		var sum int32
		for d, c := range h {
			h[d] = sum
			sum += c
		}
		for _, p := range src {
			d := (cells32[p] >> shift) & (1<<radixBits - 1)
			dst[h[d]] = p
			h[d]++
		}
		src, dst = dst, src
	}
	if k > 0 && &src[0] != &ps[0] {
		copy(ps, src)
	}
	u := 0
	for j, p := range ps {
		if j == 0 || cells32[p] != cells32[ps[j-1]] {
			rs[u], ss[u] = cells32[p], int32(j)
			u++
		}
	}
	ss[u] = int32(k)
	cs[0] = int32(u)
}

// CompactRows implements compute.Backend.CompactRows (=), split over
// goroutines by compact rows; each row sums its positions in order from 0.
func (be *Backend) CompactRows(grad, dx compute.F32, starts, perm, count compute.I32, order, width int, layout compute.Layout) {
	gs, xs, ss, ps, cs := f(grad), f(dx), iv(starts), iv(perm), iv(count)
	k := compute.CheckCompactRows(grad, dx, starts, perm, count, order, width, layout)
	u := int(cs[0])
	if u < 0 || u > k {
		panic(fmt.Sprintf("cpu: CompactRows: count %d outside [0, %d]", u, k))
	}
	be.parallelFor(u, max(1, 16*1024/width), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			dst := gs[r*width : (r+1)*width]
			clear(dst)
			for _, p := range ps[ss[r]:ss[r+1]] {
				if layout == compute.ModeMajor {
					addTo(dst, xs[int(p)*width:(int(p)+1)*width], be.simd)
					continue
				}
				b, n := int(p)/order, int(p)%order
				src := xs[b*order*width:]
				for e := range dst {
					dst[e] += src[e*order+n]
				}
			}
		}
	})
}

// SparseAdam implements compute.Backend.SparseAdam (in place on the listed
// rows), each row with Adam's loop, so an element gets the bits dense Adam
// would give it with the same gradient (and the same L2: only the listed
// rows are decayed).
func (be *Backend) SparseAdam(p, g, m, v compute.F32, rows, count compute.I32, width int, s compute.AdamStep) {
	ps, gs, ms, vs, rs, cs := f(p), f(g), f(m), f(v), iv(rows), iv(count)
	tableRows, k := compute.CheckSparseAdam(p, g, m, v, rows, count, width, s)
	u := int(cs[0])
	if u < 0 || u > k {
		panic(fmt.Sprintf("cpu: SparseAdam: count %d outside [0, %d]", u, k))
	}
	for _, r := range rs[:u] {
		checkRow("SparseAdam", r, tableRows)
	}
	c := adamConstants(s)
	be.parallelFor(u, max(1, 32*1024/width), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if be.simd && (i-lo)%prefetchAhead == 0 {
				// The next block of rows, while this one is updated.
				a, b := min(i+prefetchAhead, hi), min(i+2*prefetchAhead, hi)
				if i == lo {
					a = i
				}
				prefetchRows(ps, rs[a:b], width)
				prefetchRows(ms, rs[a:b], width)
				prefetchRows(vs, rs[a:b], width)
			}
			o := int(rs[i]) * width
			adamRange(ps[o:o+width], gs[i*width:(i+1)*width], ms[o:o+width], vs[o:o+width], c, be.simd)
		}
	})
}

// prefetchAhead is how many table rows SparseAdam and Gather ask the cache
// for at a time, one block ahead of the rows they work on.
const prefetchAhead = 8

// adamConstants rounds Adam's per-step constants to float32 once.
// With s.Scalars set, the step size and 1/√(1−β₂ᵀ) are read from it (the
// buffer is host memory, so it is read now, when the operation runs).
func adamConstants(s compute.AdamStep) *adamConst {
	sc := compute.AdamScalars(s)
	if s.Scalars != nil {
		copy(sc[:], f(s.Scalars))
	}
	// 1−β is rounded from float64: forming it from float32(β) would
	// magnify β's rounding error (216 ulps for β₂ = .999).
	c := &adamConst{
		b1: float32(s.Beta1), b2: float32(s.Beta2),
		omb1: float32(1 - s.Beta1), omb2: float32(1 - s.Beta2),
		step: sc[0], rc2: sc[1], eps: float32(s.Eps),
		l2: float32(s.L2),
	}
	c.d = [7]float64{float64(c.b1), float64(c.b2), float64(c.omb1), float64(c.omb2), float64(c.step), float64(c.rc2), float64(c.eps)}
	return c
}
