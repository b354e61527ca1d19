package computetest

import (
	"fmt"
	"slices"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/ref"
)

// embedCase is one shape of the embedding operations.
type embedCase struct {
	batch, order, width int
	dims                []int // mode sizes Iₙ, len(dims) = order
	rows                int   // R = Σ Iₙ
	layout              compute.Layout
}

func (c embedCase) String() string {
	return fmt.Sprintf("B=%d N=%d E=%d I=%v %s", c.batch, c.order, c.width, c.dims, layoutName(c.layout))
}

// embedCases calls f for every batch size, order 1..4, width, table and
// layout.
func embedCases(f func(embedCase)) {
	for _, dims := range modeSets {
		for _, batch := range batches {
			for order := 1; order <= 4; order++ {
				for _, width := range widths {
					for _, l := range []compute.Layout{compute.ModeMajor, compute.RankMajor} {
						d := dims[:order]
						f(embedCase{batch, order, width, d, sum(d), l})
					}
				}
			}
		}
	}
}

// testGather: pure data movement, so exact.
func testGather(s *suite) {
	embedCases(func(c embedCase) {
		table := s.f32("table", s.uniform(c.rows*c.width))
		cells := s.i32("cells", s.cellsFor(c.batch, c.dims))
		x := out(s.f32("x", nans(c.batch*c.order*c.width)),
			batchShape("x", c.batch, c.order, c.width, c.layout), Exact, Exact)
		s.exercise(c.String(), []*result{x}, []*fbuf{table}, []*ibuf{cells},
			func() { s.be.Gather(x.b.view, table.view, cells.view, c.order, c.width, c.layout) },
			func() { ref.Gather(x.want, f64(table.init), cells.init, c.order, c.width, c.layout) })
		s.freeAll()
	})
}

// testScatterRows: dtable[r,e] starts non-zero and receives one term per
// occurrence of row r in the batch, so K = (occurrences of the most
// repeated row) + 1, and twice that after two applications.
func testScatterRows(s *suite) {
	embedCases(func(c embedCase) {
		cellv := s.cellsFor(c.batch, c.dims)
		dx := s.f32("dx", s.uniform(c.batch*c.order*c.width))
		cells := s.i32("cells", cellv)
		k := maxCount(cellv)
		dt := out(s.f32("dtable", s.uniform(c.rows*c.width)), NewShape("dtable", "r,e", c.rows, c.width), k+1, 2*k+1).withSq()
		s.exercise(c.String(), []*result{dt}, []*fbuf{dx}, []*ibuf{cells},
			func() { s.be.ScatterRows(dt.b.view, dx.view, cells.view, c.order, c.width, c.layout) },
			func() {
				ref.ScatterRows(dt.want, f64(dx.init), cells.init, c.order, c.width, c.layout)
				ref.ScatterRows(dt.sq, squares(dx.init), cells.init, c.order, c.width, c.layout)
			})
		s.freeAll()
	})
}

// testEmbeddingInfluence: score[b] += eta·(a dot product of N·E terms), so
// K = N·E + 1 (the product with eta and the add), 2·K after two
// applications.
func testEmbeddingInfluence(s *suite) {
	const eta = float32(-0.3) // rounded to float32; the reference sees the same value
	embedCases(func(c embedCase) {
		dx := s.f32("dx", s.uniform(c.batch*c.order*c.width))
		gt := s.f32("gtable", s.uniform(c.rows*c.width))
		cells := s.i32("cells", s.cellsFor(c.batch, c.dims))
		k := c.order*c.width + 1
		score := out(s.f32("score", s.uniform(c.batch)), NewShape("score", "b", c.batch), k, 2*k).withSq()
		// With batch 0 the order cannot be inferred from the cells; the
		// call is a no-op on empty buffers.
		s.exercise(c.String(), []*result{score}, []*fbuf{dx, gt}, []*ibuf{cells},
			func() {
				s.be.EmbeddingInfluence(score.b.view, dx.view, cells.view, gt.view, c.width, c.layout, eta)
			},
			func() {
				ref.EmbeddingInfluence(score.want, f64(dx.init), cells.init, f64(gt.init), c.width, c.layout, float64(eta))
				ref.EmbeddingInfluence(score.sq, squares(dx.init), cells.init, squares(gt.init), c.width, c.layout, float64(eta)*float64(eta))
			})
		s.freeAll()
	})
}

// testEntityImportance: imp[r] starts non-zero and receives |score[t]| once
// per occurrence of r, K = (occurrences of the most repeated row) + 1.
// Scores of both signs check the absolute value.
func testEntityImportance(s *suite) {
	for _, dims := range modeSets {
		for _, batch := range append(slices.Clone(batches), 1000) {
			for order := 1; order <= 4; order++ {
				d := dims[:order]
				rows := sum(d)
				cellv := s.cellsFor(batch, d)
				score := s.f32("score", s.uniform(batch))
				cells := s.i32("cells", cellv)
				k := maxCount(cellv)
				imp := out(s.f32("imp", s.positive(rows)), NewShape("imp", "r", rows), k+1, 2*k+1)
				s.exercise(fmt.Sprintf("T=%d N=%d I=%v", batch, order, d), []*result{imp}, []*fbuf{score}, []*ibuf{cells},
					func() { s.be.EntityImportance(imp.b.view, score.view, cells.view) },
					func() { ref.EntityImportance(imp.want, f64(score.init), cells.init) })
				s.freeAll()
			}
		}
	}
}
