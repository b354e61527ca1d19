// Package cpu implements compute.Backend in Go on the CPU, using every core.
// The GEMMs of the Linear layers run on a BLIS-style blocked SGEMM
// (internal/gemm) with a 12×32 AVX-512F micro-kernel in Go assembly, chosen
// at run time when the CPU has AVX-512F (path "avx512"), else a 6×16
// AVX2/FMA one when it has AVX2 and FMA (path "avx2"), and a pure-Go kernel
// otherwise;
// bias, ReLU and the ReLU mask of the backward pass are fused into the GEMM's
// epilogue. When a GEMM's left operand is mostly exact zeros (ReLU outputs,
// ReLU-masked gradients, by a fixed sample) the avx2 path skips them with a
// row-sparse kernel. Narrow layers (at most 24 outputs, like CoSTCo's) run
// on the avx2 path on register tiles and sparse-row kernels that read the
// operands in place and give the GEMM's results bit for bit (skinny.go).
// Adam and the other elementwise loops have AVX2 versions too, and
// everything large is split over GOMAXPROCS goroutines. It needs no
// cgo and no GPU, and it is what every machine without a GPU, CI included,
// runs. NewWith forces a path (Options); GODEBUG=cpu.avx512f=off hides
// AVX-512 (every AVX-512 kernel, the GEMM's and the narrow layers') and
// GODEBUG=cpu.avx2=off hides AVX2 from the automatic choice. The avx512
// path is the avx2 path with the 12×32 GEMM kernel: the two give the same
// bits (the kernels sum every element of C in the same order).
//
// Results are deterministic: the same inputs give bit-identical outputs on
// every run, whatever the number of cores. Work is split only over outputs
// (tiles of C, ranges of elements, ranges of table rows), and every sum is
// formed in an order that does not depend on the split. Different kernels
// (avx2, generic) round differently (FMA, summation blocking) and agree
// within the conformance suite's tolerance, not bit for bit.
//
// Buffers are ordinary Go slices; a panic means a caller bug (see package
// compute). The backend never fails at run time, so Sync, Download and Close
// always return nil.
package cpu

import (
	"fmt"
	"math"
	"runtime"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu/internal/gemm"
	"github.com/dainx/dainx/internal/bigmem"
)

// Backend is the CPU implementation of compute.Backend. The zero value is not
// usable; call New or NewWith.
type Backend struct {
	kern    *gemm.Kernel
	simd    bool // AVX2 elementwise loops and narrow tiles (avx2, avx512)
	threads int  // 0: GOMAXPROCS at each call
	sparse  gemm.SparseMode
}

// Options selects a code path of the CPU backend.
type Options struct {
	// Kernel names the code path: "" or "auto" for the fastest this CPU
	// supports, "avx512" (the avx2 path with the AVX-512F GEMM kernel; an
	// error on a CPU without AVX-512F or with GODEBUG=cpu.avx512f=off),
	// "avx2" (AVX2/FMA assembly; an error on a CPU without both), "gonum" (gonum's pure-Go blas32 GEMM, every CPU; the
	// default without AVX2) or "generic" (our pure-Go 4×4 kernel in the
	// same blocked loops as avx2, every CPU).
	Kernel string
	// Threads is the number of goroutines an operation may use; 0 means
	// runtime.GOMAXPROCS(0) at each call. Results do not depend on it.
	Threads int
	// Sparse says when the GEMMs may skip the exact zeros of their left
	// operand (ReLU outputs, ReLU-masked gradients) on the avx2 path: ""
	// or "auto" when a fixed sample of the operand is mostly zeros, "off"
	// never, "always" whenever possible (for tests). Results are
	// deterministic in every mode.
	Sparse string
}

// Kernels returns the names of the code paths this CPU supports, the
// default (fastest) first.
func Kernels() []string {
	if gemm.AVX512 != nil {
		return []string{"avx512", "avx2", "gonum", "generic"}
	}
	if gemm.AVX2 != nil {
		return []string{"avx2", "gonum", "generic"}
	}
	return []string{"gonum", "generic"}
}

// New returns a CPU backend on the fastest code path this CPU supports.
func New() *Backend {
	be, err := NewWith(Options{})
	if err != nil {
		panic(err) // unreachable: auto always has a portable path
	}
	return be
}

// NewWith returns a CPU backend on the code path named by opt. It returns
// an error for an unknown kernel or one this CPU cannot run.
func NewWith(opt Options) (*Backend, error) {
	if opt.Threads < 0 {
		return nil, fmt.Errorf("cpu: %d threads", opt.Threads)
	}
	name := opt.Kernel
	if name == "" || name == "auto" {
		name = Kernels()[0]
	}
	k := gemm.ByName(name)
	if k == nil {
		switch name {
		case "avx2":
			return nil, fmt.Errorf("cpu: kernel avx2 needs a CPU with AVX2 and FMA; this one has not both (use gonum)")
		case "avx512":
			return nil, fmt.Errorf("cpu: kernel avx512 needs a CPU with AVX-512F, AVX2 and FMA (not hidden by GODEBUG); this one has not (use avx2 or gonum)")
		}
		return nil, fmt.Errorf("cpu: unknown kernel %q (want auto, avx512, avx2, gonum or generic)", opt.Kernel)
	}
	be := &Backend{kern: k, simd: name == "avx2" || name == "avx512", threads: opt.Threads}
	switch opt.Sparse {
	case "", "auto":
		be.sparse = gemm.SparseAuto
	case "off":
		be.sparse = gemm.SparseNever
	case "always":
		be.sparse = gemm.SparseAlways
	default:
		return nil, fmt.Errorf("cpu: Sparse %q (want auto, off or always)", opt.Sparse)
	}
	return be, nil
}

// Kernel returns the name of the backend's code path: "avx512", "avx2",
// "gonum" or "generic".
func (be *Backend) Kernel() string { return be.kern.Name() }

// GEMMKernel returns the GEMM micro-kernel of the backend's path with its
// register tile, e.g. "avx512 12×32", "avx2 6×16", "generic 4×4" or
// "gonum".
func (be *Backend) GEMMKernel() string {
	if sh := be.kern.Shape(); sh != "" {
		return be.kern.Name() + " " + sh
	}
	return be.kern.Name()
}

// nthreads returns the number of goroutines an operation may use.
func (be *Backend) nthreads() int {
	if be.threads > 0 {
		return be.threads
	}
	return runtime.GOMAXPROCS(0)
}

var _ compute.Backend = (*Backend)(nil)

// Name returns "cpu".
func (*Backend) Name() string { return "cpu" }

// Device describes the CPU path in words, e.g. "2 threads, avx512 12×32
// sgemm, avx-512 narrow layers".
func (be *Backend) Device() string {
	shape := be.kern.Shape()
	if shape == "" {
		shape = "blas32"
	}
	narrow := ""
	if be.narrowKernels() && narrowAVX512 {
		narrow = ", avx-512 narrow layers"
	}
	return fmt.Sprintf("%d threads, %s %s sgemm%s", be.nthreads(), be.kern.Name(), shape, narrow)
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

// Alloc returns a zeroed buffer of n float32.
func (*Backend) Alloc(n int) compute.F32 {
	if n < 0 {
		panic(fmt.Sprintf("cpu: Alloc(%d)", n))
	}
	return vec(bigmem.Make[float32](n))
}

// AllocI32 returns a zeroed buffer of n int32.
func (*Backend) AllocI32(n int) compute.I32 {
	if n < 0 {
		panic(fmt.Sprintf("cpu: AllocI32(%d)", n))
	}
	return ivec(bigmem.Make[int32](n))
}

var _ compute.HostBuffers = (*Backend)(nil)

// WrapF32 returns s as a buffer, without a copy (compute.HostBuffers).
func (*Backend) WrapF32(s []float32) compute.F32 { return vec(s[:len(s):len(s)]) }

// WrapI32 returns s as a buffer, without a copy (compute.HostBuffers).
func (*Backend) WrapI32(s []int32) compute.I32 { return ivec(s[:len(s):len(s)]) }

// Upload copies src into dst.
func (*Backend) Upload(dst compute.F32, src []float32) {
	d := f(dst)
	compute.CheckLen("Upload", "dst", len(d), len(src))
	copy(d, src)
}

// UploadI32 copies src into dst.
func (*Backend) UploadI32(dst compute.I32, src []int32) {
	d := iv(dst)
	compute.CheckLen("UploadI32", "dst", len(d), len(src))
	copy(d, src)
}

// Download copies src into dst.
func (*Backend) Download(dst []float32, src compute.F32) error {
	s := f(src)
	compute.CheckLen("Download", "dst", len(dst), len(s))
	copy(dst, s)
	return nil
}

// DownloadI32 copies src into dst.
func (*Backend) DownloadI32(dst []int32, src compute.I32) error {
	s := iv(src)
	compute.CheckLen("DownloadI32", "dst", len(dst), len(s))
	copy(dst, s)
	return nil
}

// Fill sets every element of dst to v (+0 by clearing the memory).
func (*Backend) Fill(dst compute.F32, v float32) {
	d := f(dst)
	if math.Float32bits(v) == 0 {
		clear(d)
		return
	}
	for i := range d {
		d[i] = v
	}
}

// Copy copies src into dst.
func (*Backend) Copy(dst, src compute.F32) {
	d, s := f(dst), f(src)
	compute.CheckCopy(dst, src)
	copy(d, s)
}

// CopyI32 copies src into dst.
func (*Backend) CopyI32(dst, src compute.I32) {
	d, s := iv(dst), iv(src)
	compute.CheckCopyI32(dst, src)
	copy(d, s)
}

// Sync returns nil: the CPU backend runs synchronously and cannot fail.
func (*Backend) Sync() error { return nil }

// Close returns nil.
func (*Backend) Close() error { return nil }

// checkRow panics if embedding row r is outside a table of rows rows
// (compute leaves this check, which reads the cells, to the backends).
func checkRow(op string, r int32, rows int) int {
	if r < 0 || int(r) >= rows {
		panic(fmt.Sprintf("cpu: %s: embedding row %d outside table of %d rows", op, r, rows))
	}
	return int(r)
}

// Gather implements compute.Backend.Gather (=), split over goroutines by
// batch rows.
func (be *Backend) Gather(x, table compute.F32, cells compute.I32, order, width int, layout compute.Layout) {
	xs, ts, cs := f(x), f(table), iv(cells)
	rows := compute.CheckGather("Gather", x, table, cells, order, width, layout)
	ow := order * width
	be.parallelFor(len(cs)/order, 16*1024/ow, func(lo, hi int) {
		// prefetch asks for the rows of cells [k, k+2·prefetchAhead) at
		// k = lo·order and of the block after the next one at each block.
		prefetch := func(k int) {
			if !be.simd || (k-lo*order)%prefetchAhead != 0 {
				return
			}
			a, b := min(k+prefetchAhead, hi*order), min(k+2*prefetchAhead, hi*order)
			if k == lo*order {
				a = k
			}
			prefetchRows(ts, cs[a:b], width)
		}
		if layout == compute.ModeMajor {
			for k := lo * order; k < hi*order; k++ {
				prefetch(k)
				copy(xs[k*width:(k+1)*width], ts[checkRow("Gather", cs[k], rows)*width:][:width])
			}
			return
		}
		for b := lo; b < hi; b++ {
			for k := b * order; k < (b+1)*order; k++ {
				prefetch(k)
			}
			dst, cb := xs[b*ow:(b+1)*ow], cs[b*order:(b+1)*order]
			if order == 3 {
				// CoSTCo's case: the three rows interleaved at once.
				s0 := ts[checkRow("Gather", cb[0], rows)*width:][:width]
				s1 := ts[checkRow("Gather", cb[1], rows)*width:][:width]
				s2 := ts[checkRow("Gather", cb[2], rows)*width:][:width]
				for e, v := range s0 {
					d := dst[3*e : 3*e+3 : 3*e+3]
					d[0], d[1], d[2] = v, s1[e], s2[e]
				}
				continue
			}
			for n, r := range cb {
				src := ts[checkRow("Gather", r, rows)*width:][:width]
				for e, v := range src {
					dst[e*order+n] = v
				}
			}
		}
	})
}

// ScatterRows implements compute.Backend.ScatterRows (+=). Goroutines own
// disjoint ranges of table rows; each scans every cell and adds those in its
// range in batch order, so duplicates accumulate in the same order as a
// single pass.
func (be *Backend) ScatterRows(dtable, dx compute.F32, cells compute.I32, order, width int, layout compute.Layout) {
	ts, xs, cs := f(dtable), f(dx), iv(cells)
	rows := compute.CheckGather("ScatterRows", dx, dtable, cells, order, width, layout)
	for _, r := range cs {
		checkRow("ScatterRows", r, rows)
	}
	ow := order * width
	parts := 1
	if len(cs)*width >= 64*1024 {
		parts = be.nthreads()
	}
	be.parallelFor(parts, 1, func(plo, phi int) {
		for part := plo; part < phi; part++ {
			rlo, rhi := int32(part*rows/parts), int32((part+1)*rows/parts)
			if layout == compute.ModeMajor {
				for k, r := range cs {
					if r >= rlo && r < rhi {
						addTo(ts[int(r)*width:][:width], xs[k*width:(k+1)*width], be.simd)
					}
				}
				continue
			}
			in := func(r int32) bool { return r >= rlo && r < rhi }
			for b := 0; b < len(cs)/order; b++ {
				src, cb := xs[b*ow:(b+1)*ow], cs[b*order:(b+1)*order]
				if order == 3 && in(cb[0]) && in(cb[1]) && in(cb[2]) {
					// CoSTCo's case: the three rows at once, each
					// element still summed in cell order.
					d0 := ts[int(cb[0])*width:][:width]
					d1 := ts[int(cb[1])*width:][:width]
					d2 := ts[int(cb[2])*width:][:width]
					for e := range d0 {
						v := src[3*e : 3*e+3 : 3*e+3]
						d0[e] += v[0]
						d1[e] += v[1]
						d2[e] += v[2]
					}
					continue
				}
				for n, r := range cb {
					if !in(r) {
						continue
					}
					dst := ts[int(r)*width:][:width]
					for e := range dst {
						dst[e] += src[e*order+n]
					}
				}
			}
		}
	})
}

// EmbeddingInfluence implements compute.Backend.EmbeddingInfluence (+=).
func (*Backend) EmbeddingInfluence(score, dx compute.F32, cells compute.I32, gtable compute.F32, width int, layout compute.Layout, eta float32) {
	ss, xs, cs, ts := f(score), f(dx), iv(cells), f(gtable)
	order, rows := compute.CheckEmbeddingInfluence(score, dx, cells, gtable, width, layout)
	if order == 0 {
		return
	}
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
	order := compute.CheckEntityImportance(imp, score, cells)
	if order == 0 {
		return
	}
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
func (be *Backend) SampleAlias(out compute.I32, order, col int, thresh, alias compute.I32, key, ctr uint64) {
	os, ts, as := iv(out), iv(thresh), iv(alias)
	compute.CheckSampleAlias(out, order, col, thresh, alias)
	th := make([]uint32, len(ts))
	for i, t := range ts {
		th[i] = uint32(t)
	}
	be.parallelFor(len(os)/order, 4096, func(lo, hi int) {
		for m := lo; m < hi; m++ {
			os[m*order+col] = compute.AliasDraw(th, as, col, key, ctr, m)
		}
	})
}
