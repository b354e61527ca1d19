package cuda

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda/driver"
	"github.com/dainx/dainx/cuda/gemmtune"
)

// Launch shapes. The kernel headers in kernels/ state the same numbers.
const (
	threads     = 256  // block size of the elementwise, row and GEMM kernels
	mseThreads  = 1024 // block size of mse_grad
	warpsPerBlk = threads / 32
	gemmTile    = 64    // rows and columns of C per GEMM block
	maxGridYZ   = 65535 // limit of gridDim.y and gridDim.z
	// influenceDirectOut is the largest output width InfluenceDot handles
	// with one warp per cell (influence_dot); wider layers go through
	// linear_forward and influence_rows.
	influenceDirectOut = 8
	// influenceScratch bounds the B×O scratch of the wide InfluenceDot path,
	// in floats; larger batches are processed in chunks.
	influenceScratch = 16 << 20
)

var block1D = driver.Dim3{X: threads, Y: 1, Z: 1}

// tcBlock is the block of the tensor-core GEMMs (kernels/gemm_tc.cuh): 128
// threads, four warps, on the same 64×64 tiles as the float32 GEMMs.
var tcBlock = driver.Dim3{X: 128, Y: 1, Z: 1}

// grid1D returns a grid-stride grid for n items, perBlock per block: enough
// blocks to cover n, at most 32 per SM.
func (be *Backend) grid1D(n, perBlock int64) driver.Dim3 {
	blocks := (n + perBlock - 1) / perBlock
	limit := int64(be.sms) * 32
	if limit < 1024 {
		limit = 1024
	}
	blocks = min(blocks, limit)
	blocks = max(blocks, 1)
	return driver.Dim3{X: uint32(blocks), Y: 1, Z: 1}
}

// gemmGrid returns the grid of a 64×64-tiled GEMM with m rows, n columns
// and z splits. It panics if n is too large for gridDim.y.
func gemmGrid(op string, m, n, z int) driver.Dim3 {
	gy := (n + gemmTile - 1) / gemmTile
	if gy > maxGridYZ {
		panic(fmt.Sprintf("cuda: %s: width %d exceeds the GEMM grid limit %d", op, n, maxGridYZ*gemmTile))
	}
	return driver.Dim3{X: uint32((m + gemmTile - 1) / gemmTile), Y: uint32(gy), Z: uint32(z)}
}

// split chooses how to cut a reduction of length k over blocks independent
// blocks into parts of chunk (a multiple of 16, at least minChunk), so that
// about two blocks per SM are busy, when the blocks alone are fewer than the
// SMs. parts = 1 means no split. (Measured on an H100 at the default MLP's
// shapes: splitting grids of up to two blocks per SM as well, 1024×1024
// outputs included, was slower in every mode.)
// The rule is gemmtune.Split's, which the GEMM family's model shares.
func (be *Backend) split(blocks, k, minChunk int) (parts, chunk int) {
	return gemmtune.Split(be.sms, blocks, k, minChunk)
}

func b32(v bool) int32 {
	if v {
		return 1
	}
	return 0
}

// fm is f for a required buffer: nil panics.
func (be *Backend) fm(op string, b compute.F32) *F32 {
	v := be.f(op, b)
	if v == nil {
		panic(fmt.Sprintf("cuda: %s: nil buffer", op))
	}
	return v
}

// at returns the device address of element off of b.
func at(b *F32, off int) driver.DevicePtr { return b.ptr + driver.DevicePtr(4*off) }

// Upload copies src into dst, waiting until src may be reused. It panics if
// the lengths differ.
func (be *Backend) Upload(dst compute.F32, src []float32) {
	upload(be, "Upload", &be.fm("Upload", dst).buf, src)
}

// UploadI32 copies src into dst. It panics if the lengths differ.
func (be *Backend) UploadI32(dst compute.I32, src []int32) {
	upload(be, "UploadI32", &be.iv("UploadI32", dst).buf, src)
}

// Download waits for pending work, copies src into dst and returns the
// sticky error (dst is unspecified when it is not nil). It panics if the
// lengths differ.
func (be *Backend) Download(dst []float32, src compute.F32) error {
	return download(be, "Download", dst, &be.fm("Download", src).buf)
}

// DownloadI32 is Download for I32.
func (be *Backend) DownloadI32(dst []int32, src compute.I32) error {
	return download(be, "DownloadI32", dst, &be.iv("DownloadI32", src).buf)
}

// elem is the element type of a device vector: 4 bytes, F32's or I32's.
type elem interface{ float32 | int32 }

// upload is Upload and UploadI32 of op: it copies src into d, waiting until
// src may be reused. It panics if the lengths differ.
func upload[T elem](be *Backend, op string, d *buf, src []T) {
	compute.CheckLen(op, "dst", d.n, len(src))
	if len(src) == 0 {
		return
	}
	be.do(func() {
		if be.err == nil {
			be.fail(op, be.ctx.MemcpyHtoDAsync(d.ptr, unsafe.Pointer(&src[0]), 4*int64(len(src)), be.stream))
		}
	})
	runtime.KeepAlive(src)
}

// download is Download and DownloadI32 of op: it waits for pending work,
// copies s into dst and returns the sticky error. It panics if the lengths
// differ.
func download[T elem](be *Backend, op string, dst []T, s *buf) error {
	compute.CheckLen(op, "dst", len(dst), s.n)
	var err error
	be.do(func() {
		if be.err == nil && len(dst) > 0 {
			be.fail(op, be.ctx.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), s.ptr, 4*int64(len(dst)), be.stream))
		}
		err = be.err
	})
	runtime.KeepAlive(dst)
	return err
}

// Fill sets every element of dst to v (=), with cuMemsetD32 of v's bits.
func (be *Backend) Fill(dst compute.F32, v float32) {
	d := be.fm("Fill", dst)
	if d.n == 0 {
		return
	}
	bits := math.Float32bits(v)
	be.post(func() {
		if be.err == nil {
			be.fail("Fill", be.ctx.MemsetD32Async(d.ptr, bits, int64(d.n), be.stream))
		}
	})
}

// Copy copies src into dst (=). It panics if the lengths differ.
func (be *Backend) Copy(dst, src compute.F32) {
	be.copyDtoD("Copy", &be.fm("Copy", dst).buf, &be.fm("Copy", src).buf)
}

// CopyI32 implements compute.Backend.CopyI32 (=), a device-to-device copy
// queued on the stream.
func (be *Backend) CopyI32(dst, src compute.I32) {
	be.copyDtoD("CopyI32", &be.iv("CopyI32", dst).buf, &be.iv("CopyI32", src).buf)
}

// copyDtoD is Copy and CopyI32 of op: it queues the copy of s into d. It
// panics if the lengths differ.
func (be *Backend) copyDtoD(op string, d, s *buf) {
	compute.CheckLen(op, "dst", d.n, s.n)
	if d.n == 0 {
		return
	}
	be.post(func() {
		if be.err == nil {
			be.fail(op, be.ctx.MemcpyDtoDAsync(d.ptr, s.ptr, 4*int64(d.n), be.stream))
		}
	})
}

// zero queues dst = 0 for n elements at p. Context thread.
func (be *Backend) zero(op string, p driver.DevicePtr, n int) {
	if be.err == nil && n > 0 {
		be.fail(op, be.ctx.MemsetD32Async(p, 0, int64(n), be.stream))
	}
}

// Gather implements compute.Backend.Gather (=) with the kernel gather
// (kernels/gather.cu); see compute/ref.Gather. A cell row outside the table
// yields NaN in x (undefined by the interface; the CPU backend panics).
func (be *Backend) Gather(x, table compute.F32, cells compute.I32, order, width int, layout compute.Layout) {
	const op = "Gather"
	xs, ts, cs := be.fm(op, x), be.fm(op, table), be.iv(op, cells)
	rows := compute.CheckGather(op, x, table, cells, order, width, layout)
	if cs.n == 0 {
		return
	}
	batch, o, w, r, l := i32(op, cs.n/order), i32(op, order), i32(op, width), i32(op, rows), int32(layout)
	grid := be.grid1D(int64(cs.n)*int64(width), threads)
	be.post(func() {
		if be.err == nil {
			be.fail("gather", be.kGather(grid, block1D, 0, xs.ptr, ts.ptr, cs.ptr, batch, o, w, r, l))
		}
	})
}

// ScatterRows implements compute.Backend.ScatterRows (+=) with the kernel
// scatter_rows (kernels/scatter_rows.cu); see compute/ref.ScatterRows.
// Duplicate rows are added with atomics, in an unspecified order. A cell row
// outside the table is skipped.
func (be *Backend) ScatterRows(dtable, dx compute.F32, cells compute.I32, order, width int, layout compute.Layout) {
	const op = "ScatterRows"
	ts, xs, cs := be.fm(op, dtable), be.fm(op, dx), be.iv(op, cells)
	rows := compute.CheckGather(op, dx, dtable, cells, order, width, layout)
	if cs.n == 0 {
		return
	}
	batch, o, w, r, l := i32(op, cs.n/order), i32(op, order), i32(op, width), i32(op, rows), int32(layout)
	grid := be.grid1D(int64(cs.n)*int64(width), threads)
	be.post(func() {
		if be.err == nil {
			be.fail("scatter_rows", be.kScatterRows(grid, block1D, 0, ts.ptr, xs.ptr, cs.ptr, batch, o, w, r, l))
		}
	})
}

// Epilogue flags of the GEMM kernels and split_k_reduce (kernels/common.cuh
// kEpi*).
const (
	epiAccumulate = 1  // add to the output
	epiRelu       = 2  // ReLU after the bias
	epiMask       = 4  // times [x > 0]
	epiBias       = 8  // dW kernels: also the bias gradient
	epiX3         = 16 // tensor-core kernels: 3xTF32
	epiSerial     = 32 // split tile variants: serial split-K (kernels/splitk.cuh)
)

// gemmPlan is the launch of one GEMM kernel: its grid and how the
// reduction is split (parts = grid.Z chunks of chunk terms).
type gemmPlan struct {
	grid         driver.Dim3
	parts, chunk int
}

// planGEMM plans an m×n GEMM with k-term reductions, split over k as split
// or splitK say.
func planGEMM(op string, m, n, parts, chunk int) gemmPlan {
	return gemmPlan{grid: gemmGrid(op, m, n, parts), parts: parts, chunk: chunk}
}

// splitK is split for the forward and dx GEMMs, whose reduction is a layer
// width (forward 1024→128 at batch 1024 has 32 tiles; dx of a 150-wide
// layer 48): chunks of at least 128.
func (be *Backend) splitK(blocks, k int) (parts, chunk int) {
	return be.split(blocks, k, 128)
}

// tc reports whether the Linear GEMMs run on tensor cores.
func (be *Backend) tc() bool { return be.prec != compute.FP32 }

// tcFlags returns the flags that select TF32 or 3xTF32 in the tensor-core
// kernels.
func (be *Backend) tcFlags() int32 {
	if be.prec == compute.TF32x3 {
		return epiX3
	}
	return 0
}

// reduce queues split_k_reduce over part (parts×rows×pcols) into dst
// (rows×cols) and dst2 (rows, column cols of part), with the epilogue of
// flags. Context thread.
func (be *Backend) reduce(dst, dst2, part, bias, x driver.DevicePtr, rows, cols, pcols, parts int, flags int32) {
	if be.err != nil {
		return
	}
	grid := be.grid1D(int64(rows)*int64(pcols), threads)
	be.fail("split_k_reduce", be.kSplitKReduce(grid, block1D, 0, dst, dst2, part, bias, x,
		int32(rows), int32(cols), int32(pcols), int32(parts), flags))
}

// partBuf returns scratch memory for the parts of a split GEMM of rows×cols
// outputs, or 0 (no error) when there is no split. ok is false when the
// allocation failed (the error is recorded). Context thread.
func (be *Backend) partBuf(parts, rows, cols int) (p driver.DevicePtr, ok bool) {
	if parts <= 1 {
		return 0, true
	}
	p = be.scratchBuf(4 * int64(parts) * int64(rows) * int64(cols))
	return p, p != 0
}

// forwardGEMM launches the forward GEMM of g (linear_forward, or
// linear_forward_tc in the tensor-core modes). Context thread.
func (be *Backend) forwardGEMM(g gemmPlan, y, part, x, w, bias driver.DevicePtr, batch, in, out int32, flags int32) (serial bool, err error) {
	if be.tc() {
		flags |= be.tcFlags()
	}
	return be.gemm(gemmtune.Forward, int(batch), int(out), int(in), g.parts, int(out), part, true, func(a *driver.Args, part driver.DevicePtr, serial int32) {
		a.Ptr(y)
		a.Ptr(part)
		a.Ptr(x)
		a.Ptr(w)
		a.Ptr(bias)
		a.Int32(batch)
		a.Int32(in)
		a.Int32(out)
		a.Int32(int32(g.chunk))
		a.Int32(flags | serial)
	})
}

// LinearForward implements compute.Backend.LinearForward (=); see
// compute/ref.LinearForward. DAIN eq. 4. With out = 1 (the output layer) it
// is a matrix–vector product, one warp per row (linear_forward_out1, float32
// in every precision mode). Otherwise it is a 64×64-tiled GEMM with bias and
// ReLU fused: linear_forward (float32 SIMT) or, in the TF32 and 3xTF32
// modes, linear_forward_tc (tensor cores). When the output has fewer tiles
// than the GPU has SMs, the input width is split over blocks and
// split_k_reduce adds the parts in a fixed order and applies bias and ReLU.
// It panics if the lengths do not match.
func (be *Backend) LinearForward(y, x, w, bias compute.F32, in, out int, relu bool) {
	const op = "LinearForward"
	ys, xs, ws, bs := be.fm(op, y), be.fm(op, x), be.fm(op, w), be.fm(op, bias)
	batch := compute.CheckLinearForward(y, x, w, bias, in, out)
	if batch == 0 {
		return
	}
	nb, ni, no := i32(op, batch), i32(op, in), i32(op, out)
	var flags int32
	if relu {
		flags |= epiRelu
	}
	if out == 1 {
		grid := be.grid1D(int64(batch), warpsPerBlk)
		be.post(func() {
			if be.err == nil {
				be.fail("linear_forward_out1", be.kLinearForwardOut1(grid, block1D, 0, ys.ptr, xs.ptr, ws.ptr, bs.ptr, nb, ni, flags))
			}
		})
		return
	}
	parts, chunk := be.planForward(batch, in, out)
	g := planGEMM(op, batch, out, parts, chunk)
	be.post(func() {
		if be.err != nil {
			return
		}
		part, ok := be.partBuf(parts, batch, out)
		if !ok {
			return
		}
		serial, err := be.forwardGEMM(g, ys.ptr, part, xs.ptr, ws.ptr, bs.ptr, nb, ni, no, flags)
		be.fail("linear_forward", err)
		if parts > 1 && !serial {
			be.reduce(ys.ptr, 0, part, bs.ptr, 0, batch, out, out, parts, flags)
		}
	})
}

// tiles returns the number of 64×64 tiles of an m×n output.
func tiles(m, n int) int {
	return ((m + gemmTile - 1) / gemmTile) * ((n + gemmTile - 1) / gemmTile)
}

// LinearBackward implements compute.Backend.LinearBackward; see
// compute/ref.LinearBackward. dw and db are overwritten or accumulated as
// accumulate says; dx is overwritten; a nil output is skipped. It panics if
// the lengths do not match.
//
// With out = 1 (the output layer) one kernel, linear_backward_out1, reads x
// once for all three outputs, split over the batch with split_k_reduce
// adding the parts in a fixed order. Otherwise: dw and db together by
// linear_backward_dw (dyᵀ·x, with the blocks of the first column of tiles
// also summing the dy tiles they stage into db), split over the batch when
// the layer has few tiles; db alone (dw nil) by
// linear_backward_db; dx by linear_backward_dx (dy·w with the ReLU mask),
// split over out when it has few tiles. In the TF32 and 3xTF32 modes the
// dw and dx GEMMs run on tensor cores (linear_backward_dw_tc,
// linear_backward_dx_tc).
func (be *Backend) LinearBackward(dx, dw, db, dy, x, w compute.F32, in, out int, maskX, accumulate bool) {
	const op = "LinearBackward"
	dxs, dws, dbs := be.f(op, dx), be.f(op, dw), be.f(op, db)
	dys, xs, ws := be.fm(op, dy), be.fm(op, x), be.fm(op, w)
	batch := compute.CheckLinearBackward(dx, dw, db, dy, x, w, in, out)
	if batch == 0 {
		if !accumulate {
			be.post(func() {
				if dws != nil {
					be.zero("LinearBackward dw", dws.ptr, dws.n)
				}
				if dbs != nil {
					be.zero("LinearBackward db", dbs.ptr, dbs.n)
				}
			})
		}
		return
	}
	nb, ni, no := i32(op, batch), i32(op, in), i32(op, out)
	var acc, mask int32
	if accumulate {
		acc = epiAccumulate
	}
	if maskX {
		mask = epiMask
	}
	ptr := func(b *F32) driver.DevicePtr {
		if b == nil {
			return 0
		}
		return b.ptr
	}
	dxp, dwp, dbp := ptr(dxs), ptr(dws), ptr(dbs)
	if out == 1 {
		if dxs == nil && dws == nil && dbs == nil {
			return
		}
		i32(op, in+1)
		cols := (in + 31) / 32
		parts, chunk := be.planOut1(batch, in)
		grid := driver.Dim3{X: uint32(cols), Y: uint32(parts), Z: 1}
		reduce := parts > 1 && (dws != nil || dbs != nil)
		be.post(func() {
			if be.err != nil {
				return
			}
			var part driver.DevicePtr
			if reduce {
				var ok bool
				if part, ok = be.partBuf(parts, 1, in+1); !ok {
					return
				}
			}
			be.fail("linear_backward_out1", be.kLinearBackwardOut1(grid, driver.Dim3{X: 32, Y: 8, Z: 1}, 0,
				dxp, dwp, dbp, part, dys.ptr, xs.ptr, ws.ptr, nb, ni, int32(chunk), acc|mask))
			if reduce {
				be.reduce(dwp, dbp, part, 0, 0, 1, in, in+1, parts, acc)
			}
		})
		return
	}
	if dws != nil {
		pcols, flags := in, acc
		if dbs != nil {
			pcols, flags = in+1, acc|epiBias
		}
		i32(op, pcols)
		parts, chunk := be.planDW(batch, in, out)
		gemmGrid(op, out, in, parts) // the grid limit, checked (a panic) on the caller's thread
		be.post(func() {
			if be.err != nil {
				return
			}
			part, ok := be.partBuf(parts, out, pcols)
			if !ok {
				return
			}
			fl := flags
			if be.tc() {
				fl |= be.tcFlags()
			}
			// Repeatable unless it adds to dw and db itself.
			serial, err := be.gemm(gemmtune.DW, out, in, batch, parts, pcols, part, parts > 1 || acc == 0, func(a *driver.Args, part driver.DevicePtr, serial int32) {
				a.Ptr(dwp)
				a.Ptr(dbp)
				a.Ptr(part)
				a.Ptr(dys.ptr)
				a.Ptr(xs.ptr)
				a.Int32(nb)
				a.Int32(ni)
				a.Int32(no)
				a.Int32(int32(chunk))
				a.Int32(fl | serial)
			})
			be.fail("linear_backward_dw", err)
			if parts > 1 && !serial {
				be.reduce(dwp, dbp, part, 0, 0, out, in, pcols, parts, acc)
			}
		})
	} else if dbs != nil {
		cols := (out + 31) / 32
		parts, chunk := be.planDB(batch, out)
		grid := driver.Dim3{X: uint32(cols), Y: uint32(parts), Z: 1}
		np, nc := int32(parts), int32(chunk)
		be.post(func() {
			if be.err != nil {
				return
			}
			part, ok := be.partBuf(parts, 1, out)
			if !ok {
				return
			}
			be.fail("linear_backward_db", be.kLinearBackwardDb(grid, driver.Dim3{X: 32, Y: 8, Z: 1}, 0, dbp, part, dys.ptr, nb, no, nc, acc))
			if parts > 1 {
				be.reduce(dbp, 0, part, 0, 0, 1, out, out, int(np), acc)
			}
		})
	}
	if dxs != nil {
		parts, chunk := be.planDX(batch, in, out)
		gemmGrid(op, batch, in, parts) // the grid limit, checked on the caller's thread
		be.post(func() {
			if be.err != nil {
				return
			}
			part, ok := be.partBuf(parts, batch, in)
			if !ok {
				return
			}
			fl := mask
			if be.tc() {
				fl |= be.tcFlags()
			}
			serial, err := be.gemm(gemmtune.DX, batch, in, out, parts, in, part, true, func(a *driver.Args, part driver.DevicePtr, serial int32) {
				a.Ptr(dxp)
				a.Ptr(part)
				a.Ptr(dys.ptr)
				a.Ptr(ws.ptr)
				a.Ptr(xs.ptr)
				a.Int32(nb)
				a.Int32(ni)
				a.Int32(no)
				a.Int32(int32(chunk))
				a.Int32(fl | serial)
			})
			be.fail("linear_backward_dx", err)
			if parts > 1 && !serial {
				be.reduce(dxp, 0, part, 0, xs.ptr, batch, in, in, parts, mask)
			}
		})
	}
}

// MSEGrad implements compute.Backend.MSEGrad (=) with the kernel mse_grad
// (kernels/mse_grad.cu); see compute/ref.MSEGrad. The squared error is
// summed in float64 by one block, in a fixed order, and rounded once.
func (be *Backend) MSEGrad(delta, sq, pred, y compute.F32, scale float32) {
	const op = "MSEGrad"
	ds, ss, ps, ys := be.fm(op, delta), be.f(op, sq), be.fm(op, pred), be.fm(op, y)
	compute.CheckMSEGrad(delta, sq, pred, y)
	var sqPtr driver.DevicePtr
	if ss != nil {
		sqPtr = ss.ptr
	}
	if ps.n == 0 {
		if ss != nil {
			be.post(func() { be.zero("MSEGrad sq", sqPtr, 1) })
		}
		return
	}
	n := i32(op, ps.n)
	grid := driver.Dim3{X: 1, Y: 1, Z: 1}
	if ss == nil {
		grid = be.grid1D(int64(ps.n), mseThreads)
	}
	be.post(func() {
		if be.err == nil {
			be.fail("mse_grad", be.kMseGrad(grid, driver.Dim3{X: mseThreads, Y: 1, Z: 1}, 0, ds.ptr, sqPtr, ps.ptr, ys.ptr, n, scale))
		}
	})
}

// Mul implements compute.Backend.Mul (=) with the kernel mul
// (kernels/mul.cu); see compute/ref.Mul.
func (be *Backend) Mul(dst, a, b compute.F32) {
	const op = "Mul"
	ds, as, bs := be.fm(op, dst), be.fm(op, a), be.fm(op, b)
	compute.CheckMul(dst, a, b)
	if ds.n == 0 {
		return
	}
	n := i32(op, ds.n)
	grid := be.grid1D(int64(ds.n), threads)
	be.post(func() {
		if be.err == nil {
			be.fail("mul", be.kMul(grid, block1D, 0, ds.ptr, as.ptr, bs.ptr, n))
		}
	})
}

// lossParts is the most blocks linear_forward_out1_mse runs with (the size
// of its scratch of block sums).
const lossParts = 1024

// LinearForwardMSE implements compute.OutputMSE (=) with the kernel
// linear_forward_out1_mse (kernels/linear_forward_out1_mse.cu): the output
// layer's warp-per-row product and the MSE gradient in one launch, pred and
// delta bit for bit those of LinearForward and MSEGrad, the squared error
// summed in float64 over blocks, whose last adds the block sums in a fixed
// order. Float32 in every precision mode, as LinearForward with out = 1.
// It panics if the lengths do not match.
func (be *Backend) LinearForwardMSE(pred, delta, sq, x, w, bias, y compute.F32, in int, relu bool, scale float32) {
	const op = "LinearForwardMSE"
	ps, ds, ss, xs, ws, bs, ys := be.fm(op, pred), be.fm(op, delta), be.f(op, sq), be.fm(op, x), be.fm(op, w), be.fm(op, bias), be.fm(op, y)
	batch := compute.CheckLinearForwardMSE(pred, delta, sq, x, w, bias, y, in)
	var sqPtr driver.DevicePtr
	if ss != nil {
		sqPtr = ss.ptr
	}
	if batch == 0 {
		if ss != nil {
			be.post(func() { be.zero("LinearForwardMSE sq", sqPtr, 1) })
		}
		return
	}
	nb, ni := i32(op, batch), i32(op, in)
	var flags int32
	if relu {
		flags |= epiRelu
	}
	grid := be.grid1D(int64(batch), warpsPerBlk)
	grid.X = min(grid.X, lossParts)
	be.post(func() {
		if be.err != nil {
			return
		}
		if be.lossScr == 0 {
			if be.recording {
				be.fail(op, fmt.Errorf("its scratch must be made before Capture; run the operations once before capturing them"))
				return
			}
			p, _ := be.allocBlock(8*lossParts + 8)
			if be.err != nil {
				return
			}
			be.lossScr = p
			be.zero(op+" count", p+8*lossParts, 2)
		}
		part, count := be.lossScr, be.lossScr+8*lossParts
		be.fail("linear_forward_out1_mse", be.kLinearForwardOut1Mse(grid, block1D, 0, ps.ptr, ds.ptr, sqPtr, part, count,
			xs.ptr, ws.ptr, bs.ptr, ys.ptr, nb, ni, flags, scale))
	})
}

var _ compute.OutputMSE = (*Backend)(nil)

// Adam implements compute.Backend.Adam (in place) with the kernel adam
// (kernels/adam.cu), or adam_at (kernels/adam_at.cu), which reads the
// per-step constants from s.Scalars when it runs; see compute/ref.Adam. The bias corrections and 1−β
// are formed in float64 and rounded once, as on the CPU backend, and so is
// s.L2, which the kernels apply as g + l2·p, unfused, when it is not 0. It
// panics if the lengths differ, s.T < 1 or s.L2 is negative or not finite.
func (be *Backend) Adam(p, g, m, v compute.F32, s compute.AdamStep) {
	const op = "Adam"
	ps, gs, ms, vs := be.fm(op, p), be.fm(op, g), be.fm(op, m), be.fm(op, v)
	compute.CheckAdam(p, g, m, v, s)
	if ps.n == 0 {
		return
	}
	b1, b2, omb1, omb2, step, rc2, eps, l2, sc := be.adamArgs(op, s)
	n := i32(op, ps.n)
	grid := be.grid1D(int64(ps.n), threads)
	be.post(func() {
		switch {
		case be.err != nil:
		case sc != nil:
			be.fail("adam_at", be.kAdamAt(grid, block1D, 0, ps.ptr, ms.ptr, vs.ptr, gs.ptr, sc.ptr, n, b1, b2, omb1, omb2, eps, l2))
		default:
			be.fail("adam", be.kAdam(grid, block1D, 0, ps.ptr, ms.ptr, vs.ptr, gs.ptr, n, b1, b2, omb1, omb2, step, rc2, eps, l2))
		}
	})
}

// InfluenceDot implements compute.Backend.InfluenceDot (+=); see
// compute/ref.InfluenceDot. For out ≤ 8 (the last layer of DAIN's MLP has
// out = 1) the kernel influence_dot gives one warp to each cell; wider layers
// compute t = x·gwᵀ + gb with linear_forward (linear_forward_tc in the
// tensor-core modes) into scratch memory, in chunks
// of at most 16 Mi floats, and reduce each row against dy with
// influence_rows. Per-cell gradients are never formed. DAIN eq. 5 (TracIn,
// Pruthi et al., NeurIPS 2020).
func (be *Backend) InfluenceDot(score, dy, x, gw, gb compute.F32, in, out int, eta float32) {
	const op = "InfluenceDot"
	ss, dys, xs, gws, gbs := be.fm(op, score), be.fm(op, dy), be.fm(op, x), be.fm(op, gw), be.fm(op, gb)
	batch := compute.CheckInfluenceDot(score, dy, x, gw, gb, in, out)
	if batch == 0 {
		return
	}
	ni, no := i32(op, in), i32(op, out)
	if out <= influenceDirectOut {
		nb := i32(op, batch)
		grid := be.grid1D(int64(batch), warpsPerBlk)
		be.post(func() {
			if be.err == nil {
				be.fail("influence_dot", be.kInfluenceDot(grid, block1D, 0, ss.ptr, dys.ptr, xs.ptr, gws.ptr, gbs.ptr, nb, ni, no, eta))
			}
		})
		return
	}
	chunk := influenceChunk(batch, out)
	for off := 0; off < batch; off += chunk {
		rows := min(chunk, batch-off)
		nr := i32(op, rows)
		ggrid := planGEMM(op, rows, out, 1, in)
		rgrid := be.grid1D(int64(rows), warpsPerBlk)
		xp, dyp, sp := at(xs, off*in), at(dys, off*out), at(ss, off)
		be.post(func() {
			if be.err != nil {
				return
			}
			t := be.scratchBuf(4 * int64(rows) * int64(out))
			if t == 0 {
				return
			}
			_, err := be.forwardGEMM(ggrid, t, 0, xp, gws.ptr, gbs.ptr, nr, ni, no, 0) // not split: never serial
			be.fail("linear_forward", err)
			if be.err == nil {
				be.fail("influence_rows", be.kInfluenceRows(rgrid, block1D, 0, sp, dyp, t, nr, no, eta))
			}
		})
	}
}

// EmbeddingInfluence implements compute.Backend.EmbeddingInfluence (+=)
// with the kernel embedding_influence (one warp per cell); see
// compute/ref.EmbeddingInfluence. A cell row outside the table contributes
// nothing.
func (be *Backend) EmbeddingInfluence(score, dx compute.F32, cells compute.I32, gtable compute.F32, width int, layout compute.Layout, eta float32) {
	const op = "EmbeddingInfluence"
	ss, xs, cs, ts := be.fm(op, score), be.fm(op, dx), be.iv(op, cells), be.fm(op, gtable)
	order, rows := compute.CheckEmbeddingInfluence(score, dx, cells, gtable, width, layout)
	if order == 0 {
		return
	}
	nb, o, w, r, l := i32(op, ss.n), i32(op, order), i32(op, width), i32(op, rows), int32(layout)
	i32(op, order*width)
	grid := be.grid1D(int64(ss.n), warpsPerBlk)
	be.post(func() {
		if be.err == nil {
			be.fail("embedding_influence", be.kEmbeddingInfluence(grid, block1D, 0, ss.ptr, xs.ptr, cs.ptr, ts.ptr, nb, o, w, r, l, eta))
		}
	})
}

// EntityImportance implements compute.Backend.EntityImportance (+=) with the
// kernel entity_importance (atomic adds of |score|, in an unspecified
// order); see compute/ref.EntityImportance. DAIN eq. 6 applied to the cell
// importance of eq. 5. A cell row outside imp is skipped.
func (be *Backend) EntityImportance(imp, score compute.F32, cells compute.I32) {
	const op = "EntityImportance"
	is, ss, cs := be.fm(op, imp), be.fm(op, score), be.iv(op, cells)
	order := compute.CheckEntityImportance(imp, score, cells)
	if order == 0 {
		return
	}
	count, o, r := i32(op, ss.n), i32(op, order), i32(op, is.n)
	grid := be.grid1D(int64(cs.n), threads)
	be.post(func() {
		if be.err == nil {
			be.fail("entity_importance", be.kEntityImportance(grid, block1D, 0, is.ptr, ss.ptr, cs.ptr, count, o, r))
		}
	})
}

// SampleAlias implements compute.Backend.SampleAlias (= for column col) with
// the kernel sample_alias, bit-identical to compute.AliasDraw; see
// compute/ref.SampleAlias. Vose, IEEE TSE 17(9), 1991; Philox4x32-10,
// Salmon et al., SC 2011.
func (be *Backend) SampleAlias(out compute.I32, order, col int, thresh, alias compute.I32, key, ctr uint64) {
	const op = "SampleAlias"
	os, ts, as := be.iv(op, out), be.iv(op, thresh), be.iv(op, alias)
	compute.CheckSampleAlias(out, order, col, thresh, alias)
	if os.n == 0 {
		return
	}
	count, o, c, size := i32(op, os.n/order), i32(op, order), i32(op, col), i32(op, ts.n)
	grid := be.grid1D(int64(count), threads)
	be.post(func() {
		if be.err == nil {
			be.fail("sample_alias", be.kSampleAlias(grid, block1D, 0, os.ptr, ts.ptr, as.ptr, count, o, c, size, key, ctr))
		}
	})
}
