package cpu

import (
	"math"

	"github.com/dainx/dainx/compute"
)

// adamConst holds Adam's per-step constants in float32, in the order the
// assembly reads them, then the same values widened to float64 (exactly),
// for the float64 evaluation of the float32 operations (adamGo).
type adamConst struct {
	b1, b2, omb1, omb2, step, rc2, eps float32
	_                                  float32
	d                                  [7]float64 // b1 … eps, at byte 32
	// l2 is float32(AdamStep.L2): with l2 ≠ 0 the loops use the gradient
	// g + fl(l2·p), formed in float32 (adamRange). The assembly does
	// not read it.
	l2 float32
}

// Adam implements compute.Backend.Adam (in place), split over goroutines by
// element ranges.
func (be *Backend) Adam(p, g, m, v compute.F32, s compute.AdamStep) {
	ps, gs, ms, vs := f(p), f(g), f(m), f(v)
	compute.CheckAdam(p, g, m, v, s)
	c := adamConstants(s)
	be.parallelFor(len(ps), 32*1024, func(lo, hi int) {
		// Ranges start at multiples of 8 where possible so the SIMD
		// loop covers nearly all; either way each element's arithmetic
		// is the same.
		adamRange(ps[lo:hi], gs[lo:hi], ms[lo:hi], vs[lo:hi], c, be.simd)
	})
}

// l2Block is how many elements adamRange forms the L2 gradient of at a
// time, on its stack (a multiple of 8, so blocks keep the SIMD loop's
// alignment).
const l2Block = 512

// adamRange applies Adam to p, m, v with gradient g: the SIMD loop over
// the largest multiple of 8 elements when simd, adamGo over the rest. With
// c.l2 ≠ 0 the gradient is g + fl(l2·p) in float32, formed block by block
// into a buffer on the stack (so the step allocates nothing); with l2 = 0
// g is used as it is, the arithmetic of a step without L2, bit for bit.
func adamRange(p, g, m, v []float32, c *adamConst, simd bool) {
	if c.l2 == 0 {
		adamPlain(p, g, m, v, c, simd)
		return
	}
	var buf [l2Block]float32
	for lo := 0; lo < len(p); lo += l2Block {
		hi := min(lo+l2Block, len(p))
		t, pb := buf[:hi-lo], p[lo:hi]
		for i, gv := range g[lo:hi] {
			t[i] = gv + float32(c.l2*pb[i]) // the conversion keeps them unfused
		}
		adamPlain(pb, t, m[lo:hi], v[lo:hi], c, simd)
	}
}

// adamPlain is Adam's element loop on p, g, m, v, SIMD then Go.
func adamPlain(p, g, m, v []float32, c *adamConst, simd bool) {
	done := 0
	if simd {
		done = adamSIMD(p, g, m, v, c)
	}
	adamGo(p[done:], g[done:], m[done:], v[done:], c)
}

// adamGo is the Adam loop in Go: the float32 operations of adamAVX2, in
// the same order and unfused, each evaluated in float64 and rounded to
// float32. That gives exactly the float32 result (float64 has more than
// 2·24 + 2 bits, so the double rounding is innocuous for +, −, ×, ÷ and √),
// and since no float64 value here is subnormal it does not take the
// microcode assists that float32 arithmetic on subnormal values costs on
// x86 (about 100 cycles an operation): the first moments of dead units and
// of rows a step does not touch decay into that range.
func adamGo(ps, gs, ms, vs []float32, c *adamConst) {
	gs, ms, vs = gs[:len(ps)], ms[:len(ps)], vs[:len(ps)]
	b1, b2, omb1, omb2, step, rc2, eps := c.d[0], c.d[1], c.d[2], c.d[3], c.d[4], c.d[5], c.d[6]
	for i := range ps {
		g, m, v := float64(gs[i]), float64(ms[i]), float64(vs[i])
		m = r32(r32(b1*m) + r32(omb1*g))
		v = r32(r32(b2*v) + r32(r32(omb2*g)*g))
		ms[i], vs[i] = float32(m), float32(v)
		den := r32(r32(r32(math.Sqrt(v))*rc2) + eps)
		ps[i] = float32(float64(ps[i]) - r32(r32(step*m)/den))
	}
}

// r32 rounds x to float32 and returns it as float64. The conversion also
// keeps the compiler from fusing the operations around it.
func r32(x float64) float64 { return float64(float32(x)) }

// dot returns Σ a[i]·b[i] over len(a) elements in float32, in an order fixed
// for each path (simd or not).
func dot(a, b []float32, simd bool) float32 {
	b = b[:len(a)]
	var s float32
	done := 0
	if simd {
		s, done = dotSIMD(a, b)
	}
	var s0, s1, s2, s3 float32
	i := done
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s + ((s0 + s1) + (s2 + s3))
}

// addTo sets dst[i] += src[i].
func addTo(dst, src []float32, simd bool) {
	src = src[:len(dst)]
	done := 0
	if simd {
		done = addSIMD(dst, src)
	}
	for i := done; i < len(dst); i++ {
		dst[i] += src[i]
	}
}

// MSEGrad implements compute.Backend.MSEGrad (=). The squared error is summed
// in float64 and rounded once.
func (*Backend) MSEGrad(delta, sq, pred, y compute.F32, scale float32) {
	ds, ss, ps, ys := f(delta), f(sq), f(pred), f(y)
	compute.CheckMSEGrad(delta, sq, pred, y)
	ds, ys = ds[:len(ps)], ys[:len(ps)]
	var s float64
	for b, p := range ps {
		e := p - ys[b]
		ds[b] = scale * e
		s += float64(e) * float64(e)
	}
	if ss != nil {
		ss[0] = float32(s)
	}
}

// Mul implements compute.Backend.Mul (=).
func (*Backend) Mul(dst, a, b compute.F32) {
	n := compute.CheckMul(dst, a, b)
	ds, as, bs := f(dst)[:n], f(a)[:n], f(b)[:n]
	for i := range ds {
		ds[i] = as[i] * bs[i]
	}
}

// LinearForwardMSE implements compute.OutputMSE (=): LinearForward with
// one output, then MSEGrad, in turn (the CPU has no launch to save), so
// pred, delta and sq are bit for bit those of the two operations.
func (be *Backend) LinearForwardMSE(pred, delta, sq, x, w, bias, y compute.F32, in int, relu bool, scale float32) {
	compute.CheckLinearForwardMSE(pred, delta, sq, x, w, bias, y, in)
	be.LinearForward(pred, x, w, bias, in, 1, relu)
	be.MSEGrad(delta, sq, pred, y, scale)
}

var _ compute.OutputMSE = (*Backend)(nil)
