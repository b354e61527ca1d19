package cuda

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync/atomic"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda/driver"
	"github.com/dainx/dainx/kernels/ptx"
)

// Backend is the CUDA implementation of compute.Backend on one device. The
// zero value is not usable; call New or NewWith.
type Backend struct {
	drv      *driver.Driver
	ctx      *driver.Context
	desc     string
	sms      int
	prec     compute.Precision
	sync     bool
	tune     *gemmTuner // the GEMM variants (tune.go)
	closed   atomic.Bool
	capture  atomic.Bool // a Capture is recording
	closeErr error

	// Context-thread state: touched only by functions run through do and
	// post.
	stream  *driver.Stream
	fns     [numKernels]*driver.Function
	mods    [numKernels]*driver.Module
	args    *driver.Args
	err     error                        // sticky: the first failure
	cache   map[int64][]driver.DevicePtr // freed blocks by size class
	live    map[driver.DevicePtr]bool    // every block from cuMemAlloc, cached or in use
	scratch driver.DevicePtr
	scrLen  int64 // bytes
	// recording is true from BeginCapture to EndCapture on the context
	// thread. capture (set by the caller's thread) is not enough there:
	// operations queued before Capture still run eagerly after it is set.
	recording bool
	// lossScr is linear_forward_out1_mse's scratch: lossParts block sums
	// (float64) and the block count, zero between launches.
	lossScr driver.DevicePtr
	graphs  map[*Graph]bool // instantiated graphs, destroyed by Close
	// retired are scratch blocks replaced while graphs that use them
	// lived; freed with the last graph (or by Close, through live).
	retired []driver.DevicePtr
	// serialWS is the workspace of the serial split-K GEMMs
	// (kernels/splitk.cuh): serialSems uint32 semaphores, zero between
	// launches, then one part; serialLen bytes in all.
	serialWS   driver.DevicePtr
	serialLen  int64
	serialSems int
}

var _ compute.Backend = (*Backend)(nil)

// Options configures NewWith. The zero value is device 0, exact float32,
// the 64×64 GEMM kernels, no serial split-K, asynchronous launches and the
// usual places for the driver: what New opens. This package reads no
// environment: the dainx commands fill Options from their flags and the
// variables docs/environment.md lists (DAINX_DEVICE, DAINX_GEMM_TUNE,
// DAINX_GEMM_SERIAL, DAINX_CUDA_SYNC, DAINX_LIBCUDA).
type Options struct {
	// Device is the ordinal of the GPU, 0 ≤ Device < the driver's device
	// count (as CUDA_VISIBLE_DEVICES leaves them).
	Device int
	// Precision is how the Linear layers' GEMMs multiply (compute.FP32,
	// the zero value, is exact float32).
	Precision compute.Precision
	// GemmTune is how each GEMM shape's kernel variant is chosen:
	// GemmTuneOff (the zero value), GemmTuneModel or GemmTuneTime.
	GemmTune GemmTune
	// SerialSplitK, with the tuner on (model or time), runs every split
	// GEMM on a tile body as serial split-K (kernels/splitk.cuh) instead of
	// the parts and split_k_reduce; false, the zero value, is the faster,
	// measured on an H200.
	SerialSplitK bool
	// Sync makes the backend wait for, and check, every kernel launch, so
	// that an asynchronous fault is reported under the name of the kernel
	// that caused it (slow: for debugging).
	Sync bool
	// Library, when not empty, names the CUDA driver library (a file or
	// a soname) to try before the usual places (driver.Options.Library).
	Library string
}

// New is NewWith(Options{}): device 0, FP32, the default settings.
func New() (*Backend, error) {
	return NewWith(Options{})
}

// DeviceCount returns the number of CUDA devices the driver sees
// (cuDeviceGetCount), the driver loaded as o.Library says; an error when
// the driver cannot be loaded.
func DeviceCount(o Options) (int, error) {
	drv, err := driver.Load(driver.Options{Library: o.Library})
	if err != nil {
		return 0, fmt.Errorf("cuda: %w", err)
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return 0, fmt.Errorf("cuda: %w", err)
	}
	return n, nil
}

// DeviceCount returns the number of CUDA devices the backend's driver
// sees (cuDeviceGetCount).
func (be *Backend) DeviceCount() (int, error) {
	n, err := be.drv.DeviceCount()
	if err != nil {
		return 0, fmt.Errorf("cuda: %w", err)
	}
	return n, nil
}

// NewWith loads the CUDA driver (see driver.Load for where it looks),
// retains the primary context of device o.Device, the one the CUDA runtime
// and libraries use, so that a host program can share it, and JIT-loads
// every kernel module. It returns an error, never panics or exits: "cuda: no
// CUDA driver: tried …" where the library is missing, "cuda: cuInit:
// CUDA_ERROR_NO_DEVICE: …" where there is no device, "cuda: device 3 of 2
// …" for an ordinal out of range, and the JIT log of the driver where a
// module does not load.
//
// With o.Sync it waits for, and checks, every kernel launch.
func NewWith(o Options) (*Backend, error) {
	switch o.Precision {
	case compute.FP32, compute.TF32, compute.TF32x3:
	default:
		return nil, fmt.Errorf("cuda: unknown precision %v", o.Precision)
	}
	mode, serial, err := o.tuning()
	if err != nil {
		return nil, err
	}
	drv, err := driver.Load(driver.Options{Library: o.Library})
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	if n < 1 {
		return nil, fmt.Errorf("cuda: the driver reports no CUDA device")
	}
	if o.Device < 0 || o.Device >= n {
		return nil, fmt.Errorf("cuda: device %d of %d: want an ordinal from 0 to %d", o.Device, n, n-1)
	}
	dev, err := drv.Device(o.Device)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	desc, sms, err := describe(drv, dev)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	if n > 1 {
		desc = fmt.Sprintf("device %d: %s", o.Device, desc)
	}
	if o.Precision != compute.FP32 {
		desc += ", " + o.Precision.String()
	}
	tune, err := newTuner(drv, dev, sms, mode, serial)
	if err != nil {
		return nil, err
	}
	ctx, err := drv.NewContext(dev)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	be := &Backend{
		tune:   tune,
		drv:    drv,
		ctx:    ctx,
		desc:   desc,
		sms:    sms,
		prec:   o.Precision,
		sync:   o.Sync,
		args:   driver.NewArgs(),
		cache:  map[int64][]driver.DevicePtr{},
		live:   map[driver.DevicePtr]bool{},
		graphs: map[*Graph]bool{},
	}
	var loadErr error
	if err := ctx.Do(func() { loadErr = be.load() }); err != nil {
		loadErr = err
	}
	if loadErr != nil {
		_ = ctx.Do(func() { _ = be.release() })
		_ = ctx.Destroy()
		return nil, loadErr
	}
	return be, nil
}

// Precision returns the GEMM precision the backend was opened with.
func (be *Backend) Precision() compute.Precision { return be.prec }

// describe returns the device in words and its number of SMs.
func describe(drv *driver.Driver, dev driver.Device) (string, int, error) {
	name, err := drv.DeviceName(dev)
	if err != nil {
		return "", 0, err
	}
	attr := func(a driver.Attribute) int {
		if err != nil {
			return 0
		}
		var v int
		v, err = drv.DeviceAttribute(dev, a)
		return v
	}
	sms := attr(driver.AttrMultiprocessorCount)
	major := attr(driver.AttrComputeCapabilityMajor)
	minor := attr(driver.AttrComputeCapabilityMinor)
	if err != nil {
		return "", 0, err
	}
	mem, err := drv.DeviceTotalMem(dev)
	if err != nil {
		return "", 0, err
	}
	ver, err := drv.Version()
	if err != nil {
		return "", 0, err
	}
	return fmt.Sprintf("%s, %d SMs, %.1f GiB, compute %d.%d, driver CUDA %d.%d",
		name, sms, float64(mem)/(1<<30), major, minor, ver/1000, ver%1000/10), sms, nil
}

// load creates the stream and loads every kernel module. Context thread.
func (be *Backend) load() error {
	s, err := be.ctx.NewStream()
	if err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	be.stream = s
	for k, name := range kernelNames {
		file := name + ".ptx"
		image, err := ptx.FS.ReadFile(file)
		if err != nil {
			return fmt.Errorf("cuda: kernel %s: no embedded PTX (run `make kernels`): %w", name, err)
		}
		m, err := be.ctx.LoadModule(image)
		if err != nil {
			return fmt.Errorf("cuda: load kernels/ptx/%s: %w", file, err)
		}
		be.mods[k] = m
		f, err := m.Function(name)
		if err != nil {
			return fmt.Errorf("cuda: load kernels/ptx/%s: %w", file, err)
		}
		be.fns[k] = f
	}
	return nil
}

// Name returns "cuda".
func (*Backend) Name() string { return "cuda" }

// Device describes the GPU in words, e.g. "NVIDIA H100 80GB HBM3, 132 SMs,
// 79.1 GiB, compute 9.0, driver CUDA 12.4".
func (be *Backend) Device() string { return be.desc }

// do runs f on the context thread and waits. It panics after Close, and
// during Capture: only the synchronous operations (Alloc, Upload, Download,
// Sync) wait, and none of them can be recorded into a graph.
func (be *Backend) do(f func()) {
	if be.capture.Load() {
		panic("cuda: Alloc, Upload, Download or Sync during Capture (a graph records only queued operations; allocate and upload before capturing)")
	}
	if err := be.ctx.Do(f); err != nil {
		panic("cuda: backend used after Close")
	}
}

// post queues f on the context thread. It panics after Close.
func (be *Backend) post(f func()) {
	if err := be.ctx.Go(f); err != nil {
		panic("cuda: backend used after Close")
	}
}

// fail records err, wrapped with op, as the sticky error unless one is
// already recorded. Context thread.
func (be *Backend) fail(op string, err error) {
	if err != nil && be.err == nil {
		be.err = fmt.Errorf("cuda: %s: %w", op, err)
	}
}

// launch starts kernel k on the backend's stream and, with Options.Sync,
// waits for it. Called by the generated launchers. Context thread.
func (be *Backend) launch(k kernelID, grid, block driver.Dim3, shared uint32, a *driver.Args) error {
	f := be.fns[k]
	if f == nil {
		return fmt.Errorf("kernel %s is not loaded", kernelNames[k])
	}
	if err := f.Launch(grid, block, shared, be.stream, a); err != nil {
		return err
	}
	if be.sync && !be.recording {
		return be.stream.Synchronize()
	}
	return nil
}

// Sync waits for all queued work and returns the sticky error, if any.
func (be *Backend) Sync() error {
	var err error
	be.do(func() {
		if be.err == nil {
			be.fail("Sync", be.stream.Synchronize())
		}
		err = be.err
	})
	return err
}

// Close waits for queued work, frees every block of device memory the
// backend allocated (buffers still referenced included), unloads its modules,
// destroys its stream and releases the primary context, and returns the
// sticky error or the first error of doing so. Closing twice returns the
// same result; any other use after Close panics.
func (be *Backend) Close() error {
	if be.closed.Swap(true) {
		return be.closeErr
	}
	var err error
	if e := be.ctx.Do(func() {
		if be.err == nil {
			be.fail("Close", be.stream.Synchronize())
		}
		err = be.err
		if e := be.release(); e != nil && err == nil {
			err = fmt.Errorf("cuda: Close: %w", e)
		}
	}); e != nil {
		err = e
	}
	if e := be.ctx.Destroy(); e != nil && err == nil {
		err = fmt.Errorf("cuda: Close: %w", e)
	}
	be.closeErr = err
	return err
}

// release frees every block, unloads the modules and destroys the stream,
// returning the first error. The primary context outlives the backend when
// a host program also holds it, so nothing may be left in it. Context
// thread.
func (be *Backend) release() error {
	var first error
	keep := func(e error) {
		if e != nil && first == nil {
			first = e
		}
	}
	for p := range be.live {
		keep(be.ctx.MemFree(p))
	}
	be.live, be.cache, be.scratch, be.scrLen, be.lossScr = map[driver.DevicePtr]bool{}, map[int64][]driver.DevicePtr{}, 0, 0, 0
	be.serialWS, be.serialLen, be.serialSems = 0, 0, 0
	for g := range be.graphs {
		keep(g.exec.Destroy())
	}
	be.graphs, be.retired = map[*Graph]bool{}, nil
	for k, m := range be.mods {
		if m != nil {
			keep(m.Unload())
			be.mods[k], be.fns[k] = nil, nil
		}
	}
	if be.stream != nil {
		keep(be.stream.Destroy())
		be.stream = nil
	}
	return first
}

// sizeClass rounds a request of b > 0 bytes up to its cache size class:
// 512 bytes at least, then four classes per power of two, so that a block
// is at most 25 % larger than the request.
func sizeClass(b int64) int64 {
	if b <= 512 {
		return 512
	}
	p := int64(1) << (63 - bits.LeadingZeros64(uint64(b-1))) // p < b ≤ 2p
	step := p / 4
	return (b + step - 1) / step * step
}

// allocBlock returns device memory of at least b > 0 bytes, from the cache
// or cuMemAlloc_v2; when the device is out of memory it releases the cache
// and tries once more. It returns 0 (recording the error) on failure, or
// at once if an error is already recorded. Context thread.
func (be *Backend) allocBlock(b int64) (driver.DevicePtr, int64) {
	if be.err != nil {
		return 0, 0
	}
	c := sizeClass(b)
	if free := be.cache[c]; len(free) > 0 {
		p := free[len(free)-1]
		be.cache[c] = free[:len(free)-1]
		return p, c
	}
	p, err := be.ctx.MemAlloc(c)
	if err != nil && be.releaseCache() {
		p, err = be.ctx.MemAlloc(c)
	}
	if err != nil {
		be.fail(fmt.Sprintf("Alloc(%d bytes)", b), err)
		return 0, 0
	}
	be.live[p] = true
	return p, c
}

// releaseCache frees every cached block and reports whether there was any.
// It first waits for queued work, which may still use a cached block.
// Context thread.
func (be *Backend) releaseCache() bool {
	if len(be.cache) == 0 {
		return false
	}
	be.fail("free cached memory", be.stream.Synchronize())
	released := false
	for c, free := range be.cache {
		for _, p := range free {
			delete(be.live, p)
			be.fail("free cached memory", be.ctx.MemFree(p))
			released = true
		}
		delete(be.cache, c)
	}
	return released
}

// scratchBuf returns device scratch memory of at least b bytes, reused from
// operation to operation (the stream orders its uses). Context thread.
func (be *Backend) scratchBuf(b int64) driver.DevicePtr {
	if b <= be.scrLen {
		return be.scratch
	}
	if be.recording {
		be.fail("scratch", fmt.Errorf("scratch memory must grow to %d bytes during Capture; run the operations once before capturing them", b))
		return 0
	}
	if be.scratch != 0 {
		be.retire("scratch", be.scratch)
		be.scratch, be.scrLen = 0, 0
	}
	if be.err != nil {
		return 0
	}
	p, c := be.allocBlock(b)
	be.scratch, be.scrLen = p, c
	return p
}

// retire frees a scratch block that is being replaced by a larger one, or,
// while graphs live (they hold its address), keeps it until the last of
// them is freed (or Close). Context thread.
func (be *Backend) retire(op string, p driver.DevicePtr) {
	if len(be.graphs) > 0 {
		be.retired = append(be.retired, p)
		return
	}
	// The memory may still be read by queued kernels.
	be.fail(op, be.stream.Synchronize())
	delete(be.live, p)
	be.fail(op, be.ctx.MemFree(p))
}

// serialBuf returns the workspace of a serial split-K GEMM (kernels/
// splitk.cuh) of tiles output tiles and a part of n floats: the address
// of the part, with at least tiles semaphores just before it, zero. The
// kernels leave them zero, so the workspace is reused from launch to
// launch (the stream orders them) and grows like scratchBuf. 0 when the
// allocation failed (the error is recorded). Context thread.
func (be *Backend) serialBuf(tiles int, n int64) driver.DevicePtr {
	if be.serialFits(tiles, n) {
		return be.serialWS + driver.DevicePtr(4*be.serialSems)
	}
	if be.recording {
		be.fail("serial split-K", fmt.Errorf("its workspace must grow during Capture; run the operations once before capturing them"))
		return 0
	}
	sems := max(tiles, be.serialSems)
	if be.serialWS != 0 {
		n = max(n, (be.serialLen-4*int64(be.serialSems))/4)
		be.retire("serial split-K", be.serialWS)
		be.serialWS, be.serialLen, be.serialSems = 0, 0, 0
	}
	if be.err != nil {
		return 0
	}
	p, c := be.allocBlock(4*int64(sems) + 4*n)
	if p == 0 {
		return 0
	}
	be.zero("serial split-K", p, sems)
	be.serialWS, be.serialLen, be.serialSems = p, c, sems
	return p + driver.DevicePtr(4*sems)
}

// serialFits reports whether the serial split-K workspace holds tiles
// semaphores and a part of n floats without growing. Context thread.
func (be *Backend) serialFits(tiles int, n int64) bool {
	return tiles <= be.serialSems && 4*int64(be.serialSems)+4*n <= be.serialLen
}

// block is one allocation of device memory, shared by a buffer and its
// views. When no buffer or view refers to it any more, a cleanup returns its
// memory to the cache, so that code written for the CPU backend, where Free
// does nothing, does not leak device memory; Free just does it sooner.
type block struct {
	ptr   driver.DevicePtr
	class int64        // size class in bytes, 0 for no memory
	freed *atomic.Bool // separate, so that the cleanup need not refer to the block
}

// blockCleanup is what the cleanup of a block needs.
type blockCleanup struct {
	be    *Backend
	ptr   driver.DevicePtr
	class int64
	freed *atomic.Bool
}

// recycle returns the memory of a block to the cache unless it was freed
// already. After Close it does nothing: the context took the memory.
func (c blockCleanup) recycle() {
	if c.ptr == 0 || c.freed.Swap(true) {
		return
	}
	be := c.be
	_ = be.ctx.Go(func() {
		be.cache[c.class] = append(be.cache[c.class], c.ptr)
	})
}

// buf is the part common to F32 and I32.
type buf struct {
	be   *Backend
	blk  *block // nil for an empty buffer
	ptr  driver.DevicePtr
	n    int
	view bool
}

// alloc returns a zeroed buffer of n 4-byte elements.
func (be *Backend) alloc(op string, n int) buf {
	if n < 0 {
		panic(fmt.Sprintf("cuda: %s(%d)", op, n))
	}
	if be.closed.Load() {
		panic("cuda: backend used after Close")
	}
	b := buf{be: be, n: n}
	if n == 0 {
		return b
	}
	blk := &block{freed: new(atomic.Bool)}
	be.do(func() {
		blk.ptr, blk.class = be.allocBlock(4 * int64(n))
		if blk.ptr != 0 {
			be.fail(op, be.ctx.MemsetD32Async(blk.ptr, 0, int64(n), be.stream))
		}
	})
	runtime.AddCleanup(blk, blockCleanup.recycle, blockCleanup{be, blk.ptr, blk.class, blk.freed})
	b.blk, b.ptr = blk, blk.ptr
	return b
}

// slice returns the view [off, off+n) of b.
func (b buf) slice(kind string, off, n int) buf {
	if off < 0 || n < 0 || off+n > b.n {
		panic(fmt.Sprintf("cuda: Slice(%d, %d) of %s of %d elements", off, n, kind, b.n))
	}
	return buf{be: b.be, blk: b.blk, ptr: b.ptr + driver.DevicePtr(4*off), n: n, view: true}
}

// free returns the memory of b to the backend's cache; views and repeated
// calls do nothing, as does freeing after Close (the context took the
// memory with it).
func (b buf) free() {
	if b.view || b.blk == nil {
		return
	}
	blockCleanup{b.be, b.blk.ptr, b.blk.class, b.blk.freed}.recycle()
}

// F32 is a device vector of float32, counted in elements. It implements
// compute.F32.
type F32 struct{ buf }

// I32 is a device vector of int32, counted in elements. It implements
// compute.I32.
type I32 struct{ buf }

// Len returns the number of elements.
func (b *F32) Len() int { return b.n }

// Slice returns the view of elements [off, off+n), sharing storage. It
// panics if the range is out of bounds.
func (b *F32) Slice(off, n int) compute.F32 { return &F32{b.slice("an F32", off, n)} }

// Free returns the storage to the backend's cache. Freeing twice, freeing a
// view or freeing after Close does nothing.
func (b *F32) Free() { b.free() }

// Ptr returns the device address of element 0, for programs that launch
// their own kernels on the data. It is 0 for an empty buffer.
func (b *F32) Ptr() driver.DevicePtr { return b.ptr }

// Len returns the number of elements.
func (b *I32) Len() int { return b.n }

// Slice returns the view of elements [off, off+n), sharing storage. It
// panics if the range is out of bounds.
func (b *I32) Slice(off, n int) compute.I32 { return &I32{b.slice("an I32", off, n)} }

// Free returns the storage to the backend's cache. Freeing twice, freeing a
// view or freeing after Close does nothing.
func (b *I32) Free() { b.free() }

// Ptr returns the device address of element 0; 0 for an empty buffer.
func (b *I32) Ptr() driver.DevicePtr { return b.ptr }

// Alloc returns a zeroed F32 of n elements. It panics if n < 0. If the
// device is out of memory the error becomes sticky and the buffer is inert.
func (be *Backend) Alloc(n int) compute.F32 { return &F32{be.alloc("Alloc", n)} }

// AllocI32 returns a zeroed I32 of n elements. It panics if n < 0.
func (be *Backend) AllocI32(n int) compute.I32 { return &I32{be.alloc("AllocI32", n)} }

// f returns the device buffer behind an F32 argument, or nil for nil. It
// panics if the buffer belongs to another backend or has been freed.
func (be *Backend) f(op string, b compute.F32) *F32 {
	if b == nil {
		return nil
	}
	v, ok := b.(*F32)
	if !ok {
		panic(fmt.Sprintf("cuda: %s: buffer of type %T belongs to another backend", op, b))
	}
	if v == nil {
		return nil
	}
	be.own(op, &v.buf)
	return v
}

// iv is f for I32 arguments; nil panics.
func (be *Backend) iv(op string, b compute.I32) *I32 {
	v, ok := b.(*I32)
	if !ok || v == nil {
		panic(fmt.Sprintf("cuda: %s: buffer of type %T belongs to another backend", op, b))
	}
	be.own(op, &v.buf)
	return v
}

func (be *Backend) own(op string, b *buf) {
	if b.be != be {
		panic(fmt.Sprintf("cuda: %s: buffer belongs to another CUDA backend", op))
	}
	if b.blk != nil && b.blk.freed.Load() {
		panic(fmt.Sprintf("cuda: %s: use of a freed buffer", op))
	}
	if be.closed.Load() {
		panic("cuda: backend used after Close")
	}
}

// i32 converts a size for a kernel argument. It panics if v does not fit in
// an int32: the kernels take int32 sizes (and use 64-bit offsets).
func i32(op string, v int) int32 {
	if v > math.MaxInt32 {
		panic(fmt.Sprintf("cuda: %s: size %d exceeds the kernels' int32 range", op, v))
	}
	return int32(v)
}
