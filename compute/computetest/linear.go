package computetest

import (
	"fmt"
	"math"
	"slices"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/ref"
)

// linearCases calls f for every (in, out) of linearShapes and every batch
// size, then for every case of linearTiles.
func linearCases(f func(batch, in, out int)) {
	for _, io := range linearShapes {
		for _, batch := range batches {
			f(batch, io[0], io[1])
		}
	}
	for _, c := range linearTiles {
		f(c[0], c[1], c[2])
	}
}

// linearTiles are (batch, in, out) cases whose GEMMs cross into a second
// tile of 64 or 128 in every dimension of the forward, dx and dW products
// (B = 130, in = 150, out = 70), the same with the out = 1 output layer,
// the default MLP's output layer 128 → 1 at a batch that is not a
// multiple of a warp, and CoSTCo's first two layers (R = C = 20, order 3,
// batch 256: 3 → 20 on B·R rows, 400 → 20, whose dW sums over more than
// 256 rows and whose forward sums over more than 256 inputs).
var linearTiles = [][3]int{{130, 150, 70}, {130, 150, 1}, {1000, 128, 1}, {5120, 3, 20}, {256, 400, 20}}

// linearSparseDy are (batch, in, out) cases of LinearBackward run again
// with dy mostly exact zeros (7 in 8), as ReLU' leaves it in a layer with
// few live units (CoSTCo's 400 → 20 layer has 85% zeros there), so that a
// backend may skip them: the results must be the same.
var linearSparseDy = [][3]int{{257, 400, 20}, {300, 64, 24}}

// testLinearForward: y[b,o] is a dot product of in terms plus the bias, so
// K = in + 1. y starts as NaN and must be overwritten. One extra case puts a
// NaN in x, which must reach every output of its row, with and without ReLU.
func testLinearForward(s *suite) {
	run := func(desc string, batch, in, out int, relu bool, xv []float32) {
		x := s.f32("x", xv)
		w := s.f32("w", s.uniform(out*in))
		bias := s.f32("bias", s.uniform(out))
		y := newOut(s.f32("y", nans(batch*out)), NewShape("y", "b,o", batch, out), in+1, in+1).withSq()
		s.exercise(desc, []*result{y}, []*fbuf{x, w, bias}, nil,
			func() { s.be.LinearForward(y.b.view, x.view, w.view, bias.view, in, out, relu) },
			func() {
				ref.LinearForward(y.want, f64(x.init), f64(w.init), f64(bias.init), in, out, relu)
				ref.LinearForward(y.sq, squares(x.init), squares(w.init), squares(bias.init), in, out, false)
			})
		s.freeAll()
	}
	linearCases(func(batch, in, out int) {
		for _, relu := range []bool{false, true} {
			run(fmt.Sprintf("B=%d in=%d out=%d relu=%v", batch, in, out, relu), batch, in, out, relu, s.uniform(batch*in))
		}
	})
	const batch, in, out = 33, 17, 33
	for _, relu := range []bool{false, true} {
		xv := s.uniform(batch * in)
		xv[5*in+3] = float32(math.NaN())
		run(fmt.Sprintf("B=%d in=%d out=%d relu=%v with x[b=5,i=3]=NaN", batch, in, out, relu), batch, in, out, relu, xv)
	}
}

// reluInput returns activations as a ReLU layer leaves them: one in four
// is exactly zero, the rest of both signs (a negative value must be masked
// like a zero).
func (s *suite) reluInput(n int) []float32 {
	v := s.uniform(n)
	for i := range v {
		if s.rng.IntN(4) == 0 {
			v[i] = 0
		}
	}
	return v
}

// testLinearBackward covers maskX and accumulate on and off with every
// output present, then each of dx, dw, db nil. Reductions: dw[o,i] and
// db[o] sum over the batch (K = B, plus 1 with accumulate, doubled after
// two applications); dx[b,i] sums over out (K = out, overwritten, so the
// same after two applications). Outputs that are overwritten start as NaN.
func testLinearBackward(s *suite) {
	type variant struct {
		maskX, acc       bool
		noDX, noDW, noDB bool
	}
	variants := []variant{
		{false, false, false, false, false},
		{true, false, false, false, false},
		{false, true, false, false, false},
		{true, true, false, false, false},
		{true, true, true, false, false},
		{true, true, false, true, false},
		{false, false, false, false, true},
	}
	run := func(batch, in, out int, sparseDy bool) {
		for _, v := range variants {
			desc := fmt.Sprintf("B=%d in=%d out=%d maskX=%v accumulate=%v", batch, in, out, v.maskX, v.acc)
			x := s.f32("x", s.reluInput(batch*in))
			w := s.f32("w", s.uniform(out*in))
			dyv := s.uniform(batch * out)
			if sparseDy {
				desc += " dy 7/8 zeros"
				for i := range dyv {
					if s.rng.IntN(8) != 0 {
						dyv[i] = 0
					}
				}
			}
			dy := s.f32("dy", dyv)
			fresh := nans
			kb1, kb2 := batch, batch
			if v.acc {
				fresh = s.uniform
				kb1, kb2 = batch+1, 2*batch+1
			}
			var outs []*result
			var dx, dw, db *result
			if v.noDX {
				desc += " dx=nil"
			} else {
				dx = newOut(s.f32("dx", nans(batch*in)), NewShape("dx", "b,i", batch, in), out, out).withSq()
				outs = append(outs, dx)
			}
			if v.noDW {
				desc += " dw=nil"
			} else {
				dw = newOut(s.f32("dw", fresh(out*in)), NewShape("dw", "o,i", out, in), kb1, kb2).withSq()
				outs = append(outs, dw)
			}
			if v.noDB {
				desc += " db=nil"
			} else {
				db = newOut(s.f32("db", fresh(out)), NewShape("db", "o", out), kb1, kb2).withSq()
				outs = append(outs, db)
			}
			s.exercise(desc, outs, []*fbuf{x, w, dy}, nil,
				func() {
					s.be.LinearBackward(view(dx.buf()), view(dw.buf()), view(db.buf()), dy.view, x.view, w.view, in, out, v.maskX, v.acc)
				},
				func() {
					ref.LinearBackward(dx.ref(), dw.ref(), db.ref(), f64(dy.init), f64(x.init), f64(w.init), in, out, v.maskX, v.acc)
					ref.LinearBackward(sqr(dx), sqr(dw), sqr(db), squares(dy.init), squares(x.init), squares(w.init), in, out, false, v.acc)
				})
			s.freeAll()
		}
	}
	linearCases(func(batch, in, out int) { run(batch, in, out, false) })
	for _, c := range linearSparseDy {
		run(c[0], c[1], c[2], true)
	}
}

// newOut is out, named so as not to clash with the width variables of the
// Linear tests.
func newOut(b *fbuf, sh Shape, k1, k2 int) *result { return out(b, sh, k1, k2) }

// buf returns the buffer of r, nil for a nil r.
func (r *result) buf() *fbuf {
	if r == nil {
		return nil
	}
	return r.b
}

// ref returns the reference state of r, nil for a nil r.
func (r *result) ref() []float64 {
	if r == nil {
		return nil
	}
	return r.want
}

// testMSEGrad: delta[b] is one difference times scale (K = 1, two
// roundings, within C·u); sq sums B squares (K = B). Both overwrite and
// start as NaN. scale is 2/B (batch-mean loss) and 2 (per-cell gradients).
func testMSEGrad(s *suite) {
	for _, batch := range append(slices.Clone(batches), 1000) {
		for _, withSq := range []bool{true, false} {
			for _, scale := range []float32{2, 2 / float32(max(batch, 1))} {
				pred := s.f32("pred", s.uniform(batch))
				y := s.f32("y", s.uniform(batch))
				delta := newOut(s.f32("delta", nans(batch)), NewShape("delta", "b", batch), 1, 1)
				outs := []*result{delta}
				var sq *result
				if withSq {
					sq = newOut(s.f32("sq", nans(1)), NewShape("sq", ""), batch, batch)
					outs = append(outs, sq)
				}
				s.exercise(fmt.Sprintf("B=%d scale=%v sq=%v", batch, scale, withSq), outs, []*fbuf{pred, y}, nil,
					func() { s.be.MSEGrad(delta.b.view, view(sq.buf()), pred.view, y.view, scale) },
					func() { ref.MSEGrad(delta.want, sq.ref(), f64(pred.init), f64(y.init), float64(scale)) })
				s.freeAll()
			}
		}
	}
}

// testMul: dst[i] is one product (K = 1, within one rounding of the
// float64 reference; one float32 rounding, so the same bits on every
// backend), overwritten, starting as NaN.
func testMul(s *suite) {
	for _, n := range append(slices.Clone(batches), 1000, 70000) {
		a := s.f32("a", s.uniform(n))
		b := s.f32("b", s.positive(n))
		dst := newOut(s.f32("dst", nans(n)), NewShape("dst", "i", n), 1, 1)
		s.exercise(fmt.Sprintf("n=%d", n), []*result{dst}, []*fbuf{a, b}, nil,
			func() { s.be.Mul(dst.b.view, a.view, b.view) },
			func() { ref.Mul(dst.want, f64(a.init), f64(b.init)) })
		got := s.read("Mul", dst.b)
		for i := range got {
			if want := a.init[i] * b.init[i]; got[i] != want {
				s.errorf("Mul n=%d: dst[%d] = %v, the float32 product %v: not one rounding", n, i, got[i], want)
				break
			}
		}
		s.freeAll()
	}
}

// testLinearForwardMSE (backends implementing compute.OutputMSE): the
// fused output layer and loss. pred is a dot product of in terms plus the
// bias (K = in + 1, against the float64 reference); delta is one
// difference of the backend's own pred and y times scale (K = 1); sq sums
// B squares of those differences (K = B). pred and delta must also equal,
// bit for bit, what LinearForward and MSEGrad give on the same backend, and
// sq must be within one float32 rounding of MSEGrad's. Every output starts
// as NaN. Batches cover one and several warps and blocks of the kernel.
func testLinearForwardMSE(s *suite) {
	fused, ok := s.be.(compute.OutputMSE)
	if !ok {
		s.t.Skipf("backend %q does not implement compute.OutputMSE", s.be.Name())
	}
	cases := [][2]int{{1, 1}, {33, 17}, {130, 150}, {1000, 128}, {4099, 64}}
	for _, c := range cases {
		batch, in := c[0], c[1]
		for _, relu := range []bool{false, true} {
			for _, withSq := range []bool{true, false} {
				scale := 2 / float32(batch)
				desc := fmt.Sprintf("B=%d in=%d relu=%v sq=%v", batch, in, relu, withSq)
				x := s.f32("x", s.uniform(batch*in))
				w := s.f32("w", s.uniform(in))
				bias := s.f32("bias", s.uniform(1))
				y := s.f32("y", s.uniform(batch))
				pred := newOut(s.f32("pred", nans(batch)), NewShape("pred", "b", batch), in+1, in+1).withSq()
				delta := newOut(s.f32("delta", nans(batch)), NewShape("delta", "b", batch), 1, 1)
				outs := []*result{pred, delta}
				var sq *result
				if withSq {
					sq = newOut(s.f32("sq", nans(1)), NewShape("sq", ""), batch, batch)
					outs = append(outs, sq)
				}
				s.exercise(desc, outs, []*fbuf{x, w, bias, y}, nil,
					func() {
						fused.LinearForwardMSE(pred.b.view, delta.b.view, view(sq.buf()), x.view, w.view, bias.view, y.view, in, relu, scale)
					},
					func() {
						ref.LinearForward(pred.want, f64(x.init), f64(w.init), f64(bias.init), in, 1, relu)
						ref.LinearForward(pred.sq, squares(x.init), squares(w.init), squares(bias.init), in, 1, false)
						got := s.read(desc, pred.b)
						ref.MSEGrad(delta.want, sq.ref(), f64(got), f64(y.init), float64(scale))
					})
				// The unfused pair on the same backend.
				p2 := s.f32("pred (LinearForward)", nans(batch))
				d2 := s.f32("delta (MSEGrad)", nans(batch))
				sq2 := s.f32("sq (MSEGrad)", nans(1))
				s.be.LinearForward(p2.view, x.view, w.view, bias.view, in, 1, relu)
				s.be.MSEGrad(d2.view, sq2.view, p2.view, y.view, scale)
				for _, c := range []struct {
					name           string
					unfused, fused *fbuf
				}{{"pred", p2, pred.b}, {"delta", d2, delta.b}} {
					a, b := s.read(desc, c.unfused), s.read(desc, c.fused)
					for i := range a {
						if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
							s.errorf("%s: %s[%d] is %v, but %v from LinearForward and MSEGrad: not bit for bit", desc, c.name, i, b[i], a[i])
							break
						}
					}
				}
				if withSq {
					a, b := s.read(desc, sq2)[0], s.read(desc, sq.b)[0]
					if d := math.Abs(float64(a) - float64(b)); d > math.Abs(float64(a))*0x1p-23 {
						s.errorf("%s: sq %v, MSEGrad's %v: more than one float32 rounding apart", desc, b, a)
					}
				}
				s.freeAll()
			}
		}
	}
}

// testInfluenceDot: score[b] += eta·Σ_o dy[b,o]·(Σ_i gw[o,i]·x[b,i] + gb[o]),
// a reduction over in nested in one over out, so K = in + out + 1 (the
// nested sums, plus the add to score), doubled after two applications.
func testInfluenceDot(s *suite) {
	const eta = float32(0.7)
	linearCases(func(batch, in, out int) {
		dy := s.f32("dy", s.uniform(batch*out))
		x := s.f32("x", s.reluInput(batch*in))
		gw := s.f32("gw", s.uniform(out*in))
		gb := s.f32("gb", s.uniform(out))
		k := in + out + 1
		score := newOut(s.f32("score", s.uniform(batch)), NewShape("score", "b", batch), k, 2*k).withSq()
		s.exercise(fmt.Sprintf("B=%d in=%d out=%d", batch, in, out), []*result{score}, []*fbuf{dy, x, gw, gb}, nil,
			func() { s.be.InfluenceDot(score.b.view, dy.view, x.view, gw.view, gb.view, in, out, eta) },
			func() {
				ref.InfluenceDot(score.want, f64(dy.init), f64(x.init), f64(gw.init), f64(gb.init), in, out, float64(eta))
				ref.InfluenceDot(score.sq, squares(dy.init), squares(x.init), squares(gw.init), squares(gb.init), in, out, float64(eta)*float64(eta))
			})
		s.freeAll()
	})
}

// Adam reduction lengths. Adam is elementwise, so K counts the rounded
// float32 operations on the longest path to an output, the rounding of the
// float64 hyper-parameters to float32 included: m and v are a sum of two
// products, one of them of g·g, with rounded coefficients (5); p adds the
// square root, the bias corrections, ε, the division, the step size and the
// subtraction (8). Coupled L2 (AdamStep.L2) adds three to each: the
// rounding of L2 to float32, the product L2·p and its sum with g.
const (
	adamKMV = 5
	adamKP  = 8
	adamKL2 = 3
)

// adamK returns the reduction lengths of m and v, and of p, for s.
func adamK(s compute.AdamStep) (kmv, kp int) {
	if s.L2 != 0 {
		return adamKMV + adamKL2, adamKP + adamKL2
	}
	return adamKMV, adamKP
}

// testAdam runs three steps (T = 1, 2, 3) from m = v = 0 with a new gradient
// each step. Each step is checked from the backend's own state after the
// previous step (downloaded, so both sides start every step from identical
// float32 values). Two settings: PyTorch's defaults, and a large step with
// a large ε so that the update is as big as p and an error in it shows.
func testAdam(s *suite) {
	settings := []compute.AdamStep{
		{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
		{LR: 0.5, Beta1: 0.8, Beta2: 0.99, Eps: 1e-3},
		// Coupled L2 (AdamStep.L2): g + L2·p in place of g.
		{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, L2: 0.05},
		{LR: 0.5, Beta1: 0.8, Beta2: 0.99, Eps: 1e-3, L2: 2},
	}
	for _, n := range append(slices.Clone(batches), 1000) {
		for _, hp := range settings {
			p := s.f32("p", s.uniform(n))
			m := s.f32("m", make([]float32, n))
			v := s.f32("v", make([]float32, n))
			grads := [][]float32{s.uniform(n), s.uniform(n), s.uniform(n)}
			g := s.f32("g", grads[0])
			var final [3][]float32
			for step := 1; step <= 3; step++ {
				st := hp
				st.T = step
				desc := fmt.Sprintf("Adam n=%d lr=%g β₁=%g β₂=%g ε=%g L2=%g T=%d", n, st.LR, st.Beta1, st.Beta2, st.Eps, st.L2, st.T)
				g.init = grads[step-1]
				s.reset(g)
				wp := f64(s.read(desc, p))
				wm := f64(s.read(desc, m))
				wv := f64(s.read(desc, v))
				// Sizes of the terms each output sums: β₁m and (1−β₁)g,
				// β₂v and (1−β₂)g², p and the update.
				gd := f64(g.init)
				p0 := slices.Clone(wp)
				// The gradient the moments see: g, or g + L2·p, one
				// more term (and rounding) in each.
				ge := slices.Clone(gd)
				if st.L2 != 0 {
					for i := range ge {
						ge[i] += st.L2 * wp[i]
					}
				}
				magM := termSize(n, func(i int) (float64, float64) {
					return st.Beta1 * wm[i], (1 - st.Beta1) * math.Max(math.Abs(gd[i]), math.Abs(ge[i]))
				})
				magV := termSize(n, func(i int) (float64, float64) {
					return st.Beta2 * wv[i], (1 - st.Beta2) * math.Max(gd[i]*gd[i], ge[i]*ge[i])
				})
				s.be.Adam(p.view, g.view, m.view, v.view, st)
				ref.Adam(wp, gd, wm, wv, st)
				magP := termSize(n, func(i int) (float64, float64) { return p0[i], p0[i] - wp[i] })
				final[0] = slices.Clone(s.read(desc, p))
				final[1] = slices.Clone(s.read(desc, m))
				final[2] = slices.Clone(s.read(desc, v))
				kmv, kp := adamK(st)
				s.close(desc, NewShape("m", "i", n), final[1], wm, kmv, max(magM, RMS(wm)))
				s.close(desc, NewShape("v", "i", n), final[2], wv, kmv, max(magV, RMS(wv)))
				s.close(desc, NewShape("p", "i", n), final[0], wp, kp, max(magP, RMS(wp)))
				s.unchanged(desc, []*fbuf{g}, nil)
			}
			// Determinism: the same three steps from the same start, with
			// the per-step constants read from a buffer (AdamStep.Scalars,
			// as a captured graph replays Adam) and T left at 1, which
			// must not matter then.
			desc := fmt.Sprintf("Adam n=%d lr=%g L2=%g rerun with Scalars", n, hp.LR, hp.L2)
			s.reset(p)
			s.reset(m)
			s.reset(v)
			sc := s.f32("scalars", make([]float32, 2))
			for step := 1; step <= 3; step++ {
				st := hp
				st.T = step
				c := compute.AdamScalars(st)
				s.be.Upload(sc.view, c[:])
				st.T, st.Scalars = 1, sc.view
				s.be.Upload(g.view, grads[step-1])
				s.be.Adam(p.view, g.view, m.view, v.view, st)
			}
			s.sameBits(desc, "p", final[0], s.read(desc, p))
			s.sameBits(desc, "m", final[1], s.read(desc, m))
			s.sameBits(desc, "v", final[2], s.read(desc, v))
			s.freeAll()
		}
	}
}

// termSize returns √(mean over i of a² + b²) for the two terms (a, b) that
// output i combines: the size of the terms for CloseMag.
func termSize(n int, terms func(i int) (a, b float64)) float64 {
	if n == 0 {
		return 0
	}
	s := 0.0
	for i := range n {
		a, b := terms(i)
		s += a*a + b*b
	}
	return math.Sqrt(s / float64(n))
}
