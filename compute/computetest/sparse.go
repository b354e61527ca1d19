package computetest

import (
	"fmt"
	"math"
	"slices"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/ref"
)

// sparseCells returns the K-element row lists DistinctRows is checked on:
// every batch size and order of the embedding cases over both tables, then
// larger lists (K = 4097 and 20000) with few distinct rows, rows spread up
// to 2³⁰, and lists already sorted and reverse-sorted.
func (s *suite) sparseCells(f func(desc string, cells []int32)) {
	for _, dims := range modeSets {
		for _, batch := range batches {
			for order := 1; order <= 4; order++ {
				f(fmt.Sprintf("B=%d N=%d I=%v", batch, order, dims[:order]), s.cellsFor(batch, dims[:order]))
			}
		}
	}
	for _, k := range []int{4097, 20000} {
		few, wide := make([]int32, k), make([]int32, k)
		for i := range few {
			few[i] = int32(s.rng.IntN(3))
			wide[i] = int32(s.rng.IntN(1 << 30))
		}
		wide[k-1] = wide[0]
		sorted := slices.Clone(wide)
		slices.Sort(sorted)
		rev := slices.Clone(sorted)
		slices.Reverse(rev)
		f(fmt.Sprintf("K=%d few rows", k), few)
		f(fmt.Sprintf("K=%d rows < 2³⁰", k), wide)
		f(fmt.Sprintf("K=%d sorted", k), sorted)
		f(fmt.Sprintf("K=%d reverse-sorted", k), rev)
	}
}

// distinct returns ref.DistinctRows of cells: rows[:U], starts[:U+1],
// perm, U.
func distinct(cells []int32) (rows, starts, perm []int32, u int) {
	k := len(cells)
	rows, starts, perm = make([]int32, k), make([]int32, k+1), make([]int32, k)
	count := []int32{0}
	ref.DistinctRows(rows, starts, perm, count, cells)
	u = int(count[0])
	return rows[:u], starts[:u+1], perm, u
}

// testDistinctRows: integer work, so exact; the elements past U are
// untouched.
func testDistinctRows(s *suite) {
	const untouched = int32(-7)
	s.sparseCells(func(desc string, cellv []int32) {
		k := len(cellv)
		fill := func(n int) []int32 {
			v := make([]int32, n)
			for i := range v {
				v[i] = untouched
			}
			return v
		}
		cells := s.i32("cells", cellv)
		rows, starts, perm, count := s.i32("rows", fill(k)), s.i32("starts", fill(k+1)), s.i32("perm", fill(k)), s.i32("count", fill(1))
		s.be.DistinctRows(rows.view, starts.view, perm.view, count.view, cells.view)
		wr, ws, wp, u := distinct(cellv)
		what := s.op + " " + desc
		s.equalI32(what, NewShape("count", "i", 1), s.readI32(what, count), []int32{int32(u)})
		gr, gs := s.readI32(what, rows), s.readI32(what, starts)
		s.equalI32(what, NewShape("rows", "u", k), gr, append(slices.Clone(wr), fill(k-u)...))
		s.equalI32(what, NewShape("starts", "u", k+1), gs, append(slices.Clone(ws), fill(k-u)...))
		s.equalI32(what, NewShape("perm", "j", k), s.readI32(what, perm), wp)
		s.unchanged(what, nil, []*ibuf{cells})
		s.freeAll()
	})
}

// testCompactRows: grad[u,e] sums the occurrences of row u, so K =
// (occurrences of the most repeated row); it must also equal, bit for bit,
// the float32 sum in increasing j from 0 (the contract's order). Rows from
// U on are untouched.
func testCompactRows(s *suite) {
	embedCases(func(c embedCase) {
		cellv := s.cellsFor(c.batch, c.dims)
		k := len(cellv)
		_, startv, permv, u := distinct(cellv)
		startFull := append(slices.Clone(startv), make([]int32, k-u)...)
		dx := s.f32("dx", s.uniform(k*c.width))
		starts, perm, count := s.i32("starts", startFull), s.i32("perm", permv), s.i32("count", []int32{int32(u)})
		init := nans(k * c.width)
		for i := u * c.width; i < len(init); i++ {
			init[i] = -3
		}
		grad := out(s.f32("grad", init), NewShape("grad", "u,e", k, c.width), max(maxCount(cellv), 1), max(maxCount(cellv), 1))
		for i := u * c.width; i < len(grad.want); i++ {
			grad.want[i] = -3
		}
		s.exercise(c.String(), []*result{grad}, []*fbuf{dx}, []*ibuf{starts, perm, count},
			func() {
				s.be.CompactRows(grad.b.view, dx.view, starts.view, perm.view, count.view, c.order, c.width, c.layout)
			},
			func() {
				ref.CompactRows(grad.want, f64(dx.init), startFull, permv, []int32{int32(u)}, c.order, c.width, c.layout)
			})
		// The contract's summation order, in float32.
		want := slices.Clone(init)
		for r := 0; r < u; r++ {
			for e := 0; e < c.width; e++ {
				var acc float32
				for _, p := range permv[startv[r]:startv[r+1]] {
					b, n := int(p)/c.order, int(p)%c.order
					acc += dx.init[b*c.order*c.width+pos(n, e, c.width, c.order, c.layout)]
				}
				want[r*c.width+e] = acc
			}
		}
		s.reset(grad.b)
		s.be.CompactRows(grad.b.view, dx.view, starts.view, perm.view, count.view, c.order, c.width, c.layout)
		s.sameBits(s.op+" "+c.String()+" (sum in j order)", "grad", want, s.read(c.String(), grad.b))
		s.freeAll()
	})
}

// pos is the offset of element e of mode n in a batch row (ref's pos).
func pos(n, e, width, order int, layout compute.Layout) int {
	if layout == compute.RankMajor {
		return e*order + n
	}
	return n*width + e
}

// testSparseAdam runs three steps on the rows a batch touched, against
// ref.SparseAdam, without and with coupled L2 (AdamStep.L2); the rows not
// touched keep their bits (L2 decays only the listed rows), and every
// touched element gets the bits of Adam applied to that row alone.
func testSparseAdam(s *suite) {
	for _, hp := range []compute.AdamStep{
		{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
		{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, L2: 0.05},
	} {
		sparseAdamCases(s, hp)
	}
}

func sparseAdamCases(s *suite, hp compute.AdamStep) {
	kmv, kp := adamK(hp)
	for _, dims := range modeSets {
		for _, batch := range []int{0, 1, 33, 257} {
			for _, width := range widths {
				order := 3
				tableRows := sum(dims[:order])
				n := tableRows * width
				cellv := s.cellsFor(batch, dims[:order])
				k := len(cellv)
				rowv, _, _, u := distinct(cellv)
				rowFull := append(slices.Clone(rowv), make([]int32, k-u)...)
				p, m, v := s.f32("p", s.uniform(n)), s.f32("m", s.uniform(n)), s.f32("v", s.positive(n))
				pd, md, vd := s.f32("p", p.init), s.f32("m", m.init), s.f32("v", v.init)
				rows, count := s.i32("rows", rowFull), s.i32("count", []int32{int32(u)})
				wp, wm, wv := f64(p.init), f64(m.init), f64(v.init)
				desc0 := fmt.Sprintf("SparseAdam I=%v B=%d E=%d L2=%g", dims[:order], batch, width, hp.L2)
				sc := s.f32("scalars", make([]float32, 2))
				for step := 1; step <= 3; step++ {
					st := hp
					st.T = step
					desc := fmt.Sprintf("%s T=%d", desc0, step)
					g := s.f32("g", s.uniform(k*width))
					// One side reads the step's constants from a buffer
					// (AdamStep.Scalars) with T left at 1: SparseAdam on
					// even steps, the rows' Adam on odd ones.
					c := compute.AdamScalars(st)
					s.be.Upload(sc.view, c[:])
					fromBuf := st
					fromBuf.T, fromBuf.Scalars = 1, sc.view
					sparseSt, rowSt := st, fromBuf
					if step%2 == 0 {
						sparseSt, rowSt = fromBuf, st
					}
					s.be.SparseAdam(p.view, g.view, m.view, v.view, rows.view, count.view, width, sparseSt)
					ref.SparseAdam(wp, f64(g.init), wm, wv, rowFull, []int32{int32(u)}, width, st)
					// Adam on each touched row's views: the same bits.
					for i, r := range rowv {
						o := int(r) * width
						s.be.Adam(pd.view.Slice(o, width), g.view.Slice(i*width, width), md.view.Slice(o, width), vd.view.Slice(o, width), rowSt)
					}
					gotP, gotM, gotV := slices.Clone(s.read(desc, p)), slices.Clone(s.read(desc, m)), slices.Clone(s.read(desc, v))
					s.close(desc, NewShape("m", "i", n), gotM, wm, kmv, RMS(wm))
					s.close(desc, NewShape("v", "i", n), gotV, wv, kmv, RMS(wv))
					s.close(desc, NewShape("p", "i", n), gotP, wp, kp, RMS(wp))
					s.sameBits(desc+" (Adam on the rows)", "p", s.read(desc, pd), gotP)
					s.sameBits(desc+" (Adam on the rows)", "m", s.read(desc, md), gotM)
					s.sameBits(desc+" (Adam on the rows)", "v", s.read(desc, vd), gotV)
					s.unchanged(desc, []*fbuf{g}, []*ibuf{rows, count})
				}
				// Rows no cell touched keep their bits.
				touched := map[int]bool{}
				for _, r := range rowv {
					touched[int(r)] = true
				}
				for _, b := range []*fbuf{p, m, v} {
					got := s.read(desc0, b)
				rows:
					for r := 0; r < tableRows; r++ {
						if touched[r] {
							continue
						}
						for e := 0; e < width; e++ {
							if math.Float32bits(got[r*width+e]) != math.Float32bits(b.init[r*width+e]) {
								s.errorf("%s: untouched row %d of %s changed at element %d: %v → %v", desc0, r, b.name, e, b.init[r*width+e], got[r*width+e])
								break rows
							}
						}
					}
				}
				s.freeAll()
			}
		}
	}
}
