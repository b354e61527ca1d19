package computetest

import (
	"fmt"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/ref"
)

// pairwiseWidths are the embedding widths E of the pairwise cases: 2 (one
// factor column), a few, one warp's worth of factors (33: K = 32) and
// more than a warp's (65, 70).
var pairwiseWidths = []int{2, 3, 8, 33, 65, 70}

// pairwiseCases calls f for every batch size, order 1 to 4 and width of
// the pairwise operations (ModeMajor only: the operations take no layout).
func pairwiseCases(f func(batch, order, width int)) {
	for _, batch := range batches {
		for order := 1; order <= 4; order++ {
			for _, width := range pairwiseWidths {
				f(batch, order, width)
			}
		}
	}
}

// testPairwiseForward: y[b] starts non-zero and receives the bias sum (N
// terms) and K·N(N−1)/2 products, so K = N + K·N(N−1)/2 + 1, twice that
// after two applications; the size of the terms comes from the reference
// run on the squares of the inputs (the squares of the terms).
func testPairwiseForward(s *suite) {
	pairwiseCases(func(batch, order, width int) {
		x := s.f32("x", s.uniform(batch*order*width))
		k := order + (width-1)*order*(order-1)/2 + 1
		y := out(s.f32("y", s.uniform(batch)), NewShape("y", "b", batch), k, 2*k).withSq()
		s.exercise(fmt.Sprintf("B=%d N=%d E=%d", batch, order, width), []*result{y}, []*fbuf{x}, nil,
			func() { s.be.PairwiseForward(y.b.view, x.view, order, width) },
			func() {
				ref.PairwiseForward(y.want, f64(x.init), order, width)
				ref.PairwiseForward(y.sq, squares(x.init), order, width)
			})
		s.freeAll()
	})
}

// testPairwiseBackward: dx[b,n,k] starts non-zero and receives dy[b] times
// a sum of N−1 terms, K = N + 1 (2N + 2 after two applications); the bias
// column receives dy[b] itself.
func testPairwiseBackward(s *suite) {
	pairwiseCases(func(batch, order, width int) {
		x := s.f32("x", s.uniform(batch*order*width))
		dy := s.f32("dy", s.uniform(batch))
		k := order + 1
		dx := out(s.f32("dx", s.uniform(batch*order*width)), batchShape("dx", batch, order, width, compute.ModeMajor), k, 2*k).withSq()
		s.exercise(fmt.Sprintf("B=%d N=%d E=%d", batch, order, width), []*result{dx}, []*fbuf{x, dy}, nil,
			func() { s.be.PairwiseBackward(dx.b.view, dy.view, x.view, order, width) },
			func() {
				ref.PairwiseBackward(dx.want, f64(dy.init), f64(x.init), order, width)
				ref.PairwiseBackward(dx.sq, squares(dy.init), squares(x.init), order, width)
			})
		s.freeAll()
	})
}
