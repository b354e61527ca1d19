// Package cpu implements compute.Backend in pure Go: GEMMs through gonum's
// blas32 implementation, everything else as plain loops. It needs no cgo and
// no GPU, and it is what every machine without a GPU, CI included, runs.
//
// Results are deterministic: the same inputs give bit-identical outputs on
// every run, whatever the number of cores (gonum's parallel GEMM gives each
// output block to one goroutine and sums k in a fixed order; every other
// loop is sequential or partitions its outputs).
//
// Buffers are ordinary Go slices; a panic means a caller bug (see package
// compute). The backend never fails at run time, so Sync, Download and Close
// always return nil.
package cpu

import (
	"fmt"
	"math"
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/dainx/dainx/compute"
)

// Backend is the CPU implementation of compute.Backend. The zero value is not
// usable; call New.
type Backend struct {
	impl blas.Float32
}

// New returns a CPU backend using gonum's pure-Go blas32 implementation.
func New() *Backend {
	return &Backend{impl: gonum.Implementation{}}
}

var _ compute.Backend = (*Backend)(nil)

// Name returns "cpu".
func (*Backend) Name() string { return "cpu" }

// Device describes the CPU in words.
func (*Backend) Device() string {
	return fmt.Sprintf("%d cores (GOMAXPROCS), gonum blas32", runtime.GOMAXPROCS(0))
}

// vec is the CPU buffer of float32.
type vec []float32

func (v vec) Len() int { return len(v) }
func (v vec) Slice(off, n int) compute.F32 {
	if off < 0 || n < 0 || off+n > len(v) {
		panic(fmt.Sprintf("cpu: Slice(%d, %d) of a buffer of %d elements", off, n, len(v)))
	}
	return v[off : off+n : off+n]
}
func (vec) Free() {}

// ivec is the CPU buffer of int32.
type ivec []int32

func (v ivec) Len() int { return len(v) }
func (v ivec) Slice(off, n int) compute.I32 {
	if off < 0 || n < 0 || off+n > len(v) {
		panic(fmt.Sprintf("cpu: Slice(%d, %d) of a buffer of %d elements", off, n, len(v)))
	}
	return v[off : off+n : off+n]
}
func (ivec) Free() {}

// f returns the storage of a CPU buffer; nil stays nil.
func f(b compute.F32) []float32 {
	if b == nil {
		return nil
	}
	v, ok := b.(vec)
	if !ok {
		panic(fmt.Sprintf("cpu: buffer of type %T belongs to another backend", b))
	}
	return v
}

func iv(b compute.I32) []int32 {
	v, ok := b.(ivec)
	if !ok {
		panic(fmt.Sprintf("cpu: buffer of type %T belongs to another backend", b))
	}
	return v
}

func need(what string, got, want int) {
	if got != want {
		panic(fmt.Sprintf("cpu: %s has %d elements, want %d", what, got, want))
	}
}

// Alloc returns a zeroed buffer of n float32.
func (*Backend) Alloc(n int) compute.F32 {
	if n < 0 {
		panic(fmt.Sprintf("cpu: Alloc(%d)", n))
	}
	return make(vec, n)
}

// AllocI32 returns a zeroed buffer of n int32.
func (*Backend) AllocI32(n int) compute.I32 {
	if n < 0 {
		panic(fmt.Sprintf("cpu: AllocI32(%d)", n))
	}
	return make(ivec, n)
}

// Upload copies src into dst.
func (*Backend) Upload(dst compute.F32, src []float32) {
	d := f(dst)
	need("Upload dst", len(d), len(src))
	copy(d, src)
}

// UploadI32 copies src into dst.
func (*Backend) UploadI32(dst compute.I32, src []int32) {
	d := iv(dst)
	need("UploadI32 dst", len(d), len(src))
	copy(d, src)
}

// Download copies src into dst.
func (*Backend) Download(dst []float32, src compute.F32) error {
	s := f(src)
	need("Download dst", len(dst), len(s))
	copy(dst, s)
	return nil
}

// DownloadI32 copies src into dst.
func (*Backend) DownloadI32(dst []int32, src compute.I32) error {
	s := iv(src)
	need("DownloadI32 dst", len(dst), len(s))
	copy(dst, s)
	return nil
}

// Fill sets every element of dst to v.
func (*Backend) Fill(dst compute.F32, v float32) {
	d := f(dst)
	for i := range d {
		d[i] = v
	}
}

// Copy copies src into dst.
func (*Backend) Copy(dst, src compute.F32) {
	d, s := f(dst), f(src)
	need("Copy dst", len(d), len(s))
	copy(d, s)
}

// Sync returns nil: the CPU backend runs synchronously and cannot fail.
func (*Backend) Sync() error { return nil }

// Close returns nil.
func (*Backend) Close() error { return nil }

// checkGather validates the shapes shared by Gather, ScatterRows and
// EmbeddingInfluence and returns the number of table rows.
func checkGather(op string, xLen, tableLen, cellsLen, order, width int) int {
	if order <= 0 || width <= 0 {
		panic(fmt.Sprintf("cpu: %s: order %d, width %d", op, order, width))
	}
	if cellsLen%order != 0 {
		panic(fmt.Sprintf("cpu: %s: cells of %d elements is not a multiple of order %d", op, cellsLen, order))
	}
	need(op+" batch matrix", xLen, cellsLen*width)
	if tableLen%width != 0 {
		panic(fmt.Sprintf("cpu: %s: table of %d elements is not a multiple of width %d", op, tableLen, width))
	}
	return tableLen / width
}

func checkRow(op string, r int32, rows int) int {
	if r < 0 || int(r) >= rows {
		panic(fmt.Sprintf("cpu: %s: embedding row %d outside table of %d rows", op, r, rows))
	}
	return int(r)
}

// Gather implements compute.Backend.Gather (=).
func (*Backend) Gather(x, table compute.F32, cells compute.I32, order, width int, layout compute.Layout) {
	xs, ts, cs := f(x), f(table), iv(cells)
	rows := checkGather("Gather", len(xs), len(ts), len(cs), order, width)
	for k, r := range cs {
		src := ts[checkRow("Gather", r, rows)*width:][:width]
		if layout == compute.ModeMajor {
			copy(xs[k*width:(k+1)*width], src)
			continue
		}
		b, n := k/order, k%order
		dst := xs[b*order*width:]
		for e, v := range src {
			dst[e*order+n] = v
		}
	}
}

// ScatterRows implements compute.Backend.ScatterRows (+=).
func (*Backend) ScatterRows(dtable, dx compute.F32, cells compute.I32, order, width int, layout compute.Layout) {
	ts, xs, cs := f(dtable), f(dx), iv(cells)
	rows := checkGather("ScatterRows", len(xs), len(ts), len(cs), order, width)
	for k, r := range cs {
		dst := ts[checkRow("ScatterRows", r, rows)*width:][:width]
		if layout == compute.ModeMajor {
			for e, v := range xs[k*width : (k+1)*width] {
				dst[e] += v
			}
			continue
		}
		b, n := k/order, k%order
		src := xs[b*order*width:]
		for e := range dst {
			dst[e] += src[e*order+n]
		}
	}
}

// linearShape validates a Linear layer's buffers and returns the batch size.
func linearShape(op string, xLen, wLen, in, out int) int {
	if in <= 0 || out <= 0 {
		panic(fmt.Sprintf("cpu: %s: in %d, out %d", op, in, out))
	}
	if xLen%in != 0 {
		panic(fmt.Sprintf("cpu: %s: x of %d elements is not a multiple of in %d", op, xLen, in))
	}
	need(op+" w", wLen, out*in)
	return xLen / in
}

// LinearForward implements compute.Backend.LinearForward (=).
func (be *Backend) LinearForward(y, x, w, bias compute.F32, in, out int, relu bool) {
	ys, xs, ws, bs := f(y), f(x), f(w), f(bias)
	batch := linearShape("LinearForward", len(xs), len(ws), in, out)
	need("LinearForward y", len(ys), batch*out)
	need("LinearForward bias", len(bs), out)
	if batch == 0 {
		return
	}
	// y = x·wᵀ
	be.impl.Sgemm(blas.NoTrans, blas.Trans, batch, out, in, 1, xs, in, ws, in, 0, ys, out)
	for b := 0; b < batch; b++ {
		row := ys[b*out : (b+1)*out]
		for o, bo := range bs {
			v := row[o] + bo
			if relu && v < 0 {
				v = 0
			}
			row[o] = v
		}
	}
}

// LinearBackward implements compute.Backend.LinearBackward.
func (be *Backend) LinearBackward(dx, dw, db, dy, x, w compute.F32, in, out int, maskX, accumulate bool) {
	dxs, dws, dbs, dys, xs, ws := f(dx), f(dw), f(db), f(dy), f(x), f(w)
	batch := linearShape("LinearBackward", len(xs), len(ws), in, out)
	need("LinearBackward dy", len(dys), batch*out)
	beta := float32(0)
	if accumulate {
		beta = 1
	}
	if dws != nil {
		need("LinearBackward dw", len(dws), out*in)
		if batch == 0 {
			if !accumulate {
				clear(dws)
			}
		} else {
			// dw = dyᵀ·x
			be.impl.Sgemm(blas.Trans, blas.NoTrans, out, in, batch, 1, dys, out, xs, in, beta, dws, in)
		}
	}
	if dbs != nil {
		need("LinearBackward db", len(dbs), out)
		if !accumulate {
			clear(dbs)
		}
		for b := 0; b < batch; b++ {
			for o, v := range dys[b*out : (b+1)*out] {
				dbs[o] += v
			}
		}
	}
	if dxs != nil {
		need("LinearBackward dx", len(dxs), batch*in)
		if batch == 0 {
			return
		}
		// dx = dy·w
		be.impl.Sgemm(blas.NoTrans, blas.NoTrans, batch, in, out, 1, dys, out, ws, in, 0, dxs, in)
		if maskX {
			for i, v := range xs {
				if !(v > 0) {
					dxs[i] = 0
				}
			}
		}
	}
}

// MSEGrad implements compute.Backend.MSEGrad (=). The squared error is summed
// in float64 and rounded once.
func (*Backend) MSEGrad(delta, sq, pred, y compute.F32, scale float32) {
	ds, ss, ps, ys := f(delta), f(sq), f(pred), f(y)
	need("MSEGrad delta", len(ds), len(ps))
	need("MSEGrad y", len(ys), len(ps))
	var s float64
	for b, p := range ps {
		e := p - ys[b]
		ds[b] = scale * e
		s += float64(e) * float64(e)
	}
	if ss != nil {
		need("MSEGrad sq", len(ss), 1)
		ss[0] = float32(s)
	}
}

// Adam implements compute.Backend.Adam (in place).
func (*Backend) Adam(p, g, m, v compute.F32, s compute.AdamStep) {
	ps, gs, ms, vs := f(p), f(g), f(m), f(v)
	need("Adam g", len(gs), len(ps))
	need("Adam m", len(ms), len(ps))
	need("Adam v", len(vs), len(ps))
	if s.T < 1 {
		panic(fmt.Sprintf("cpu: Adam: step %d, want ≥ 1", s.T))
	}
	c1 := 1 - math.Pow(s.Beta1, float64(s.T))
	c2 := 1 - math.Pow(s.Beta2, float64(s.T))
	// 1−β is rounded from float64: forming it from float32(β) would
	// magnify β's rounding error (216 ulps for β₂ = .999).
	b1, b2 := float32(s.Beta1), float32(s.Beta2)
	omb1, omb2 := float32(1-s.Beta1), float32(1-s.Beta2)
	step := float32(s.LR / c1)
	rc2 := float32(1 / math.Sqrt(c2))
	eps := float32(s.Eps)
	for i, gi := range gs {
		mi := b1*ms[i] + omb1*gi
		vi := b2*vs[i] + omb2*gi*gi
		ms[i], vs[i] = mi, vi
		ps[i] -= step * mi / (float32(math.Sqrt(float64(vi)))*rc2 + eps)
	}
}

// InfluenceDot implements compute.Backend.InfluenceDot (+=).
func (be *Backend) InfluenceDot(score, dy, x, gw, gb compute.F32, in, out int, eta float32) {
	ss, dys, xs, gws, gbs := f(score), f(dy), f(x), f(gw), f(gb)
	batch := linearShape("InfluenceDot", len(xs), len(gws), in, out)
	need("InfluenceDot score", len(ss), batch)
	need("InfluenceDot dy", len(dys), batch*out)
	need("InfluenceDot gb", len(gbs), out)
	if batch == 0 {
		return
	}
	// t = x·gwᵀ (B×out), then score[b] += eta·Σ_o dy[b,o]·(t[b,o]+gb[o]).
	t := make([]float32, batch*out)
	be.impl.Sgemm(blas.NoTrans, blas.Trans, batch, out, in, 1, xs, in, gws, in, 0, t, out)
	for b := range ss {
		var acc float32
		for o, gbo := range gbs {
			acc += dys[b*out+o] * (t[b*out+o] + gbo)
		}
		ss[b] += eta * acc
	}
}

// EmbeddingInfluence implements compute.Backend.EmbeddingInfluence (+=).
func (*Backend) EmbeddingInfluence(score, dx compute.F32, cells compute.I32, gtable compute.F32, width int, layout compute.Layout, eta float32) {
	ss, xs, cs, ts := f(score), f(dx), iv(cells), f(gtable)
	if len(ss) == 0 {
		need("EmbeddingInfluence cells", len(cs), 0)
		need("EmbeddingInfluence dx", len(xs), 0)
		return
	}
	if len(cs)%len(ss) != 0 {
		panic(fmt.Sprintf("cpu: EmbeddingInfluence: cells of %d elements for %d scores", len(cs), len(ss)))
	}
	order := len(cs) / len(ss)
	rows := checkGather("EmbeddingInfluence", len(xs), len(ts), len(cs), order, width)
	for b := range ss {
		var acc float32
		for n := 0; n < order; n++ {
			g := ts[checkRow("EmbeddingInfluence", cs[b*order+n], rows)*width:][:width]
			row := xs[b*order*width:]
			for e, gv := range g {
				acc += row[pos(n, e, width, order, layout)] * gv
			}
		}
		ss[b] += eta * acc
	}
}

func pos(n, e, width, order int, layout compute.Layout) int {
	if layout == compute.RankMajor {
		return e*order + n
	}
	return n*width + e
}

// EntityImportance implements compute.Backend.EntityImportance (+=). Sums
// are formed in float64 and added to imp once per entity.
func (*Backend) EntityImportance(imp, score compute.F32, cells compute.I32) {
	is, ss, cs := f(imp), f(score), iv(cells)
	if len(ss) == 0 {
		need("EntityImportance cells", len(cs), 0)
		return
	}
	if len(cs)%len(ss) != 0 {
		panic(fmt.Sprintf("cpu: EntityImportance: cells of %d elements for %d scores", len(cs), len(ss)))
	}
	order := len(cs) / len(ss)
	acc := make([]float64, len(is))
	for t, s := range ss {
		a := math.Abs(float64(s))
		for _, r := range cs[t*order : (t+1)*order] {
			acc[checkRow("EntityImportance", r, len(is))] += a
		}
	}
	for i, a := range acc {
		is[i] += float32(a)
	}
}

// SampleAlias implements compute.Backend.SampleAlias (= for column col).
func (*Backend) SampleAlias(out compute.I32, order, col int, thresh, alias compute.I32, key, ctr uint64) {
	os, ts, as := iv(out), iv(thresh), iv(alias)
	if order <= 0 || col < 0 || col >= order || len(os)%order != 0 {
		panic(fmt.Sprintf("cpu: SampleAlias: out of %d elements, order %d, col %d", len(os), order, col))
	}
	need("SampleAlias alias", len(as), len(ts))
	if len(ts) == 0 {
		panic("cpu: SampleAlias: empty alias table")
	}
	th := make([]uint32, len(ts))
	for i, t := range ts {
		th[i] = uint32(t)
	}
	for m := 0; m < len(os)/order; m++ {
		os[m*order+col] = compute.AliasDraw(th, as, col, key, ctr, m)
	}
}
